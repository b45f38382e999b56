/* `beamtrace flame`: where time goes per call stack, as folded stacks or
 * an interactive SVG flame graph (out/flame.h says how it is drawn,
 * model/flame.h what the widths are).
 *
 * By default a function's frame is as wide as the time it ran on a CPU,
 * and its process's time off CPU or collecting garbage while in it is
 * drawn as [runnable], [waiting] and [gc] frames on top; --on-cpu leaves
 * the off-CPU frames out, --off-cpu keeps only them. The root frame is the
 * process unless --merge-processes (pools of identical workers).
 */
#include "analysis.h"
#include "out/flame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the command ---- */

struct flame_opts {
    struct bmt_common common;
    int folded, merge, on_cpu, off_cpu;
    int unit;               /* index in unit_values */
    const char *title;
    uint64_t width;
};

#define AT(field, T) BMT_OPT_AT(struct flame_opts, field, T)

static const char *const unit_values[] = {"us", "ns", NULL};

static const struct bmt_opt options[] = {
    {.name = "on-cpu", .type = BMT_OPT_FLAG, .help = "on-CPU time only (no off-CPU frames)",
     .excludes = "off-cpu", .offset = AT(on_cpu, int)},
    {.name = "off-cpu", .type = BMT_OPT_FLAG,
     .help = "off-CPU time only ([runnable], [waiting] frames)", .offset = AT(off_cpu, int)},
    {.name = "folded", .type = BMT_OPT_FLAG,
     .help = "print folded stacks instead (root;...;leaf COUNT), for flamegraph.pl, speedscope "
             "or grep",
     .offset = AT(folded, int)},
    {.name = "unit", .type = BMT_OPT_ENUM, .help = "unit of folded counts (rounded)", .def = "us",
     .values = unit_values, .offset = AT(unit, int)},
    {.name = "merge-processes", .type = BMT_OPT_FLAG,
     .help = "no process root frame: merge all processes", .offset = AT(merge, int)},
    {.name = "title", .type = BMT_OPT_TEXT, .arg = "TEXT", .help = "SVG title",
     .def = "Flame graph", .offset = AT(title, const char *)},
    {.name = "width", .type = BMT_OPT_COUNT, .arg = "PIXELS", .help = "SVG width",
     .def = "1200", .min = 200, .max = 100000, .offset = AT(width, uint64_t)},
    {0},
};

struct printing {
    const struct flame_opts *op;
    const struct bmt_callstack *cs;
    enum bmt_flame_mode mode;
};

static int print(struct bmt_out *o, void *ctx)
{
    const struct printing *p = ctx;
    char title[600], sub[200];
    if (p->op->folded)
        return bmt_flame_folded(o, p->cs, p->op->unit == 1 ? 1 : 1000, p->mode);
    bmt_flame_subtitle(p->cs, p->mode, sub, sizeof sub);
    snprintf(title, sizeof title, "%s: %s", p->op->title, sub);
    return bmt_flame_svg(o, p->cs, title, (unsigned)p->op->width, 1, p->mode);
}

/* What the graph lacks or left out, on stderr. */
static void warnings(struct bmt_analysis *a, const struct bmt_callstack *cs)
{
    const struct bmt_an_scope *s = &a->scope;
    if (s->call_count == 0)
        bmt_reader_warn(&a->r, "%s: no function_call events%s: the flame graph is empty (trace "
                        "with the call flag and erlang:trace_pattern/3, return_trace in the "
                        "match spec)", a->dir, s->windowed || s->filtering ? " in the chosen "
                        "window and processes" : "");
    if (cs->pruned_calls || cs->pruned_processes)
        bmt_reader_warn(&a->r, "%s: the call tree reached %u stacks: %llu calls in new stacks were "
                        "charged to their callers, %llu processes drawn as [other processes]",
                        a->dir, cs->max_nodes, (unsigned long long)cs->pruned_calls,
                        (unsigned long long)cs->pruned_processes);
}

static int run(void *opts_)
{
    const struct flame_opts *op = opts_;
    /* Kilobytes of SVG markup on a terminal help no one. */
    if (!op->folded && !op->common.output && isatty(STDOUT_FILENO))
        return bmt_cli_usage_error("flame", "will not write an SVG to a terminal: give -o FILE "
                                   "(e.g. -o flame.svg), pipe it, or use --folded");
    struct bmt_analysis a;
    struct bmt_callstack cs;
    bmt_analysis_begin(&a, "flame", &op->common);
    bmt_callstack_init(&cs, &a.scope);
    cs.tree = 1;
    cs.merge_processes = op->merge;
    struct printing p = {op, &cs, op->on_cpu ? BMT_FLAME_ON_CPU
                                  : op->off_cpu ? BMT_FLAME_OFF_CPU : BMT_FLAME_ALL};
    struct bmt_an_sub sub = {&bmt_callstack_acc, &cs};
    int status = bmt_analysis_run(&a, &sub, 1);
    if (status == 0 && p.mode != BMT_FLAME_ALL && !a.scope.sched_count) {
        status = bmt_cli_usage_error("flame", "%s needs process_scheduled events, which %s lacks "
                                     "(record with the running flag)",
                                     op->on_cpu ? "--on-cpu" : "--off-cpu", a.dir);
    } else if (status == 0) {
        status = bmt_analysis_print(&a, op->common.output, print, &p);
        warnings(&a, &cs);
    }
    bmt_callstack_free(&cs);
    bmt_analysis_end(&a);
    return status;
}

const struct bmt_command bmt_cmd_flame = {
    .name = "flame",
    .summary = "flame graph: on-CPU time per call stack, off-CPU as frames",
    .description =
        "Rebuilds call stacks as `calls` does. A function's frame is as wide as the\n"
        "time its process ran on a CPU in it; time off CPU is drawn as distinct\n"
        "[runnable] and [waiting] frames above it, collections as [gc] (without\n"
        "process_scheduled events all time is wall time, charged to the function).\n"
        "The counts sum to the time spent in root-level traced calls. The root frame\n"
        "is the process (\"<0.66.0> name\"). Default output: a self-contained\n"
        "interactive SVG (click a frame to zoom, hover for times).",
    .opts = options, .uses = BMT_USES_SCOPE | BMT_USES_OUTPUT | BMT_USES_DIRS,
    .size = sizeof(struct flame_opts),
    .run = run,
};
