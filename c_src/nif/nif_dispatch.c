/* Delivery to LTTng and USDT, and copies into a ring (contract in
 * nif_dispatch.h). */
#include "nif_dispatch.h"

#include <string.h>

void bmt_dispatch_external(const struct priv *p, struct decode *d, int tp, unsigned sinks,
                           uint8_t *spare)
{
    if (sinks & BMT_SINK_LTTNG) {
        if (d->message_bytes != BMT_OTP_MESSAGE_BYTES &&
            (tp == BMT_TP_message_send || tp == BMT_TP_message_receive)) {
            bmt_decode_message_again(d, tp, BMT_OTP_MESSAGE_BYTES, spare);
            spare += BMT_OTP_MESSAGE_BYTES + 1;
        }
        p->lttng->emit(&d->t->event);
    }
    if (sinks & BMT_SINK_USDT) {
        struct bmt_usdt_args args;
        bmt_decode_usdt_args(d, tp, &args, spare);
        bmt_usdt_emit(&d->t->event, &args);
    }
}

void bmt_dispatch_copy(struct thread_ctx *t, struct bmt_session *s, uint64_t generation, int tp,
                       const uint8_t *payload, size_t bytes)
{
    if (!bmt_rec_wants(s, generation, tp))
        return;
    struct bmt_ring *r = bmt_rec_enter(s, generation, (unsigned)t->slot);
    if (!r)
        return;
    uint8_t *start;
    uint8_t *dst = bmt_rec_reserve(s, r, tp, t->event.ts_ns, &start);
    if (dst) {
        memcpy(dst, payload, bytes);
        bmt_rec_commit(r, start, dst + bytes, t->event.ts_ns);
    }
    bmt_rec_leave(s, (unsigned)t->slot, t->event.ts_ns);
}
