/* `beamtrace gc`: garbage collection pauses (gc_*_start -> the same
 * process's matching gc_*_end; minor and major apart) as quantize
 * histograms with percentiles, words reclaimed, and the processes that
 * spent the most time collecting.
 *
 * A pause is a sample when it starts and ends inside the window; one cut by
 * an edge adds its inside part to its process's total and is counted apart.
 * Reclaimed totals add every gc_*_end event inside the window, matched or
 * not, so they equal the sum over those end events. Memory: per process.
 */
#include "analysis.h"
#include "model/gc.h"
#include "out/hist_print.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <stdio.h>

static void print_kind(struct bmt_out *o, const struct bmt_gc *g, int k, int json)
{
    const struct bmt_hist *h = &g->hist[k];
    /* Scaled back in a sampled trace; the histogram is of those kept. */
    uint64_t count = h->count + g->unkept_count[k], total_ns = h->sum + g->unkept_pause_ns[k];
    char buf[256];
    if (json) {
        bmt_out_str(o, k ? "\"major\": {" : "\"minor\": {");
        snprintf(buf, sizeof buf, "\"count\": %llu, \"kept_count\": %llu, ",
                 (unsigned long long)count, (unsigned long long)h->count);
        bmt_out_str(o, buf);
        bmt_hist_print_json_quantiles(o, h);
        snprintf(buf, sizeof buf, ", \"pause_total_ns\": %llu, \"reclaimed_words\": %llu, "
                 "\"quantize_ns\": ", (unsigned long long)total_ns,
                 (unsigned long long)g->reclaimed_words[k]);
        bmt_out_str(o, buf);
        bmt_hist_print_json_quantize(o, h);
        bmt_out_char(o, '}');
        return;
    }
    struct bmt_hist_texts t;
    bmt_hist_texts(h, &t);
    bmt_duration_text(total_ns, t.total);
    snprintf(buf, sizeof buf, "%s collections: %llu, pause total %s, %llu words reclaimed\n",
             k ? "major" : "minor", (unsigned long long)count, t.total,
             (unsigned long long)g->reclaimed_words[k]);
    bmt_out_str(o, buf);
    if (!h->count)
        return;
    bmt_out_str(o, "pause, ns:\n");
    bmt_hist_print_quantize(o, h);
    snprintf(buf, sizeof buf, "p50 %s  p90 %s  p99 %s  max %s\n", t.p50, t.p90, t.p99, t.max);
    bmt_out_str(o, buf);
}

struct printing {
    const struct bmt_analysis *a;
    const struct bmt_gc *g;
    int json;
};

/* The processes that paused the most. */
static void print_top(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_names *names = &p->a->scope.names;
    uint32_t top[BMT_GC_TOP];
    unsigned n = bmt_gc_top(p->g, top);
    char buf[512], label[600], d[32];
    if (p->json)
        bmt_out_str(o, ", \"top_collectors\": [");
    else if (n) {
        snprintf(buf, sizeof buf, "\ntop collectors by total pause\n%14s %8s %16s  %s\n", "PAUSE",
                 "GCS", "RECLAIMED", "PROCESS");
        bmt_out_str(o, buf);
    }
    else if (!p->g->hist[0].count && !p->g->hist[1].count)
        bmt_out_str(o, "\n(no gc events: trace with the garbage_collection flag)\n");
    for (unsigned i = 0; i < n; i++) {
        const struct bmt_gc_proc *g = &p->g->procs[top[i]];
        bmt_names_label(names, bmt_strtab_str(&names->pids, top[i]),
                        bmt_strtab_len(&names->pids, top[i]), label, sizeof label);
        if (p->json) {
            bmt_out_str(o, i ? ", {\"process\": " : "{\"process\": ");
            bmt_json_cstr(o, label);
            snprintf(buf, sizeof buf, ", \"pause_ns\": %llu, \"gcs\": %llu, "
                     "\"reclaimed_words\": %llu}", (unsigned long long)g->pause_ns,
                     (unsigned long long)g->gc_count, (unsigned long long)g->reclaimed_words);
            bmt_out_str(o, buf);
        } else {
            bmt_duration_text(g->pause_ns, d);
            snprintf(buf, sizeof buf, "%14s %8llu %16llu  ", d, (unsigned long long)g->gc_count,
                     (unsigned long long)g->reclaimed_words);
            bmt_out_str(o, buf);
            bmt_out_str(o, label);
            bmt_out_char(o, '\n');
        }
    }
    if (p->json)
        bmt_out_str(o, "]}\n");
}

static int print_gc(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_gc *g = p->g;
    char buf[256];
    if (p->json) {
        bmt_out_str(o, "{\"trace\": ");
        bmt_json_cstr(o, p->a->dir);
        bmt_out_str(o, ", ");
        print_kind(o, g, 0, 1);
        bmt_out_str(o, ", ");
        print_kind(o, g, 1, 1);
        snprintf(buf, sizeof buf, ", \"unmatched\": %llu, \"cut_by_window\": %llu, ",
                 (unsigned long long)g->unmatched_count, (unsigned long long)g->cut_count);
        bmt_out_str(o, buf);
        bmt_json_window(o, &p->a->r, &p->a->scope, &p->a->pass);
    } else {
        print_kind(o, g, 0, 0);
        bmt_out_char(o, '\n');
        print_kind(o, g, 1, 0);
        if (g->unmatched_count) {
            snprintf(buf, sizeof buf, "\n%llu start or end events without their pair "
                     "(collections running when tracing started or stopped)\n",
                     (unsigned long long)g->unmatched_count);
            bmt_out_str(o, buf);
        }
    }
    print_top(o, p);
    return 0;
}

static int print(struct bmt_out *o, const struct bmt_analysis *a, void *self, const void *opts)
{
    const struct printing p = {a, self, ((const struct bmt_common *)opts)->format == 1};
    return print_gc(o, &p);
}

const struct bmt_command bmt_cmd_gc = {
    .name = "gc",
    .summary = "garbage collection pauses, words reclaimed, top collectors",
    .description =
        "Pause of each collection (gc_minor_start -> gc_minor_end, gc_major_start ->\n"
        "gc_major_end of the same process) as quantize histograms in ns with\n"
        "percentiles, minor and major apart; words reclaimed; the ten processes with\n"
        "the largest total pause. Record with the garbage_collection flag.",
    .uses = BMT_USES_ANALYSIS, .size = sizeof(struct bmt_common),
    .acc = &bmt_gc_acc, .state_size = sizeof(struct bmt_gc),
    .print = print,
};
