/* The erl_tracer callbacks: enabled_<flag>/3 decides, trace_<flag>/5 turns
 * one trace event into one catalogue event and hands it to the recorder.
 *
 * Semantics are OTP dyntrace's (reference §1.2, §4.3) with its known
 * defects fixed on purpose:
 *  - pids and ports are never cut (OTP cut them at 15/19 characters);
 *  - return_to produces function_return (OTP's enabled_call discarded it);
 *  - gc fields are looked up by key in the GC info list (OTP read the first
 *    three elements by position).
 *
 * Sinks: the recorder session the tracer state names, LTTng-UST, USDT.
 * enabled_* answers `trace` when any of them wants the tracepoint; trace_*
 * decodes once and hands the event to each sink that wants it.
 *
 * Hot path rules: no allocation, no lock, no message, no term building.
 * enabled_* answers from one session state load and mask test, one LTTng
 * enabled check (when the provider is loaded) and one USDT semaphore load;
 * trace_* formats into the calling thread's scratch, reads the clock, and
 * writes into that thread's ring with the session's `busy` bracket (see
 * nif_session.c for the stop side of the protocol).
 */
#include "nif_tracer.h"
#include "nif_sinks.h"

#include <string.h>

/* OTP's LTTng buffers kept 255 bytes of a message: the length used when no
 * recorder session sets one. */
#define OTP_MESSAGE_BYTES 255

/* Tracepoint of each trace tag, by callback group; -1 = not a tracepoint. */
static int tp_procs(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->spawn) return BMT_TP_process_spawn;
    if (tag == a->link || tag == a->unlink || tag == a->getting_linked ||
        tag == a->getting_unlinked)
        return BMT_TP_process_link;
    if (tag == a->exit) return BMT_TP_process_exit;
    if (tag == a->register_ || tag == a->unregister) return BMT_TP_process_register;
    return -1; /* spawned: OTP discards it too */
}

static int tp_ports(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->open) return BMT_TP_port_open;
    if (tag == a->closed) return BMT_TP_port_exit;
    if (tag == a->link || tag == a->unlink || tag == a->getting_linked ||
        tag == a->getting_unlinked)
        return BMT_TP_port_link;
    return -1; /* port register/unregister: discarded, as in OTP */
}

static int tp_running_procs(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_process_scheduled;
}

static int tp_running_ports(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_port_scheduled;
}

static int tp_call(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->call) return BMT_TP_function_call;
    if (tag == a->return_from || tag == a->return_to) return BMT_TP_function_return;
    if (tag == a->exception_from) return BMT_TP_function_exception;
    return -1;
}

static int tp_send(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_message_send;
}

static int tp_receive(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_message_receive;
}

static int tp_gc(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->gc_minor_start) return BMT_TP_gc_minor_start;
    if (tag == a->gc_minor_end) return BMT_TP_gc_minor_end;
    if (tag == a->gc_major_start) return BMT_TP_gc_major_start;
    if (tag == a->gc_major_end) return BMT_TP_gc_major_end;
    return -1;
}

/* ---- field setters: each fills values[i] and advances the cursor ---- */

static void set_text(struct decode *d, int i, const char *text, size_t len)
{
    d->t->event.values[i].str = text;
    d->t->event.values[i].len = (uint32_t)len;
}

static void set_word(struct decode *d, int i, const char *word)
{
    set_text(d, i, word, strlen(word));
}

static void set_id(struct decode *d, int i, ERL_NIF_TERM term)
{
    size_t len = bmt_format_id(d->t, d->env, term, d->cursor);
    set_text(d, i, d->cursor, len);
    d->cursor += len + 1;
}

static void set_mfa(struct decode *d, int i, ERL_NIF_TERM term)
{
    size_t len = bmt_format_mfa(d->t, d->env, term, d->cursor);
    set_text(d, i, d->cursor, len);
    d->cursor += len + 1;
}

static void set_term(struct decode *d, int i, ERL_NIF_TERM term)
{
    size_t len = bmt_format_term(d->t, d->env, term, d->cursor, BMT_TERM_MAX_BYTES + 1);
    set_text(d, i, d->cursor, len);
    d->cursor += len + 1;
}

