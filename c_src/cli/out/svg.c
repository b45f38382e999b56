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

void bmt_svg_quantize(struct bmt_out *o, const struct bmt_hist *h, const char *title)
{
    const unsigned W = 560, H = 220, topm = 44, bottom = 28, right = 10;
    char buf[768], d[32];
    uint64_t pow2[65], peak = 0;
    unsigned first = 0, last = 0;
    if (h->count) {
        bmt_hist_pow2(h, pow2);
        while (!pow2[first])
            first++;
        for (unsigned k = 0; k < 65; k++)
            if (pow2[k]) {
                last = k;
                if (pow2[k] > peak)
                    peak = pow2[k];
            }
    }
    char peak_text[32];
    snprintf(peak_text, sizeof peak_text, "%llu", (unsigned long long)peak);
    unsigned left = 14 + (unsigned)(CHAR_PX_11 * (double)strlen(peak_text));
    snprintf(buf, sizeof buf,
             "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
             "height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" font-size=\"11\">"
             "<title>",
             W, H, W, H);
    bmt_out_str(o, buf);
    bmt_html_string(o, title, strlen(title));
    snprintf(buf, sizeof buf,
             "</title><rect width=\"%u\" height=\"%u\" fill=\"#fff\" stroke=\"#ccc\"/>"
             "<text class=\"title\" x=\"8\" y=\"17\" font-size=\"13\" font-weight=\"bold\">",
             W, H);
    bmt_out_str(o, buf);
    bmt_svg_cut_text(o, title, (size_t)((W - 16) / CHAR_PX_13B));
    bmt_out_str(o, "</text>");
    if (h->count == 0) {
        snprintf(buf, sizeof buf, "<text class=\"stats\" x=\"8\" y=\"34\">no data</text></svg>\n");
        bmt_out_str(o, buf);
        return;
    }
    char t[4][32];
    bmt_svg_short_duration(bmt_hist_quantile(h, 0.5), t[0]);
    bmt_svg_short_duration(bmt_hist_quantile(h, 0.99), t[1]);
    bmt_svg_short_duration(h->max, t[2]);
    snprintf(buf, sizeof buf, "<text class=\"stats\" x=\"8\" y=\"34\" fill=\"#444\">n=%llu  "
             "p50 %s  p99 %s  max %s</text>",
             (unsigned long long)h->count, t[0], t[1], t[2]);
    bmt_out_str(o, buf);
    unsigned n = last - first + 1;
    double bw = (double)(W - left - right) / n;
    unsigned plot_h = H - bottom - topm;
    /* Axis: the count scale on the left, inside the margin. */
    snprintf(buf, sizeof buf,
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>"
             "<text class=\"axis\" x=\"%u\" y=\"%u\" text-anchor=\"end\">0</text>"
             "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#999\"/>",
             left - 5, topm + 9, peak_text, left - 5, H - bottom, left, H - bottom, W - right,
             H - bottom);
    bmt_out_str(o, buf);
    /* Labels every `step` bars so that they do not overlap. */
    double widest = 0;
    for (unsigned k = first; k <= last; k++) {
        bmt_svg_short_duration(k ? 1ull << (k - 1) : 0, d);
        double w = CHAR_PX_11 * (double)bmt_svg_chars(d) + 6;
        if (w > widest)
            widest = w;
    }
    unsigned step = 1;
    while (step * bw < widest)
        step++;
    for (unsigned k = first; k <= last; k++) {
        double x = left + (k - first) * bw;
        double bh = (double)plot_h * (double)pow2[k] / (double)peak;
        uint64_t lo = k ? 1ull << (k - 1) : 0;
        bmt_svg_short_duration(lo, d);
        snprintf(buf, sizeof buf,
                 "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                 "fill=\"#4a7bd0\"><title>&gt;= %s: %llu</title></rect>",
                 x + 1, H - bottom - bh, bw - 2 > 1 ? bw - 2 : 1, bh, d,
                 (unsigned long long)pow2[k]);
        bmt_out_str(o, buf);
        if ((k - first) % step == 0) {
            /* Centred under the bar, but never past either edge. */
            double half = CHAR_PX_11 * (double)bmt_svg_chars(d) / 2, cx = x + bw / 2;
            if (cx - half < left - 2)
                cx = left - 2 + half;
            if (cx + half > W - 2)
                cx = W - 2 - half;
            snprintf(buf, sizeof buf, "<text class=\"xlabel\" x=\"%.1f\" y=\"%u\" "
                     "text-anchor=\"middle\">%s</text>", cx, H - bottom + 14, d);
            bmt_out_str(o, buf);
        }
    }
    bmt_out_str(o, "</svg>\n");
}
