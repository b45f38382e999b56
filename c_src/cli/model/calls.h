/* The `calls` analysis: per function (or per process and function) call
 * counts, inclusive and own time, latency percentiles, where the time went
 * (on CPU, runnable, waiting for a message, in GC: proc_state.h), the
 * slowest calls, and the calls slower than a threshold (seed 003's "Func
 * calls longer than 1 millisecond"), from stacks rebuilt by callstack.c.
 * `calls`, `report` and the report's flame graph use it.
 *
 * Percentiles come from log-linear histograms (histogram.h: within 1%), so
 * memory grows with the number of distinct functions (and processes, with
 * by_pid), not with the number of calls. Calls slower than the threshold
 * are given to a callback as their frames end, in end-time order. The OWN
 * figure is own on-CPU time when the trace has scheduling events, own wall
 * time when it has none. In a sampled trace counts and times are scaled
 * back by the call ratio in force at each call (sampled.h), percentiles
 * are of the calls kept. Single-threaded.
 */
#ifndef BMT_CLI_CALLS_H
#define BMT_CLI_CALLS_H

#include "acc.h"
#include "callstack.h"
#include "groupby.h"
#include "histogram.h"
#include "base/strtab.h"

struct bmt_fstat {
    uint32_t func;              /* id in cs.funcs */
    uint32_t pid;               /* pid id, or BMT_CS_NONE when not by pid */
    uint64_t unfinished_count;  /* cut by the window, or open at process exit or trace end */
    uint64_t unkept_count;      /* finished calls a sampled trace did not keep (scaled back) */
    uint64_t exception_count;   /* ended by an exception */
    uint64_t total_ns;          /* inclusive time inside the window */
    uint64_t incl[BMT_K_COUNT]; /* total_ns by kind */
    uint64_t own[BMT_K_COUNT];  /* exclusive of traced callees, by kind */
    struct bmt_wakers wakers;   /* incl[BMT_K_WAITING] by the sender that ended each wait
                                 * (wakers.h: bounded; timeouts in none) */
    struct bmt_hist hist;       /* latency of calls inside the window, ns */
    struct bmt_hist khist[BMT_K_COUNT]; /* their time by kind (with breakdown) */
};

struct bmt_slow_call {
    uint32_t pid, func;
    uint64_t start_ns, duration_ns;
    uint64_t kinds[BMT_K_COUNT];
};

struct bmt_calls {
    struct bmt_callstack cs;
    struct bmt_u64map index;    /* (pid + 1) << 32 | func, or func -> stats index */
    uint32_t *by_func;          /* without by_pid: func -> stats index + 1, or 0 (index's cache) */
    uint32_t by_func_cap;
    struct bmt_fstat *stats;
    uint32_t stat_count, stat_cap;
    int by_pid;
    int breakdown;              /* per-call histograms by kind */
    struct bmt_slow_call *slowest; /* slowest_cap entries, longest first (made on first use) */
    unsigned slowest_count, slowest_cap;
    uint64_t slower_ns;         /* list calls longer than this; 0: no listing */
    /* Called for each call longer than slower_ns, as its frame ends (in
     * end-time order), before slow_count counts it. */
    void (*on_slow)(void *ctx, const struct bmt_calls *c, uint32_t pid,
                    const struct bmt_frame *f, uint64_t end_ns, unsigned flags);
    void *slow_ctx;
    uint64_t slow_count;        /* calls longer than slower_ns */
    /* A flight capture's triggering call (capture_info.h), kept whatever
     * its rank: the finished call of trigger_func by trigger_pid (texts as
     * the trace has them) whose end is nearest trigger_ns, where the
     * tracer decided it. Armed by setting trigger_func before the pass. */
    const char *trigger_pid, *trigger_func;
    uint64_t trigger_ns;
    int trigger_found;
    uint64_t trigger_gap_ns;    /* |its end - trigger_ns| */
    struct bmt_slow_call trigger_call;
    /* calls --group-by: finished calls also counted by their frame's value
     * (groupby.h); NULL: not grouped. */
    struct bmt_groupby *group;
};

/* Finished calls inside the window: those kept (the histogram's) and, in
 * a sampled trace, those they stand for. */
static inline uint64_t bmt_fstat_count(const struct bmt_fstat *s)
{
    return s->hist.count + s->unkept_count;
}

/* Prepares `c` for `scope` (then set by_pid, breakdown, slowest, slower_ns,
 * on_slow, cs.tree). */
int bmt_calls_init(void *self, struct bmt_an_scope *scope);
int bmt_calls_feed(void *ctx, const struct bmt_record *rec);
/* Closes open frames at the pass's end. Returns 0 or -ENOMEM. */
int bmt_calls_finish(void *self, const struct bmt_an_pass *pass);
/* Which kinds of time the trace cannot tell apart: it lacks scheduling
 * events (all time is wall time), message_receive events (off-CPU time is
 * not split into runnable and waiting) or gc events. */
struct bmt_calls_lacks {
    int sched, receive, gc;
};
struct bmt_calls_lacks bmt_calls_lacking(const struct bmt_calls *c);

/* 1 when slowest call `s` is the capture's triggering call. */
int bmt_calls_is_trigger(const struct bmt_calls *c, const struct bmt_slow_call *s);

/* Stats indices sorted by total time, largest first (malloc'd; NULL when
 * out of memory). */
uint32_t *bmt_calls_sorted(const struct bmt_calls *c);
/* 1 when the OWN column is on-CPU time (the trace has scheduling events),
 * 0 when it is wall time; and that OWN value of a row: own wall time, or
 * own time seen on CPU or in GC, plus the wall time of processes the trace
 * never schedules; never time seen off CPU, for whatever reason. */
int bmt_calls_own_is_cpu(const struct bmt_calls *c);
uint64_t bmt_calls_own_ns(const struct bmt_calls *c, const struct bmt_fstat *s);
void bmt_calls_free(void *self);

/* As an accumulator (acc.h): set by_pid, breakdown, slowest_cap, slower_ns,
 * on_slow and cs.tree after init. */
extern const struct bmt_acc bmt_calls_acc;

#endif
