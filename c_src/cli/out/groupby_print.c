/* `calls --group-by` printed (contract in groupby_print.h). */
#include "groupby_print.h"
#include "hist_print.h"
#include "json.h"
#include "model/elixir.h"
#include "base/timefmt.h"

#include <stdio.h>

static void group_name(const struct bmt_groupby *g, char *buf, size_t size)
{
    if (g->arg)
        snprintf(buf, size, "arg:%u", g->arg);
    else
        snprintf(buf, size, "return");
}

void bmt_groupby_text(struct bmt_out *o, const struct bmt_groupby *g, const struct bmt_strtab *funcs,
                      const uint32_t *order)
{
    char line[1024], fn[600], p50[32], p99[32], max[32];
    if (g->arg)
        snprintf(line, sizeof line, "\nLatency by argument %u (values cut at %d bytes, a "
                 "function's values past the first %d folded into other):\n",
                 g->arg, BMT_GROUP_VALUE_BYTES, BMT_GROUP_MAX_VALUES);
    else
        snprintf(line, sizeof line, "\nLatency by value returned (values cut at %d bytes, a "
                 "function's values past the first %d folded into other):\n",
                 BMT_GROUP_VALUE_BYTES, BMT_GROUP_MAX_VALUES);
    bmt_out_str(o, line);
    snprintf(line, sizeof line, "%-40s %-30s %10s %12s %12s %12s\n", "FUNCTION", "VALUE", "CALLS",
             "P50", "P99", "MAX");
    bmt_out_str(o, line);
    for (uint32_t i = 0; i < g->row_count; i++) {
        const struct bmt_group_row *r = &g->rows[order[i]];
        const char *f = bmt_elixir_mfa(bmt_strtab_str(funcs, r->func),
                                       bmt_strtab_len(funcs, r->func), fn, sizeof fn);
        bmt_duration_text(bmt_hist_quantile(&r->hist, 0.5), p50);
        bmt_duration_text(bmt_hist_quantile(&r->hist, 0.99), p99);
        bmt_duration_text(r->hist.max, max);
        snprintf(line, sizeof line, "%-40s %-30s %10llu %12s %12s %12s\n", f,
                 bmt_groupby_value_text(g, r), (unsigned long long)r->count, p50, p99, max);
        bmt_out_str(o, line);
    }
    if (!g->row_count)
        bmt_out_str(o, "(no finished calls)\n");
}

void bmt_groupby_json(struct bmt_out *o, const struct bmt_groupby *g, const struct bmt_strtab *funcs,
                      const uint32_t *order)
{
    char name[32], fn[600];
    group_name(g, name, sizeof name);
    bmt_out_str(o, ", \"group_by\": ");
    bmt_json_cstr(o, name);
    bmt_out_str(o, ", \"groups\": [");
    for (uint32_t i = 0; i < g->row_count; i++) {
        const struct bmt_group_row *r = &g->rows[order[i]];
        const char *f = bmt_elixir_mfa(bmt_strtab_str(funcs, r->func),
                                       bmt_strtab_len(funcs, r->func), fn, sizeof fn);
        bmt_out_str(o, i ? ",\n  {\"function\": " : "\n  {\"function\": ");
        bmt_json_cstr(o, f);
        bmt_out_str(o, ", \"value\": ");
        bmt_json_cstr(o, bmt_groupby_value_text(g, r));
        bmt_out_str(o, r->value == BMT_GROUP_OTHER ? ", \"other\": true" : ", \"other\": false");
        /* count: scaled back in a sampled trace; kept_count: the calls
         * kept, of which the percentiles are (as calls' rows). */
        char buf[96];
        snprintf(buf, sizeof buf, ", \"count\": %llu, \"kept_count\": %llu, ",
                 (unsigned long long)r->count, (unsigned long long)r->hist.count);
        bmt_out_str(o, buf);
        bmt_hist_print_json_quantiles(o, &r->hist);
        bmt_out_char(o, '}');
    }
    bmt_out_str(o, g->row_count ? "\n]" : "]");
}
