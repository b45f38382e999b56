/* When a process runs: the run intervals every analysis shares (the
 * timeline, the export's scheduling slices, on-CPU time), by one set of
 * rules, so that no analysis shows a process running when the trace does
 * not say it is (issue 16 item 1).
 *
 *  - A run starts at process_scheduled `in` and ends at `out` or at the
 *    process's exit.
 *  - A run the trace does not end (the process died untraced, its flags
 *    were removed while it ran, its `out` was lost, or the trace stops
 *    first) ends at the process's last event: what came after is unknown,
 *    not running. "Its events" are those where it acts (the first process
 *    field of an event: caller, sender, receiver, collector, ...).
 *  - At most as many processes run at once on a node's normal
 *    schedulers as it has, and on its dirty CPU and dirty I/O schedulers
 *    as it has of each (the trace's environment: beamtrace_schedulers,
 *    beamtrace_dirty_cpu_schedulers, beamtrace_dirty_io_schedulers). A
 *    process on a dirty scheduler is scheduled out of its normal one and
 *    in on the dirty one; the stream an `in` is on says which kind of
 *    thread it was (beamtrace_first_dirty_cpu_stream,
 *    _first_dirty_io_stream, _first_other_stream: streams below the first
 *    are normal schedulers', other threads' count with them). Each kind is
 *    a pool with its own bound. A trace that says the counts but not the
 *    streams' kinds (recorded before those entries) has one pool bounded by their
 *    sum. An `in` that would make one more in its pool ends the pool's
 *    open run whose process's last event is the oldest, at that event. A
 *    trace without the counts (LTTng's) has no such bound.
 *  - In a trace with those entries (beamtrace's recorder), each stream is
 *    one VM thread's ring, and a thread runs one process at a time: an
 *    `in` on a stream ends the open run of the process last scheduled in
 *    on that stream, at its last event (no later than this `in`). This is
 *    what keeps a process that died untraced from being counted running
 *    until the bound bites (a user trial on RabbitMQ: 14 "running at once"
 *    on 2 normal schedulers, the bound of 2 + 2 + 10, where at most 3 were
 *    drawn). LTTng's streams are per CPU, not per thread: no such rule.
 * Each run ended by the second, third or fourth rule is counted
 * (closed_count): the report says how many.
 *
 * Fed every event of the pass before the accumulators (model/run.c); an
 * accumulator that keeps runs of its own applies `closed` when it gets a
 * process_scheduled `in` (the runs that event ended, its own process's
 * included when it was still open), and ends what is still open at the
 * pass's end at bmt_runs_last_ns. Pid ids are the scope's names' ids
 * (names.h). Memory: 31 bytes per process, plus the open runs per pool and 4 bytes
 * per stream.
 *
 * Only processes with an open run need their last event: the others' is
 * never read (a run's end, the bound's choice and the pass's end all look
 * at open runs). So an event's process is looked up only when its
 * fingerprint (bmt_strtab_mark) is one an open run's process has, or when
 * the event is a scheduling or exit event; the rest, most events, cost a
 * hash and a bit test (issue 17: the analyses' speed).
 * Single-threaded.
 */
#ifndef BMT_CLI_RUNS_H
#define BMT_CLI_RUNS_H

#include "ctf/reader.h"
#include "names.h"

#include <stdint.h>

/* Runs one event may end: the one open on its own process, the one open
 * on its stream, and one for the bound. */
#define BMT_RUNS_CLOSED_MAX 3

struct bmt_runs_closed {
    uint32_t pid;              /* pid id (names) */
    uint64_t end_ns;           /* the process's last event: where its run ends */
};

/* The kinds of scheduler a run may be on: each trace's pools are
 * BMT_RUNS_POOLS entries of bmt_runs.pools, from trace * BMT_RUNS_POOLS. */
enum { BMT_RUNS_NORMAL, BMT_RUNS_DIRTY_CPU, BMT_RUNS_DIRTY_IO, BMT_RUNS_POOLS };

/* The schedulers of one kind on one node, and the runs open on them. */
struct bmt_runs_pool {
    uint32_t cap;              /* schedulers of this kind; 0: unknown, no bound */
    uint32_t *open;            /* pid ids with an open run */
    uint32_t open_count, open_cap;
    /* Pool BMT_RUNS_NORMAL only: the first stream of each dirty kind and
     * of the other threads (the trace's environment); 0: not said, every
     * run is in this pool. */
    uint32_t first_dirty_cpu, first_dirty_io, first_other;
};

