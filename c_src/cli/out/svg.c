/* Small inline SVG charts (contract in svg.h). */
#include "svg.h"
#include "html.h"

#include <stdio.h>
#include <string.h>

void bmt_svg_short_duration(uint64_t ns, char out[32])
{
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "\xc2\xb5s"}, {1, "ns"}};
    for (unsigned i = 0; i < 4; i++) {
        if ((double)ns >= units[i].scale || i == 3) {
            double v = (double)ns / units[i].scale;
            snprintf(out, 32, v >= 100 ? "%.0f %s" : v >= 10 ? "%.3g %s" : "%.3g %s", v,
                     units[i].unit);
            return;
        }
    }
}

size_t bmt_svg_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

void bmt_svg_cut_text(struct bmt_out *o, const char *s, size_t max_chars)
{
    size_t n = bmt_svg_chars(s);
    if (n <= max_chars) {
        bmt_html_string(o, s, strlen(s));
        return;
    }
    size_t keep = max_chars > 1 ? max_chars - 1 : 0, bytes = 0, c = 0;
    while (s[bytes] && c < keep) {
        bytes++;
        while (((unsigned char)s[bytes] & 0xc0) == 0x80)
            bytes++;
        c++;
    }
    bmt_html_string(o, s, bytes);
    bmt_out_str(o, "\xe2\x80\xa6");
}

#define Q_W 560
#define Q_H 220
#define Q_TOP 44
#define Q_BOTTOM 28
#define Q_RIGHT 10

/* The chart's <svg>, its tooltip, frame and title cut to fit. */
static void quantize_head(struct bmt_out *o, const char *title)
{
    char buf[400];
    snprintf(buf, sizeof buf,
             "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
             "height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" font-size=\"11\">"
             "<title>",
             Q_W, Q_H, Q_W, Q_H);
    bmt_out_str(o, buf);
    bmt_html_cstr(o, title);
    snprintf(buf, sizeof buf,
             "</title><rect width=\"%u\" height=\"%u\" fill=\"#fff\" stroke=\"#ccc\"/>"
             "<text class=\"title\" x=\"8\" y=\"17\" font-size=\"13\" font-weight=\"bold\">",
             Q_W, Q_H);
    bmt_out_str(o, buf);
    bmt_svg_cut_text(o, title, (size_t)((Q_W - 16) / CHAR_PX_13B));
    bmt_out_str(o, "</text>");
}

/* The power-of-two rows drawn: [first, last] and the largest count. */
struct rows {
    uint64_t pow2[65], peak;
    unsigned first, last;
    unsigned left;              /* the plot's left edge: room for the largest count */
};

static void rows_of(const struct bmt_hist *h, struct rows *r)
{
    char peak_text[32];
    r->peak = 0;
    r->first = r->last = 0;
    if (h->count) {
        bmt_hist_pow2(h, r->pow2);
        while (!r->pow2[r->first])
            r->first++;
        for (unsigned k = 0; k < 65; k++)
            if (r->pow2[k]) {
                r->last = k;
                if (r->pow2[k] > r->peak)
                    r->peak = r->pow2[k];
            }
    }
    snprintf(peak_text, sizeof peak_text, "%llu", (unsigned long long)r->peak);
    r->left = 14 + (unsigned)(CHAR_PX_11 * (double)strlen(peak_text));
}

/* The bars and their labels, every `step` bars so that they do not overlap. */
static void bars(struct bmt_out *o, const struct rows *r)
{
    char buf[768], d[32];
    unsigned n = r->last - r->first + 1, plot_h = Q_H - Q_BOTTOM - Q_TOP, left = r->left;
    double bw = (double)(Q_W - left - Q_RIGHT) / n, widest = 0;
    for (unsigned k = r->first; k <= r->last; k++) {
        bmt_svg_short_duration(k ? 1ull << (k - 1) : 0, d);
        double w = CHAR_PX_11 * (double)bmt_svg_chars(d) + 6;
        if (w > widest)
            widest = w;
    }
    unsigned step = 1;
    while (step * bw < widest)
        step++;
    for (unsigned k = r->first; k <= r->last; k++) {
        double x = left + (k - r->first) * bw;
        double bh = (double)plot_h * (double)r->pow2[k] / (double)r->peak;
        bmt_svg_short_duration(k ? 1ull << (k - 1) : 0, d);
        snprintf(buf, sizeof buf,
                 "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                 "fill=\"#4a7bd0\"><title>&gt;= %s: %llu</title></rect>",
                 x + 1, Q_H - Q_BOTTOM - bh, bw - 2 > 1 ? bw - 2 : 1, bh, d,
                 (unsigned long long)r->pow2[k]);
        bmt_out_str(o, buf);
        if ((k - r->first) % step)
            continue;
        /* Centred under the bar, but never past either edge. */
        double half = CHAR_PX_11 * (double)bmt_svg_chars(d) / 2, cx = x + bw / 2;
        if (cx - half < left - 2)
            cx = left - 2 + half;
        if (cx + half > Q_W - 2)
            cx = Q_W - 2 - half;
        snprintf(buf, sizeof buf, "<text class=\"xlabel\" x=\"%.1f\" y=\"%u\" "
                 "text-anchor=\"middle\">%s</text>", cx, Q_H - Q_BOTTOM + 14, d);
        bmt_out_str(o, buf);
    }
}

void bmt_svg_quantize(struct bmt_out *o, const struct bmt_hist *h, const char *title)
{
    char buf[768], t[3][32], peak_text[32];
    struct rows r;
    rows_of(h, &r);
    quantize_head(o, title);
    if (h->count == 0) {
        bmt_out_str(o, "<text class=\"stats\" x=\"8\" y=\"34\">no data</text></svg>\n");
        return;
    }
    bmt_svg_short_duration(bmt_hist_quantile(h, 0.5), t[0]);
    bmt_svg_short_duration(bmt_hist_quantile(h, 0.99), t[1]);
    bmt_svg_short_duration(h->max, t[2]);
    snprintf(buf, sizeof buf, "<text class=\"stats\" x=\"8\" y=\"34\" fill=\"#444\">n=%llu  "
             "p50 %s  p99 %s  max %s</text>",
             (unsigned long long)h->count, t[0], t[1], t[2]);
    bmt_out_str(o, buf);
    /* Axis: the count scale on the left, inside the margin. */
    snprintf(peak_text, sizeof peak_text, "%llu", (unsigned long long)r.peak);
    snprintf(buf, sizeof buf,
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">0</text>"
             "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#999\"/>",
             r.left - 5, Q_TOP + 9, peak_text, r.left - 5, Q_H - Q_BOTTOM, r.left, Q_H - Q_BOTTOM,
             Q_W - Q_RIGHT, Q_H - Q_BOTTOM);
    bmt_out_str(o, buf);
    bars(o, &r);
    bmt_out_str(o, "</svg>\n");
}
