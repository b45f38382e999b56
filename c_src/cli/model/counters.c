/* The report's counter charts (contract in counters.h). */
#include "counters.h"
#include "analyses.h"
#include "core/catalogue_fields.h"
#include "ctf/reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_counters_init(struct bmt_counters *c, struct bmt_an_scope *scope)
{
    memset(c, 0, sizeof *c);
    c->scope = scope;
    c->col_ns = 1000;
    bmt_strtab_init(&c->keys);
}

static void merge(struct bmt_counter_col *into, const struct bmt_counter_col *a,
                  const struct bmt_counter_col *b)
{
    struct bmt_counter_col m = {a->sum + b->sum, a->max, a->n + b->n};
    if (!a->n || (b->n && b->max > a->max))
        m.max = b->max;
    *into = m;
}

/* Widens the columns until `ts` falls in one. */
static void fit(struct bmt_counters *c, uint64_t ts)
{
    while ((ts - c->t0_ns) / c->col_ns >= COUNTER_COLS) {
        for (uint32_t k = 0; k < c->chart_count; k++) {
            struct bmt_counter_chart *ch = c->charts[k];
            for (uint32_t i = 0; i < ch->series_count; i++) {
                struct bmt_counter_col *col = ch->series[i]->cols;
                for (unsigned j = 0; j < COUNTER_COLS / 2; j++)
                    merge(&col[j], &col[2 * j], &col[2 * j + 1]);
                memset(col + COUNTER_COLS / 2, 0, COUNTER_COLS / 2 * sizeof *col);
            }
        }
        c->col_ns *= 2;
    }
}

/* The chart of (trace, counter, unit), made on first use; NULL when
 * COUNTER_CHARTS are taken. Sets *oom on allocation failure. */
static struct bmt_counter_chart *chart(struct bmt_counters *c, unsigned trace,
                                       const struct bmt_value *counter,
                                       const struct bmt_value *unit, int *oom)
{
    char key[BMT_TERM_MAX_BYTES + BMT_WORD_MAX_BYTES + 16];
    int n = snprintf(key, sizeof key, "%u %.*s %.*s", trace, (int)counter->len, counter->str,
                     (int)unit->len, unit->str);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof key ? (size_t)n : sizeof key - 1;
    int64_t id = bmt_strtab_find(&c->keys, key, len);
    if (id >= 0)
        return c->charts[id];
    if (c->chart_count == COUNTER_CHARTS)
        return NULL;
    struct bmt_counter_chart *ch = calloc(1, sizeof *ch);
    if (!ch || bmt_strtab_intern(&c->keys, key, len) != (int64_t)c->chart_count) {
        free(ch);
        *oom = 1;
        return NULL;
    }
    ch->trace = trace;
    snprintf(ch->counter, sizeof ch->counter, "%.*s", (int)counter->len, counter->str);
    snprintf(ch->unit, sizeof ch->unit, "%.*s", (int)unit->len, unit->str);
    ch->peak_mode = strcmp(ch->unit, "count") == 0 || strcmp(ch->unit, "messages") == 0;
    bmt_strtab_init(&ch->instances);
    c->charts[c->chart_count++] = ch;
    return ch;
}

/* The series of `instance` in `ch`, made on first use; NULL when
 * COUNTER_SERIES are taken. Sets *oom on allocation failure. */
static struct bmt_counter_series *series(struct bmt_counter_chart *ch,
                                         const struct bmt_value *instance, int *oom)
{
    int64_t id = bmt_strtab_find(&ch->instances, instance->str, instance->len);
    if (id >= 0)
        return ch->series[id];
    if (ch->series_count == COUNTER_SERIES)
        return NULL;
    struct bmt_counter_series *s = calloc(1, sizeof *s);
    if (!s ||
        bmt_strtab_intern(&ch->instances, instance->str, instance->len) != ch->series_count) {
        free(s);
        *oom = 1;
        return NULL;
    }
    s->name = ch->series_count;
    ch->series[ch->series_count++] = s;
    return s;
}

