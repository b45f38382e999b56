/* Histograms printed (contract in hist_print.h). */
#include "hist_print.h"
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>

static uint64_t row_value(unsigned k)
{
    return k == 0 ? 0 : 1ull << (k - 1);
}

void bmt_hist_print_quantize(struct bmt_out *o, const struct bmt_hist *h)
{
    if (h->count == 0)
        return;
    uint64_t pow2[65];
    bmt_hist_pow2(h, pow2);
    unsigned first = 0, last = 0;
    while (!pow2[first])
        first++;
    for (unsigned k = 0; k < 65; k++)
        if (pow2[k])
            last = k;
    if (first > 0)
        first--;
    if (last < 64)
        last++;
    char line[160];
    snprintf(line, sizeof line, "%16s  %s %s\n", "value", "------------- Distribution -------------",
             "count");
    bmt_out_str(o, line);
    for (unsigned k = first; k <= last; k++) {
        unsigned at = (unsigned)((40.0 * (double)pow2[k]) / (double)h->count + 0.5);
        char bar[41];
        memset(bar, ' ', 40);
        memset(bar, '@', at);
        bar[40] = '\0';
        snprintf(line, sizeof line, "%16llu |%s %llu\n", (unsigned long long)row_value(k), bar,
                 (unsigned long long)pow2[k]);
        bmt_out_str(o, line);
    }
}

void bmt_hist_print_json_stats(struct bmt_out *o, const struct bmt_hist *h)
{
    char buf[48];
    snprintf(buf, sizeof buf, "\"count\": %llu, ", (unsigned long long)h->count);
    bmt_out_str(o, buf);
    bmt_hist_print_json_quantiles(o, h);
}

void bmt_hist_print_json_quantiles(struct bmt_out *o, const struct bmt_hist *h)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "\"min_ns\": %llu, \"p50_ns\": %llu, \"p90_ns\": %llu, "
             "\"p99_ns\": %llu, \"p999_ns\": %llu, \"max_ns\": %llu, \"mean_ns\": %llu",
             (unsigned long long)(h->count ? h->min : 0),
             (unsigned long long)bmt_hist_quantile(h, 0.5),
             (unsigned long long)bmt_hist_quantile(h, 0.9),
             (unsigned long long)bmt_hist_quantile(h, 0.99),
             (unsigned long long)bmt_hist_quantile(h, 0.999), (unsigned long long)h->max,
             (unsigned long long)(h->count ? h->sum / h->count : 0));
    bmt_out_str(o, buf);
}

void bmt_hist_print_json_quantize(struct bmt_out *o, const struct bmt_hist *h)
{
    uint64_t pow2[65];
    bmt_hist_pow2(h, pow2);
    bmt_out_char(o, '[');
    int n = 0;
    for (unsigned k = 0; k < 65; k++) {
        if (!pow2[k])
            continue;
        bmt_out_str(o, n++ ? ", [" : "[");
        bmt_out_u64(o, row_value(k));
        bmt_out_str(o, ", ");
        bmt_out_u64(o, pow2[k]);
        bmt_out_char(o, ']');
    }
    bmt_out_char(o, ']');
}

void bmt_hist_texts(const struct bmt_hist *h, struct bmt_hist_texts *t)
{
    bmt_duration_text(h->sum, t->total);
    bmt_duration_text(bmt_hist_quantile(h, 0.5), t->p50);
    bmt_duration_text(bmt_hist_quantile(h, 0.9), t->p90);
    bmt_duration_text(bmt_hist_quantile(h, 0.99), t->p99);
    bmt_duration_text(h->max, t->max);
    bmt_duration_text(h->count ? h->sum / h->count : 0, t->mean);
}
