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
#include "model/analyses.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP 10

void bmt_gc_init(struct bmt_gc *g, struct bmt_an_scope *scope)
{
    memset(g, 0, sizeof *g);
    g->scope = scope;
    bmt_hist_init(&g->hist[0]);
    bmt_hist_init(&g->hist[1]);
}

int bmt_gc_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_gc *g = ctx;
    const struct bmt_an_scope *sc = g->scope;
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    int k, start;
    switch (rec->tp) {
    case BMT_TP_gc_minor_start: k = 0, start = 1; break;
    case BMT_TP_gc_minor_end: k = 0, start = 0; break;
    case BMT_TP_gc_major_start: k = 1, start = 1; break;
    case BMT_TP_gc_major_end: k = 1, start = 0; break;
    default: return 0;
    }
    if (!bmt_an_valid(sc, ts) || !bmt_an_keep(sc, v[F->gc_pid].str, v[F->gc_pid].len))
        return 0;
    int64_t pid = bmt_names_pid(&g->scope->names, v[F->gc_pid].str, v[F->gc_pid].len);
    if (pid < 0)
        return (int)pid;
    if ((uint32_t)pid >= g->proc_cap) {
        uint32_t cap = g->proc_cap ? g->proc_cap * 2 : 64;
        while (cap <= (uint32_t)pid)
            cap *= 2;
        struct bmt_gc_proc *p = realloc(g->procs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + g->proc_cap, 0, (cap - g->proc_cap) * sizeof *p);
        g->procs = p;
        g->proc_cap = cap;
    }
    struct bmt_gc_proc *p = &g->procs[pid];
    if (start) {
        if (p->start_ns[k] && p->start_ns[k] - 1 >= sc->window.begin_ns)
            g->unmatched_count++;
        p->start_ns[k] = ts + 1;
        return 0;
    }
    uint64_t reclaimed = v[F->gc_reclaimed].integer;
    if (ts >= sc->window.begin_ns)
        g->reclaimed_words[k] += reclaimed;
    if (!p->start_ns[k]) {
        if (ts >= sc->window.begin_ns)
            g->unmatched_count++;
        return 0;
    }
    uint64_t began = p->start_ns[k] - 1, pause = ts >= began ? ts - began : 0;
    p->start_ns[k] = 0;
    uint64_t from = began > sc->window.begin_ns ? began : sc->window.begin_ns;
    if (ts <= from)
        return 0; /* over before the window */
    p->pause_ns += ts - from;
    if (!bmt_an_inside(sc, began, ts)) {
        g->cut_count++;
        return 0;
    }
    p->gc_count++;
    p->reclaimed_words += reclaimed;
    return bmt_hist_add(&g->hist[k], pause);
}

void bmt_gc_free(struct bmt_gc *g)
{
    free(g->procs);
    bmt_hist_free(&g->hist[0]);
    bmt_hist_free(&g->hist[1]);
}

/* Fills top[] with the pids of the largest total pauses; returns how many. */
static unsigned top_collectors(const struct bmt_gc *g, uint32_t top[TOP])
{
    unsigned n = 0;
    for (uint32_t pid = 0; pid < g->proc_cap; pid++) {
        uint64_t pause = g->procs[pid].pause_ns;
        if (!g->procs[pid].gc_count && !g->procs[pid].pause_ns)
            continue;
        if (n == TOP && pause <= g->procs[top[n - 1]].pause_ns)
            continue;
        unsigned i = n < TOP ? n++ : n - 1;
        while (i > 0 && g->procs[top[i - 1]].pause_ns < pause) {
            top[i] = top[i - 1];
            i--;
        }
        top[i] = pid;
    }
    return n;
}

static void print_kind(struct bmt_out *o, const struct bmt_gc *g, int k, int json)
{
    const struct bmt_hist *h = &g->hist[k];
    char buf[256];
    if (json) {
        bmt_out_str(o, k ? "\"major\": {" : "\"minor\": {");
        bmt_hist_print_json_stats(o, h);
        snprintf(buf, sizeof buf, ", \"pause_total_ns\": %llu, \"reclaimed_words\": %llu, "
                 "\"quantize_ns\": ", (unsigned long long)h->sum,
                 (unsigned long long)g->reclaimed_words[k]);
        bmt_out_str(o, buf);
        bmt_hist_print_json_quantize(o, h);
        bmt_out_char(o, '}');
        return;
    }
    char t[6][32];
    bmt_an_duration_text(h->sum, t[0]);
    bmt_an_duration_text(bmt_hist_quantile(h, 0.5), t[1]);
    bmt_an_duration_text(bmt_hist_quantile(h, 0.9), t[2]);
    bmt_an_duration_text(bmt_hist_quantile(h, 0.99), t[3]);
    bmt_an_duration_text(h->max, t[4]);
    snprintf(buf, sizeof buf, "%s collections: %llu, pause total %s, %llu words reclaimed\n",
             k ? "major" : "minor", (unsigned long long)h->count, t[0],
             (unsigned long long)g->reclaimed_words[k]);
    bmt_out_str(o, buf);
    if (!h->count)
        return;
    bmt_out_str(o, "pause, ns:\n");
    bmt_hist_print_quantize(o, h);
    snprintf(buf, sizeof buf, "p50 %s  p90 %s  p99 %s  max %s\n", t[1], t[2], t[3], t[4]);
    bmt_out_str(o, buf);
}

