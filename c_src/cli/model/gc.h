/* The `gc` analysis: garbage collection pauses (gc_*_start -> the same
 * process's matching gc_*_end; minor and major apart), words reclaimed,
 * and each process's total pause. cmd/gc.c says more. Memory: per
 * process. Single-threaded.
 */
#ifndef BMT_CLI_GC_H
#define BMT_CLI_GC_H

#include "acc.h"
#include "scope.h"
#include "histogram.h"

struct bmt_gc_proc {
    uint64_t start_ns[2];       /* open collection (minor, major) start + 1, or 0 */
    uint64_t pause_ns;          /* total pause inside the window */
    uint64_t gc_count;
    uint64_t reclaimed_words;
};

struct bmt_gc {
    struct bmt_an_scope *scope;
    struct bmt_gc_proc *procs;  /* by pid id */
    uint32_t proc_cap;
    struct bmt_hist hist[2];    /* pause, ns: [0] minor, [1] major */
    uint64_t reclaimed_words[2];
    /* A sampled trace's collections not kept, and their pause (scaled
     * back: sampled.h); the histograms hold those kept. */
    uint64_t unkept_count[2], unkept_pause_ns[2];
    uint64_t unmatched_count;   /* end without start, or start never ended */
    uint64_t cut_count;         /* pauses cut by the window's edges */
};

int bmt_gc_init(void *self, struct bmt_an_scope *scope);
int bmt_gc_feed(void *ctx, const struct bmt_record *rec);
#define BMT_GC_TOP 10

/* Fills top[] with the pid ids of the largest total pauses, largest
 * first; returns how many (at most BMT_GC_TOP). */
unsigned bmt_gc_top(const struct bmt_gc *g, uint32_t top[BMT_GC_TOP]);

void bmt_gc_free(void *self);

/* As an accumulator (acc.h). */
extern const struct bmt_acc bmt_gc_acc;

#endif