struct bmt_runs {
    uint64_t *last_ns;         /* per pid id: its last event + 1, or 0 */
    uint64_t *in_ns;           /* per pid id: its open run's start + 1, or 0 */
    uint32_t *slot;            /* per pid id: its index in its pool's open list */
    uint32_t *pool;            /* per pid id: the pool its open run is in */
    uint8_t *mark;             /* per pid id: its text's fingerprint (bmt_strtab_mark) */
    uint32_t *stream;          /* per pid id: the stream its open run began on */
    uint32_t pid_cap;
    uint32_t *on_stream;       /* per stream: pid id + 1 last scheduled in there, or 0 */
    uint32_t stream_cap;
    struct bmt_runs_pool *pools; /* trace_count * BMT_RUNS_POOLS */
    unsigned trace_count;
    struct bmt_runs_closed closed[BMT_RUNS_CLOSED_MAX]; /* ended by the current event */
    unsigned closed_n;
    uint64_t closed_count;     /* runs ended at their process's last event, in all */
    uint64_t capped_count;     /* of which by the bound */
    uint32_t max_running;      /* most runs open at once on one node's normal
                                * schedulers (after the bound) */
    uint32_t max_dirty_running; /* and on its dirty ones, both kinds together */
    int dirty_known;           /* some trace says which streams are dirty schedulers' */
    uint32_t mark_count[256];  /* open runs whose process has each fingerprint */
    uint64_t marks[4];         /* the fingerprints with a count: bit set when count > 0 */
};

void bmt_runs_init(struct bmt_runs *r);
void bmt_runs_free(struct bmt_runs *r);

/* Reads each trace's scheduler counts from reader `rd` (opened). Returns
 * 0 or -ENOMEM. */
int bmt_runs_open(struct bmt_runs *r, const struct bmt_reader *rd);

/* The fields of `tp` bmt_runs_feed reads: what the pass asks the reader
 * for, on every event it reads. */
uint16_t bmt_runs_fields(uint16_t tp);

/* bmt_runs_feed's work for an event the prefilter lets through: value `v`
 * of its process field, whose fingerprint is `mark`. */
int bmt_runs_take(struct bmt_runs *r, struct bmt_names *names, const struct bmt_record *rec,
                  const struct bmt_value *v, unsigned mark);

/* The field of `tp` that names its process (the first process field),
 * or -1 for events of no process (counters, node_info, ports'). */
int bmt_runs_actor(uint16_t tp);

/* The kind of scheduler (BMT_RUNS_NORMAL, _DIRTY_CPU, _DIRTY_IO) a run
 * starting on the stream whose packets say `cpu_id` in trace `trace` is
 * on; BMT_RUNS_NORMAL when the trace does not say. */
unsigned bmt_runs_kind(const struct bmt_runs *r, unsigned trace, uint32_t cpu_id);

/* The mark bmt_runs_feed takes for an event with no process field, or
 * with it not selected. */
#define BMT_RUNS_NO_MARK 256u

/* Applies one event (time order): `v` is its process field
 * (bmt_runs_actor), `mark` that field's bmt_strtab_mark or
 * BMT_RUNS_NO_MARK (the caller computes it once for the own-process check
 * too); its process's pid id is made in `names` when it is looked up.
 * Sets closed/closed_n. Returns 0 or -ENOMEM. Inline: the prefilter is
 * all most events cost. */
static inline int bmt_runs_feed(struct bmt_runs *r, struct bmt_names *names,
                                const struct bmt_record *rec, const struct bmt_value *v,
                                unsigned mark)
{
    r->closed_n = 0;
    if (mark >= BMT_RUNS_NO_MARK)
        return 0;
    /* No open run's process has this fingerprint: its last event is not
     * needed (above), and nothing else changes. */
    if (!(r->marks[mark >> 6] >> (mark & 63) & 1) && rec->tp != BMT_TP_process_scheduled &&
        rec->tp != BMT_TP_process_exit)
        return 0;
    return bmt_runs_take(r, names, rec, v, mark);
}

/* Ends, at their process's last event, the runs still open at the pass's
 * end (counted in closed_count). Call after the accumulators' finish,
 * which use bmt_runs_last_ns. */
void bmt_runs_finish(struct bmt_runs *r);

/* The last event of process `pid` (pid id) while its run is open, or
 * `fallback` when none: valid for a process whose run bmt_runs_feed has
 * not ended (the accumulators' open runs). */
static inline uint64_t bmt_runs_last_ns(const struct bmt_runs *r, uint32_t pid, uint64_t fallback)
{
    return pid < r->pid_cap && r->last_ns[pid] ? r->last_ns[pid] - 1 : fallback;
}

#endif
