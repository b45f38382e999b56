/* Who wants an event, and handing it to them: the one decision and the one
 * delivery every event source shares (the tracer callbacks, the user
 * probes, emit_nif's derived events).
 *
 * The decision (inline: it runs on every traced event, listened to or not)
 * is a handful of loads: the recorder session's enable mask and state, the
 * LTTng tracepoint's enabled word, the USDT semaphores (sinks.h says what
 * each can miss). The delivery to LTTng and USDT (nif_dispatch.c) runs only
 * when one of them listens; the recorder's ring is written in place by the
 * caller (nif_tracer.c) or copied in here.
 *
 * Calling thread only, inside bmt_thread_enter/leave.
 */
#ifndef BMT_NIF_DISPATCH_H
#define BMT_NIF_DISPATCH_H

#include "nif_decode.h"
#include "nif_state.h"
#include "nif_thread.h"
#include "sinks/sinks.h"
#include "sinks/usdt_wants.h"

/* OTP's LTTng buffers kept 255 bytes of a message: the length LTTng gets,
 * and the one used when no recorder session sets one. */
#define BMT_OTP_MESSAGE_BYTES 255

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
    if (bmt_lttng_wants(p->lttng, tp))
        sinks |= BMT_SINK_LTTNG;
    if (tp == BMT_TP_user_trace_n ? bmt_usdt_user_n_wants(label) : bmt_usdt_wants(tp))
        sinks |= BMT_SINK_USDT;
    return sinks;
}

/* Hands the event decoded in d->t->event (tracepoint `tp`) to the sinks in
 * `sinks` other than the recorder: LTTng, USDT. `spare` is scratch room
 * past the fields for what only they need (OTP's message text when the
 * session printed another length; USDT's extra arguments). */
void bmt_dispatch_external(const struct priv *p, struct decode *d, int tp, unsigned sinks,
                           uint8_t *spare);

/* Copies an event already encoded at `payload` (`bytes` of fields, of
 * tracepoint `tp`, stamped t->event.ts_ns) into thread `t`'s ring of
 * session `s` if it records `tp` with `generation`. */
void bmt_dispatch_copy(struct thread_ctx *t, struct bmt_session *s, uint64_t generation, int tp,
                       const uint8_t *payload, size_t bytes);

#endif
