/* Who wants an event, and handing it to them: the one decision and the one
 * delivery every event source shares (the tracer callbacks, the user
 * probes, emit_nif's derived events).
 *
 * The decision (inline: it runs on every traced event, listened to or not)
 * is a handful of loads: the recorder session's enable mask and state, the
 * LTTng tracepoint's enabled word, the USDT semaphores (sinks.h says what
 * each can miss). The tracer packs it into one decision word, made in
 * enabled_<flag>/3 and read once in the trace_<flag>/5 that follows. The
 * delivery to LTTng and USDT (nif_dispatch.c) runs only when one of them
 * listens; the recorder's ring is written in place by the tracer
 * (nif_tracer.c) or copied in here.
 *
 * Calling thread only, inside bmt_thread_enter/leave.
 */
#ifndef BMT_NIF_DISPATCH_H
#define BMT_NIF_DISPATCH_H

#include "nif_decode.h"
#include "nif_format.h"
#include "nif_session.h"
#include "nif_state.h"
#include "nif_term_peek.h"
#include "nif_thread.h"
#include "sinks/sinks.h"
#include "sinks/usdt_wants.h"

/* LTTng's enabled state of tracepoint `tp` (0 when LTTng is absent). */
static inline __attribute__((always_inline)) int bmt_lttng_state(const struct priv *p, int tp)
{
    return __atomic_load_n(p->lttng_enabled[tp], __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) int bmt_lttng_enabled(const struct priv *p, int tp)
{
    return bmt_lttng_state(p, tp) != 0;
}

/* The sinks (BMT_SINK_* bits) that want tracepoint `tp` now: recorder
 * session `s` with `generation` (s may be NULL: no session asked), LTTng
 * and USDT. `label` is user_trace_n's probe label (each has its own USDT
 * probe), else ignored. */
static inline __attribute__((always_inline)) unsigned
bmt_sinks_wanting(const struct priv *p, struct bmt_session *s, uint64_t generation, int tp,
                  unsigned label)
{
    unsigned sinks = 0;
    if (s && bmt_rec_wants(s, generation, tp))
        sinks |= BMT_SINK_RECORDER;
    if (bmt_lttng_enabled(p, tp))
        sinks |= BMT_SINK_LTTNG;
    if (tp == BMT_TP_user_trace_n ? bmt_usdt_user_n_wants(label) : bmt_usdt_wants(tp))
        sinks |= BMT_SINK_USDT;
    return sinks;
}

/* ---- the tracer's decision word ----
 *
 * bits 0-2    the sinks that want the event (BMT_SINK_*; 0: nobody)
 * bit 3       the recording session samples the tracepoint it writes
 *             (nif_sample.h): set only with BMT_SINK_RECORDER, so an
 *             unsampled event costs enabled_* no load of its own
 * bits 4-9    its tracepoint
 * bits 10-15  the tracepoint the recorder writes (the same, or its
 *             variant when the session records message links, results or
 *             arguments)
 * bits 16-19  the recording session's index (with BMT_SINK_RECORDER)
 * bits 20-63  that session's generation (BMT_GENERATION_BITS) */
#define BMT_DW_SINKS(w) ((unsigned)(w) & 7u)
#define BMT_DW_SAMPLED(w) ((unsigned)((w) >> 3) & 1u)
#define BMT_DW_TP(w) ((int)((w) >> 4) & 63)
#define BMT_DW_REC_TP(w) ((int)((w) >> 10) & 63)
#define BMT_DW_SESSION(w) ((unsigned)((w) >> 16) & 15u)
#define BMT_DW_GENERATION(w) ((w) >> 20)
_Static_assert(BMT_TP_COUNT <= 64 && BMT_MAX_SESSIONS <= 16 && BMT_GENERATION_BITS <= 44,
               "the decision word's fields fit their bits");

/* The tracepoint the recorder writes for `tp` when the session records
 * the variants `variants` (BMT_FORMAT_LINKS, _RESULTS, _ARGS): the link
 * events for messages, function_result and function_call_args. */
static inline int bmt_variant_tp(int tp, int variants)
{
    if (variants & BMT_FORMAT_LINKS) {
        if (tp == BMT_TP_message_send)
            return BMT_TP_message_send_link;
        if (tp == BMT_TP_message_receive)
            return BMT_TP_message_receive_link;
    }
    if (tp == BMT_TP_function_call && (variants & BMT_FORMAT_ARGS))
        return BMT_TP_function_call_args;
    if (tp == BMT_TP_function_return && (variants & BMT_FORMAT_RESULTS))
        return BMT_TP_function_result;
    return tp;
}

/* The recorder's part of the decision word for an event of tracepoint
 * `tp` (>= 0, a tracer tracepoint) of recorder session `s` (index + 1
 * `index`, `generation`; NULL: none): everything but the LTTng and USDT
 * bits. The sampling bit comes from the mask beside the enable mask
 * bmt_rec_wants reads: the same cache line. */
static inline __attribute__((always_inline)) uint64_t
bmt_recorder_word(struct bmt_session *s, uint64_t index, uint64_t generation, int tp)
{
    uint64_t sinks = 0;
    int rec_tp = tp;
    if (s && bmt_rec_wants(s, generation, tp)) {
        sinks = BMT_SINK_RECORDER;
        /* One load and one test when the session records no variant. */
        int variants = atomic_load_explicit(&s->format_option, memory_order_relaxed) &
                       (BMT_FORMAT_LINKS | BMT_FORMAT_RESULTS | BMT_FORMAT_ARGS);
        if (__builtin_expect(variants != 0, 0))
            rec_tp = bmt_variant_tp(tp, variants);
        sinks |= (uint64_t)bmt_rec_sampled(s, rec_tp) << 3 | (index - 1) << 16 | generation << 20;
    }
    return sinks | (uint64_t)tp << 4 | (uint64_t)rec_tp << 10;
}

/* The LTTng and USDT bits of the decision word: asked on every event, as
 * they change with no word to the library (a session enabling a
 * tracepoint, a probe attached). Their states are loaded and OR'ed, and
 * tested once: the common answer, nobody, takes one branch. */
static inline __attribute__((always_inline)) uint64_t bmt_external_word(const struct priv *p,
                                                                         int tp)
{
    uint64_t lttng = (unsigned)bmt_lttng_state(p, tp), usdt = bmt_usdt_semaphores(tp);
    if (__builtin_expect((lttng | usdt) == 0, 1))
        return 0;
    return (lttng ? BMT_SINK_LTTNG : 0) | (usdt ? BMT_SINK_USDT : 0);
}

static inline __attribute__((always_inline)) uint64_t
bmt_decision_word(const struct priv *p, struct bmt_session *s, uint64_t index, uint64_t generation,
                  int tp)
{
    return bmt_recorder_word(s, index, generation, tp) | bmt_external_word(p, tp);
}

/* The recorder's part for tracer state [], the default session. */
static inline __attribute__((always_inline)) uint64_t
bmt_recorder_word_default(const struct priv *p, int tp)
{
    uint64_t packed = atomic_load_explicit(&p->rec.default_session, memory_order_acquire);
    struct bmt_session *s = packed ? &p->rec.sessions[(packed & 0xff) - 1] : NULL;
    return bmt_recorder_word(s, packed & 0xff, packed >> 8, tp);
}

/* The decision word for tracer state [], the default session: a few loads,
 * no call. */
static inline __attribute__((always_inline)) uint64_t bmt_decide_default(const struct priv *p,
                                                                          int tp)
{
    return bmt_recorder_word_default(p, tp) | bmt_external_word(p, tp);
}

/* Fills thread `t`'s cache of the recorder's part for tracer state [] as
 * of the recorder's epoch `epoch` (out of line: once per change of any
 * session). */
void bmt_default_words_fill(const struct priv *p, struct thread_ctx *t, uint64_t epoch);

/* bmt_decide_default through thread `t`'s cache: one load of the epoch,
 * one of the word, then the external bits. The epoch is read before the
 * cache is filled from the sessions (acquire: it is bumped after each
 * change), so a change made meanwhile moves the epoch again and the next
 * event refills; a word a change made stale is caught where it is used
 * (bmt_rec_enter checks the session's live word, its generation, as for any
 * decision made before a stop). */
static inline __attribute__((always_inline)) uint64_t
bmt_decide_default_cached(const struct priv *p, struct thread_ctx *t, int tp)
{
    uint64_t epoch = atomic_load_explicit(&p->rec.epoch, memory_order_acquire);
    if (__builtin_expect(t->words_epoch != epoch, 0))
        bmt_default_words_fill(p, t, epoch);
    return t->default_words[tp] | bmt_external_word(p, tp);
}

/* bmt_resolve_handle_cached's miss: asks the VM, and keeps the answer in
 * `t` when it names a known session (whose handle the table keeps alive,
 * so the identity stays its own until the epoch moves); while the cache
 * is being checked, compares a hit with the VM's answer instead. */
struct bmt_session *bmt_resolve_handle_miss(const struct priv *p, struct thread_ctx *t,
                                            ErlNifEnv *env, ERL_NIF_TERM state,
                                            ERL_NIF_TERM identity, uint64_t epoch,
                                            uint64_t *generation);

/* bmt_resolve_handle through thread `t`'s one-entry cache: the same
 * handle as the thread's last one, in the same epoch, is a few compares
 * and no call into the VM (once BMT_PEEK_HANDLE is trusted). */
static inline struct bmt_session *bmt_resolve_handle_cached(const struct priv *p,
                                                            struct thread_ctx *t,
                                                            ErlNifEnv *env, ERL_NIF_TERM state,
                                                            uint64_t *generation)
{
    uint64_t epoch = atomic_load_explicit(&p->rec.epoch, memory_order_acquire);
    ERL_NIF_TERM identity = bmt_handle_identity(&p->handles, state);
    if (__builtin_expect(identity != 0 && identity == t->handle_identity &&
                             epoch == t->handle_epoch && bmt_peek_trusted(BMT_PEEK_HANDLE),
                         1)) {
        *generation = t->handle_generation;
        return t->handle_session;
    }
    return bmt_resolve_handle_miss(p, t, env, state, identity, epoch, generation);
}

/* bmt_resolve_session, through thread `t`'s cache (NULL: no context yet,
 * the VM is asked). */
static inline struct bmt_session *bmt_resolve_session_cached(const struct priv *p,
                                                             struct thread_ctx *t,
                                                             ErlNifEnv *env, ERL_NIF_TERM state,
                                                             uint64_t *generation)
{
    if (state == p->nil || !t)
        return bmt_resolve_session(&p->handles, env, state, generation);
    return bmt_resolve_handle_cached(p, t, env, state, generation);
}

/* The decision word for an event of tracepoint `tp` offered to the tracer
 * with state `state` ([] = the default session, or a handle). */
static inline __attribute__((always_inline)) uint64_t
bmt_decide(const struct priv *p, ErlNifEnv *env, ERL_NIF_TERM state, int tp)
{
    if (__builtin_expect(state == p->nil, 1))
        return bmt_decide_default(p, tp);
    uint64_t generation = 0;
    struct bmt_session *s = bmt_resolve_handle(&p->handles, env, state, &generation);
    return bmt_decision_word(p, s, s ? (uint64_t)(s - p->rec.sessions) + 1 : 0, generation, tp);
}

/* The recorder's part of the decision word of tracepoint `tp` for the
 * session of thread `t`'s handle entry, kept in its words (out of line:
 * once per tracepoint per entry). */
uint64_t bmt_handle_word_fill(const struct priv *p, struct thread_ctx *t, int tp);

/* bmt_decide, a handle resolved through thread `t`'s cache (NULL: asked
 * of the VM): on a hit, the entry's word for `tp` and the external bits,
 * as for [] (bmt_decide_default_cached). */
static inline __attribute__((always_inline)) uint64_t
bmt_decide_ctx(const struct priv *p, struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM state,
               int tp)
{
    if (__builtin_expect(state == p->nil, 1) || !t)
        return bmt_decide(p, env, state, tp);
    uint64_t epoch = atomic_load_explicit(&p->rec.epoch, memory_order_acquire);
    ERL_NIF_TERM identity = bmt_handle_identity(&p->handles, state);
    if (__builtin_expect(identity != 0 && identity == t->handle_identity &&
                             epoch == t->handle_epoch && bmt_peek_trusted(BMT_PEEK_HANDLE),
                         1)) {
        uint64_t w = __builtin_expect(t->handle_words_valid >> tp & 1, 1)
                         ? t->handle_words[tp]
                         : bmt_handle_word_fill(p, t, tp);
        return w | bmt_external_word(p, tp);
    }
    uint64_t generation = 0;
    struct bmt_session *s =
        bmt_resolve_handle_miss(p, t, env, state, identity, epoch, &generation);
    return bmt_decision_word(p, s, s ? (uint64_t)(s - p->rec.sessions) + 1 : 0, generation, tp);
}

/* ---- delivery ---- */

/* Hands an event of tracepoint `tp` whose fields are encoded at `payload`
 * (by `d`, in a ring or in scratch) to the sinks in `sinks` other than the
 * recorder: LTTng, USDT. Their values go to thread `t`'s event (stamped
 * `ts_ns`); `spare` is scratch room past the fields for what only they
 * need (OTP's message text when the session printed another length;
 * USDT's extra arguments). */
void bmt_dispatch_external(const struct priv *p, struct thread_ctx *t, struct decode *d, int tp,
                           unsigned sinks, const uint8_t *payload, uint64_t ts_ns,
                           uint8_t *spare);

/* Copies an event already encoded at `payload` (`bytes` of fields, of
 * tracepoint `tp`, stamped `ts_ns`) into thread `t`'s ring of session `s`
 * if it records `tp` with `generation`. */
void bmt_dispatch_copy(struct thread_ctx *t, struct bmt_session *s, uint64_t generation, int tp,
                       const uint8_t *payload, size_t bytes, uint64_t ts_ns);

#endif
