/* What a function's time breakdown says (contract in calls_reading.h). */
#include "calls_reading.h"

#include <stdio.h>
#include <string.h>

unsigned bmt_calls_shares(const struct bmt_calls *c, const struct bmt_fstat *f,
                          struct bmt_share out[BMT_SHARES_MAX])
{
    struct bmt_calls_lacks l = bmt_calls_lacking(c);
    const uint64_t *k = f->incl;
    unsigned n = 0;
    uint64_t unknown = bmt_kind_unknown(k);
    if (l.sched) {
        /* Without scheduling events every kind is unknown (proc_state.h). */
        for (int i = 0; i < BMT_K_COUNT; i++)
            if (i != BMT_K_UNKNOWN && i != BMT_K_OFF_UNKNOWN)
                unknown += k[i];
    } else {
        out[n++] = (struct bmt_share){"on-cpu", "on CPU", k[BMT_K_ON_CPU]};
        if (l.receive) {
            out[n++] = (struct bmt_share){"off-cpu", "off CPU", bmt_kind_runnable(k) +
                                                                 k[BMT_K_WAITING]};
        } else {
            out[n++] = (struct bmt_share){"runnable", "runnable", bmt_kind_runnable(k)};
            out[n++] = (struct bmt_share){"waiting", "waiting", k[BMT_K_WAITING]};
        }
        if (!l.gc)  /* else collections count as on CPU: no GC share to show */
            out[n++] = (struct bmt_share){"gc", "GC", k[BMT_K_GC]};
    }
    if (unknown || !n)
        out[n++] = (struct bmt_share){"unknown", "unknown", unknown};
    return n;
}

/* What a dominant share means. */
static const char *meaning(const char *key)
{
    static const struct {
        const char *key, *text;
    } m[] = {
        {"on-cpu", "mostly on CPU: the function's own work"},
        {"runnable", "mostly runnable: the schedulers were saturated"},
        {"waiting", "mostly waiting on messages"},
        {"off-cpu", "mostly off CPU: runnable or waiting (the trace has no message_receive "
                    "events to tell them apart)"},
        {"gc", "mostly garbage collection"},
        {"unknown", "mostly unknown: the trace does not say where this time went"},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (strcmp(m[i].key, key) == 0)
            return m[i].text;
    return key;
}

void bmt_calls_waker_label(const struct bmt_calls *c, uint32_t pid, char *buf, size_t size)
{
    const struct bmt_names *n = &c->cs.scope->names;
    char name[512];
    bmt_names_name(n, pid, name, sizeof name);
    int len = (int)bmt_strtab_len(&n->pids, pid);
    const char *text = bmt_strtab_str(&n->pids, pid);
    if (name[0])
        snprintf(buf, size, "%s (%.*s)", name, len, text);
    else
        snprintf(buf, size, "%.*s", len, text);
}

/* The reading of a function mostly waiting: who ended its waits, when its
 * tally names anyone; else the plain meaning. */
static void waiting_reading(const struct bmt_calls *c, const struct bmt_fstat *f, char *buf,
                            size_t size)
{
    unsigned order[BMT_WAKERS_MAX];
    unsigned n = bmt_wakers_order(&f->wakers, order);
    uint64_t wait = f->incl[BMT_K_WAITING];
    if (!n || !wait) {
        snprintf(buf, size, "%s", meaning("waiting"));
        return;
    }
    char who[2][600];
    double pct[2];
    for (unsigned i = 0; i < 2 && i < n; i++) {
        bmt_calls_waker_label(c, f->wakers.pid[order[i]], who[i], sizeof who[i]);
        uint64_t ns = f->wakers.ns[order[i]];
        pct[i] = 100.0 * (double)(ns < wait ? ns : wait) / (double)wait;
    }
    if (2 * f->wakers.ns[order[0]] > wait)
        snprintf(buf, size, "%s from %s, %.0f%% of the wait", meaning("waiting"), who[0], pct[0]);
    else if (n == 1)
        snprintf(buf, size, "%s: %.0f%% of the wait from %s", meaning("waiting"), pct[0], who[0]);
    else
        snprintf(buf, size, "%s: %.0f%% of the wait from %s, %.0f%% from %s", meaning("waiting"),
                 pct[0], who[0], pct[1], who[1]);
}

void bmt_calls_reading(const struct bmt_calls *c, const struct bmt_fstat *f, char *buf,
                       size_t size)
{
    struct bmt_share s[BMT_SHARES_MAX];
    unsigned n = bmt_calls_shares(c, f, s);
    uint64_t total = 0;
    unsigned a = 0, b = n;  /* the largest share, the second */
    for (unsigned i = 0; i < n; i++) {
        total += s[i].ns;
        if (s[i].ns > s[a].ns)
            a = i;
    }
    for (unsigned i = 0; i < n; i++)
        if (i != a && (b == n || s[i].ns > s[b].ns))
            b = i;
    if (!total) {
        snprintf(buf, size, "no time inside the window");
    } else if (2 * s[a].ns > total && strcmp(s[a].key, "waiting") == 0) {
        waiting_reading(c, f, buf, size);
    } else if (2 * s[a].ns > total) {
        snprintf(buf, size, "%s", meaning(s[a].key));
    } else {
        snprintf(buf, size, "%.0f%% %s, %.0f%% %s", 100.0 * (double)s[a].ns / (double)total,
                 s[a].label, 100.0 * (double)s[b].ns / (double)total, s[b].label);
    }
}

/* 1 when stat x (p99 px) ranks before stat y (p99 py). */
static int slower(const struct bmt_calls *c, uint32_t x, uint64_t px, uint32_t y, uint64_t py)
{
    if (px != py)
        return px > py;
    if (c->stats[x].total_ns != c->stats[y].total_ns)
        return c->stats[x].total_ns > c->stats[y].total_ns;
    return x < y;
}

uint32_t bmt_calls_slowest_funcs(const struct bmt_calls *c, uint32_t *order, uint32_t max)
{
    /* An insertion into the `max` best: a report lists ~10 of any number. */
    uint64_t p99[64];
    uint32_t n = 0;
    if (max > 64)
        max = 64;
    for (uint32_t i = 0; i < c->stat_count; i++) {
        if (!c->stats[i].hist.count)
            continue;
        uint64_t p = bmt_hist_quantile(&c->stats[i].hist, 0.99);
        uint32_t at = n < max ? n : max;
        while (at > 0 && slower(c, i, p, order[at - 1], p99[at - 1])) {
            if (at < max) {
                order[at] = order[at - 1];
                p99[at] = p99[at - 1];
            }
            at--;
        }
        if (at < max) {
            order[at] = i;
            p99[at] = p;
            if (n < max)
                n++;
        }
    }
    return n;
}
