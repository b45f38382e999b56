/* Events fired from Erlang rather than by the VM's tracer:
 *  - user probes: beamtrace:p/0..8, pn/1..9 and user_trace_s1/1 (OTP's
 *    dyntrace:p/pn and user_trace_s1), into every sink that listens: each
 *    running recorder session that enables the tracepoint, LTTng, USDT;
 *  - emit_nif/3: an event beamtrace's own Erlang code derives (the state
 *    dump of process names, and the other org_erlang_beamtrace sources),
 *    into one session.
 *
 * OTP's user probe semantics: nothing is evaluated when no sink listens
 * (the Erlang wrapper asks user_probe_wanted/2 first, so a probe nobody
 * listens to costs one cheap NIF call); an integer slot that is not an
 * integer is 0 and an absent slot (any atom) is 0 or ""; a string longer
 * than 1024 bytes or not an iolist is rejected with badarg, never truncated
 * into a lie; a tag longer than 1024 bytes is dropped (OTP passed NULL).
 * Strings are copied straight from the iolist into the calling thread's
 * scratch (no temporary binary), bounded as they go; the event is then
 * copied into each listening session's ring.
 */
#include "nif_user.h"
#include "nif_decode.h"
#include "nif_dispatch.h"
#include "nif_session.h"
#include "nif_state.h"
#include "nif_thread.h"

#include <string.h>

/* Each string of a user probe fits the scratch buffer. */
_Static_assert(BMT_ID_MAX_BYTES + 1 + 5 * (BMT_USER_MAX_BYTES + 1) <=
                   sizeof(((struct thread_ctx *)0)->scratch),
               "user probe strings fit the scratch buffer");

/* Which sinks want user tracepoint `tp` (label: user_trace_n's): any
 * running recorder session that records it, LTTng, USDT. */
