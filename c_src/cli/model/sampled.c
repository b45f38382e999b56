/* The sampling ratios in force (contract in sampled.h). */
#include "sampled.h"
#include "recorder/sampling.h"

#include <stdio.h>
#include <string.h>

void bmt_sampled_reset(struct bmt_sampled *s, uint64_t begin_ns)
{
    memset(s, 0, sizeof *s);
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        s->weight[tp] = 1;
    s->begin_ns = begin_ns;
    s->since_ns = UINT64_MAX;
}

/* Adds `name` to the kinds ever sampled, once. */
static void note_kind(struct bmt_sampled *s, const char *name)
{
    size_t at = strlen(s->kinds), n = strlen(name);
    if (n == 0) /* no kind to name (an odd trace's empty string) */
        return;
    for (const char *seen = strstr(s->kinds, name); seen; seen = strstr(seen + 1, name))
        if ((seen == s->kinds || seen[-1] == ',') && (seen[n] == '\0' || seen[n] == ','))
            return;
    if (at + n + 2 < sizeof s->kinds)
        snprintf(s->kinds + at, sizeof s->kinds - at, "%s%s", at ? "," : "", name);
}

/* The recorder's kind of `name`, or BMT_SAMPLE_NONE. */
static int kind_of_name(const char *name)
{
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
        if (strcmp(bmt_sample_kind_name((enum bmt_sample_kind)k), name) == 0)
            return k;
    return BMT_SAMPLE_NONE;
}

/* The recorder's kind of tracepoint `tp` (its catalogue flag's), or
 * BMT_SAMPLE_NONE. Returns are never decided on their own, but a call
 * dropped arms no return_trace: its return, result or exception is
 * dropped with it, so they weigh as calls. */
static int kind_of_tp(int tp)
{
    return bmt_sample_kind_of_flag(bmt_catalogue[tp].flag);
}

void bmt_sampled_set(struct bmt_sampled *s, const char *kind, size_t len, uint64_t ratio,
                     uint64_t ts_ns)
{
    char name[40];
    snprintf(name, sizeof name, "%.*s", (int)(len < 32 ? len : 32), kind);
    uint32_t r = ratio <= 1 ? 1 : ratio > UINT32_MAX ? UINT32_MAX : (uint32_t)ratio;
    int k = kind_of_name(name);
    if (k == BMT_SAMPLE_NONE)
        return; /* no kind the recorder samples: an odd or newer trace's event */
    if (r > 1) {
        note_kind(s, name);
        if (r > s->ratio_max)
            s->ratio_max = r;
    }
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        if (kind_of_tp(tp) == k)
            s->weight[tp] = r;
    int any = 0;
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        any |= s->weight[tp] > 1;
    if (any && s->since_ns == UINT64_MAX) {
        s->since_ns = ts_ns;
    } else if (!any && s->since_ns != UINT64_MAX) {
        s->sampled_ns = bmt_sampled_ns(s, ts_ns);
        s->since_ns = UINT64_MAX;
    }
}

uint64_t bmt_sampled_ns(const struct bmt_sampled *s, uint64_t end_ns)
{
    if (s->since_ns == UINT64_MAX)
        return s->sampled_ns;
    uint64_t from = s->since_ns > s->begin_ns ? s->since_ns : s->begin_ns;
    return s->sampled_ns + (end_ns > from ? end_ns - from : 0);
}