int bmt_counters_feed(struct bmt_counters *c, const struct bmt_record *rec)
{
    if (rec->tp != BMT_TP_counter)
        return 0;
    const struct bmt_an_scope *sc = c->scope;
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    if (ts < sc->window.begin_ns || ts > sc->window.end_ns)
        return 0;
    if (!c->started) {
        c->started = 1;
        c->t0_ns = sc->window.begin_ns > sc->first_ns ? sc->window.begin_ns : sc->first_ns;
    }
    if (ts < c->t0_ns)
        return 0;
    int oom = 0;
    struct bmt_counter_chart *ch =
        chart(c, rec->trace, &v[BMT_F_counter_counter], &v[BMT_F_counter_unit], &oom);
    if (oom)
        return -ENOMEM;
    c->sample_count++;
    if (!ch) {
        c->unkept_samples++;
        return 0;
    }
    struct bmt_counter_series *s = series(ch, &v[BMT_F_counter_instance], &oom);
    if (oom)
        return -ENOMEM;
    if (!s) {
        ch->unkept_samples++;
        return 0;
    }
    fit(c, ts);
    int64_t value = v[BMT_F_counter_value].integer;
    struct bmt_counter_col *col = &s->cols[(ts - c->t0_ns) / c->col_ns];
    if (!col->n || value > col->max)
        col->max = value;
    col->sum += (double)value;
    col->n++;
    if (!s->n || value > s->peak)
        s->peak = value;
    s->sum += (double)value;
    s->n++;
    return 0;
}

/* A number in at most four characters' width before its unit: no
 * exponent ("1023", "12.3", "0.5"). */
