/* User probes: beamtrace:p/0..8, pn/1..9 and user_trace_s1/1 (OTP's
 * dyntrace:p/pn and user_trace_s1), fired into every sink that listens:
 * each running recorder session that enables the tracepoint, LTTng, USDT.
 *
 * OTP's semantics: nothing is evaluated when no sink listens (the Erlang
 * wrapper asks user_probe_wanted/2 first, so a probe nobody listens to costs
 * one cheap NIF call); an integer slot that is not an integer is 0 and an
 * absent slot (any atom) is 0 or ""; a string longer than 1024 bytes or not
 * an iolist is rejected with badarg, never truncated into a lie; a tag longer
 * than 1024 bytes is dropped (OTP passed NULL). Strings are copied into the
 * calling thread's scratch, so a probe fires with bounded memory.
 */
#include "nif_sinks.h"
#include "nif_tracer.h"

#include <string.h>

/* Each string of a user probe fits the scratch buffer. */
_Static_assert(BMT_ID_MAX_BYTES + 1 + 5 * (BMT_USER_MAX_BYTES + 1) <=
                   sizeof(((struct thread_ctx *)0)->scratch),
               "user probe strings fit the scratch buffer");

/* Which sinks want user tracepoint `tp` (label: user_trace_n's). */
static unsigned user_wanting(struct priv *p, int tp, unsigned label)
{
    unsigned sinks = 0;
    if (atomic_load_explicit(&p->recorder_mask, memory_order_relaxed) >> tp & 1)
        sinks |= BMT_SINK_RECORDER;
    if (p->lttng && p->lttng->enabled((unsigned)tp))
        sinks |= BMT_SINK_LTTNG;
    if (tp == BMT_TP_user_trace_n ? bmt_usdt_user_n_wants(label) : bmt_usdt_wants(tp))
        sinks |= BMT_SINK_USDT;
    return sinks;
}

static int probe_id(struct priv *p, ERL_NIF_TERM kind)
{
    if (kind == p->atom.s1) return BMT_TP_user_trace_s1;
    if (kind == p->atom.i4s4) return BMT_TP_user_trace_i4s4;
    if (kind == p->atom.n) return BMT_TP_user_trace_n;
    return -1;
}

/* user_probe_wanted(Kind :: s1 | i4s4 | n, Label) -> boolean(). */
ERL_NIF_TERM bmt_nif_user_probe_wanted(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    int tp = probe_id(p, argv[0]);
    unsigned label = 0;
    if (tp < 0 || (tp == BMT_TP_user_trace_n && (!enif_get_uint(env, argv[1], &label) ||
                                                  label >= BMT_USER_LABELS)))
        return enif_make_badarg(env);
    return user_wanting(p, tp, label) ? p->atom.true_ : p->atom.false_;
}

/* Bytes of iolist `t` if it is one of at most `budget` bytes, else -1.
 * Walks without copying, and stops as soon as the budget is spent, so a
 * huge iolist is refused without being flattened. */
static long iolist_bytes(ErlNifEnv *env, ERL_NIF_TERM t, long budget, int depth)
{
    ErlNifBinary bin;
    ERL_NIF_TERM head;
    long total = 0;
    int byte;
    if (depth > 100)
        return -1;
    if (enif_inspect_binary(env, t, &bin))
        return (long)bin.size <= budget ? (long)bin.size : -1;
    while (enif_get_list_cell(env, t, &head, &t)) {
        long n;
        if (enif_get_int(env, head, &byte))
            n = byte >= 0 && byte <= 255 ? 1 : -1;
        else
            n = iolist_bytes(env, head, budget - total, depth + 1);
        if (n < 0 || (total += n) > budget)
            return -1;
    }
    if (enif_is_empty_list(env, t))
        return total;
    long n = enif_is_binary(env, t) ? iolist_bytes(env, t, budget - total, depth + 1) : -1;
    return n < 0 || total + n > budget ? -1 : total + n;
}

/* Copies a string slot into the scratch: an atom means absent (""). Returns
 * 0, or -1 for a slot that is neither an atom nor an iolist of at most
 * BMT_USER_MAX_BYTES bytes. */
