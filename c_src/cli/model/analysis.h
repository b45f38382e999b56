/* What the analysis subcommands (calls, sched, procs, gc, flame, export,
 * report) share: the catalogue field indices they read, the scope every
 * one of them takes (time window, process filter, names), the one-pass
 * driver over a trace, duration and time parsing, and time/JSON
 * formatting.
 *
 * Every analysis reads the trace once, in time order (bmt_reader_next),
 * and keeps state per process, per function or per distinct stack, never
 * per event and never per unit of time. Single-threaded.
 *
 * The scope (options --begin, --end, --pid, --name of every analysis):
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
 *    registered name) is left out of every analysis, filter or not.
 */
#ifndef BMT_CLI_ANALYSIS_H
#define BMT_CLI_ANALYSIS_H

#include "names.h"
#include "base/out.h"
#include "proc_state.h"
#include "ctf/reader.h"

#include <stdint.h>

/* Field indices, found by name in the catalogue once (OTP's field names). */
struct bmt_an_fields {
    unsigned call_pid, call_entry;      /* function_call, function_return */
    unsigned exc_pid, exc_entry, exc_class;
    unsigned send_from, send_to, send_msg;
    unsigned recv_to, recv_msg;
    unsigned sched_pid, sched_entry, sched_type;
    unsigned spawn_pid, spawn_parent, spawn_entry;
    unsigned exit_pid, exit_reason;
    unsigned reg_pid, reg_name, reg_type;
    unsigned gc_pid, gc_need, gc_reclaimed, gc_heap, gc_old_heap; /* all gc_* */
    unsigned info_pid, info_name, info_entry, info_label;         /* process_info */
};

/* The indices (computed on first use; aborts if the catalogue lacks a
 * field, which is a build mistake, not a trace problem). */
const struct bmt_an_fields *bmt_an_fields(void);

/* The scope of an analysis (see the header comment). */
struct bmt_an_scope {
    /* From the command line (bmt_an_parse_args). */
    const char *begin_text, *end_text;
    const char **pids;              /* --pid values */
    unsigned pid_count;
    const char **patterns;          /* --name values */
    unsigned pattern_count;
    const char **paths;             /* the trace directories given (one source) */
    unsigned path_count;
    char label[512];                /* how error lines name them (bmt_reader_label) */
    int keep_links;                 /* feed message_*_link events as they are; else as
                                     * OTP's message_send / message_receive (same first fields) */
    /* Called with every packet entered (reader.h on_packet), when set. */
    void (*on_packet)(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info);
    /* Resolved by bmt_an_run. */
    uint64_t first_ns;              /* the trace's first event */
    uint64_t valid_from_ns;         /* state before this time is incomplete (flight recorder) */
    struct bmt_window window;       /* time counted: [begin, end] */
    int windowed;                   /* --begin or --end given */
    int filtering;                  /* --pid or --name given */
    struct bmt_strtab kept;         /* pid texts the filter keeps */
    struct bmt_names names;         /* current names, fed before each event reaches an analysis */
    struct bmt_strtab own;          /* beamtrace's own processes: pid texts and registered names */
    uint64_t own_hidden_count;      /* events left out because one of them took part */
    /* What the trace holds inside the window, for "the trace lacks" notes. */
    uint64_t sched_count, receive_count, gc_count, call_count;
};

/* Prepares an empty scope (no window, no filter). */
void bmt_an_scope_init(struct bmt_an_scope *s);
void bmt_an_scope_free(struct bmt_an_scope *s);

/* 1 when the process with pid text `pid`/`len` is kept by the filter (a
 * node-qualified pid also when its <0.x.y> part is). */
int bmt_an_keep(const struct bmt_an_scope *s, const char *pid, size_t len);

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

/* Summary of one pass, filled by bmt_an_run. */
struct bmt_an_pass {
    uint64_t event_count;             /* events read (up to the window's end) */
    uint64_t first_ns, last_ns;       /* first and last event read; valid when event_count > 0 */
    uint64_t end_ns;                  /* where open intervals close: the last event, or the window's end */
    uint64_t discarded_count;         /* sum over streams, after the pass */
    uint64_t lost_packet_count;
};

/* A bmt_an_run failure that is the command line's fault (exit 2). */
#define BMT_AN_USAGE (-EDOM)

/* Opens `dir` into `r`, resolves `scope` and calls `feed(ctx, rec)` for
 * every event up to the window's end in time order, scope->names already
 * updated by the event. Stops at the first negative return of `feed`.
 * Prints on stderr, once, the warnings about the trace (catalogue events it
 * cannot use, a flight recorder's incomplete start, a time span no real
 * trace has, discarded events). Returns 0; BMT_AN_USAGE with r->error set
 * for a bad --begin/--end; -EINVAL/-errno with r->error set for trace
 * problems; or feed's negative value (r->error set to "out of memory" for
 * -ENOMEM). The caller closes r in every case. */