static void number_text(double v, const char *unit, char out[32])
{
    snprintf(out, 32, v >= 100 || v <= -100 || v == (double)(int64_t)v ? "%.0f%s" : "%.3g%s", v,
             unit);
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

/* What a column shows. */
static double col_value(const struct bmt_counter_chart *ch, const struct bmt_counter_col *col)
{
    return ch->peak_mode ? (double)col->max : col->sum / col->n;
}

static const struct bmt_counter_chart *sort_chart;

static int by_peak_desc(const void *a, const void *b)
{
    const struct bmt_counter_series *x = sort_chart->series[*(const uint32_t *)a];
    const struct bmt_counter_series *y = sort_chart->series[*(const uint32_t *)b];
    if (x->peak != y->peak)
        return x->peak > y->peak ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

/* The series drawn, in legend order: "total" first, then the highest
 * peaks. Returns how many. */
static uint32_t drawn(const struct bmt_counter_chart *ch, uint32_t out[COUNTER_LINES])
{
    uint32_t order[COUNTER_SERIES], n = 0;
    for (uint32_t i = 0; i < ch->series_count; i++)
        order[i] = i;
    sort_chart = ch;
    qsort(order, ch->series_count, sizeof *order, by_peak_desc);
    int64_t total = bmt_strtab_find(&ch->instances, "total", 5);
    if (total >= 0)
        out[n++] = (uint32_t)total;
    for (uint32_t i = 0; i < ch->series_count && n < COUNTER_LINES; i++)
        if ((int64_t)order[i] != total)
            out[n++] = order[i];
    return n;
}

static const char *const COLOURS[COUNTER_LINES] = {
    "#4a7bd0", "#d0624a", "#3a9a5b", "#9a5bd0", "#c9962a", "#2aa6c9", "#d04a9a", "#6b6b6b",
};

static void chart_svg(struct bmt_out *o, const struct bmt_counters *c,
                      const struct bmt_counter_chart *ch, const struct bmt_reader *r,
                      uint64_t end_ns)
{
    const unsigned W = 560, topm = 44, plot_h = 140, axis_h = 20, row_h = 15, right = 12;
    uint32_t lines[COUNTER_LINES];
    uint32_t nl = drawn(ch, lines);
    unsigned rows = (nl + 1) / 2, H = topm + plot_h + axis_h + rows * row_h + 8;
    char title[BMT_TERM_MAX_BYTES * 2 + 64], buf[1024], t[3][32];
    const char *node = r && r->trace_count > 1 && ch->trace < r->trace_count
                           ? r->traces[ch->trace].node : NULL;
    snprintf(title, sizeof title, "%s%s%s (%s)", node ? node : "", node ? ": " : "", ch->counter,
             ch->unit);
    /* The scale: the largest value a column shows, among the lines drawn. */
    double top = 0;
    uint64_t samples = 0;
    for (uint32_t i = 0; i < nl; i++) {
        const struct bmt_counter_series *s = ch->series[lines[i]];
        samples += s->n;
        for (unsigned k = 0; k < COUNTER_COLS; k++)
            if (s->cols[k].n && col_value(ch, &s->cols[k]) > top)
                top = col_value(ch, &s->cols[k]);
    }
    if (top <= 0)
        top = 1;
    value_text(ch, top, t[0]);
    value_text(ch, top / 2, t[1]);
    unsigned left = 14 + (unsigned)(CHAR_PX_11 * (double)(strlen(t[0]) > strlen(t[1])
                                                             ? strlen(t[0]) : strlen(t[1])));
    unsigned plot_w = W - left - right;
    bmt_out_str(o, "<svg class=\"chart counters\" xmlns=\"http://www.w3.org/2000/svg\" ");
    snprintf(buf, sizeof buf, "width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
             "font-family=\"sans-serif\" font-size=\"11\" data-counter=\"", W, H, W, H);
    bmt_out_str(o, buf);
    bmt_an_html_string(o, ch->counter, strlen(ch->counter));
    bmt_out_str(o, "\" data-unit=\"");
    bmt_an_html_string(o, ch->unit, strlen(ch->unit));
    bmt_out_str(o, "\" data-node=\"");
    if (node)
        bmt_an_html_string(o, node, strlen(node));
    bmt_out_str(o, "\"><title>");
    bmt_an_html_string(o, title, strlen(title));
    snprintf(buf, sizeof buf, "</title><rect width=\"%u\" height=\"%u\" fill=\"#fff\" "
             "stroke=\"#ccc\"/><text class=\"title\" x=\"8\" y=\"17\" font-size=\"13\" "
             "font-weight=\"bold\">", W, H);
    bmt_out_str(o, buf);
    bmt_svg_cut_text(o, title, (size_t)((W - 16) / CHAR_PX_13B));
    char col[32];
    bmt_svg_short_duration(c->col_ns, col);
    snprintf(buf, sizeof buf, "</text><text class=\"stats\" x=\"8\" y=\"34\" fill=\"#444\">"
             "%llu samples; %s per %s column</text>", (unsigned long long)samples,
             ch->peak_mode ? "maximum" : "mean", col);
    bmt_out_str(o, buf);
    /* Axes: value scale on the left, time from the window's start below. */
    unsigned base = topm + plot_h;
    double span = end_ns > c->t0_ns ? (double)(end_ns - c->t0_ns) : 1;
    bmt_svg_short_duration(end_ns > c->t0_ns ? end_ns - c->t0_ns : 0, t[2]);
    snprintf(buf, sizeof buf,
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">0</text>"
             "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#999\"/>"
             "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#eee\"/>"
             "<text class=\"xlabel\" x=\"%u\" y=\"%u\">0</text>"
             "<text class=\"xlabel\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>",
             left - 5, topm + 4, t[0], left - 5, topm + plot_h / 2 + 4, t[1], left - 5, base + 4,
             left, base, W - right, base, left, topm, W - right, topm, left, base + 14,
             W - right, base + 14, t[2]);
    bmt_out_str(o, buf);
    for (uint32_t i = 0; i < nl; i++) {
        const struct bmt_counter_series *s = ch->series[lines[i]];
        const char *name = bmt_strtab_str(&ch->instances, s->name);
        char peak[32], mean[32];
        value_text(ch, (double)s->peak, peak);
        value_text(ch, s->sum / (double)s->n, mean);
        bmt_out_str(o, "<g class=\"series\" data-instance=\"");
        bmt_an_html_string(o, name, strlen(name));
        snprintf(buf, sizeof buf, "\" data-peak=\"%lld\" data-samples=\"%llu\"><title>",
                 (long long)s->peak, (unsigned long long)s->n);
        bmt_out_str(o, buf);
        bmt_an_html_string(o, name, strlen(name));
        snprintf(buf, sizeof buf, ": peak %s, mean %s</title>", peak, mean);
        bmt_out_str(o, buf);
        /* One polyline through the non-empty columns; a lone point as a dot. */
        unsigned points = 0;
        double x = 0, y = 0;
        for (unsigned k = 0; k < COUNTER_COLS; k++) {
            const struct bmt_counter_col *cl = &s->cols[k];
            if (!cl->n)
                continue;
            double mid = ((double)k + 0.5) * (double)c->col_ns;
            x = left + plot_w * (mid < span ? mid / span : 1.0);
            y = base - plot_h * (col_value(ch, cl) > 0 ? col_value(ch, cl) / top : 0);
            if (points)
                snprintf(buf, sizeof buf, " %.1f,%.1f", x, y);
            else
                snprintf(buf, sizeof buf, "<polyline fill=\"none\" stroke-width=\"1.5\" "
                         "stroke=\"%s\" points=\"%.1f,%.1f", COLOURS[i], x, y);
            bmt_out_str(o, buf);
            points++;
        }
        if (points)
            bmt_out_str(o, "\"/>");
        if (points == 1) {
            snprintf(buf, sizeof buf, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                     x, y, COLOURS[i]);
            bmt_out_str(o, buf);
        }
        /* Legend: two columns under the plot. */
        unsigned lx = 8 + (i % 2) * (W / 2), ly = base + axis_h + (i / 2) * row_h + 10;
        snprintf(buf, sizeof buf, "<rect x=\"%u\" y=\"%u\" width=\"12\" height=\"4\" fill=\"%s\"/>"
                 "<text class=\"legend\" x=\"%u\" y=\"%u\">", lx, ly - 4, COLOURS[i], lx + 16,
                 ly);
        bmt_out_str(o, buf);
        char entry[BMT_TERM_MAX_BYTES + 48];
        snprintf(entry, sizeof entry, "%s  peak %s", name, peak);
        bmt_svg_cut_text(o, entry, (size_t)((W / 2 - 30) / CHAR_PX_11));
        bmt_out_str(o, "</text></g>");
    }
    bmt_out_str(o, "</svg>\n");
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
    for (uint32_t k = 0; k < c->chart_count; k++) {
        const struct bmt_counter_chart *ch = c->charts[k];
        if (ch->series_count <= COUNTER_LINES && !ch->unkept_samples)
            continue;
        bmt_out_str(o, "<p class=\"note\">");
        bmt_an_html_string(o, ch->counter, strlen(ch->counter));
        bmt_out_str(o, " (");
        bmt_an_html_string(o, ch->unit, strlen(ch->unit));
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

void bmt_counters_free(struct bmt_counters *c)
{
    for (uint32_t k = 0; k < c->chart_count; k++) {
        for (uint32_t i = 0; i < c->charts[k]->series_count; i++)
            free(c->charts[k]->series[i]);
        bmt_strtab_free(&c->charts[k]->instances);
        free(c->charts[k]);
    }
    bmt_strtab_free(&c->keys);
    memset(c, 0, sizeof *c);
}
