/* The timeline drawn (contract in timeline_svg.h). */
#include "timeline_svg.h"
#include "html.h"
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>

#define W 1200
#define LABEL_W 300
#define LANE_H 18
#define AXIS_H 22
#define LABEL_CHARS 36

/* Where the time between t0 and end is drawn. */
struct frame {
    uint64_t t0_ns, end_ns;
    double span, plot;
};

static double x_of(const struct frame *f, uint64_t ts)
{
    return LABEL_W + f->plot * (double)(ts - f->t0_ns) / f->span;
}

/* The run bars of lane `l` (life [born, died]) at height y. */
static void bars(struct bmt_out *o, const struct bmt_timeline *t, const struct bmt_lane *l,
                 const struct frame *f, uint64_t born, uint64_t died, unsigned y)
{
    char buf[300];
    for (unsigned c = 0; c < TIMELINE_COLS; c++) {
        if (!l->busy[c])
            continue;
        uint64_t a = t->t0_ns + c * t->col_ns, b = a + t->col_ns;
        if (a >= f->end_ns)
            break;
        if (b > f->end_ns)
            b = f->end_ns;
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
        double h = (LANE_H - 4) * frac;
        snprintf(buf, sizeof buf, "<rect class=\"run\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                 "height=\"%.3f\" fill=\"#3a9a5b\"/>", x_of(f, da), y + 2 + (LANE_H - 4) - h,
                 f->plot * (double)(db - da) / f->span, h);
        bmt_out_str(o, buf);
    }
}

/* The name (cut to the label column) and the share, right-aligned. */
static void label(struct bmt_out *o, const char *text, const char *pct, unsigned y)
{
    char buf[300];
    size_t len = strlen(text);
    snprintf(buf, sizeof buf, "<text class=\"label\" x=\"4\" y=\"%u\">", y + LANE_H - 5);
    bmt_out_str(o, buf);
    if (len > LABEL_CHARS) {
        bmt_html_string(o, text, LABEL_CHARS - 1);
        bmt_out_str(o, "\xe2\x80\xa6");
    } else {
        bmt_html_string(o, text, len);
    }
    bmt_out_str(o, "<title>");
    bmt_html_string(o, text, len);
    snprintf(buf, sizeof buf, ": ran %s of the time shown</title></text>"
             "<text class=\"share\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>",
             pct, LABEL_W - 6, y + LANE_H - 5, pct);
    bmt_out_str(o, buf);
}

static void lane(struct bmt_out *o, const struct bmt_timeline *t, const struct bmt_lane *l,
                 const struct frame *f, uint32_t i)
{
    const struct bmt_names *names = &t->scope->names;
    unsigned y = i * LANE_H;
    char buf[800], text[700], pct[16];
    const char *pid = bmt_strtab_str(&names->pids, l->pid);
    bmt_names_label(names, pid, bmt_strtab_len(&names->pids, l->pid), text, sizeof text);
    double share = 100.0 * (double)l->run_ns / f->span;
    snprintf(pct, sizeof pct, share >= 10 ? "%.0f%%" : "%.1f%%", share);
    /* Life band: spawn (or the start) to exit (or the end). */
    uint64_t born = l->spawn_ns && l->spawn_ns - 1 > t->t0_ns ? l->spawn_ns - 1 : t->t0_ns;
    uint64_t died = l->exit_ns && l->exit_ns - 1 < f->end_ns ? l->exit_ns - 1 : f->end_ns;
    double bw = f->plot * (double)(died > born ? died - born : 0) / f->span;
    bmt_out_str(o, "<g class=\"lane\" data-pid=\"");
    bmt_html_cstr(o, pid);
    snprintf(buf, sizeof buf,
             "\" data-share=\"%.4f\" data-exit-x=\"%.2f\">"
             "<rect x=\"0\" y=\"%u\" width=\"%u\" height=\"%u\" fill=\"%s\"/>"
             "<rect class=\"life\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" "
             "fill=\"#dfe8df\"/>",
             share / 100, l->exit_ns ? x_of(f, died) : -1.0, y, W, LANE_H,
             i % 2 ? "#fafafa" : "#f0f0f5", x_of(f, born), y + 2, bw < 0.5 ? 0.5 : bw, LANE_H - 4);
    bmt_out_str(o, buf);
    label(o, text, pct, y);
    bars(o, t, l, f, born, died, y);
    if (l->exit_ns) {
        double x = x_of(f, died);
        snprintf(buf, sizeof buf, "<line class=\"exit\" x1=\"%.2f\" y1=\"%u\" x2=\"%.2f\" "
                 "y2=\"%u\" stroke=\"#c33\"><title>exited</title></line>",
                 x, y + 1, x, y + LANE_H - 1);
        bmt_out_str(o, buf);
    }
    bmt_out_str(o, "</g>");
}