static unsigned user_wanting(struct priv *p, int tp, unsigned label)
{
    unsigned sinks = bmt_sinks_wanting(p, NULL, 0, tp, label);
    if (atomic_load_explicit(&p->rec.recorder_mask, memory_order_relaxed) >> tp & 1)
        sinks |= BMT_SINK_RECORDER;
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

/* ---- values ---- */

/* Copies iolist `t` to out[*len..], at most `max` bytes in all. Returns 0,
 * or -1 when it is not an iolist or is longer than `max` (a huge iolist is
 * refused as soon as the bound is passed, never flattened). */
static int copy_iolist(ErlNifEnv *env, ERL_NIF_TERM t, uint8_t *out, size_t *len, size_t max,
                       int depth)
{
    ErlNifBinary bin;
    ERL_NIF_TERM head;
    int byte;
    if (depth > 100)
        return -1;
    if ((t & 3) != 1 && enif_inspect_binary(env, t, &bin)) {
        if (bin.size > max - *len)
            return -1;
        memcpy(out + *len, bin.data, bin.size);
        *len += bin.size;
        return 0;
    }
    while (enif_get_list_cell(env, t, &head, &t)) {
        if (enif_get_int(env, head, &byte)) {
            if (byte < 0 || byte > 255 || *len >= max)
                return -1;
            out[(*len)++] = (uint8_t)byte;
        } else if (copy_iolist(env, head, out, len, max, depth + 1) != 0) {
            return -1;
        }
    }
    if (enif_is_empty_list(env, t))
        return 0;
    return enif_is_binary(env, t) ? copy_iolist(env, t, out, len, max, depth + 1) : -1;
}

/* A CTF string ends at its first NUL, and so did the C string OTP's probes
 * handed to DTrace and LTTng: text is cut there, or a reader would take the
 * rest for the next event. Returns the length up to the first NUL. */
static size_t text_end(const uint8_t *text, size_t len)
{
    if (len <= 16) {
        for (size_t i = 0; i < len; i++)
            if (!text[i])
                return i;
        return len;
    }
    const uint8_t *nul = memchr(text, 0, len);
    return nul ? (size_t)(nul - text) : len;
}

/* Writes a string value at the cursor: a user probe's slot ([] or an atom
 * means absent: "") or raw text. Returns 0, or -1 for something that is
 * neither an atom nor an iolist of at most `max` bytes. */
static int put_string(struct decode *d, const char *name, ERL_NIF_TERM term, size_t max)
{
    size_t len = 0;
    ErlNifBinary bin;
    /* The primary tag only picks the first try (1 is a list cell, in every
     * OTP): each branch's enif_* call still decides. */
    if (term == d->t->fmt.nil) {
        /* absent, or "" */
    } else if ((term & 3) == 1) {
        if (copy_iolist(d->env, term, d->cursor, &len, max, 0) != 0)
            return -1;
    } else if (enif_inspect_binary(d->env, term, &bin)) {
        if (bin.size > max)
            return -1;
        memcpy(d->cursor, bin.data, bin.size);
        len = bin.size;
    } else if (!enif_is_atom(d->env, term) &&
               copy_iolist(d->env, term, d->cursor, &len, max, 0) != 0) {
        return -1;
    }
    if (len)
        len = text_end(d->cursor, len);
    d->cursor[len] = '\0';
    put_text(d, name, len);
    return 0;
}

/* The tag: at most BMT_USER_MAX_BYTES, anything else is "". */
static void put_user_tag(struct decode *d, ERL_NIF_TERM term)
{
    uint8_t *at = d->cursor;
    if (put_string(d, "tag", term, BMT_USER_MAX_BYTES) != 0) {
        d->cursor = at;
        *at = '\0';
        put_text(d, "tag", 0);
    }
}

static void put_self(struct decode *d)
{
    ErlNifPid self;
    if (enif_self(d->env, &self))
        put_id(d, "pid", enif_make_pid(d->env, &self));
    else
        put_word(d, "pid", "undefined");
}

/* ---- delivery ---- */

/* Copies the event in t->event (payload at `payload`, `bytes` long) into
 * the calling thread's ring of every session in `sessions` (bits), as they
 * are now. */
static void record_all(struct priv *p, struct thread_ctx *t, unsigned sessions, int tp,
                       const uint8_t *payload, size_t bytes)
{
    for (int i = 0; sessions; i++, sessions >>= 1) {
        struct bmt_session *s = &p->rec.sessions[i];
        if (sessions & 1)
            bmt_dispatch_copy(t, s, atomic_load_explicit(&s->generation, memory_order_relaxed), tp,
                              payload, bytes);
    }
}

/* Counts an event that sessions wanted but this thread cannot record (no
 * slot, re-entered). */
static void drop_all(struct priv *p, unsigned sessions, int tp)
{
    for (int i = 0; sessions; i++, sessions >>= 1) {
        struct bmt_session *s = &p->rec.sessions[i];
        if ((sessions & 1) && bmt_rec_wants(s, atomic_load(&s->generation), tp))
            bmt_rec_drop(s);
    }
}

/* Fires user tracepoint `tp`; args = Tag, then the kind's slots. */
static ERL_NIF_TERM fire(ErlNifEnv *env, int tp, unsigned label, const ERL_NIF_TERM *args)
{
    struct priv *p = enif_priv_data(env);
    /* The sessions to record into, in one load, and whether anyone listens
     * from that same load: a session stopping in between is then either
     * in `sessions' (and counts the probe) or not listening at all. */
    unsigned sessions = atomic_load_explicit(&p->rec.tp_sessions[tp], memory_order_relaxed);
    unsigned sinks = bmt_sinks_wanting(p, NULL, 0, tp, label) | (sessions ? BMT_SINK_RECORDER : 0);
    if (!sinks)
        return p->atom.false_;
    struct thread_ctx *t = bmt_thread_enter(bmt_thread_ctx(&p->threads));
    if (!t) {
        drop_all(p, sessions, tp);
        return p->atom.false_;
    }
    struct decode d;
    bmt_decode_init(&d, env, p, t, tp, t->scratch);
    int bad = 0;
    if (tp == BMT_TP_user_trace_n)
        put_u32(&d, "label", label);
    put_self(&d);
    put_user_tag(&d, args[0]);
    if (tp == BMT_TP_user_trace_s1) {
        bad |= put_string(&d, "message", args[1], BMT_USER_MAX_BYTES);
    } else {
        static const char *const ints[] = {"i1", "i2", "i3", "i4"};
        static const char *const strs[] = {"s1", "s2", "s3", "s4"};
        for (int i = 0; i < 4; i++) {
            ErlNifSInt64 v = 0;
            /* OTP: not an integer (or absent: [] or an atom) counts as 0. */
            if (args[1 + i] != t->fmt.nil && !enif_get_int64(env, args[1 + i], &v))
                v = 0;
            put_s64(&d, ints[i], v);
        }
        for (int i = 0; i < 4 && !bad; i++)
            bad |= put_string(&d, strs[i], args[5 + i], BMT_USER_MAX_BYTES);
    }
    if (bad) {
        bmt_thread_leave(t);
        return enif_make_badarg(env);
    }
    CHECK_END(&d);
    t->event.ts_ns = sessions ? bmt_clock_event_ns(&p->clock, &t->clock) : 0;
    record_all(p, t, sessions, tp, t->scratch, (size_t)(d.cursor - t->scratch));
    bmt_dispatch_external(p, &d, tp, sinks, d.cursor);
    bmt_thread_leave(t);
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

/* ---- emit ---- */

/* Bound of a string field of kind `kind` (message fields: OTP's 255). */
static size_t kind_max_bytes(enum bmt_field_kind kind)
{
    switch (kind) {
    case BMT_KIND_ID: return BMT_ID_MAX_BYTES;
    case BMT_KIND_MFA: return BMT_MFA_MAX_BYTES;
    case BMT_KIND_TERM: return BMT_TERM_MAX_BYTES;
    case BMT_KIND_MSG: return 255;
    case BMT_KIND_WORD: return BMT_WORD_MAX_BYTES;
    case BMT_KIND_USER: return BMT_USER_MAX_BYTES;
    case BMT_KIND_INT: return 0;
    }
    return 0;
}

/* One string field's value: a binary is the text itself (cut to the
 * field's bound); {term, T} and any other term are printed as the tracer
 * prints that kind of field (pids and ports, m:f/a, or "%T"), so derived
 * events say a process or a function exactly as the VM's events do. */
static void put_value_text(struct decode *d, ERL_NIF_TERM term, const struct bmt_field *f)
{
    ErlNifBinary bin;
    const ERL_NIF_TERM *wrapped;
    int arity;
    size_t max = kind_max_bytes(f->kind), len;
    char *out = (char *)d->cursor;
    if (enif_get_tuple(d->env, term, &arity, &wrapped) && arity == 2 &&
        wrapped[0] == d->a->term) {
        term = wrapped[1];
        len = f->kind == BMT_KIND_ID    ? bmt_format_id(&d->t->fmt, d->env, term, out)
              : f->kind == BMT_KIND_MFA ? bmt_format_mfa(&d->t->fmt, d->env, term, out, 0)
                                        : bmt_format_term(&d->t->fmt, d->env, term, out, max + 1);
    } else if (enif_inspect_binary(d->env, term, &bin)) {
        len = text_end(bin.data, bin.size < max ? bin.size : max);
        memcpy(out, bin.data, len);
        out[len] = '\0';
    } else if (f->kind == BMT_KIND_ID) {
        len = bmt_format_id(&d->t->fmt, d->env, term, out);
    } else if (f->kind == BMT_KIND_MFA) {
        len = bmt_format_mfa(&d->t->fmt, d->env, term, out, 0);
    } else {
        len = bmt_format_term(&d->t->fmt, d->env, term, out, max + 1);
    }
    put_text(d, f->name, len);
}

/* emit_nif(Session | [], Tracepoint :: atom(), Fields :: [term()]) ->
 * boolean(): records one event of an org_erlang_beamtrace tracepoint into
 * one session, fields in catalogue order (integers for integer fields;
 * strings as put_value_text says). false when the session does not record
 * it; badarg for an unknown tracepoint, a wrong field count or an integer
 * field that is not an integer of its type. LTTng and USDT get the event
 * too when they listen (the return value says only whether the session
 * recorded it). */
ERL_NIF_TERM bmt_nif_emit(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    char name[128] = "org_erlang_beamtrace:";
    size_t prefix = strlen(name);
    if (enif_get_atom(env, argv[1], name + prefix, (unsigned)(sizeof name - prefix),
                      ERL_NIF_LATIN1) <= 0)
        return enif_make_badarg(env);
    int tp = bmt_catalogue_find(name);
    unsigned count;
    if (tp < 0 || !enif_get_list_length(env, argv[2], &count) ||
        count != bmt_catalogue[tp].field_count)
        return enif_make_badarg(env);
    uint64_t gen = 0;
    struct bmt_session *s = bmt_resolve_session(&p->handles, env, argv[0], &gen);
    unsigned sinks = bmt_sinks_wanting(p, s, gen, tp, 0);
    int recorded = (sinks & BMT_SINK_RECORDER) != 0;
    if (!sinks)
        return p->atom.false_;
    /* Before the event is offered: the consumer reading the exempt count
     * first can only undercount the rate, never trip on the dump. */
    if (recorded)
        bmt_rec_rate_exempt(s);
    struct thread_ctx *t = bmt_thread_enter(bmt_thread_ctx(&p->threads));
    if (!t) {
        if (recorded)
            bmt_rec_drop(s);
        return p->atom.false_;
    }
    struct decode d;
    bmt_decode_init(&d, env, p, t, tp, t->scratch);
    ERL_NIF_TERM list = argv[2], head;
    for (unsigned i = 0; enif_get_list_cell(env, list, &head, &list); i++) {
        const struct bmt_field *f = &bmt_catalogue[tp].fields[i];
        ErlNifUInt64 u;
        ErlNifSInt64 v;
        switch (f->type) {
        case BMT_FIELD_STRING:
            put_value_text(&d, head, f);
            break;
        case BMT_FIELD_U32:
            if (!enif_get_uint64(env, head, &u) || u > UINT32_MAX)
                goto badarg;
            put_u32(&d, f->name, (uint32_t)u);
            break;
        case BMT_FIELD_U64:
            if (!enif_get_uint64(env, head, &u))
                goto badarg;
            put_u64(&d, f->name, u);
            break;
        case BMT_FIELD_S64:
            if (!enif_get_int64(env, head, &v))
                goto badarg;
            put_s64(&d, f->name, v);
            break;
        }
    }
    CHECK_END(&d);
    t->event.ts_ns = bmt_clock_event_ns(&p->clock, &t->clock);
    if (recorded)
        bmt_dispatch_copy(t, s, gen, tp, t->scratch, (size_t)(d.cursor - t->scratch));
    /* Derived events reach LTTng and USDT as the VM's do (a session's
     * source runs only while that session asks for it). */
    bmt_dispatch_external(p, &d, tp, sinks, d.cursor);
    bmt_thread_leave(t);
    return recorded ? p->atom.true_ : p->atom.false_;
badarg:
    bmt_thread_leave(t);
    return enif_make_badarg(env);
}
