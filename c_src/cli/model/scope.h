/* The scope every analysis takes (options --begin, --end, --pid, --name):
 * a time window and a process filter, and the names the trace gives its
 * processes, kept current as it is read.
 *
 *  - the window [begin, end] (wall times, or +DURATION from the trace's
 *    first event): events after `end` are not read; events before `begin`
 *    are read to know names, call stacks and scheduling states, but only
 *    time inside the window is counted. An interval (a call, a GC pause, a
 *    send -> scheduled-in latency) is a sample (counted in latency
 *    statistics) only when it lies inside the window; one cut by an edge
 *    adds its inside part to time totals and is counted as cut
 *    (calls: UNFIN). So totals never exceed the window's length per process.
 *  - flight-recorder traces (streams that lost their oldest packets): data
 *    is complete only from the time every stream has data
 *    (bmt_reader.complete_from_ns). Before it, events serve names only:
 *    stacks and intervals start from there, so a call whose start was
 *    overwritten is never counted, and the window begins there at the
 *    earliest.
 *  - the filter: --pid PID|NAME and --name PATTERN keep the processes with
 *    that pid, or that ever had that registered name or label, or (--name)
 *    a registered name, label or initial call matching the '*' pattern, in
 *    OTP's or Elixir's spelling. Names can be learned anywhere in the
 *    trace, so a name filter costs one more pass that reads names only.
 *  - beamtrace's own processes (org_erlang_beamtrace:own_process, recorded
 *    before any flag is set): every event with one of them in a process
 *    field (catalogue kind ID, or a send's destination, by pid or
 *    registered name) is left out of every analysis, filter or not (the
 *    pass reads those fields of every event it reads: model/run.c).
 * Single-threaded.
 */
#ifndef BMT_CLI_SCOPE_H
#define BMT_CLI_SCOPE_H

#include "names.h"
#include "core/catalogue.h"
#include "proc_state.h"
#include "runs.h"
#include "sampled.h"
#include "ctf/reader.h"
#include "base/strtab.h"

#include <errno.h>
#include <stdint.h>

struct bmt_an_scope {
    /* From the command line (the arrays are the caller's). */
    const char *begin_text, *end_text;
    const char **pids;              /* --pid values */
    unsigned pid_count;
    const char **patterns;          /* --name values */
    unsigned pattern_count;
    const char **paths;             /* the trace directories given (one source) */
    unsigned path_count;
    char label[512];                /* how error lines name them (bmt_reader_label) */
    /* Resolved by bmt_an_run. */
    uint64_t first_ns;              /* the trace's first event */
    uint64_t valid_from_ns;         /* state before this time is incomplete (flight recorder) */
    struct bmt_window window;       /* time counted: [begin, end] */
    int windowed;                   /* --begin or --end given */
    int filtering;                  /* --pid or --name given */
    struct bmt_strtab kept;         /* pid texts the filter keeps */
    struct bmt_strtab own;          /* beamtrace's own processes: pid texts and registered names */
    uint64_t own_marks[4];          /* a bit per own text (bmt_strtab_mark): most texts are no own process,
                                     * and a bit test says so before the lookup */
    uint64_t own_hidden_count;      /* events left out because one of them took part */
    struct bmt_runs runs;           /* run intervals (runs.h), fed before each event reaches an analysis */
    struct bmt_names names;         /* current names, fed before each event reaches an analysis */
    /* What the trace holds inside the window, for "the trace lacks" notes. */
    uint64_t sched_count, receive_count, gc_count, call_count;
    /* Sampling (the sample and on_max_rate options): the ratio in force
     * for each tracepoint's events, kept current as the trace is read. */
    struct bmt_sampled sampled;
    /* Set by bmt_an_run: the fields the pass reads, per tracepoint (acc.h's
     * bit i for field i, BMT_NEED_EVENT for the event): what the reader
     * must decode, and no more. */
    uint16_t want[BMT_TP_COUNT];
};

/* A failure that is the command line's fault (exit 2): a bad --begin or
 * --end. */
#define BMT_AN_USAGE (-EDOM)

/* Prepares an empty scope (no window, no filter). */
void bmt_an_scope_init(struct bmt_an_scope *s);
void bmt_an_scope_free(struct bmt_an_scope *s);

/* 1 when the process with pid text `pid`/`len` is kept by the filter (a
 * node-qualified pid also when its <0.x.y> part is). Inline: without a
 * filter (the common case) it costs one test per event. */
int bmt_an_kept(const struct bmt_an_scope *s, const char *pid, size_t len);
static inline int bmt_an_keep(const struct bmt_an_scope *s, const char *pid, size_t len)
{
    return !s->filtering || bmt_an_kept(s, pid, len);
}

/* 1 when state events at `ts` count: not in the incomplete start of a
 * flight-recorder trace. */
static inline int bmt_an_valid(const struct bmt_an_scope *s, uint64_t ts)
{
    return ts >= s->valid_from_ns;
}

/* 1 when [start, end] lies inside the window (a sample for statistics). */
static inline int bmt_an_inside(const struct bmt_an_scope *s, uint64_t start, uint64_t end)
{
    return start >= s->window.begin_ns && end <= s->window.end_ns;
}

/* 1 when `s` is a pid or port rather than a name: "<0.66.0>", "0.66.0",
 * "#Port<0.7>", "kv@h2/<0.66.0>". */
int bmt_pid_like(const char *s);

/* Resolves the filter into s->kept: literal pids at once, names and
 * patterns after a pass over `r` (closed again) that reads names only.
 * Returns 0; -ENOENT when a name or pattern matches no process of the
 * trace; -ENOMEM or the reader's error (r->error set in every case). */
int bmt_an_scope_filter(struct bmt_an_scope *s, struct bmt_reader *r);

/* Resolves the window from --begin/--end (s->first_ns set) and the
 * trace's complete start. Returns 0, or BMT_AN_USAGE with r->error set. */
int bmt_an_scope_window(struct bmt_an_scope *s, struct bmt_reader *r);

/* Parses a --begin/--end time: "+2s" (after the first event, first_ns),
 * "HH:MM:SS[.frac]" (local time, on the day of the first event),
 * "YYYY-MM-DD HH:MM:SS[.frac]" or with 'T', either optionally ending in
 * 'Z' for UTC, or ns since the epoch. Sets *ts (reader time, clamped at 0).
 * Returns 0 or -EINVAL. */
int bmt_an_parse_time(const struct bmt_reader *r, const char *text, uint64_t first_ns,
                      uint64_t *ts);

#endif