/* The capture's trigger: a line across the lanes and what fired it above
 * them, when it falls in the time shown. */
static void trigger_mark(struct bmt_out *o, const struct bmt_capture_info *cap,
                         const struct frame *f, unsigned lanes_h)
{
    if (!cap || cap->trigger_ns < f->t0_ns || cap->trigger_ns > f->end_ns)
        return;
    char text[600], buf[1200];
    bmt_capture_info_text(cap, text, sizeof text);
    double x = x_of(f, cap->trigger_ns);
    snprintf(buf, sizeof buf, "<g class=\"trigger\"><title>trigger: ");
    bmt_out_str(o, buf);
    bmt_html_string(o, text, strlen(text));
    snprintf(buf, sizeof buf, "</title><line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%u\" "
             "stroke=\"#d62728\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%u\" fill=\"#d62728\" "
             "text-anchor=\"%s\">trigger: ",
             x, x, lanes_h, x < W / 2 ? x + 4 : x - 4, lanes_h + 15 + 13,
             x < W / 2 ? "start" : "end");
    bmt_out_str(o, buf);
    bmt_html_string(o, cap->kind, strlen(cap->kind));
    if (cap->function[0]) {
        bmt_out_char(o, ' ');
        bmt_html_string(o, cap->function, strlen(cap->function));
    }
    bmt_out_str(o, "</text></g>");
}

void bmt_timeline_html(struct bmt_out *o, const struct bmt_timeline *t, const struct bmt_reader *r,
                       uint64_t end_ns, const struct bmt_capture_info *cap)
{
    bmt_out_str(o, "<h2>Timeline: when processes ran</h2>");
    if (!t->lane_count || end_ns <= t->t0_ns) {
        bmt_out_str(o, "<p class=\"note\">No process_scheduled events: trace with the running "
                       "flag.</p>\n");
        if (cap) {
            char text[600];
            bmt_capture_info_text(cap, text, sizeof text);
            bmt_out_str(o, "<p class=\"trigger\">Trigger: ");
            bmt_html_string(o, text, strlen(text));
            bmt_out_str(o, "</p>\n");
        }
        return;
    }
    uint32_t order[TIMELINE_POOL];
    uint32_t n = bmt_timeline_busiest(t, order);
    struct frame f = {t->t0_ns, end_ns, (double)(end_ns - t->t0_ns), W - LABEL_W - 10};
    char buf[800], d[32], a[32], b[32];
    bmt_duration_text(t->col_ns, d);
    snprintf(buf, sizeof buf,
             "<p class=\"note\">The %u processes that ran the most (of the first %u seen "
             "running). A bar's height is the share of its time slice (%s) the process spent "
             "scheduled in; the band under it spans the process's life. The percentage is its "
             "share of the whole time shown.</p>"
             "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
             "height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" "
             "font-size=\"11\">",
             n, TIMELINE_POOL, d, W, n * LANE_H + AXIS_H + (cap ? 16 : 0), W,
             n * LANE_H + AXIS_H + (cap ? 16 : 0));
    bmt_out_str(o, buf);
    for (uint32_t i = 0; i < n; i++)
        lane(o, t, &t->lanes[order[i]], &f, i);
    trigger_mark(o, cap, &f, n * LANE_H);
    bmt_clock_text(bmt_reader_wall_ns(r, t->t0_ns), a);
    bmt_clock_text(bmt_reader_wall_ns(r, end_ns), b);
    bmt_duration_text(end_ns - t->t0_ns, d);
    unsigned ya = n * LANE_H + 15;
    snprintf(buf, sizeof buf, "<text class=\"axis\" x=\"%u\" y=\"%u\">%.12s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"middle\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%.12s</text></svg>\n",
             LABEL_W, ya, a, LABEL_W + (unsigned)f.plot / 2, ya, d, W - 10, ya, b);
    bmt_out_str(o, buf);
}