int bmt_cmd_gc(int argc, char **argv)
{
    int json = 0;
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("gc", argc, argv, NULL, "", NULL, NULL, &json, &scope, &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_reader r;
    struct bmt_gc g;
    struct bmt_an_pass pass;
    bmt_gc_init(&g, &scope);
    int status = BMT_EXIT_FAIL;
    bmt_an_reads(&scope, &bmt_fields_gc);
    rc = bmt_an_run(&r, dir, &scope, bmt_gc_feed, &g, &pass);
    struct bmt_out o;
    if (rc < 0) {
        status = bmt_an_fail("gc", dir, &r, rc);
    } else if (bmt_an_out_open(&o, NULL) == 0) {
        uint32_t top[TOP];
        unsigned n = top_collectors(&g, top);
        char buf[512], label[600];
        if (json) {
            bmt_out_str(&o, "{\"trace\": ");
            bmt_an_json_string(&o, dir, strlen(dir));
            bmt_out_str(&o, ", ");
            print_kind(&o, &g, 0, 1);
            bmt_out_str(&o, ", ");
            print_kind(&o, &g, 1, 1);
            snprintf(buf, sizeof buf, ", \"unmatched\": %llu, \"cut_by_window\": %llu, ",
                     (unsigned long long)g.unmatched_count, (unsigned long long)g.cut_count);
            bmt_out_str(&o, buf);
            bmt_an_json_scope(&o, &r, &scope, &pass);
            bmt_out_str(&o, ", \"top_collectors\": [");
        } else {
            print_kind(&o, &g, 0, 0);
            bmt_out_char(&o, '\n');
            print_kind(&o, &g, 1, 0);
            if (g.unmatched_count) {
                snprintf(buf, sizeof buf, "\n%llu start or end events without their pair "
                         "(collections running when tracing started or stopped)\n",
                         (unsigned long long)g.unmatched_count);
                bmt_out_str(&o, buf);
            }
            if (n) {
                snprintf(buf, sizeof buf, "\ntop collectors by total pause\n%14s %8s %16s  %s\n",
                         "PAUSE", "GCS", "RECLAIMED", "PROCESS");
                bmt_out_str(&o, buf);
            } else if (!g.hist[0].count && !g.hist[1].count) {
                bmt_out_str(&o, "\n(no gc events: trace with the garbage_collection flag)\n");
            }
        }
        for (unsigned i = 0; i < n; i++) {
            const struct bmt_gc_proc *p = &g.procs[top[i]];
            bmt_names_label(&scope.names, bmt_strtab_str(&scope.names.pids, top[i]),
                            bmt_strtab_len(&scope.names.pids, top[i]), label, sizeof label);
            if (json) {
                bmt_out_str(&o, i ? ", {\"process\": " : "{\"process\": ");
                bmt_an_json_string(&o, label, strlen(label));
                snprintf(buf, sizeof buf, ", \"pause_ns\": %llu, \"gcs\": %llu, "
                         "\"reclaimed_words\": %llu}", (unsigned long long)p->pause_ns,
                         (unsigned long long)p->gc_count, (unsigned long long)p->reclaimed_words);
                bmt_out_str(&o, buf);
            } else {
                char d[32];
                bmt_an_duration_text(p->pause_ns, d);
                snprintf(buf, sizeof buf, "%14s %8llu %16llu  ", d,
                         (unsigned long long)p->gc_count, (unsigned long long)p->reclaimed_words);
                bmt_out_str(&o, buf);
                bmt_out_str(&o, label);
                bmt_out_char(&o, '\n');
            }
        }
        if (json)
            bmt_out_str(&o, "]}\n");
        status = bmt_an_out_close(&o, "gc");
    }
    bmt_gc_free(&g);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status;
}
