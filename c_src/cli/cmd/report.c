/* `beamtrace report`: one self-contained HTML page (inline CSS and SVG,
 * one small inline script for the flame graph's zoom, nothing fetched)
 * at the window's width, leading with the answer: the slowest functions by
 * p99, each with a stacked bar of where its time went and one plain line
 * reading it (out/slowest_html.h), then the timeline, the trace summary, the latency histograms (send -> scheduled, GC
 * pauses, the top functions' call latency), the top functions with where
 * their time went, the processes, the flame graph (on-CPU time with
 * off-CPU frames), a timeline of when the busiest processes ran and the
 * counters of the samples option as line charts (counters.h).
 *
 * Everything comes from one pass that feeds the accumulators model/report.h
 * composes (calls, sched, gc, procs, the timeline and the counters), under
 * the same scope as the other analyses (--begin, --end, --pid, --name);
 * processes appear as "<0.66.0> name".
 */
#include "analysis.h"
#include "out/report_html.h"

#include <stdio.h>

struct report_opts {
    struct bmt_common common;
    const char *output;
};

static const struct bmt_opt options[] = {
    {.name = "output", .letter = 'o', .type = BMT_OPT_FILE, .arg = "FILE",
     .help = "the HTML file to write (- for stdout; made private, 0600; never through a "
     "symlink)", .flags = BMT_OPT_REQUIRED, .example = "report.html",
     .offset = BMT_OPT_AT(struct report_opts, output, const char *)},
    {0},
};

struct printing {
    const struct bmt_analysis *a;
    const struct bmt_report *r;
};

static int print(struct bmt_out *o, void *ctx)
{
    const struct printing *p = ctx;
    return bmt_report_html(o, p->a->dir, &p->a->r, p->r, &p->a->scope, &p->a->pass);
}

static int run(void *opts_)
{
    const struct report_opts *op = opts_;
    struct bmt_analysis a;
    struct bmt_report r;
    bmt_analysis_begin(&a, "report", &op->common);
    int status = BMT_EXIT_FAIL;
    if (bmt_report_init(&r, &a.scope) < 0)
        bmt_cli_error("out of memory; free some memory");
    else
        status = bmt_analysis_run(&a, r.subs, r.sub_count);
    struct printing p = {&a, &r};
    if (status == 0)
        status = bmt_analysis_print(&a, op->output, print, &p);
    bmt_report_free(&r);
    bmt_analysis_end(&a);
    return status;
}

const struct bmt_command bmt_cmd_report = {
    .name = "report",
    .summary = "one self-contained HTML page: slowest functions, timeline, flame graph",
    .synopsis = "[OPTION]... DIR... -o FILE",
    .description =
        "Reads the trace once and writes one HTML page (no network needed). It leads\n"
        "with the slowest functions by p99: each with its p50 and p99, a stacked bar of\n"
        "where its time went (on CPU, runnable, waiting, GC) and one line reading it\n"
        "(\"mostly runnable: the schedulers were saturated\"). A function mostly waiting\n"
        "names who sent the messages that ended its waits, when the trace has their\n"
        "sends (\"mostly waiting on messages from rabbit_channel (<0.812.0>), 83% of the\n"
        "wait\"; the top two with their shares when none ended over half). Then a\n"
        "timeline of when\n"
        "the busiest processes ran (bars: the share of each time slice they ran; lives\n"
        "end at exit), the summary and events per tracepoint, the send -> scheduled-in\n"
        "latency, GC pause and top functions' call latency histograms (inline SVG), the\n"
        "top functions with where their time went, processes and exit reasons, the\n"
        "flame graph (click to zoom) and the counters. The page takes the window's width.",
    .opts = options, .uses = BMT_USES_SCOPE | BMT_USES_DIRS,
    .size = sizeof(struct report_opts),
    .run = run,
};