static void set_message(struct decode *d, int i, ERL_NIF_TERM term)
{
    size_t len = bmt_format_message(d->t, d->env, term, d->message_bytes, d->cursor);
    set_text(d, i, d->cursor, len);
    d->cursor += len + 1;
}

static void set_int(struct decode *d, int i, uint64_t v)
{
    d->t->event.values[i].integer = v;
}

ERL_NIF_TERM bmt_decode_extra(struct decode *d)
{
    ERL_NIF_TERM value;
    if (enif_is_map(d->env, d->opts) && enif_get_map_value(d->env, d->opts, d->a->extra, &value))
        return value;
    return d->a->undefined;
}

static const char *link_type(struct decode *d)
{
    return d->tag == d->a->link || d->tag == d->a->getting_linked ? "link" : "unlink";
}

static int is_getting(struct decode *d)
{
    return d->tag == d->a->getting_linked || d->tag == d->a->getting_unlinked;
}

static const char *running_type(struct decode *d)
{
    const struct bmt_atoms *a = d->a;
    if (d->tag == a->in) return "in";
    if (d->tag == a->out) return "out";
    if (d->tag == a->in_exiting) return "in_exiting";
    if (d->tag == a->out_exiting) return "out_exiting";
    if (d->tag == a->out_exited) return "out_exited";
    return "undefined";
}

/* Value of `key` in the GC info list [{Key, Value}, ...], or 0. */
static uint64_t gc_value(struct decode *d, ERL_NIF_TERM key)
{
    ERL_NIF_TERM list = d->term, head;
    const ERL_NIF_TERM *kv;
    int arity;
    while (enif_get_list_cell(d->env, list, &head, &list)) {
        ErlNifUInt64 v;
        if (enif_get_tuple(d->env, head, &arity, &kv) && arity == 2 && kv[0] == key)
            return enif_get_uint64(d->env, kv[1], &v) ? v : 0;
    }
    return 0;
}

/* Fills the event's fields for tracepoint `tp`: OTP's field semantics. */
static void decode_fields(struct decode *d, int tp)
{
    switch (tp) {
    case BMT_TP_process_spawn:
        set_id(d, 0, d->term);
        set_id(d, 1, d->tracee);
        set_mfa(d, 2, bmt_decode_extra(d));
        break;
    case BMT_TP_process_link:
    case BMT_TP_port_link:
        set_id(d, 0, is_getting(d) ? d->term : d->tracee);
        set_id(d, 1, is_getting(d) ? d->tracee : d->term);
        set_word(d, 2, link_type(d));
        break;
    case BMT_TP_process_exit:
    case BMT_TP_port_exit:
        set_id(d, 0, d->tracee);
        set_term(d, 1, d->term);
        break;
    case BMT_TP_process_register:
        set_id(d, 0, d->tracee);
        set_term(d, 1, d->term);
        set_word(d, 2, d->tag == d->a->register_ ? "register" : "unregister");
        break;
    case BMT_TP_process_scheduled:
        set_id(d, 0, d->tracee);
        set_mfa(d, 1, d->term);
        set_word(d, 2, running_type(d));
        break;
    case BMT_TP_port_open:
        set_id(d, 0, d->term);
        set_term(d, 1, bmt_decode_extra(d));
        set_id(d, 2, d->tracee);
        break;
    case BMT_TP_port_scheduled:
        set_id(d, 0, d->tracee);
        set_term(d, 1, d->term);
        set_word(d, 2, running_type(d));
        break;
    case BMT_TP_function_call:
    case BMT_TP_function_return:
        set_id(d, 0, d->tracee);
        set_mfa(d, 1, d->term);
        set_int(d, 2, 0);
        break;
    case BMT_TP_function_exception: {
        const ERL_NIF_TERM *cv;
        int arity;
        ERL_NIF_TERM x = bmt_decode_extra(d);
        set_id(d, 0, d->tracee);
        set_mfa(d, 1, d->term);
        if (enif_get_tuple(d->env, x, &arity, &cv) && arity == 2)
            set_term(d, 2, cv[0]);
        else
            set_word(d, 2, "undefined");
        break;
    }
    case BMT_TP_message_send: {
        ERL_NIF_TERM to = bmt_decode_extra(d);
        set_id(d, 0, d->tracee);
        /* Usually a local pid: the id cache's inline hit gives the same
         * text as the general printer, cheaper. Local pids and ports are
         * the immediates tagged 0x3 and 0x7 (the VM's stable immediate
         * tags); anything else, names included, takes the TERM bound. */
        if ((to & 0xf) == 0x3 || (to & 0xf) == 0x7)
            set_id(d, 1, to);
        else
            set_term(d, 1, to);
        set_message(d, 2, d->term);
        break;
    }
    case BMT_TP_message_receive:
        set_id(d, 0, d->tracee);
        set_message(d, 1, d->term);
        break;
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_start:
    case BMT_TP_gc_major_end:
        set_id(d, 0, d->tracee);
        set_int(d, 1, gc_value(d, d->a->wordsize));
        set_int(d, 2, gc_value(d, d->a->heap_block_size));
        set_int(d, 3, gc_value(d, d->a->old_heap_block_size));
        break;
    }
}

