/* `beamtrace calls`: per function (or per process and function) call
 * counts, inclusive and own time, latency percentiles, where the time went
 * (on CPU, runnable, waiting for a message, in GC), the slowest calls, and
 * the calls slower than a threshold (seed 003's "Func calls longer than 1
 * millisecond"), listed as their frames end, before the table. The
 * analysis is model/calls.c, the tables out/calls_print.c.
 */
#include "analysis.h"
#include "model/calls.h"
#include "model/capture_info.h"
#include "out/calls_print.h"
#include "out/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct calls_opts {
    struct bmt_common common;
    int breakdown;
    uint64_t slowest;
    uint64_t slower_ns;
    int by;                 /* index in by_values */
    uint64_t top;
    const char *group_by;   /* --group-by: "return" or "arg:N", or NULL */
};

#define AT(field, T) BMT_OPT_AT(struct calls_opts, field, T)

static const char *const by_values[] = {"function", "pid", NULL};

/* --group-by's value: 0 for return, N for arg:N (1..255), -1 otherwise. */
static int group_arg(const char *s)
{
    if (strcmp(s, "return") == 0)
        return 0;
    char *end;
    if (strncmp(s, "arg:", 4) != 0 || s[4] < '1' || s[4] > '9')
        return -1;
    long n = strtol(s + 4, &end, 10);
    return *end || n > 255 ? -1 : (int)n;
}

static int check_group_by(const char *value, char *err, size_t size)
{
    if (group_arg(value) >= 0)
        return 0;
    snprintf(err, size, "--group-by '%s': expected return or arg:N (N from 1 to 255, e.g. arg:1)",
             value);
    return -1;
}

static const struct bmt_opt options[] = {
    {.name = "breakdown", .type = BMT_OPT_FLAG,
     .help = "where each function's time went: on CPU, runnable (ready, not running), waiting "
             "for a message, GC; sums, who sent the messages that ended each function's waits, "
             "per-call p50/p99, and the slowest calls with their process. Needs the running, 'receive' and garbage_collection flags on the callers "
             "and send on whoever messages them; says what is missing",
     .offset = AT(breakdown, int)},
    {.name = "slowest", .type = BMT_OPT_COUNT, .arg = "N",
     .help = "how many slowest calls --breakdown lists", .def = "10", .min = 1, .max = 1000,
     .offset = AT(slowest, uint64_t)},
    {.name = "slower-than", .letter = 's', .type = BMT_OPT_DURATION, .arg = "DURATION",
     .help = "first list every call longer than DURATION (e.g. 1ms, 250us, 2s, 800ns) with its "
             "process, start and end times, as it ends",
     .flags = BMT_OPT_NONZERO, .example = "1ms", .offset = AT(slower_ns, uint64_t)},
    {.name = "by", .letter = 'b', .type = BMT_OPT_ENUM,
     .help = "one row per function, or per process and function", .def = "function",
     .values = by_values, .offset = AT(by, int)},
    {.name = "group-by", .type = BMT_OPT_TEXT, .arg = "return|arg:N",
     .help = "also split each function's latency by the value it returned, or by its argument "
             "N: count and p50/p99 per distinct value (cut at 64 bytes; past 16 values, "
             "\"other\"). Record with record --results or --args",
     .check = check_group_by, .example = "return", .offset = AT(group_by, const char *)},
    {.name = "top", .letter = 'n', .type = BMT_OPT_COUNT, .arg = "N",
     .help = "only the N largest rows (default: all)", .offset = AT(top, uint64_t)},
    {0},
};

/* Where slow calls are printed as they are found. */
struct slow_out {
    struct bmt_out *o;
    const struct bmt_reader *r;
    int json;
};

static void print_slow(void *ctx, const struct bmt_calls *c, uint32_t pid,
                       const struct bmt_frame *f, uint64_t end_ns, unsigned flags)
{
    const struct slow_out *so = ctx;
    if (so->json)
        bmt_calls_slow_json(so->o, c, so->r, pid, f, end_ns, flags);
    else
        bmt_calls_slow_text(so->o, c, so->r, pid, f, end_ns, flags);
}

/* The JSON object's start, before the slow calls stream in. */
static void json_start(struct bmt_out *o, const struct calls_opts *op,
                       const struct bmt_capture_info *cap)
{
    bmt_out_str(o, "{\"trace\": ");
    bmt_json_cstr(o, op->common.label);
    if (cap)
        bmt_json_capture(o, cap);
    if (op->slower_ns) {
        bmt_out_str(o, ", \"slower_than_ns\": ");
        bmt_out_u64(o, op->slower_ns);
        bmt_out_str(o, ", \"slow_calls\": [");
    }
}

