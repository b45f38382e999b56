/* `beamtrace export --format chrome`: the trace as Chrome Trace Event
 * JSON, which Perfetto (ui.perfetto.dev, "Open trace file") and
 * chrome://tracing open. What goes on which track is model/tracks.h; how
 * it is written, out/chrome.h. Events are written as the trace is read:
 * state is per process, plus the sends waiting for their receive.
 */
#include "analysis.h"
#include "model/tracks.h"
#include "out/chrome.h"

#include <stdio.h>
#include <unistd.h>

static const char *const format_values[] = {"chrome", "json", NULL};

static const struct bmt_opt options[] = {
    {.name = "format", .type = BMT_OPT_ENUM,
     .help = "the output format: Chrome Trace Event JSON (json is another name for it)",
     .def = "chrome", .values = format_values,
     .offset = BMT_OPT_AT(struct bmt_common, format, int)},
    {0},
};

/* What the export could not draw, and how a sampled trace scales back,
 * on stderr. */
static void warnings(const struct bmt_tracks *t, const struct bmt_chrome *w)
{
    if (w->weight_max > 1)
        bmt_cli_error("note: sampled (up to 1 in %u): each event kept carries args.stands_for, "
                      "the events it stands for; sum it (and dur times it) for counts and totals "
                      "scaled back", w->weight_max);
    if (t->flows.dropped_count)
        bmt_cli_error("warning: %llu sends were never received within %u pending; they have "
                      "no flow arrow", (unsigned long long)t->flows.dropped_count,
                      BMT_FLOWS_MAX_PENDING);
    if (t->uncertain_links)
        bmt_cli_error("warning: %llu message links are uncertain (equal messages pending "
                      "around discarded events) and have no flow arrow; see 'beamtrace "
                      "messages'", (unsigned long long)t->uncertain_links);
}

static int run(void *opts_)
{
    const struct bmt_common *c = opts_;
    struct bmt_analysis a;
    struct bmt_out o;
    if (bmt_an_out_open(&o, c->output) != 0)
        return BMT_EXIT_FAIL;
    bmt_analysis_begin(&a, "export", c);
    struct bmt_tracks t;
    struct bmt_chrome w;
    bmt_tracks_acc.init(&t, &a.scope);
    t.r = &a.r;
    t.sink = &bmt_chrome_sink;
    t.sink_ctx = &w;
    bmt_chrome_begin(&w, &o, &t, &a.r, a.dir);
    struct bmt_an_sub sub = {&bmt_tracks_acc, &t};
    int status = bmt_analysis_run(&a, &sub, 1);
    if (status == 0 && bmt_chrome_end(&w) < 0) {
        bmt_cli_error("out of memory; free some memory");
        status = BMT_EXIT_FAIL;
    }
    if (status == 0)
        warnings(&t, &w);
    if (status != 0)
        o.len = 0; /* what is not written yet stays unwritten */
    int out_status = bmt_an_out_close(&o, c->output ? c->output : "export");
    if (status != 0)
        bmt_an_out_discard(&o, c->output); /* not a whole export */
    bmt_chrome_free(&w);
    bmt_tracks_free(&t);
    bmt_analysis_end(&a);
    return status == BMT_EXIT_OK ? out_status : status;
}

const struct bmt_command bmt_cmd_export = {
    .name = "export",
    .summary = "Chrome Trace Event JSON for Perfetto and chrome://tracing",
    .description =
        "Writes the trace as Chrome Trace Event JSON (open it in ui.perfetto.dev or\n"
        "chrome://tracing). Group \"BEAM calls and events\" (pid 1) has one track per\n"
        "Erlang process, named \"<0.66.0> name\", with nested function call slices\n"
        "(stacks rebuilt as `calls` does), each garbage collection as a slice as long\n"
        "as its pause, instants for spawn, exit and register, 1 ns slices for sends\n"
        "and receives, and flow arrows from each send to its receive (same receiver\n"
        "and message, first in first out; with links recorded, each link `beamtrace\n"
        "messages` makes, across nodes too). Group \"BEAM\n"
        "scheduling\" (pid 2) has the scheduled-in periods of the same processes;\n"
        "those on a dirty scheduler have args.scheduler dirty_cpu or dirty_io. A\n"
        "cluster gets both groups per node (\"NODE: BEAM calls and events\", ...).\n"
        "Times are microseconds since the window's start. Use --begin/--end to keep a\n"
        "busy node's export small enough for a browser. In a sampled trace each event\n"
        "kept 1 in N has args.stands_for N (sum it for counts and totals scaled back),\n"
        "and each group's label says so.",
    .opts = options, .uses = BMT_USES_SCOPE | BMT_USES_OUTPUT | BMT_USES_DIRS,
    .size = sizeof(struct bmt_common),
    .run = run,
};