static int put_string(struct decode *d, int i, ERL_NIF_TERM term)
{
    ErlNifBinary bin;
    struct bmt_value *v = &d->t->event.values[i];
    if (enif_is_atom(d->env, term)) {
        v->str = "";
        v->len = 0;
        return 0;
    }
    if (iolist_bytes(d->env, term, BMT_USER_MAX_BYTES, 0) < 0 ||
        !enif_inspect_iolist_as_binary(d->env, term, &bin) || bin.size > BMT_USER_MAX_BYTES)
        return -1;
    memcpy(d->cursor, bin.data, bin.size);
    d->cursor[bin.size] = '\0';
    v->str = d->cursor;
    v->len = (uint32_t)bin.size;
    d->cursor += bin.size + 1;
    return 0;
}

/* The tag: a binary of at most BMT_USER_MAX_BYTES, anything else is "". */
static void put_tag(struct decode *d, int i, ERL_NIF_TERM term)
{
    if (put_string(d, i, term) != 0) {
        d->t->event.values[i].str = "";
        d->t->event.values[i].len = 0;
    }
}

static void put_pid(struct decode *d, int i)
{
    ErlNifPid self;
    struct bmt_value *v = &d->t->event.values[i];
    if (enif_self(d->env, &self)) {
        size_t len = bmt_format_id(d->t, d->env, enif_make_pid(d->env, &self), d->cursor);
        v->str = d->cursor;
        v->len = (uint32_t)len;
        d->cursor += len + 1;
    } else {
        v->str = "undefined";
        v->len = 9;
    }
}

/* Fires tracepoint `tp`; args = Tag, then the kind's slots. */
static ERL_NIF_TERM fire(ErlNifEnv *env, int tp, unsigned label, const ERL_NIF_TERM *args)
{
    struct priv *p = enif_priv_data(env);
    unsigned sinks = user_wanting(p, tp, label);
    if (!sinks)
        return p->atom.false_;
    struct thread_ctx *t = bmt_thread_ctx(p);
    if (!t || t->in_use) {
        /* No slot, or re-entered: counted by every session that wanted it. */
        for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
            struct session *s = &p->sessions[i];
            if ((sinks & BMT_SINK_RECORDER) && bmt_session_wants(s, tp) &&
                bmt_session_live(s, atomic_load(&s->generation)))
                bmt_session_drop(s);
        }
        return p->atom.false_;
    }
    t->in_use = 1;
    struct decode d = {env, &p->atom, t, 0, 0, 0, 0, 0, t->scratch};
    struct bmt_event *ev = &t->event;
    int bad = 0, f = 0;
    ev->id = (uint16_t)tp;
    if (tp == BMT_TP_user_trace_n)
        ev->values[f++].integer = label;
    put_pid(&d, f++);
    put_tag(&d, f++, args[0]);
    if (tp == BMT_TP_user_trace_s1) {
        bad |= put_string(&d, f, args[1]);
    } else {
        for (int i = 0; i < 4; i++) {
            ErlNifSInt64 v = 0;
            if (!enif_get_int64(env, args[1 + i], &v))
                v = 0; /* OTP: not an integer (or absent) counts as 0 */
            ev->values[f++].integer = (uint64_t)v;
        }
        for (int i = 0; i < 4; i++)
            bad |= put_string(&d, f++, args[5 + i]);
    }
    if (bad) {
        t->in_use = 0;
        return enif_make_badarg(env);
    }
    ev->ts_ns = bmt_event_ns(&p->clock, t);
    if (sinks & BMT_SINK_RECORDER) {
        for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
            struct session *s = &p->sessions[i];
            uint64_t gen = atomic_load(&s->generation);
            if (bmt_session_wants(s, tp) && bmt_session_live(s, gen))
                bmt_record(p, s, gen, t);
        }
    }
    if (sinks & ~BMT_SINK_RECORDER)
        bmt_emit_external(p, &d, tp, sinks);
    t->in_use = 0;
    return p->atom.true_;
}

/* user_trace_s1_nif(Tag, Message) */
ERL_NIF_TERM bmt_nif_user_trace_s1(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    return fire(env, BMT_TP_user_trace_s1, 0, argv);
}

/* user_trace_i4s4_nif(Tag, I1, I2, I3, I4, S1, S2, S3, S4) */
ERL_NIF_TERM bmt_nif_user_trace_i4s4(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    return fire(env, BMT_TP_user_trace_i4s4, 0, argv);
}

/* user_trace_n_nif(Label, Tag, I1, I2, I3, I4, S1, S2, S3, S4) */
ERL_NIF_TERM bmt_nif_user_trace_n(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    unsigned label;
    if (!enif_get_uint(env, argv[0], &label) || label >= BMT_USER_LABELS)
        return enif_make_badarg(env);
    return fire(env, BMT_TP_user_trace_n, label, argv + 1);
}