/* --group-by on a trace without the value events: what to record. */
static int no_values(const struct bmt_groupby *g, uint32_t functions)
{
    if (g->arg)
        bmt_cli_error("calls --group-by arg:%u: the trace has no function_call_args events%s: "
                      "record with beamtrace record --calls SPEC --args (or beamtrace:start/1, "
                      "trace/2 option args => true)",
                      g->arg, functions ? " (its calls were recorded without their arguments)" : "");
    else
        bmt_cli_error("calls --group-by return: the trace has no function_result events%s: "
                      "record with beamtrace record --calls 'SPEC -> return' --results (or "
                      "beamtrace:start/1, trace/2 option results => true)",
                      functions ? " (its returns were recorded without their values)" : "");
    return BMT_EXIT_FAIL;
}

static int run(void *p)
{
    const struct calls_opts *op = p;
    int json = op->common.format == 1;
    struct bmt_analysis a;
    struct bmt_out o;
    if (bmt_an_out_open(&o, NULL) != 0)
        return BMT_EXIT_FAIL;
    bmt_analysis_begin(&a, "calls", &op->common);
    struct bmt_calls c;
    bmt_calls_init(&c, &a.scope);
    c.by_pid = op->by == 1;
    c.breakdown = op->breakdown;
    c.slowest_cap = (unsigned)op->slowest;
    c.slower_ns = op->slower_ns;
    struct slow_out so = {&o, &a.r, json};
    c.on_slow = print_slow;
    c.slow_ctx = &so;
    /* A flight capture: said first; a call trigger's call is found in the
     * pass and marked among the slowest. */
    struct bmt_capture_info cap;
    int capture = bmt_capture_info_load(op->common.dirs.v, op->common.dirs.n, &cap);
    if (capture && strcmp(cap.kind, "call") == 0) {
        c.trigger_func = cap.function;
        c.trigger_pid = cap.pid;
        c.trigger_ns = cap.trigger_ns;
    }
    if (json) {
        json_start(&o, op, capture ? &cap : NULL);
    } else if (capture) {
        char line[600];
        bmt_capture_info_text(&cap, line, sizeof line);
        bmt_out_str(&o, line);
        bmt_out_str(&o, c.trigger_func && op->breakdown ? " (marked among the slowest calls)\n\n"
                                                       : "\n\n");
    }
    struct bmt_groupby g;
    int grouped = op->group_by != NULL;
    struct bmt_an_sub subs[2] = {{&bmt_calls_acc, &c}, {&bmt_groupby_acc, &g}};
    if (grouped) {
        if (bmt_groupby_init(&g, (unsigned)group_arg(op->group_by)) < 0) {
            bmt_groupby_free(&g);
            bmt_calls_free(&c);
            bmt_analysis_end(&a);
            bmt_cli_error("out of memory; free some memory");
            return BMT_EXIT_FAIL;
        }
        g.pending = &c.cs.value;
        c.group = &g;
    }
    int status = bmt_analysis_run(&a, subs, grouped ? 2 : 1);
    if (status == 0 && grouped && !g.value_events)
        status = no_values(&g, c.stat_count);
    uint32_t *order = status == 0 ? bmt_calls_sorted(&c) : NULL;
    uint32_t *group_order = status == 0 && grouped ? bmt_groupby_sorted(&g, &c.cs.funcs) : NULL;
    if (status != 0) {
        o.len = 0; /* nothing half-written on stdout */
    } else if (!order || (grouped && !group_order)) {
        o.len = 0;
        bmt_cli_error("out of memory; free some memory");
        status = BMT_EXIT_FAIL;
    } else {
        struct bmt_calls_view v = {&c, &a.r, &a.pass, order,
                                   op->top && op->top < c.stat_count ? op->top : c.stat_count,
                                   op->slower_ns, group_order};
        if (json)
            bmt_calls_json(&o, &v);
        else
            bmt_calls_text(&o, &v);
    }
    free(order);
    free(group_order);
    if (grouped)
        bmt_groupby_free(&g);
    bmt_calls_free(&c);
    bmt_analysis_end(&a);
    int out_status = bmt_an_out_close(&o, "calls");
    return status == BMT_EXIT_OK ? out_status : status;
}

const struct bmt_command bmt_cmd_calls = {
    .name = "calls",
    .summary = "per function calls, latency percentiles, where the time went",
    .description =
        "Rebuilds each process's call stack from function_call, function_return and\n"
        "function_exception events and prints, per function (m:f/a, Elixir modules as\n"
        "Elixir writes them): finished calls, calls cut by the window or open at\n"
        "process exit or trace end (UNFIN), calls ended by an exception (EXC), total\n"
        "(inclusive) time, own time (OWN CPU: the part seen on CPU or in GC, never\n"
        "time seen off CPU; OWN WALL when the trace has no scheduling events), and\n"
        "latency\n"
        "p50/p90/p99/p99.9/max (within 1%), largest total first. With --format json,\n"
        "each function's waiting time by who ended it (waiting_from: the senders of the\n"
        "messages that woke it, the top four, the rest in waiting_from_other_ns). Record with\n"
        "erlang:trace_pattern(MFA, [{'_',[],[{return_trace},{exception_trace}]}], [local]).",
    .opts = options, .uses = BMT_USES_ANALYSIS, .size = sizeof(struct calls_opts),
    .run = run,
};
