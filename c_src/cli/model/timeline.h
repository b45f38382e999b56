/* The report's timeline: when processes ran, as a share of time, for the
 * busiest processes (out/timeline_svg.h draws it).
 *
 * Running time (process_scheduled in -> out, or -> process_exit: a process
 * that exits while running stops there; a run the trace does not end
 * stops at the process's last event, runs.h) is summed into TIMELINE_COLS
 * columns of equal width per process. The column width starts at 1 us and
 * doubles (neighbouring columns merge, sums stay exact) whenever the trace
 * outgrows the columns, so memory is fixed whatever the trace's time span.
 * Columns are kept for the first TIMELINE_POOL processes seen running; the
 * TIMELINE_LANES of them that ran the most are drawn, each column as a bar
 * whose height is the share of that column's time the process ran (a server
 * that ran 1% of the time draws thin bars, not a solid block), over a band
 * that spans the process's life (spawn or window start, to exit or window
 * end), with its total share written next to its name. Memory: 
 * TIMELINE_POOL * TIMELINE_COLS * 8 bytes (1 MiB). Single-threaded.
 */
#ifndef BMT_CLI_TIMELINE_H
#define BMT_CLI_TIMELINE_H

#include "acc.h"
#include "scope.h"

#include <stdint.h>

#define TIMELINE_COLS 512
#define TIMELINE_POOL 256
#define TIMELINE_LANES 24

struct bmt_lane {
    uint32_t pid;               /* pid id */
    uint64_t in_ns;             /* running since + 1, or 0 */
    uint64_t spawn_ns, exit_ns; /* + 1, or 0 when not in the trace */
    uint64_t run_ns;            /* running time inside the window */
    uint64_t busy[TIMELINE_COLS]; /* running ns per column */
};

struct bmt_timeline {
    struct bmt_an_scope *scope;
    uint64_t t0_ns;             /* column 0 starts here */
    uint64_t col_ns;            /* column width, a power of two, ns */
    int started;
    struct bmt_lane *lanes;     /* TIMELINE_POOL */
    uint32_t lane_count;
    struct bmt_u64map by_pid;   /* pid id -> lane */
};

/* Prepares `t` for `scope`. Returns 0 or -ENOMEM. */
int bmt_timeline_init(void *self, struct bmt_an_scope *scope);

/* Takes process_scheduled, process_spawn and process_exit events. Returns
 * 0 or -ENOMEM. */
int bmt_timeline_feed(void *self, const struct bmt_record *rec);

/* Closes running intervals at the pass's end. Returns 0. */
int bmt_timeline_finish(void *self, const struct bmt_an_pass *pass);

/* Fills order[] with lane indices, the lanes that ran the most first;
 * returns how many are drawn (at most TIMELINE_LANES). */
uint32_t bmt_timeline_busiest(const struct bmt_timeline *t, uint32_t order[TIMELINE_POOL]);

void bmt_timeline_free(void *self);

/* As an accumulator (acc.h). */
extern const struct bmt_acc bmt_timeline_acc;

#endif
