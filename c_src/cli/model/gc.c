/* The gc analysis (contract in gc.h). */
#include "gc.h"
#include "run.h"
#include "acc.h"
#include "layouts.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_gc_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_gc *g = self;
    memset(g, 0, sizeof *g);
    g->scope = scope;
    bmt_hist_init(&g->hist[0]);
    bmt_hist_init(&g->hist[1]);
    return 0;
}

int bmt_gc_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_gc *g = ctx;
    const struct bmt_an_scope *sc = g->scope;
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
    if (!bmt_an_valid(sc, ts) || !bmt_an_keep(sc, v[BMT_GC_PID].str, v[BMT_GC_PID].len))
        return 0;
    int64_t pid = bmt_names_pid(&g->scope->names, v[BMT_GC_PID].str, v[BMT_GC_PID].len);
    if (pid < 0)
        return (int)pid;
    struct bmt_gc_proc *procs = bmt_grow(g->procs, &g->proc_cap, (uint32_t)pid, sizeof *procs);
    if (!procs)
        return -ENOMEM;
    g->procs = procs;
    struct bmt_gc_proc *p = &g->procs[pid];
    if (start) {
        if (p->start_ns[k] && p->start_ns[k] - 1 >= sc->window.begin_ns)
            g->unmatched_count++;
        p->start_ns[k] = ts + 1;
        return 0;
    }
    uint64_t reclaimed = v[BMT_GC_RECLAIMED].integer;
    /* Sampled: the collection stands for `w` (its end has its start's
     * kind, so the ratio in force; the w - 1 not kept as if like it). */
    uint64_t more = sc->sampled.weight[rec->tp] - 1;
    if (ts >= sc->window.begin_ns)
        g->reclaimed_words[k] += more ? reclaimed * (more + 1) : reclaimed;
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
    p->pause_ns += more ? (ts - from) * (more + 1) : ts - from;
    if (!bmt_an_inside(sc, began, ts)) {
        g->cut_count += more + 1;
        return 0;
    }
    p->gc_count += more + 1;
    p->reclaimed_words += more ? reclaimed * (more + 1) : reclaimed;
    if (more) {
        g->unkept_count[k] += more;
        g->unkept_pause_ns[k] += pause * more;
    }
    return bmt_hist_add(&g->hist[k], pause);
}

void bmt_gc_free(void *self)
{
    struct bmt_gc *g = self;
    free(g->procs);
    bmt_hist_free(&g->hist[0]);
    bmt_hist_free(&g->hist[1]);
}

unsigned bmt_gc_top(const struct bmt_gc *g, uint32_t top[BMT_GC_TOP])
{
    unsigned n = 0;
    for (uint32_t pid = 0; pid < g->proc_cap; pid++) {
        uint64_t pause = g->procs[pid].pause_ns;
        if (!g->procs[pid].gc_count && !g->procs[pid].pause_ns)
            continue;
        if (n == BMT_GC_TOP && pause <= g->procs[top[n - 1]].pause_ns)
            continue;
        unsigned i = n < BMT_GC_TOP ? n++ : n - 1;
        while (i > 0 && g->procs[top[i - 1]].pause_ns < pause) {
            top[i] = top[i - 1];
            i--;
        }
        top[i] = pid;
    }
    return n;
}

/* ---- as an accumulator (acc.h) ---- */

static const struct bmt_needs needs = {{
    BMT_NEED(gc_minor_start, BMT_FIELD(gc_minor_start, pid)),
    BMT_NEED(gc_major_start, BMT_FIELD(gc_major_start, pid)),
    BMT_NEED(gc_minor_end, BMT_FIELD(gc_minor_end, pid) | BMT_FIELD(gc_minor_end, reclaimed)),
    BMT_NEED(gc_major_end, BMT_FIELD(gc_major_end, pid) | BMT_FIELD(gc_major_end, reclaimed)),
}, 0};

const struct bmt_acc bmt_gc_acc = {"gc", bmt_gc_init, bmt_gc_feed, NULL, NULL, bmt_gc_free, &needs, 1};