const char *bmt_decode_text(struct decode *d, ERL_NIF_TERM term, size_t room)
{
    char *text = d->cursor;
    size_t len = bmt_format_term(d->t, d->env, term, text, room);
    d->cursor += len + 1;
    return text;
}

typedef int tag_map_fn(const struct bmt_atoms *a, ERL_NIF_TERM tag);

/* Which sinks want tracepoint `tp` (BMT_SINK_* bits). `s` may be NULL. */
static unsigned wanting(struct priv *p, struct session *s, uint64_t gen, int tp)
{
    unsigned sinks = 0;
    if (s && bmt_session_wants(s, tp) && bmt_session_live(s, gen))
        sinks |= BMT_SINK_RECORDER;
    if (p->lttng && p->lttng->enabled((unsigned)tp))
        sinks |= BMT_SINK_LTTNG;
    if (bmt_usdt_wants(tp))
        sinks |= BMT_SINK_USDT;
    return sinks;
}

static ERL_NIF_TERM enabled_common(ErlNifEnv *env, const ERL_NIF_TERM argv[], tag_map_fn *map)
{
    struct priv *p = enif_priv_data(env);
    uint64_t gen = 0;
    int tp = map(&p->atom, argv[0]);
    if (tp < 0)
        return p->atom.discard;
    struct session *s = bmt_resolve_session(p, env, argv[1], &gen);
    return wanting(p, s, gen, tp) ? p->atom.trace : p->atom.discard;
}

/* Writes the decoded event into the calling thread's ring of `s`. The busy
 * bracket with a sequentially consistent store pairs with stop's store of
 * the state: either stop sees busy and waits, or we see the session stopping
 * and leave the ring alone. */
void bmt_record(struct priv *p, struct session *s, uint64_t gen, struct thread_ctx *t)
{
    struct slot *sl = &s->slots[t - p->threads];
    struct bmt_event *ev = &t->event;
    atomic_store(&sl->busy, 1);
    /* The mask again: a core reused since the caller looked records only
     * what its new session asked for. */
    if (bmt_session_live(s, gen) && bmt_session_wants(s, ev->id)) {
        /* The writer owns `committed`'s stores: a relaxed load is exact. */
        uint64_t published = atomic_load_explicit(&sl->ring.committed, memory_order_relaxed);
        size_t bytes = bmt_event_size(ev);
        uint8_t *dst = bmt_ring_reserve(&sl->ring, bytes, ev->ts_ns);
        if (dst) {
            bmt_event_encode(ev, dst);
            bmt_ring_commit(&sl->ring, bytes, ev->ts_ns);
        }
        bmt_ring_flush_if_requested(&sl->ring, ev->ts_ns);
        if (s->wake_on_publish &&
            atomic_load_explicit(&sl->ring.committed, memory_order_relaxed) != published)
            bmt_session_wake(s);
    }
    atomic_store_explicit(&sl->busy, 0, memory_order_release);
}

/* Prints the message field again with another bound, for a sink that must
 * see OTP's text while the recorder session asked for another length. */
static void redecode_message(struct decode *d, int tp, int message_bytes)
{
    d->message_bytes = message_bytes;
    if (tp == BMT_TP_message_send)
        set_message(d, 2, d->term);
    else if (tp == BMT_TP_message_receive)
        set_message(d, 1, d->term);
}

