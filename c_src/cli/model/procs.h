/* The `procs` analysis: births and deaths, spawns and exits per second
 * (seconds with any), exit reasons, and the longest- and shortest-lived
 * processes. cmd/procs.c says more. Memory: per process, per exit reason
 * and per active second. Single-threaded.
 */
#ifndef BMT_CLI_PROCS_H
#define BMT_CLI_PROCS_H

#include "acc.h"
#include "scope.h"
#include "base/strtab.h"

#define BMT_PROCS_TOP 10

struct bmt_life {
    uint32_t pid;               /* pid id */
    uint64_t lifetime_ns;
};

/* Spawns and exits in one second that had some (seconds without any are
 * not stored: memory follows the events, not the trace's time span). */
struct bmt_second {
    uint64_t second;            /* since the window's (or trace's) start */
    uint64_t spawns, exits;
};

struct bmt_procs {
    struct bmt_an_scope *scope;
    struct bmt_strtab reasons;
    uint64_t *spawn_ns;         /* per pid id: spawn time + 1, or 0 */
    uint32_t pid_cap;
    uint64_t *reason_counts;
    uint32_t reason_cap;
    struct bmt_second *seconds; /* in time order */
    uint64_t second_count, second_cap;
    uint64_t first_ns;          /* second 0 starts here */
    int started;
    /* Spawns and exits (per second and per reason too) are scaled back
     * by the procs ratio in force at each (sampled.h); lifetimes and the
     * processes alive pair the events kept. */
    uint64_t spawn_count, exit_count;
    uint64_t spawn_kept_count, exit_kept_count; /* the events kept */
    uint64_t exit_unknown_count; /* exits of processes whose spawn is not traced */
    struct bmt_life longest[BMT_PROCS_TOP], shortest[BMT_PROCS_TOP];
    unsigned longest_count, shortest_count;
};

int bmt_procs_init(void *self, struct bmt_an_scope *scope);
int bmt_procs_feed(void *ctx, const struct bmt_record *rec);
/* Exit reason ids, most frequent first (malloc'd; NULL when out of
 * memory). */
uint32_t *bmt_procs_reasons(const struct bmt_procs *p);

/* Processes spawned in the trace and not seen exiting. */
uint64_t bmt_procs_alive(const struct bmt_procs *p);

void bmt_procs_free(void *self);

/* As an accumulator (acc.h). */
extern const struct bmt_acc bmt_procs_acc;

#endif
