/* Process time by kind (rules and contract in proc_state.h). */
#include "proc_state.h"

#include <string.h>

const char *const bmt_kind_names[BMT_K_COUNT] = {"on_cpu", "runnable", "waiting",
                                                  "gc", "unknown", "preempted",
                                                  "off_unknown"};

void bmt_pstate_init(struct bmt_pstate *p, uint64_t ts)
{
    memset(p, 0, sizeof *p);
    p->since_ns = ts;
    p->state = BMT_PSS_UNKNOWN;
    p->sent_from = BMT_PS_NOBODY;
}

/* Adds [a, b] clipped to the window to sum `k`: 1 << k when it added
 * time, else 0 (for the kinds used). */
static unsigned add(uint64_t *cum, enum bmt_kind k, uint64_t a, uint64_t b,
                    const struct bmt_window *w)
{
    if (a < w->begin_ns)
        a = w->begin_ns;
    if (b > w->end_ns)
        b = w->end_ns;
    if (b <= a)
        return 0;
    cum[k] += b - a;
    return 1u << k;
}

/* add() to the process's sums. */
static void add_p(struct bmt_pstate *p, enum bmt_kind k, uint64_t a, uint64_t b,
                  const struct bmt_window *w)
{
    p->used |= (uint8_t)add(p->cum, k, a, b, w);
}

/* The kind of the open segment while running or unknown. */
static enum bmt_kind current(const struct bmt_pstate *p)
{
    if (p->gc_depth)
        return BMT_K_GC;
    if (p->state == BMT_PSS_LOST)
        return BMT_K_OFF_UNKNOWN;
    return p->state == BMT_PSS_RUNNING || p->state == BMT_PSS_IN_PENDING ? BMT_K_ON_CPU : BMT_K_UNKNOWN;
}

/* Classifies the off-CPU period [out, in] now that the process's first
 * event after `in` says why it ran again. */
static void classify(struct bmt_pstate *p, enum bmt_pstate_event why, const struct bmt_window *w)
{
    if (why == BMT_PS_TIMEOUT) {
        add_p(p, BMT_K_WAITING, p->out_ns, p->in_ns, w);
    } else if (why == BMT_PS_RECEIVE) {
        if (p->sent_ns) {
            uint64_t before = p->cum[BMT_K_WAITING];
            add_p(p, BMT_K_WAITING, p->out_ns, p->sent_ns - 1, w);
            if (p->sent_from != BMT_PS_NOBODY) {
                p->woke_ns = p->cum[BMT_K_WAITING] - before;
                p->woke_from = p->sent_from;
            }
            add_p(p, BMT_K_RUNNABLE, p->sent_ns - 1, p->in_ns, w);
        } else {
            add_p(p, BMT_K_OFF_UNKNOWN, p->out_ns, p->in_ns, w);
        }
    } else {
        add_p(p, BMT_K_PREEMPTED, p->out_ns, p->in_ns, w);
    }
    p->state = BMT_PSS_RUNNING;
}

void bmt_pstate_apply(struct bmt_pstate *p, enum bmt_pstate_event e, uint64_t ts,
                      const struct bmt_window *w)
{
    if (e == BMT_PS_LOST && ts < p->since_ns)
        ts = p->since_ns; /* it did something since: its run ends there */
    if (p->state == BMT_PSS_EXITED || ts < p->since_ns)
        return;
    if (p->state == BMT_PSS_IN_PENDING && e != BMT_PS_IN && e != BMT_PS_SENT_TO &&
        e != BMT_PS_GC_START && e != BMT_PS_GC_END && e != BMT_PS_LOST)
        classify(p, e, w);
    if (e == BMT_PS_LOST) {
        if (p->state == BMT_PSS_IN_PENDING) {
            add_p(p, BMT_K_OFF_UNKNOWN, p->out_ns, p->in_ns, w);
            p->state = BMT_PSS_RUNNING;
        }
        if (p->state != BMT_PSS_RUNNING)
            return;
        add_p(p, current(p), p->since_ns, ts, w);
        p->state = BMT_PSS_LOST;
        p->since_ns = ts;
        return;
    }
    switch (e) {
    case BMT_PS_IN:
        if (p->state == BMT_PSS_OUT) {
            p->in_ns = ts;
            p->state = BMT_PSS_IN_PENDING;
        } else {
            add_p(p, current(p), p->since_ns, ts, w);
            p->state = BMT_PSS_RUNNING;
        }
        break;
    case BMT_PS_OUT:
        if (p->state == BMT_PSS_OUT)
            return; /* a second out: keep the period open */
        add_p(p, current(p), p->since_ns, ts, w);
        p->state = BMT_PSS_OUT;
        p->out_ns = ts;
        p->sent_ns = 0;
        break;
    case BMT_PS_SENT_TO:
        if (p->state == BMT_PSS_OUT && !p->sent_ns) {
            p->sent_ns = ts + 1;
            p->sent_from = BMT_PS_NOBODY;
        }
        return;
    case BMT_PS_RECEIVE:
    case BMT_PS_TIMEOUT:
    case BMT_PS_ACTIVITY:
        if (p->state == BMT_PSS_OUT)
            return; /* nothing it did itself: the period stays open */
        add_p(p, current(p), p->since_ns, ts, w);
        break;
    case BMT_PS_GC_START:
    case BMT_PS_GC_END:
        if (p->state == BMT_PSS_OUT) {
            /* Collected while out (another process asked for it): the time
             * out before it cannot be told waiting from runnable; the
             * off-CPU period starts again after it. */
            add_p(p, p->gc_depth ? BMT_K_GC : BMT_K_OFF_UNKNOWN, p->since_ns, ts, w);
            p->out_ns = ts;
        } else {
            add_p(p, current(p), p->since_ns, ts, w);
        }
        if (e == BMT_PS_GC_START && p->gc_depth < 255)
            p->gc_depth++;
        else if (e == BMT_PS_GC_END && p->gc_depth)
            p->gc_depth--;
        break;
    case BMT_PS_EXIT:
        add_p(p, p->state == BMT_PSS_OUT ? BMT_K_OFF_UNKNOWN : current(p), p->since_ns, ts, w);
        p->state = BMT_PSS_EXITED;
        p->gc_depth = 0;
        break;
    case BMT_PS_LOST:
        break; /* handled above */
    }
    p->since_ns = ts;
}

unsigned bmt_pstate_snapshot(const struct bmt_pstate *p, uint64_t ts, const struct bmt_window *w,
                             uint64_t out[BMT_K_COUNT])
{
    memcpy(out, p->cum, sizeof p->cum);
    if (p->state == BMT_PSS_EXITED)
        return p->used;
    /* Past its last event, the trace does not say it runs: unknown (a
     * collection still open stays GC). */
    enum bmt_kind tail = p->gc_depth                                   ? BMT_K_GC
                         : p->state == BMT_PSS_UNKNOWN && !p->out_ns && !p->in_ns ? BMT_K_UNKNOWN
                                                                          : BMT_K_OFF_UNKNOWN;
    unsigned used = p->used;
    if (p->state == BMT_PSS_IN_PENDING) {
        used |= add(out, BMT_K_OFF_UNKNOWN, p->out_ns, p->in_ns, w);
        used |= add(out, tail, p->since_ns, ts, w);
    } else if (ts > p->since_ns) {
        used |= add(out, tail, p->since_ns, ts, w);
    }
    return used;
}
