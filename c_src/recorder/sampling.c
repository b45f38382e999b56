/* Sampling ratios (contract in sampling.h). */
#include "sampling.h"

#include <string.h>

static const char *const NAMES[BMT_SAMPLE_KINDS] = {
    [BMT_SAMPLE_CALL] = "call",
    [BMT_SAMPLE_SEND] = "send",
    [BMT_SAMPLE_RECEIVE] = "receive",
    [BMT_SAMPLE_RUNNING] = "running",
    [BMT_SAMPLE_GC] = "garbage_collection",
    [BMT_SAMPLE_PROCS] = "procs",
    [BMT_SAMPLE_PORTS] = "ports",
};

const char *bmt_sample_kind_name(enum bmt_sample_kind kind)
{
    return kind >= 0 && kind < BMT_SAMPLE_KINDS ? NAMES[kind] : "undefined";
}

enum bmt_sample_kind bmt_sample_kind_of_flag(const char *flag)
{
    /* The flag's first word: "send (links)" is send's. */
    size_t n = strcspn(flag, " ");
    static const struct {
        const char *flag;
        enum bmt_sample_kind kind;
    } map[] = {
        {"call", BMT_SAMPLE_CALL},       {"send", BMT_SAMPLE_SEND},
        {"'receive'", BMT_SAMPLE_RECEIVE}, {"running", BMT_SAMPLE_RUNNING},
        {"garbage_collection", BMT_SAMPLE_GC}, {"procs", BMT_SAMPLE_PROCS},
        {"ports", BMT_SAMPLE_PORTS},     {"running_ports", BMT_SAMPLE_PORTS},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i].flag) == n && strncmp(map[i].flag, flag, n) == 0)
            return map[i].kind;
    return BMT_SAMPLE_NONE;
}

static uint32_t threshold_of(uint32_t ratio)
{
    /* keep when r < 2^32 / ratio: exactly one in ratio, on average */
    return ratio <= 1 ? UINT32_MAX : (uint32_t)((UINT64_C(1) << 32) / ratio);
}

/* The sampled mask for the ratios now. */
static uint64_t mask_of(const struct bmt_sampling *s)
{
    uint64_t mask = 0;
    for (int tp = 0; tp < BMT_TP_COUNT; tp++) {
        int kind = s->kind_of[tp];
        if (kind >= 0 && atomic_load_explicit(&s->ratio[kind], memory_order_relaxed) > 1)
            mask |= UINT64_C(1) << tp;
    }
    return mask;
}

void bmt_sampling_init(struct bmt_sampling *s, const uint32_t ratio[BMT_SAMPLE_KINDS],
                       uint64_t ts_ns)
{
    memset(s, 0, sizeof *s);
    for (int tp = 0; tp < BMT_TP_COUNT; tp++) {
        enum bmt_sample_kind k = bmt_sample_kind_of_flag(bmt_catalogue[tp].flag);
        /* Returns come with their call: never sampled on their own. */
        if (tp == BMT_TP_function_return || tp == BMT_TP_function_result ||
            tp == BMT_TP_function_exception)
            k = BMT_SAMPLE_NONE;
        s->kind_of[tp] = (int8_t)k;
    }
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++) {
        uint32_t r = ratio && ratio[k] > 1 ? ratio[k] : 1;
        if (r > BMT_SAMPLE_MAX_RATIO)
            r = BMT_SAMPLE_MAX_RATIO;
        s->base[k] = r;
        atomic_store_explicit(&s->ratio[k], r, memory_order_relaxed);
        atomic_store_explicit(&s->threshold[k], threshold_of(r), memory_order_relaxed);
    }
    atomic_store_explicit(&s->mask, mask_of(s), memory_order_relaxed);
    bmt_sampling_note(s, ts_ns);
}

int bmt_sampling_set(struct bmt_sampling *s, enum bmt_sample_kind kind, uint32_t ratio)
{
    if (kind < 0 || kind >= BMT_SAMPLE_KINDS)
        return 0;
    if (ratio < 1)
        ratio = 1;
    if (ratio > BMT_SAMPLE_MAX_RATIO)
        ratio = BMT_SAMPLE_MAX_RATIO;
    if (atomic_load_explicit(&s->ratio[kind], memory_order_relaxed) == ratio)
        return 0;
    /* Threshold first: a writer that sees the new mask bit finds a
     * threshold for it (relaxed either way: one event's decision). */
    atomic_store_explicit(&s->threshold[kind], threshold_of(ratio), memory_order_relaxed);
    atomic_store_explicit(&s->ratio[kind], ratio, memory_order_relaxed);
    atomic_store_explicit(&s->mask, mask_of(s), memory_order_relaxed);
    return 1;
}

void bmt_sampling_note(struct bmt_sampling *s, uint64_t ts_ns)
{
    struct bmt_sample_change *c = &s->history[s->history_next];
    c->ts_ns = ts_ns;
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
        c->ratio[k] = atomic_load_explicit(&s->ratio[k], memory_order_relaxed);
    s->history_next = (s->history_next + 1) % BMT_SAMPLE_HISTORY;
    if (s->history_count < BMT_SAMPLE_HISTORY)
        s->history_count++;
}

void bmt_sampling_at(const struct bmt_sampling *s, uint64_t ts_ns,
                     uint32_t ratio[BMT_SAMPLE_KINDS])
{
    /* Oldest first; the latest change at or before ts_ns wins. */
    unsigned first = (s->history_next + BMT_SAMPLE_HISTORY - s->history_count) % BMT_SAMPLE_HISTORY;
    const struct bmt_sample_change *in_force = s->history_count ? &s->history[first] : NULL;
    for (unsigned i = 0; i < s->history_count; i++) {
        const struct bmt_sample_change *c = &s->history[(first + i) % BMT_SAMPLE_HISTORY];
        if (c->ts_ns <= ts_ns)
            in_force = c;
    }
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
        ratio[k] = in_force ? in_force->ratio[k] : 1;
}

int bmt_sample_reacts(const struct bmt_sampling *s, enum bmt_sample_kind kind)
{
    if (kind == BMT_SAMPLE_PROCS || kind == BMT_SAMPLE_PORTS)
        return s->base[kind] > 1;
    return kind >= 0 && kind < BMT_SAMPLE_KINDS;
}
