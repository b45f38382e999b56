/* The procs analysis (contract in procs.h). */
#include "procs.h"
#include "run.h"
#include "acc.h"
#include "layouts.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_procs_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_procs *p = self;
    memset(p, 0, sizeof *p);
    p->scope = scope;
    bmt_strtab_init(&p->reasons);
    return 0;
}

/* Keeps the BMT_PROCS_TOP largest (sign 1) or smallest (sign -1). */
static void top_insert(struct bmt_life *top, unsigned *count, struct bmt_life l, int sign)
{
    unsigned n = *count;
    if (n == BMT_PROCS_TOP) {
        uint64_t worst = top[n - 1].lifetime_ns;
        if (sign > 0 ? l.lifetime_ns <= worst : l.lifetime_ns >= worst)
            return;
        n--;
    }
    unsigned i = n;
    while (i > 0 && (sign > 0 ? top[i - 1].lifetime_ns < l.lifetime_ns
                              : top[i - 1].lifetime_ns > l.lifetime_ns)) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = l;
    *count = n + 1;
}

/* The row of the second holding `ts`, appended if new (input is in time
 * order, so only the last row can be it). */
static struct bmt_second *second_of(struct bmt_procs *p, uint64_t ts)
{
    uint64_t sec = (ts - p->first_ns) / 1000000000u;
    if (p->second_count && p->seconds[p->second_count - 1].second == sec)
        return &p->seconds[p->second_count - 1];
    if (p->second_count == p->second_cap) {
        uint64_t cap = p->second_cap ? p->second_cap * 2 : 64;
        struct bmt_second *s = realloc(p->seconds, cap * sizeof *s);
        if (!s)
            return NULL;
        p->seconds = s;
        p->second_cap = cap;
    }
    struct bmt_second *s = &p->seconds[p->second_count++];
    s->second = sec;
    s->spawns = s->exits = 0;
    return s;
}

int bmt_procs_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_procs *p = ctx;
    const struct bmt_an_scope *sc = p->scope;
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    if (rec->tp != BMT_TP_process_spawn && rec->tp != BMT_TP_process_exit)
        return 0;
    if (!bmt_an_valid(sc, ts))
        return 0;
    unsigned f = rec->tp == BMT_TP_process_spawn ? BMT_F_process_spawn_pid : BMT_F_process_exit_pid;
    if (!bmt_an_keep(sc, v[f].str, v[f].len))
        return 0;
    int64_t pid = bmt_names_pid(&p->scope->names, v[f].str, v[f].len);
    if (pid < 0)
        return (int)pid;
    uint64_t *spawns = bmt_grow(p->spawn_ns, &p->pid_cap, (uint32_t)pid, sizeof *spawns);
    if (!spawns)
        return -ENOMEM;
    p->spawn_ns = spawns;
    if (rec->tp == BMT_TP_process_spawn)
        p->spawn_ns[pid] = ts + 1;
    if (ts < sc->window.begin_ns)
        return 0; /* before the window: only the spawn time is kept */
    if (!p->started) {
        p->started = 1;
        p->first_ns = sc->windowed && sc->window.begin_ns ? sc->window.begin_ns : sc->first_ns;
        if (p->first_ns > ts)
            p->first_ns = ts;
    }
    struct bmt_second *second = second_of(p, ts);
    if (!second)
        return -ENOMEM;
    /* Sampled (procs kind): the event stands for w, the ratio in force. */
    uint64_t w = sc->sampled.weight[rec->tp];
    if (rec->tp == BMT_TP_process_spawn) {
        p->spawn_count += w;
        p->spawn_kept_count++;
        second->spawns += w;
        return 0;
    }
    p->exit_count += w;
    p->exit_kept_count++;
    second->exits += w;
    const struct bmt_value *reason = &v[BMT_F_process_exit_reason];
    int64_t rid = bmt_strtab_intern(&p->reasons, reason->str, reason->len);
    if (rid < 0)
        return (int)rid;
    uint64_t *counts = bmt_grow(p->reason_counts, &p->reason_cap, (uint32_t)rid, sizeof *counts);
    if (!counts)
        return -ENOMEM;
    p->reason_counts = counts;
    p->reason_counts[rid] += w;
    if (!p->spawn_ns[pid]) {
        p->exit_unknown_count++;
        return 0;
    }
    struct bmt_life l = {(uint32_t)pid, ts - (p->spawn_ns[pid] - 1)};
    p->spawn_ns[pid] = 0;
    top_insert(p->longest, &p->longest_count, l, 1);
    top_insert(p->shortest, &p->shortest_count, l, -1);
    return 0;
}

void bmt_procs_free(void *self)
{
    struct bmt_procs *p = self;
    bmt_strtab_free(&p->reasons);
    free(p->spawn_ns);
    free(p->reason_counts);
    free(p->seconds);
}

static const struct bmt_procs *sort_procs;

static int by_reason_desc(const void *a, const void *b)
{
    uint64_t x = sort_procs->reason_counts[*(const uint32_t *)a];
    uint64_t y = sort_procs->reason_counts[*(const uint32_t *)b];
    return x != y ? (x > y ? -1 : 1) : (int)(*(const uint32_t *)a - *(const uint32_t *)b);
}

uint32_t *bmt_procs_reasons(const struct bmt_procs *p)
{
    uint32_t *order = malloc((p->reasons.count + 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t i = 0; i < p->reasons.count; i++)
        order[i] = i;
    sort_procs = p;
    qsort(order, p->reasons.count, sizeof *order, by_reason_desc);
    return order;
}

uint64_t bmt_procs_alive(const struct bmt_procs *p)
{
    uint64_t alive = 0;
    for (uint32_t i = 0; i < p->pid_cap; i++)
        alive += p->spawn_ns[i] != 0;
    return alive;
}

/* ---- as an accumulator (acc.h) ---- */

static const struct bmt_needs needs = {{
    BMT_NEED(process_spawn, BMT_FIELD(process_spawn, pid)),
    BMT_NEED(process_exit, BMT_FIELD(process_exit, pid) | BMT_FIELD(process_exit, reason)),
}, 0};

const struct bmt_acc bmt_procs_acc = {
    "procs", bmt_procs_init, bmt_procs_feed, NULL, NULL, bmt_procs_free, &needs, 1};