void bmt_emit_external(struct priv *p, struct decode *d, int tp, unsigned sinks)
{
    if (sinks & BMT_SINK_LTTNG)
        p->lttng->emit(&d->t->event);
    if (sinks & BMT_SINK_USDT)
        bmt_usdt_fire(d, tp);
}

static ERL_NIF_TERM trace_common(ErlNifEnv *env, const ERL_NIF_TERM argv[], tag_map_fn *map)
{
    struct priv *p = enif_priv_data(env);
    uint64_t gen = 0;
    int tp = map(&p->atom, argv[0]);
    if (tp < 0)
        return p->atom.ok;
    struct session *s = bmt_resolve_session(p, env, argv[1], &gen);
    unsigned sinks = wanting(p, s, gen, tp);
    if (!sinks)
        return p->atom.ok;
    struct thread_ctx *t = bmt_thread_ctx(p);
    /* No slot, or re-entered from our own formatting (never recurse): the
     * recorder counts what it could not take. */
    if (!t || t->in_use) {
        if (sinks & BMT_SINK_RECORDER)
            bmt_session_drop(s);
        return p->atom.ok;
    }
    t->in_use = 1;
    /* Message text: the recorder session's bound; OTP's 255 bytes for
     * LTTng; none when only USDT listens (no USDT probe carries it). */
    int message_bytes = (sinks & BMT_SINK_RECORDER)
                            ? atomic_load_explicit(&s->message_bytes, memory_order_relaxed)
                        : (sinks & BMT_SINK_LTTNG) ? OTP_MESSAGE_BYTES
                                                   : 0;
    struct decode d = {env, &p->atom, t, message_bytes,
                       argv[0], argv[2], argv[3], argv[4], t->scratch};
    t->event.id = (uint16_t)tp;
    decode_fields(&d, tp);
    t->event.ts_ns = bmt_event_ns(&p->clock, t);
    if (sinks & BMT_SINK_RECORDER)
        bmt_record(p, s, gen, t);
    if ((sinks & BMT_SINK_LTTNG) && message_bytes != OTP_MESSAGE_BYTES)
        redecode_message(&d, tp, OTP_MESSAGE_BYTES);
    if (sinks & ~BMT_SINK_RECORDER)
        bmt_emit_external(p, &d, tp, sinks);
    t->in_use = 0;
    return p->atom.ok;
}

/* enabled/3: every tag without a specific callback, and trace_status, which
 * asks whether the tracer is still alive. A tracer state naming a recorder
 * session is alive while that session runs (then `remove`, and the VM drops
 * the tracer); `[]` names beamtrace's sinks as a whole, which stay alive like
 * OTP's dyntrace on an LTTng build: an LTTng session or a USDT tracer may
 * start listening at any time. */
ERL_NIF_TERM bmt_nif_enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    if (argv[0] != p->atom.trace_status)
        return p->atom.discard;
    if (enif_is_empty_list(env, argv[1]))
        return p->atom.trace;
    uint64_t gen;
    struct session *s = bmt_resolve_session(p, env, argv[1], &gen);
    return s && bmt_session_live(s, gen) ? p->atom.trace : p->atom.remove;
}

/* trace/5: only reached for tags no specific callback covers (seq_trace). */
ERL_NIF_TERM bmt_nif_trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    return ((struct priv *)enif_priv_data(env))->atom.ok;
}

#define TRACER_PAIR(group, map)                                                          \
    ERL_NIF_TERM bmt_nif_enabled_##group(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) \
    {                                                                                    \
        (void)argc;                                                                      \
        return enabled_common(env, argv, map);                                           \
    }                                                                                    \
    ERL_NIF_TERM bmt_nif_trace_##group(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])   \
    {                                                                                    \
        (void)argc;                                                                      \
        return trace_common(env, argv, map);                                             \
    }

TRACER_PAIR(procs, tp_procs)
TRACER_PAIR(ports, tp_ports)
TRACER_PAIR(running_procs, tp_running_procs)
TRACER_PAIR(running_ports, tp_running_ports)
TRACER_PAIR(call, tp_call)
TRACER_PAIR(send, tp_send)
TRACER_PAIR(receive, tp_receive)
TRACER_PAIR(garbage_collection, tp_gc)
