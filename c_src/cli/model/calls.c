/* The calls analysis (contract in calls.h). */
#include "calls.h"
#include "run.h"
#include "acc.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The capture's triggering call: of its function and process, the call
 * ending nearest the trigger (the tracer fires at the return it sees). */
static void watch_trigger(struct bmt_calls *c, uint32_t pid, const struct bmt_frame *f,
                          uint64_t end_ns, const uint64_t kinds[BMT_K_COUNT])
{
    uint64_t gap = end_ns > c->trigger_ns ? end_ns - c->trigger_ns : c->trigger_ns - end_ns;
    if (c->trigger_found && gap >= c->trigger_gap_ns)
        return;
    const struct bmt_strtab *pids = &c->cs.scope->names.pids;
    if (strcmp(bmt_strtab_str(&c->cs.funcs, f->func), c->trigger_func) != 0 ||
        strcmp(bmt_strtab_str(pids, pid), c->trigger_pid) != 0)
        return;
    struct bmt_slow_call *s = &c->trigger_call;
    s->pid = pid;
    s->func = f->func;
    s->start_ns = f->start_ns;
    s->duration_ns = end_ns - f->start_ns;
    memcpy(s->kinds, kinds, sizeof s->kinds);
    c->trigger_found = 1;
    c->trigger_gap_ns = gap;
}

int bmt_calls_is_trigger(const struct bmt_calls *c, const struct bmt_slow_call *s)
{
    return c->trigger_found && s->pid == c->trigger_call.pid &&
           s->func == c->trigger_call.func && s->start_ns == c->trigger_call.start_ns;
}

static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags, const uint64_t kinds[BMT_K_COUNT],
                    unsigned kind_mask);

int bmt_calls_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_calls *c = self;
    memset(c, 0, sizeof *c);
    bmt_callstack_init(&c->cs, scope);
    bmt_u64map_init(&c->index);
    c->cs.on_leave = on_leave;
    c->cs.ctx = c;
    c->slowest_cap = 10;
    return 0;
}

/* Keeps the slowest_cap longest calls, longest first. */
static int keep_slowest(struct bmt_calls *c, uint32_t pid, const struct bmt_frame *f,
                        uint64_t end_ns, const uint64_t kinds[BMT_K_COUNT])
{
    uint64_t dur = end_ns - f->start_ns;
    unsigned n = c->slowest_count;
    if (!c->slowest && !(c->slowest = calloc(c->slowest_cap, sizeof *c->slowest)))
        return -ENOMEM;
    if (n == c->slowest_cap && dur <= c->slowest[n - 1].duration_ns)
        return 0;
    if (n == c->slowest_cap)
        n--;
    unsigned i = n;
    while (i > 0 && c->slowest[i - 1].duration_ns < dur) {
        c->slowest[i] = c->slowest[i - 1];
        i--;
    }
    struct bmt_slow_call *s = &c->slowest[i];
    s->pid = pid;
    s->func = f->func;
    s->start_ns = f->start_ns;
    s->duration_ns = dur;
    memcpy(s->kinds, kinds, sizeof s->kinds);
    c->slowest_count = n + 1;
    return 0;
}

/* The stats index of `func` (of `pid`, by pid), made if new; or -ENOMEM. */
static int64_t stat_of(struct bmt_calls *c, uint32_t pid, uint32_t func)
{
    uint64_t key = c->by_pid ? ((uint64_t)(pid + 1) << 32) | func : func;
    int created;
    uint32_t *slot = bmt_u64map_get(&c->index, key, c->stat_count, &created);
    if (!slot)
        return -ENOMEM;
    uint32_t i = *slot;
    if (created) {
        struct bmt_fstat *stats = bmt_grow(c->stats, &c->stat_cap, c->stat_count, sizeof *stats);
        if (!stats)
            return -ENOMEM;
        c->stats = stats;
        struct bmt_fstat *s = &c->stats[c->stat_count++];
        s->func = func;
        s->pid = c->by_pid ? pid : BMT_CS_NONE;
        bmt_hist_init(&s->hist);
        for (int k = 0; k < BMT_K_COUNT; k++)
            bmt_hist_init(&s->khist[k]);
    }
    if (!c->by_pid) {
        uint32_t *by_func = bmt_grow(c->by_func, &c->by_func_cap, func, sizeof *by_func);
        if (!by_func)
            return -ENOMEM;
        c->by_func = by_func;
        by_func[func] = i + 1;
    }
    return i;
}

