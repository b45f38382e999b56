/* The report's timeline (contract in timeline.h). */
#include "timeline.h"
#include "run.h"
#include "acc.h"
#include "layouts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bmt_timeline_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_timeline *t = self;
    memset(t, 0, sizeof *t);
    t->scope = scope;
    t->col_ns = 1000;
    bmt_u64map_init(&t->by_pid);
    t->lanes = calloc(TIMELINE_POOL, sizeof *t->lanes);
    return t->lanes ? 0 : -ENOMEM;
}

/* Widens the columns until `ts` falls in one. */
static void fit(struct bmt_timeline *t, uint64_t ts)
{
    while ((ts - t->t0_ns) / t->col_ns >= TIMELINE_COLS) {
        for (uint32_t i = 0; i < t->lane_count; i++) {
            uint64_t *b = t->lanes[i].busy;
            for (unsigned c = 0; c < TIMELINE_COLS / 2; c++)
                b[c] = b[2 * c] + b[2 * c + 1];
            memset(b + TIMELINE_COLS / 2, 0, TIMELINE_COLS / 2 * sizeof *b);
        }
        t->col_ns *= 2;
    }
}

/* Adds running time [a, b] (clipped to the window) to lane `l`. */
static void run(struct bmt_timeline *t, struct bmt_lane *l, uint64_t a, uint64_t b)
{
    const struct bmt_window *w = &t->scope->window;
    if (a < w->begin_ns)
        a = w->begin_ns;
    if (b > w->end_ns)
        b = w->end_ns;
    if (b <= a || a < t->t0_ns)
        return;
    fit(t, b);
    l->run_ns += b - a;
    while (a < b) {
        uint64_t col = (a - t->t0_ns) / t->col_ns, col_end = t->t0_ns + (col + 1) * t->col_ns;
        uint64_t upto = b < col_end ? b : col_end;
        l->busy[col] += upto - a;
        a = upto;
    }
}

static struct bmt_lane *lane(struct bmt_timeline *t, uint32_t pid, int create)
{
    uint32_t i = bmt_u64map_find(&t->by_pid, pid);
    if (i != UINT32_MAX)
        return &t->lanes[i];
    if (!create || t->lane_count == TIMELINE_POOL)
        return NULL;
    int created;
    if (!bmt_u64map_get(&t->by_pid, pid, t->lane_count, &created))
        return NULL;
    struct bmt_lane *l = &t->lanes[t->lane_count++];
    l->pid = pid;
    return l;
}

int bmt_timeline_feed(void *self, const struct bmt_record *rec)
{
    struct bmt_timeline *t = self;
    const struct bmt_an_scope *sc = t->scope;
    const struct bmt_value *v = rec->values, *pidv;
    uint64_t ts = rec->ts_ns;
    switch (rec->tp) {
    case BMT_TP_process_scheduled: pidv = &v[BMT_F_process_scheduled_pid]; break;
    case BMT_TP_process_spawn: pidv = &v[BMT_F_process_spawn_pid]; break;
    case BMT_TP_process_exit: pidv = &v[BMT_F_process_exit_pid]; break;
    default: return 0;
    }
    /* Runs this `in` ended (runs.h), its own process's included: at their
     * process's last event, whether or not the filter keeps its process. */
    int is_in = rec->tp == BMT_TP_process_scheduled && v[BMT_F_process_scheduled_type].len >= 2 &&
                memcmp(v[BMT_F_process_scheduled_type].str, "in", 2) == 0;
    for (unsigned i = 0; is_in && i < sc->runs.closed_n; i++) {
        struct bmt_lane *c = lane(t, sc->runs.closed[i].pid, 0);
        if (c && c->in_ns)
            run(t, c, c->in_ns - 1, sc->runs.closed[i].end_ns);
        if (c)
            c->in_ns = 0;
    }
    if (!bmt_an_valid(sc, ts) || !bmt_an_keep(sc, pidv->str, pidv->len))
        return 0;
    if (!t->started) {
        t->started = 1;
        t->t0_ns = sc->window.begin_ns > sc->first_ns ? sc->window.begin_ns : sc->first_ns;
    }
    int64_t pid = bmt_strtab_find(&sc->names.pids, pidv->str, pidv->len);
    if (pid < 0)
        return 0; /* the scope's names saw every pid before us */
    struct bmt_lane *l = lane(t, (uint32_t)pid, is_in);
    if (!l)
        return 0;
    if (rec->tp == BMT_TP_process_spawn) {
        l->spawn_ns = ts + 1;
    } else if (is_in) {
        if (!l->in_ns)
            l->in_ns = ts + 1;
    } else {
        if (l->in_ns)
            run(t, l, l->in_ns - 1, ts);
        l->in_ns = 0;
        if (rec->tp == BMT_TP_process_exit)
            l->exit_ns = ts + 1;
    }
    return 0;
}

int bmt_timeline_finish(void *self, const struct bmt_an_pass *pass)
{
    struct bmt_timeline *t = self;
    uint64_t end_ns = pass->end_ns;
    for (uint32_t i = 0; i < t->lane_count; i++) {
        struct bmt_lane *l = &t->lanes[i];
        /* Open at the end: running until its last event, unknown after. */
        uint64_t last = bmt_runs_last_ns(&t->scope->runs, l->pid, end_ns);
        if (l->in_ns)
            run(t, l, l->in_ns - 1, last < end_ns ? last : end_ns);
        l->in_ns = 0;
    }
    return 0;
}

static const struct bmt_timeline *sort_t;

static int by_run_desc(const void *a, const void *b)
{
    const struct bmt_lane *x = &sort_t->lanes[*(const uint32_t *)a];
    const struct bmt_lane *y = &sort_t->lanes[*(const uint32_t *)b];
    if (x->run_ns != y->run_ns)
        return x->run_ns > y->run_ns ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

uint32_t bmt_timeline_busiest(const struct bmt_timeline *t, uint32_t order[TIMELINE_POOL])
{
    for (uint32_t i = 0; i < t->lane_count; i++)
        order[i] = i;
    sort_t = t;
    qsort(order, t->lane_count, sizeof *order, by_run_desc);
    return t->lane_count < TIMELINE_LANES ? t->lane_count : TIMELINE_LANES;
}

void bmt_timeline_free(void *self)
{
    struct bmt_timeline *t = self;
    free(t->lanes);
    bmt_u64map_free(&t->by_pid);
    memset(t, 0, sizeof *t);
}

/* ---- as an accumulator (acc.h) ---- */

static const struct bmt_needs needs = {{
    BMT_NEED(process_scheduled, BMT_FIELD(process_scheduled, pid) |
                                    BMT_FIELD(process_scheduled, type)),
    BMT_NEED(process_spawn, BMT_FIELD(process_spawn, pid)),
    BMT_NEED(process_exit, BMT_FIELD(process_exit, pid)),
}, 0};

const struct bmt_acc bmt_timeline_acc = {
    "timeline", bmt_timeline_init, bmt_timeline_feed, NULL, bmt_timeline_finish, bmt_timeline_free,
    &needs, 0};
