/* The report's timeline (contract in timeline.h). */
#include "timeline.h"
#include "names.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bmt_timeline_init(struct bmt_timeline *t, struct bmt_an_scope *scope)
{
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

int bmt_timeline_feed(struct bmt_timeline *t, const struct bmt_record *rec)
{
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_an_scope *sc = t->scope;
    const struct bmt_value *v = rec->values, *pidv;
    uint64_t ts = rec->ts_ns;
    switch (rec->tp) {
    case BMT_TP_process_scheduled: pidv = &v[F->sched_pid]; break;
    case BMT_TP_process_spawn: pidv = &v[F->spawn_pid]; break;
    case BMT_TP_process_exit: pidv = &v[F->exit_pid]; break;
    default: return 0;
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
    int is_in = rec->tp == BMT_TP_process_scheduled && v[F->sched_type].len >= 2 &&
                memcmp(v[F->sched_type].str, "in", 2) == 0;
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

void bmt_timeline_finish(struct bmt_timeline *t, uint64_t end_ns)
{
    for (uint32_t i = 0; i < t->lane_count; i++) {
        struct bmt_lane *l = &t->lanes[i];
        if (l->in_ns)
            run(t, l, l->in_ns - 1, end_ns);
        l->in_ns = 0;
    }
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

void bmt_timeline_html(struct bmt_out *o, const struct bmt_timeline *t, const struct bmt_reader *r,
                       uint64_t end_ns)
{
    const unsigned W = 1200, label_w = 300, lane_h = 18, axis_h = 22;
    const struct bmt_names *names = &t->scope->names;
    bmt_out_str(o, "<h2>Timeline: when processes ran</h2>");
    if (!t->lane_count || end_ns <= t->t0_ns) {
        bmt_out_str(o, "<p class=\"note\">No process_scheduled events: trace with the running "
                       "flag.</p>\n");
        return;
    }
    uint32_t order[TIMELINE_POOL];
    for (uint32_t i = 0; i < t->lane_count; i++)
        order[i] = i;
    sort_t = t;
    qsort(order, t->lane_count, sizeof *order, by_run_desc);
    uint32_t n = t->lane_count < TIMELINE_LANES ? t->lane_count : TIMELINE_LANES;
    double span = (double)(end_ns - t->t0_ns), plot = W - label_w - 10;
    char buf[800], label[700], d[32];
    bmt_an_duration_text(t->col_ns, d);
    snprintf(buf, sizeof buf,
             "<p class=\"note\">The %u processes that ran the most (of the first %u seen "
             "running). A bar's height is the share of its time slice (%s) the process spent "
             "scheduled in; the band under it spans the process's life. The percentage is its "
             "share of the whole time shown.</p>"
             "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
             "height=\"%u\" font-family=\"sans-serif\" font-size=\"11\">",
             n, TIMELINE_POOL, d, W, n * lane_h + axis_h);
    bmt_out_str(o, buf);
    for (uint32_t i = 0; i < n; i++) {
        const struct bmt_lane *l = &t->lanes[order[i]];
        unsigned y = i * lane_h;
        const char *pid = bmt_strtab_str(&names->pids, l->pid);
        bmt_names_label(names, pid, bmt_strtab_len(&names->pids, l->pid), label, sizeof label);
        double share = 100.0 * (double)l->run_ns / span;
        char pct[16];
        snprintf(pct, sizeof pct, share >= 10 ? "%.0f%%" : "%.1f%%", share);
        /* Life band: spawn (or the start) to exit (or the end). */
        uint64_t born = l->spawn_ns && l->spawn_ns - 1 > t->t0_ns ? l->spawn_ns - 1 : t->t0_ns;
        uint64_t died = l->exit_ns && l->exit_ns - 1 < end_ns ? l->exit_ns - 1 : end_ns;
        double bx = label_w + plot * (double)(born - t->t0_ns) / span;
        double bw = plot * (double)(died > born ? died - born : 0) / span;
        bmt_out_str(o, "<g class=\"lane\" data-pid=\"");
        bmt_an_html_string(o, pid, strlen(pid));
        snprintf(buf, sizeof buf,
                 "\" data-share=\"%.4f\" data-exit-x=\"%.2f\">"
                 "<rect x=\"0\" y=\"%u\" width=\"%u\" height=\"%u\" fill=\"%s\"/>"
                 "<rect class=\"life\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" "
                 "fill=\"#dfe8df\"/>",
                 share / 100, l->exit_ns ? label_w + plot * (double)(died - t->t0_ns) / span : -1.0,
                 y, W, lane_h, i % 2 ? "#fafafa" : "#f0f0f5", bx, y + 2, bw < 0.5 ? 0.5 : bw,
                 lane_h - 4);
        bmt_out_str(o, buf);
        snprintf(buf, sizeof buf, "<text class=\"label\" x=\"4\" y=\"%u\">", y + lane_h - 5);
        bmt_out_str(o, buf);
        /* Name cut to the label column; the share after it, right-aligned. */
        size_t max = 36, len = strlen(label);
        if (len > max) {
            bmt_an_html_string(o, label, max - 1);
            bmt_out_str(o, "\xe2\x80\xa6");
        } else {
            bmt_an_html_string(o, label, len);
        }
        bmt_out_str(o, "<title>");
        bmt_an_html_string(o, label, len);
        snprintf(buf, sizeof buf, ": ran %s of the time shown</title></text>"
                 "<text class=\"share\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>",
                 pct, label_w - 6, y + lane_h - 5, pct);
        bmt_out_str(o, buf);
        for (unsigned c = 0; c < TIMELINE_COLS; c++) {
            if (!l->busy[c])
                continue;
            uint64_t a = t->t0_ns + c * t->col_ns, b = a + t->col_ns;
            if (a >= end_ns)
                break;
            if (b > end_ns)
                b = end_ns;
            double frac = (double)l->busy[c] / (double)(b - a);
            if (frac > 1)
                frac = 1;
            /* The bar keeps the column's share but stays inside the life. */
            uint64_t da = a < born ? born : a, db = b > died ? died : b;
            if (db <= da)
                continue;
            frac *= (double)(b - a) / (double)(db - da);
            if (frac > 1)
                frac = 1;
            double x = label_w + plot * (double)(da - t->t0_ns) / span;
            double w = plot * (double)(db - da) / span;
            double h = (lane_h - 4) * frac;
            snprintf(buf, sizeof buf, "<rect class=\"run\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                     "height=\"%.3f\" fill=\"#3a9a5b\"/>", x, y + 2 + (lane_h - 4) - h, w, h);
            bmt_out_str(o, buf);
        }
        if (l->exit_ns) {
            double x = label_w + plot * (double)(died - t->t0_ns) / span;
            snprintf(buf, sizeof buf, "<line class=\"exit\" x1=\"%.2f\" y1=\"%u\" x2=\"%.2f\" "
                     "y2=\"%u\" stroke=\"#c33\"><title>exited</title></line>",
                     x, y + 1, x, y + lane_h - 1);
            bmt_out_str(o, buf);
        }
        bmt_out_str(o, "</g>");
    }
    char a[32], b[32];
    bmt_an_clock_text(r, t->t0_ns, a);
    bmt_an_clock_text(r, end_ns, b);
    bmt_an_duration_text(end_ns - t->t0_ns, d);
    unsigned ya = n * lane_h + 15;
    snprintf(buf, sizeof buf, "<text class=\"axis\" x=\"%u\" y=\"%u\">%.12s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"middle\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%.12s</text></svg>\n",
             label_w, ya, a, label_w + (unsigned)plot / 2, ya, d, W - 10, ya, b);
    bmt_out_str(o, buf);
}

void bmt_timeline_free(struct bmt_timeline *t)
{
    free(t->lanes);
    bmt_u64map_free(&t->by_pid);
    memset(t, 0, sizeof *t);
}
