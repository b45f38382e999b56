/* Delivery to LTTng and USDT, and copies into a ring (contract in
 * nif_dispatch.h). */
#include "nif_dispatch.h"

#include <string.h>

void bmt_default_words_fill(const struct priv *p, struct thread_ctx *t, uint64_t epoch)
{
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        t->default_words[tp] = bmt_recorder_word_default(p, tp);
    t->words_epoch = epoch;
}

void bmt_dispatch_external(const struct priv *p, struct thread_ctx *t, struct decode *d, int tp,
                           unsigned sinks, const uint8_t *payload, uint64_t ts_ns,
                           uint8_t *spare)
{
    struct bmt_event *ev = &t->event;
    ev->id = (uint16_t)tp;
    ev->ts_ns = ts_ns;
    bmt_event_values_from_payload(ev, tp, payload);
    if (sinks & BMT_SINK_LTTNG) {
        if ((tp == BMT_TP_message_send || tp == BMT_TP_message_receive) &&
            bmt_decode_message_bytes(d) != BMT_OTP_MESSAGE_BYTES) {
            bmt_decode_message_again(d, ev, tp, spare);
            spare += BMT_OTP_MESSAGE_BYTES + 1;
        }
        p->lttng->emit(ev);
    }
    if (sinks & BMT_SINK_USDT) {
        struct bmt_usdt_args args;
        bmt_decode_usdt_args(d, ev, tp, &args, spare);
        bmt_usdt_emit(ev, &args);
    }
}

void bmt_dispatch_copy(struct thread_ctx *t, struct bmt_session *s, uint64_t generation, int tp,
                       const uint8_t *payload, size_t bytes, uint64_t ts_ns)
{
    if (!bmt_rec_wants(s, generation, tp))
        return;
    struct bmt_ring *r = bmt_rec_enter(s, generation, (unsigned)t->slot);
    if (!r)
        return;
    uint8_t *start;
    uint8_t *dst = bmt_rec_reserve(s, r, tp, ts_ns, &start);
    if (dst) {
        memcpy(dst, payload, bytes);
        bmt_rec_commit(r, start, dst + bytes, ts_ns);
    }
    bmt_rec_leave(s, r, ts_ns);
}

struct bmt_session *bmt_resolve_handle_miss(const struct priv *p, struct thread_ctx *t,
                                            ErlNifEnv *env, ERL_NIF_TERM state,
                                            ERL_NIF_TERM identity, uint64_t epoch,
                                            uint64_t *generation)
{
    struct bmt_session *s = bmt_resolve_handle(&p->handles, env, state, generation);
    if (!identity)
        return s;
    if (identity == t->handle_identity && epoch == t->handle_epoch) {
        /* A hit the cache may not answer yet (or no longer): checked. */
        if (bmt_peek_checking(BMT_PEEK_HANDLE))
            bmt_peek_count(BMT_PEEK_HANDLE, s == t->handle_session &&
                                                (!s || *generation == t->handle_generation));
        return s;
    }
    /* The epoch was read first: a session collected since is unknown
     * here, or its forgetting moved the epoch past this entry's. */
    if (s && bmt_rec_known(s, *generation)) {
        t->handle_identity = identity;
        t->handle_epoch = epoch;
        t->handle_session = s;
        t->handle_generation = *generation;
        t->handle_words_valid = 0;
    }
    return s;
}

uint64_t bmt_handle_word_fill(const struct priv *p, struct thread_ctx *t, int tp)
{
    struct bmt_session *s = t->handle_session;
    uint64_t w = bmt_recorder_word(s, (uint64_t)(s - p->rec.sessions) + 1, t->handle_generation, tp);
    t->handle_words[tp] = w;
    t->handle_words_valid |= UINT64_C(1) << tp;
    return w;
}
