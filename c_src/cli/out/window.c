/* The scope of an analysis in its JSON output (contract in window.h). */
#include "window.h"
#include "json.h"

#include <stdio.h>

/* `, "sampling": null` or what sampled.h knows after the pass ending at
 * `end_ns`, over a window of `span_ns`. */
static void sampling_json(struct bmt_out *o, const struct bmt_an_scope *s, uint64_t span_ns,
                          uint64_t end_ns)
{
    const struct bmt_sampled *sd = &s->sampled;
    if (!sd->ratio_max) {
        bmt_out_str(o, ", \"sampling\": null");
        return;
    }
    char buf[160];
    double f = span_ns ? (double)bmt_sampled_ns(sd, end_ns) / (double)span_ns : 0.0;
    snprintf(buf, sizeof buf, ", \"sampling\": {\"ratio_max\": %u, \"sampled_fraction\": %.4f, "
             "\"scaled_back\": %s, \"percentiles\": \"as measured\", \"kinds\": ",
             sd->ratio_max, f > 1.0 ? 1.0 : f, sd->scaled ? "true" : "false");
    bmt_out_str(o, buf);
    bmt_json_cstr(o, sd->kinds);
    bmt_out_char(o, '}');
}

void bmt_json_window(struct bmt_out *o, const struct bmt_reader *r, const struct bmt_an_scope *s,
                     const struct bmt_an_pass *p)
{
    char buf[256];
    uint64_t b = s->window.begin_ns > p->first_ns ? s->window.begin_ns : p->first_ns;
    uint64_t e = p->end_ns;
    snprintf(buf, sizeof buf, "\"window\": {\"begin_unix_ns\": %lld, \"end_unix_ns\": %lld, "
             "\"duration_ns\": %llu, \"complete_from_unix_ns\": ",
             (long long)bmt_reader_wall_ns(r, b), (long long)bmt_reader_wall_ns(r, e),
             (unsigned long long)(e > b ? e - b : 0));
    bmt_out_str(o, buf);
    if (s->valid_from_ns)
        snprintf(buf, sizeof buf, "%lld", (long long)bmt_reader_wall_ns(r, s->valid_from_ns));
    else
        snprintf(buf, sizeof buf, "null");
    bmt_out_str(o, buf);
    bmt_out_str(o, ", \"processes\": ");
    if (!s->filtering) {
        bmt_out_str(o, "\"all\"}");
    } else {
        bmt_out_char(o, '[');
        for (uint32_t i = 0; i < s->kept.count; i++) {
            if (i)
                bmt_out_str(o, ", ");
            bmt_json_string(o, bmt_strtab_str(&s->kept, i), bmt_strtab_len(&s->kept, i));
        }
        bmt_out_str(o, "]}");
    }
    sampling_json(o, s, e > b ? e - b : 0, e);
}
