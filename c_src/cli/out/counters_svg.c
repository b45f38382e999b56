/* The counter charts drawn (contract in counters_svg.h). */
#include "counters_svg.h"
#include "html.h"
#include "svg.h"

#include <stdio.h>
#include <string.h>

#define W 560
#define TOP_M 44
#define PLOT_H 140
#define AXIS_H 20
#define ROW_H 15
#define RIGHT_M 12

/* A number in at most four characters' width before its unit: no
 * exponent ("1023", "12.3", "0.5"). */
static void number_text(double v, const char *unit, char out[32])
{
    snprintf(out, 32, v >= 100 || v <= -100 || v == (double)(int64_t)v ? "%.0f%s" : "%.3g%s", v,
             unit);
}

/* The unit a chart shows its values in: ppm as a percentage (title and
 * axis say the same), any other as the trace records it. */
static const char *shown_unit(const struct bmt_counter_chart *ch)
{
    return strcmp(ch->unit, "ppm") == 0 ? "%" : ch->unit;
}

/* A value as the chart labels it: ppm as a percentage, bytes in binary
 * units, counts with k, M, G above ten thousand. */
static void value_text(const struct bmt_counter_chart *ch, double v, char out[32])
{
    if (strcmp(ch->unit, "ppm") == 0) {
        number_text(v / 1e4, "%", out);
    } else if (strcmp(ch->unit, "bytes") == 0) {
        static const char *const units[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB"};
        unsigned u = 0;
        while ((v >= 1000 || v <= -1000) && u < 5) {
            v /= 1024;
            u++;
        }
        number_text(v, units[u], out);
    } else {
        static const char *const units[] = {"", "k", "M", "G", "T"};
        unsigned u = 0;
        if (v >= 1e4 || v <= -1e4)
            while ((v >= 999.5 || v <= -999.5) && u < 4) {
                v /= 1000;
                u++;
            }
        number_text(v, units[u], out);
    }
}

static const char *const COLOURS[COUNTER_LINES] = {
    "#4a7bd0", "#d0624a", "#3a9a5b", "#9a5bd0", "#c9962a", "#2aa6c9", "#d04a9a", "#6b6b6b",
};

/* Where a chart draws: its scale and plot area. */
struct plot {
    const struct bmt_counters *c;
    const struct bmt_counter_chart *ch;
    double top;                 /* the value at the top of the plot */
    double span;                /* the time shown, ns */
    unsigned left, width, base; /* plot's left edge, width, and baseline's y */
};

/* The largest value a column of the drawn lines shows, and their samples. */
static double scale(const struct bmt_counter_chart *ch, const uint32_t *lines, uint32_t nl,
                    uint64_t *samples)
{
    double top = 0;
    *samples = 0;
    for (uint32_t i = 0; i < nl; i++) {
        const struct bmt_counter_series *s = ch->series[lines[i]];
        *samples += s->n;
        for (unsigned k = 0; k < COUNTER_COLS; k++)
            if (s->cols[k].n && bmt_counters_col_value(ch, &s->cols[k]) > top)
                top = bmt_counters_col_value(ch, &s->cols[k]);
    }
    return top <= 0 ? 1 : top;
}

/* The <svg> element, its tooltip, frame, title and statistics line. */
static void head(struct bmt_out *o, const struct plot *p, const char *title, const char *node,
                 unsigned height, uint64_t samples)
{
    char buf[600], col[32];
    bmt_out_str(o, "<svg class=\"chart counters\" xmlns=\"http://www.w3.org/2000/svg\" ");
    snprintf(buf, sizeof buf, "width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
             "font-family=\"sans-serif\" font-size=\"11\" data-counter=\"", W, height, W, height);
    bmt_out_str(o, buf);
    bmt_html_cstr(o, p->ch->counter);
    bmt_out_str(o, "\" data-unit=\"");
    bmt_html_cstr(o, p->ch->unit);
    bmt_out_str(o, "\" data-node=\"");
    if (node)
        bmt_html_cstr(o, node);
    bmt_out_str(o, "\"><title>");
    bmt_html_cstr(o, title);
    snprintf(buf, sizeof buf, "</title><rect width=\"%u\" height=\"%u\" fill=\"#fff\" "
             "stroke=\"#ccc\"/><text class=\"title\" x=\"8\" y=\"17\" font-size=\"13\" "
             "font-weight=\"bold\">", W, height);
    bmt_out_str(o, buf);
    bmt_svg_cut_text(o, title, (size_t)((W - 16) / CHAR_PX_13B));
    bmt_svg_short_duration(p->c->col_ns, col);
    snprintf(buf, sizeof buf, "</text><text class=\"stats\" x=\"8\" y=\"34\" fill=\"#444\">"
             "%llu samples; %s per %s column</text>", (unsigned long long)samples,
             p->ch->peak_mode ? "maximum" : "mean", col);
    bmt_out_str(o, buf);
}

/* Axes: value scale on the left, time from the window's start below. */
static void axes(struct bmt_out *o, const struct plot *p, const char *top, const char *half,
                 uint64_t shown_ns)
{
    char buf[1024], end[32];
    bmt_svg_short_duration(shown_ns, end);
    snprintf(buf, sizeof buf,
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">0</text>"
             "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#999\"/>"
             "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#eee\"/>"
             "<text class=\"xlabel\" x=\"%u\" y=\"%u\">0</text>"
             "<text class=\"xlabel\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>",
             p->left - 5, TOP_M + 4, top, p->left - 5, TOP_M + PLOT_H / 2 + 4, half, p->left - 5,
             p->base + 4, p->left, p->base, W - RIGHT_M, p->base, p->left, TOP_M, W - RIGHT_M,
             TOP_M, p->left, p->base + 14, W - RIGHT_M, p->base + 14, end);
    bmt_out_str(o, buf);
}

/* The x of time `t_ns` from the window's start, clamped to the plot. */
static double x_at(const struct plot *p, double t_ns)
{
    return p->left + p->width * (t_ns < p->span ? t_ns / p->span : 1.0);
}

/* One point of a polyline: the element's start before the first. */
static void point(struct bmt_out *o, unsigned *points, const char *colour, double x, double y)
{
    char buf[200];
    if (*points)
        snprintf(buf, sizeof buf, " %.1f,%.1f", x, y);
    else
        snprintf(buf, sizeof buf, "<polyline fill=\"none\" stroke-width=\"1.5\" "
                 "stroke=\"%s\" points=\"%.1f,%.1f", colour, x, y);
    bmt_out_str(o, buf);
    (*points)++;
}

/* The non-empty columns of `s` as steps: a counter keeps its value
 * until its next sample, so each column is a level across its width,
 * held through empty columns, and a change is a vertical rise or drop
 * at the start of the column that has it. A series in one column only
 * also gets a dot at that column's middle. */
static void line(struct bmt_out *o, const struct plot *p, const struct bmt_counter_series *s,
                 const char *colour)
{
    unsigned points = 0, cols = 0;
    double y_prev = 0, x_mid = 0;
    for (unsigned k = 0; k < COUNTER_COLS; k++) {
        const struct bmt_counter_col *cl = &s->cols[k];
        if (!cl->n)
            continue;
        double col = (double)p->c->col_ns, v = bmt_counters_col_value(p->ch, cl);
        double xl = x_at(p, (double)k * col), xr = x_at(p, ((double)k + 1) * col);
        double y = p->base - PLOT_H * (v > 0 ? v / p->top : 0);
        if (cols && y != y_prev) {
            point(o, &points, colour, xl, y_prev);
            point(o, &points, colour, xl, y);
        } else if (!cols) {
            point(o, &points, colour, xl, y);
        }
        point(o, &points, colour, xr, y);
        y_prev = y;
        x_mid = (xl + xr) / 2;
        cols++;
    }
    if (points)
        bmt_out_str(o, "\"/>");
    if (cols == 1) {
        char buf[200];
        snprintf(buf, sizeof buf, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                 x_mid, y_prev, colour);
        bmt_out_str(o, buf);
    }
}

/* Series `i` of the drawn ones: its line and its legend entry (two
 * columns under the plot). */
static void series(struct bmt_out *o, const struct plot *p, const struct bmt_counter_series *s,
                   uint32_t i)
{
    const char *name = bmt_strtab_str(&p->ch->instances, s->name);
    char buf[400], peak[32], mean[32];
    value_text(p->ch, (double)s->peak, peak);
    value_text(p->ch, s->sum / (double)s->n, mean);
    bmt_out_str(o, "<g class=\"series\" data-instance=\"");
    bmt_html_cstr(o, name);
    snprintf(buf, sizeof buf, "\" data-peak=\"%lld\" data-samples=\"%llu\"><title>",
             (long long)s->peak, (unsigned long long)s->n);
    bmt_out_str(o, buf);
    bmt_html_cstr(o, name);
    snprintf(buf, sizeof buf, ": peak %s, mean %s</title>", peak, mean);
    bmt_out_str(o, buf);
    line(o, p, s, COLOURS[i]);
    unsigned lx = 8 + (i % 2) * (W / 2), ly = p->base + AXIS_H + (i / 2) * ROW_H + 10;
    snprintf(buf, sizeof buf, "<rect x=\"%u\" y=\"%u\" width=\"12\" height=\"4\" fill=\"%s\"/>"
             "<text class=\"legend\" x=\"%u\" y=\"%u\">", lx, ly - 4, COLOURS[i], lx + 16, ly);
    bmt_out_str(o, buf);
    char entry[BMT_TERM_MAX_BYTES + 48];
    snprintf(entry, sizeof entry, "%s  peak %s", name, peak);
    bmt_svg_cut_text(o, entry, (size_t)((W / 2 - 30) / CHAR_PX_11));
    bmt_out_str(o, "</text></g>");
}

static void chart_svg(struct bmt_out *o, const struct bmt_counters *c,
                      const struct bmt_counter_chart *ch, const struct bmt_reader *r,
                      uint64_t end_ns)
{
    uint32_t lines[COUNTER_LINES];
    uint32_t nl = bmt_counters_drawn(ch, lines);
    unsigned rows = (nl + 1) / 2, height = TOP_M + PLOT_H + AXIS_H + rows * ROW_H + 8;
    char title[BMT_TERM_MAX_BYTES * 2 + 64], top[32], half[32];
    const char *node = r && r->trace_count > 1 && ch->trace < r->trace_count
                           ? r->traces[ch->trace].node : NULL;
    snprintf(title, sizeof title, "%s%s%s (%s)", node ? node : "", node ? ": " : "", ch->counter,
             shown_unit(ch));
    uint64_t samples;
    struct plot p = {c, ch, scale(ch, lines, nl, &samples), 0, 0, 0, TOP_M + PLOT_H};
    value_text(ch, p.top, top);
    value_text(ch, p.top / 2, half);
    p.left = 14 + (unsigned)(CHAR_PX_11 * (double)(strlen(top) > strlen(half) ? strlen(top)
                                                                               : strlen(half)));
    p.width = W - p.left - RIGHT_M;
    p.span = end_ns > c->t0_ns ? (double)(end_ns - c->t0_ns) : 1;
    head(o, &p, title, node, height, samples);
    axes(o, &p, top, half, end_ns > c->t0_ns ? end_ns - c->t0_ns : 0);
    for (uint32_t i = 0; i < nl; i++)
        series(o, &p, ch->series[lines[i]], i);
    bmt_out_str(o, "</svg>\n");
}

/* Under the charts: what was not drawn. */
static void notes(struct bmt_out *o, const struct bmt_counters *c)
{
    char buf[400];
    for (uint32_t k = 0; k < c->chart_count; k++) {
        const struct bmt_counter_chart *ch = c->charts[k];
        if (ch->series_count <= COUNTER_LINES && !ch->unkept_samples)
            continue;
        bmt_out_str(o, "<p class=\"note\">");
        bmt_html_cstr(o, ch->counter);
        bmt_out_str(o, " (");
        bmt_html_cstr(o, shown_unit(ch));
        snprintf(buf, sizeof buf, "): %u instances, %u drawn", ch->series_count,
                 ch->series_count < COUNTER_LINES ? ch->series_count : COUNTER_LINES);
        bmt_out_str(o, buf);
        if (ch->unkept_samples) {
            snprintf(buf, sizeof buf, "; %llu samples of instances beyond the first %u not kept",
                     (unsigned long long)ch->unkept_samples, COUNTER_SERIES);
            bmt_out_str(o, buf);
        }
        bmt_out_str(o, ".</p>\n");
    }
    if (c->unkept_samples) {
        snprintf(buf, sizeof buf, "<p class=\"note\">%llu samples of counters beyond the first %u "
                 "charts not drawn.</p>\n", (unsigned long long)c->unkept_samples, COUNTER_CHARTS);
        bmt_out_str(o, buf);
    }
}

void bmt_counters_html(struct bmt_out *o, const struct bmt_counters *c, const struct bmt_reader *r,
                       uint64_t end_ns)
{
    bmt_out_str(o, "<h2>Counters</h2>");
    if (!c->chart_count) {
        bmt_out_str(o, "<p class=\"note\">No counter events: record with the samples option "
                       "(beamtrace:start(#{samples =&gt; #{schedulers =&gt; 100, memory =&gt; "
                       "1000}}), or beamtrace record --samples).</p>\n");
        return;
    }
    char buf[400];
    snprintf(buf, sizeof buf,
             "<p class=\"note\">Periodic samples (the samples option), one chart per counter; "
             "at most %u lines each: the highest peaks, and the total. Utilisation and memory "
             "show the mean of the samples in each time column, queue lengths the maximum.</p>"
             "<div class=\"charts\">", COUNTER_LINES);
    bmt_out_str(o, buf);
    /* Node by node (a cluster), each node's charts in the order they appeared. */
    unsigned last_trace = 0;
    for (uint32_t k = 0; k < c->chart_count; k++)
        if (c->charts[k]->trace > last_trace)
            last_trace = c->charts[k]->trace;
    for (unsigned tr = 0; tr <= last_trace; tr++)
        for (uint32_t k = 0; k < c->chart_count; k++)
            if (c->charts[k]->trace == tr)
                chart_svg(o, c, c->charts[k], r, end_ns);
    bmt_out_str(o, "</div>\n");
    notes(o, c);
}