/* A sampled call kept 1 in `w` stands for w calls: the w - 1 not kept
 * are added as if like it (apart from the histogram: percentiles of the
 * calls kept are those of all). */
static void scale_back(struct bmt_fstat *s, const struct bmt_frame *f, uint64_t w, unsigned flags,
                       const uint64_t kinds[BMT_K_COUNT], unsigned kind_mask)
{
    uint64_t more = w - 1;
    for (unsigned m = kind_mask; m; m &= m - 1) {
        int k = __builtin_ctz(m);
        uint64_t own = kinds[k] - (f->child[k] < kinds[k] ? f->child[k] : kinds[k]);
        s->incl[k] += kinds[k] * more;
        s->own[k] += own * more;
        s->total_ns += kinds[k] * more;
    }
    if (flags & BMT_CS_EXCEPTION)
        s->exception_count += more;
    if (flags & (BMT_CS_UNFINISHED | BMT_CS_CUT))
        s->unfinished_count += more;
    else
        s->unkept_count += more;
}

static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags, const uint64_t kinds[BMT_K_COUNT],
                    unsigned kind_mask)
{
    struct bmt_calls *c = ctx;
    (void)cs;
    int64_t i = !c->by_pid && f->func < c->by_func_cap && c->by_func[f->func]
                    ? (int64_t)c->by_func[f->func] - 1
                    : stat_of(c, pid, f->func);
    if (i < 0)
        return (int)i;
    struct bmt_fstat *s = &c->stats[i];
    uint64_t total = 0;
    for (unsigned m = kind_mask; m; m &= m - 1) { /* the others are 0 */
        int k = __builtin_ctz(m);
        uint64_t own = kinds[k] - (f->child[k] < kinds[k] ? f->child[k] : kinds[k]);
        s->incl[k] += kinds[k];
        s->own[k] += own;
        total += kinds[k];
    }
    s->total_ns += total;
    if (!bmt_wakers_empty(&f->wakers))
        bmt_wakers_merge(&s->wakers, &f->wakers, f->weight);
    if (flags & BMT_CS_EXCEPTION)
        s->exception_count++;
    if (f->weight > 1)
        scale_back(s, f, f->weight, flags, kinds, kind_mask);
    /* A sample only when the whole call is inside the window. */
    if (flags & (BMT_CS_UNFINISHED | BMT_CS_CUT)) {
        s->unfinished_count++;
        return 0;
    }
    uint64_t dur = end_ns - f->start_ns;
    if (bmt_hist_add(&s->hist, dur) < 0)
        return -ENOMEM;
    if (c->breakdown)
        for (int k = 0; k < BMT_K_PREEMPTED; k++)
            if (bmt_hist_add(&s->khist[k], k == BMT_K_RUNNABLE  ? bmt_kind_runnable(kinds)
                                           : k == BMT_K_UNKNOWN ? bmt_kind_unknown(kinds)
                                                                : kinds[k]) < 0)
                return -ENOMEM;
    if (c->group &&
        bmt_groupby_add(c->group, f->func,
                        (flags & BMT_CS_EXCEPTION) && !c->group->arg ? c->group->exception_value
                                                                     : f->value,
                        dur, f->weight) < 0)
        return -ENOMEM;
    if (keep_slowest(c, pid, f, end_ns, kinds) < 0)
        return -ENOMEM;
    if (c->trigger_func)
        watch_trigger(c, pid, f, end_ns, kinds);
    if (c->slower_ns && dur > c->slower_ns) {
        if (c->on_slow)
            c->on_slow(c->slow_ctx, c, pid, f, end_ns, flags);
        c->slow_count++;
    }
    return 0;
}

