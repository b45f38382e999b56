/* What the analysis subcommands (calls, sched, procs, gc, flame, export,
 * report) share: the catalogue field indices they read, the one-pass
 * driver over a trace, duration parsing and time/JSON formatting.
 *
 * Every analysis reads the trace once, in timestamp order
 * (bmt_reader_next), and keeps state per process, per function or per
 * distinct stack, never per event. Single-threaded.
 */
#ifndef BMT_CLI_ANALYSIS_H
#define BMT_CLI_ANALYSIS_H

#include "out.h"
#include "reader.h"

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
};

/* The indices (computed on first use; aborts if the catalogue lacks a
 * field, which is a build mistake, not a trace problem). */
const struct bmt_an_fields *bmt_an_fields(void);

/* Summary of one pass, filled by bmt_an_run. */
struct bmt_an_pass {
    uint64_t event_count;
    uint64_t first_ns, last_ns;       /* trace clock; valid when event_count > 0 */
    uint64_t discarded_count;         /* sum over streams, after the pass */
    uint64_t lost_packet_count;
};

/* Opens `dir` into `r` and calls `feed(ctx, rec)` for every event in
 * timestamp order. Stops at the first negative return of `feed`. Returns 0;
 * -EINVAL/-errno with r->error set for trace problems; or feed's negative
 * value (r->error set to "out of memory" for -ENOMEM). The caller closes r
 * in every case. */
int bmt_an_run(struct bmt_reader *r, const char *dir,
               int (*feed)(void *ctx, const struct bmt_record *rec), void *ctx,
               struct bmt_an_pass *pass);

/* Prints the line "beamtrace: DIR: <error>" for a failed bmt_an_run and
 * returns BMT_EXIT_FAIL. */
int bmt_an_fail(const char *dir, const struct bmt_reader *r);

/* Parses a duration such as "1ms", "250us", "1.5s", "800ns" or "800"
 * (nanoseconds) into *ns. Returns 0 or -EINVAL. */
int bmt_an_parse_duration(const char *text, uint64_t *ns);

/* Writes "HH:MM:SS.nnnnnnnnn" (local time, as `view` prints it) of trace
 * time `ts_ns` into out. */
void bmt_an_clock_text(const struct bmt_reader *r, uint64_t ts_ns, char out[32]);

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

/* Common command-line parsing for "CMD [options] DIR": handles --help,
 * --format (when `json` is non-NULL), and one positional directory. Options
 * specific to the command are passed to `opt(ctx, code, arg)` (return 0 or a
 * usage-error status). `extra` is a getopt_long table of the command's
 * options terminated by a zero row; `shortopts` their short letters.
 * Returns 0 with *dir set, BMT_EXIT_OK after --help (*dir NULL), or the
 * usage error status. */
struct option;
int bmt_an_parse_args(const char *cmd, int argc, char **argv, const struct option *extra,
                      const char *shortopts, int (*opt)(void *ctx, int code, const char *arg),
                      void *ctx, int *json, const char **dir);

/* Opens stdout (or `path` when non-NULL, created/truncated) for output.
 * Returns 0, or prints the error line and returns BMT_EXIT_FAIL. */
int bmt_an_out_open(struct bmt_out *o, const char *path);

/* Closes `o` (and its file); prints the error line and returns
 * BMT_EXIT_FAIL on a write error, else BMT_EXIT_OK. */
int bmt_an_out_close(struct bmt_out *o, const char *what);

#endif
