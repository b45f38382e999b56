/* Sampling in the tracer: whether enabled_* keeps an event of a sampled
 * kind (recorder/sampling.h has the ratios and who changes them), and the
 * start options `sample` and `on_max_rate`.
 *
 * The decision costs a session that samples nothing one load (its
 * sampled mask, beside the enable mask) and a bit test. A sampled event
 * takes a per-thread xorshift random number and one compare with the
 * kind's threshold: no lock, no message, no term. Pairs stay whole: a
 * call is decided at `call` (its return is never sampled: a discarded
 * call arms no return_trace); a process's `in` and `out`, and a
 * collection's start and end, are decided at the first and the answer is
 * kept in the thread's context until the second (a process runs on one
 * thread from in to out; a collection starts and ends on one thread).
 *
 * Sampling drops the event for every sink: its point is the VM's cost of
 * delivering it.
 */
#ifndef BMT_NIF_SAMPLE_H
#define BMT_NIF_SAMPLE_H

#include "nif_state.h"
#include "nif_thread.h"

#include <erl_nif.h>

static inline uint32_t bmt_sample_random(struct bmt_sample_thread *st)
{
    uint64_t x = st->rng;
    if (__builtin_expect(x == 0, 0))
        x = (uint64_t)(uintptr_t)st ^ UINT64_C(0x9E3779B97F4A7C15);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    st->rng = x;
    return (uint32_t)((x * UINT64_C(0x2545F4914F6CDD1D)) >> 32);
}

/* Whether sampled tracepoint `tp` of session `s` keeps this event (tag,
 * tracee: enabled_*'s argv[0] and argv[2]). `t` may be NULL (a thread
 * without a context keeps the event). */
static inline int bmt_sample_keep(const struct priv *p, struct bmt_session *s, int tp,
                                  ERL_NIF_TERM tag, ERL_NIF_TERM tracee, struct thread_ctx *t)
{
    if (!t)
        return 1;
    struct bmt_sample_thread *st = &t->sample;
    int kind = s->sampling.kind_of[tp];
    if (kind < 0)
        return 1;
    int session = (int)(s - p->rec.sessions);
    if (tp == BMT_TP_process_scheduled) {
        const struct bmt_atoms *a = &p->atom;
        if (tag == a->out || tag == a->out_exiting || tag == a->out_exited)
            return st->sched_pid == tracee && st->sched_session == session && st->sched_keep;
        st->sched_pid = tracee;
        st->sched_session = session;
        st->sched_keep = bmt_sample_random(st) <
                         atomic_load_explicit(&s->sampling.threshold[kind], memory_order_relaxed);
        return st->sched_keep;
    }
    if (tp == BMT_TP_gc_minor_end || tp == BMT_TP_gc_major_end)
        return st->gc_pid == tracee && st->gc_session == session && st->gc_keep;
    if (tp == BMT_TP_gc_minor_start || tp == BMT_TP_gc_major_start) {
        st->gc_pid = tracee;
        st->gc_session = session;
        st->gc_keep = bmt_sample_random(st) <
                      atomic_load_explicit(&s->sampling.threshold[kind], memory_order_relaxed);
        return st->gc_keep;
    }
    return bmt_sample_random(st) <
           atomic_load_explicit(&s->sampling.threshold[kind], memory_order_relaxed);
}

/* Parses start's `sample` (N: every kind 1 in N; #{Kind => N}) and
 * `on_max_rate` (stop | sample) options into `cfg`. Returns 0, or -1 with
 * the key at fault in *bad. */
int bmt_sample_parse(const struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                     struct bmt_rec_config *cfg, ERL_NIF_TERM *bad);

/* The sampling figures of a stopped session: #{ratios => #{Kind => N},
 * reactions => N}. */
ERL_NIF_TERM bmt_sample_stats_map(const struct priv *p, ErlNifEnv *env,
                                  const struct bmt_rec_stats *st);

#endif