int bmt_calls_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_calls *c = ctx;
    int rc = bmt_callstack_feed(&c->cs, rec);
    c->cs.value = BMT_CS_NONE; /* the groupby accumulator's, for this event only */
    return rc;
}

int bmt_calls_finish(void *self, const struct bmt_an_pass *pass)
{
    struct bmt_calls *c = self;
    return bmt_callstack_finish(&c->cs, pass);
}

static const struct bmt_calls *sort_calls;

static int by_total_desc(const void *a, const void *b)
{
    const struct bmt_fstat *x = &sort_calls->stats[*(const uint32_t *)a];
    const struct bmt_fstat *y = &sort_calls->stats[*(const uint32_t *)b];
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    if (bmt_fstat_count(x) != bmt_fstat_count(y))
        return bmt_fstat_count(x) > bmt_fstat_count(y) ? -1 : 1;
    int d = strcmp(bmt_strtab_str(&sort_calls->cs.funcs, x->func),
                   bmt_strtab_str(&sort_calls->cs.funcs, y->func));
    return d ? d : (x->pid < y->pid ? -1 : x->pid > y->pid);
}

uint32_t *bmt_calls_sorted(const struct bmt_calls *c)
{
    uint32_t *order = malloc((c->stat_count + 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t i = 0; i < c->stat_count; i++)
        order[i] = i;
    sort_calls = c;
    qsort(order, c->stat_count, sizeof *order, by_total_desc);
    return order;
}

struct bmt_calls_lacks bmt_calls_lacking(const struct bmt_calls *c)
{
    const struct bmt_an_scope *s = c->cs.scope;
    struct bmt_calls_lacks l = {s->sched_count == 0, s->receive_count == 0, s->gc_count == 0};
    return l;
}

int bmt_calls_own_is_cpu(const struct bmt_calls *c)
{
    return c->cs.scope->sched_count > 0;
}

uint64_t bmt_calls_own_ns(const struct bmt_calls *c, const struct bmt_fstat *s)
{
    /* Without scheduling events, own wall time. With them, own time seen
     * on CPU (collecting garbage included), plus the time of processes the
     * trace never schedules (their wall time), never time seen off CPU,
     * whatever the reason it was off (OFF_UNKNOWN: an off-CPU period it
     * cannot classify, or past a run's last event): counted as CPU, OWN
     * once read 1.646 s against 180 ms on CPU. */
    if (!bmt_calls_own_is_cpu(c)) {
        uint64_t wall = 0;
        for (int k = 0; k < BMT_K_COUNT; k++)
            wall += s->own[k];
        return wall;
    }
    return s->own[BMT_K_ON_CPU] + s->own[BMT_K_GC] + s->own[BMT_K_UNKNOWN];
}

void bmt_calls_free(void *self)
{
    struct bmt_calls *c = self;
    for (uint32_t i = 0; i < c->stat_count; i++) {
        bmt_hist_free(&c->stats[i].hist);
        for (int k = 0; k < BMT_K_COUNT; k++)
            bmt_hist_free(&c->stats[i].khist[k]);
    }
    free(c->stats);
    free(c->by_func);
    free(c->slowest);
    bmt_u64map_free(&c->index);
    bmt_callstack_free(&c->cs);
}

/* ---- as an accumulator (acc.h) ---- */

const struct bmt_acc bmt_calls_acc = {
    "calls", bmt_calls_init, bmt_calls_feed, NULL, bmt_calls_finish, bmt_calls_free,
    &bmt_callstack_needs, 1};