int bmt_an_run(struct bmt_reader *r, const char *dir, struct bmt_an_scope *scope,
               int (*feed)(void *ctx, const struct bmt_record *rec), void *ctx,
               struct bmt_an_pass *pass);

/* Prints the error line for a failed bmt_an_run ("beamtrace: DIR: ..." and
 * exit 1, or the usage line and exit 2 for BMT_AN_USAGE) and returns the
 * exit status. */
int bmt_an_fail(const char *cmd, const char *dir, const struct bmt_reader *r, int rc);

/* Parses a duration such as "1ms", "250us", "1.5s", "800ns" or "800"
 * (nanoseconds) into *ns. Returns 0 or -EINVAL. */
int bmt_an_parse_duration(const char *text, uint64_t *ns);

/* Parses a --begin/--end time: "+2s" (after the first event, first_ns),
 * "HH:MM:SS[.frac]" (local time, on the day of the first event),
 * "YYYY-MM-DD HH:MM:SS[.frac]" or with 'T', either optionally ending in
 * 'Z' for UTC, or ns since the epoch. Sets *ts (reader time, clamped at 0).
 * Returns 0 or -EINVAL. */
int bmt_an_parse_time(const struct bmt_reader *r, const char *text, uint64_t first_ns,
                      uint64_t *ts);

/* Writes "HH:MM:SS.nnnnnnnnn" (local time, as `view` prints it) of reader
 * time `ts_ns` into out. */
void bmt_an_clock_text(const struct bmt_reader *r, uint64_t ts_ns, char out[32]);

/* Writes "YYYY-MM-DD HH:MM:SS.nnnnnnnnn" (local time) of reader time
 * `ts_ns` into out. */
void bmt_an_date_text(const struct bmt_reader *r, uint64_t ts_ns, char out[64]);

/* Writes a human duration ("1.234 ms", "12 ns") of `ns` into out. */
void bmt_an_duration_text(uint64_t ns, char out[32]);

/* Appends `len` bytes as a JSON string literal that is valid UTF-8 whatever
 * the input: invalid sequences become U+FFFD, control bytes are escaped. */
void bmt_an_json_string(struct bmt_out *o, const char *s, size_t len);

/* Same escaping for HTML/SVG text content and attribute values (&<>"'). */
void bmt_an_html_string(struct bmt_out *o, const char *s, size_t len);

/* Appends `v` as a decimal with exactly 3 fractional digits of v/1000
 * (microseconds from nanoseconds). */
void bmt_an_us3(struct bmt_out *o, uint64_t ns);

/* Appends `"window": {...}` describing the scope (JSON, no braces around). */
void bmt_an_json_scope(struct bmt_out *o, const struct bmt_reader *r,
                       const struct bmt_an_scope *s, const struct bmt_an_pass *p);

/* Common command-line parsing for "CMD [options] DIR...": handles --help,
 * --format (when `json` is non-NULL), --begin, --end, --pid, --name (into
 * `scope`, when non-NULL), and the positional directories (into
 * scope->paths: several, or a cluster directory, are read as one source;
 * *dir is then their label). Options specific
 * to the command are passed to `opt(ctx, code, arg)` (return 0 or a
 * usage-error status). `extra` is a getopt_long table of the command's
 * options terminated by a zero row; `shortopts` their short letters.
 * Returns 0 with *dir set, BMT_EXIT_OK after --help (*dir NULL), or the
 * usage error status. */
struct option;
int bmt_an_parse_args(const char *cmd, int argc, char **argv, const struct option *extra,
                      const char *shortopts, int (*opt)(void *ctx, int code, const char *arg),
                      void *ctx, int *json, struct bmt_an_scope *scope, const char **dir);

/* Opens stdout (or `path` when non-NULL, created/truncated) for output.
 * Returns 0, or prints the error line and returns BMT_EXIT_FAIL. */
int bmt_an_out_open(struct bmt_out *o, const char *path);

/* Closes `o` (and its file); prints the error line and returns
 * BMT_EXIT_FAIL on a write error, else BMT_EXIT_OK. */
int bmt_an_out_close(struct bmt_out *o, const char *what);

/* Display form of function text `s`/`len` (Elixir's spelling for Elixir
 * modules) into buf. Returns buf. */
const char *bmt_an_function(const char *s, size_t len, char *buf, size_t size);

#endif
