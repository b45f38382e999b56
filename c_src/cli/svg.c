/* Small inline SVG charts for `report` (contract in analyses.h): no
 * scripts, no external resources, tooltips through <title>. */
#include "analyses.h"

#include <stdio.h>
#include <string.h>

void bmt_svg_quantize(struct bmt_out *o, const struct bmt_hist *h, const char *title)
{
    const unsigned W = 560, H = 200, left = 50, bottom = 40, topm = 24;
    char buf[512], d[32];
    snprintf(buf, sizeof buf,
             "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
             "height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" font-size=\"11\">"
             "<rect width=\"%u\" height=\"%u\" fill=\"#fff\" stroke=\"#ccc\"/>"
             "<text x=\"%u\" y=\"16\" font-size=\"13\" font-weight=\"bold\">",
             W, H, W, H, W, H, left);
    bmt_out_str(o, buf);
    bmt_an_html_string(o, title, strlen(title));
    bmt_out_str(o, "</text>");
    if (h->count == 0) {
        snprintf(buf, sizeof buf, "<text x=\"%u\" y=\"%u\">no data</text></svg>\n", left, H / 2);
        bmt_out_str(o, buf);
        return;
    }
    uint64_t pow2[65], peak = 0;
    bmt_hist_pow2(h, pow2);
    unsigned first = 0, last = 0;
    while (!pow2[first])
        first++;
    for (unsigned k = 0; k < 65; k++)
        if (pow2[k]) {
            last = k;
            if (pow2[k] > peak)
                peak = pow2[k];
        }
    unsigned n = last - first + 1;
    double bw = (double)(W - left - 10) / n;
    unsigned plot_h = H - bottom - topm;
    snprintf(buf, sizeof buf, "<text x=\"%u\" y=\"%u\" text-anchor=\"end\">%llu</text>"
             "<text x=\"%u\" y=\"%u\" text-anchor=\"end\">0</text>",
             left - 4, topm + 10, (unsigned long long)peak, left - 4, H - bottom);
    bmt_out_str(o, buf);
    for (unsigned k = first; k <= last; k++) {
        double x = left + (k - first) * bw;
        double bh = (double)plot_h * (double)pow2[k] / (double)peak;
        uint64_t lo = k ? 1ull << (k - 1) : 0;
        bmt_an_duration_text(lo, d);
        snprintf(buf, sizeof buf,
                 "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4a7bd0\">"
                 "<title>&gt;= %s: %llu</title></rect>",
                 x + 1, H - bottom - bh, bw - 2 > 1 ? bw - 2 : 1, bh, d,
                 (unsigned long long)pow2[k]);
        bmt_out_str(o, buf);
        if (n <= 12 || (k - first) % ((n + 11) / 12) == 0) {
            snprintf(buf, sizeof buf,
                     "<text x=\"%.1f\" y=\"%u\" text-anchor=\"end\" transform=\"rotate(-35 %.1f %u)\">"
                     "%s</text>",
                     x + bw / 2, H - bottom + 12, x + bw / 2, H - bottom + 12, d);
            bmt_out_str(o, buf);
        }
    }
    char t[4][32];
    bmt_an_duration_text(bmt_hist_quantile(h, 0.5), t[0]);
    bmt_an_duration_text(bmt_hist_quantile(h, 0.99), t[1]);
    bmt_an_duration_text(h->max, t[2]);
    snprintf(buf, sizeof buf,
             "<text x=\"%u\" y=\"16\" text-anchor=\"end\">n=%llu  p50 %s  p99 %s  max %s</text>"
             "</svg>\n",
             W - 8, (unsigned long long)h->count, t[0], t[1], t[2]);
    bmt_out_str(o, buf);
}
