/* The erl_tracer callbacks: enabled_<flag>/3 decides, trace_<flag>/5 turns
 * one trace event into one catalogue event for every sink that wants it.
 *
 * One event's path: enabled_* maps the tag to a tracepoint, resolves the
 * tracer state to a recorder session (nif_session.h), asks the sinks
 * (nif_dispatch.h: one mask test, one LTTng state load, USDT semaphore
 * loads) and remembers the answer in the thread's context; trace_*, which
 * the VM calls next on the same thread for the same event, takes that
 * answer instead of asking again. When the recorder wants the event, the
 * clock is read (core/clock.h), the thread's ring entered (recorder.h's
 * bracket) and room reserved, and the fields are formatted straight into
 * the ring (nif_decode.h, through nif_format.h's caches); LTTng and USDT
 * get the same decoded event (nif_dispatch.c). Files on the way: this one,
 * nif_decode.h (+ the formatters), the recorder's inline bracket,
 * nif_dispatch.c and the sinks.
 *
 * Hot path rules: no allocation, no lock, no message, no term building, no
 * clock read unless the recorder takes the event.
 */
#include "nif_tracer.h"
#include "nif_decode.h"
#include "nif_dispatch.h"
#include "nif_format.h"
#include "nif_session.h"
#include "nif_state.h"
#include "nif_thread.h"

/* Tracepoint of each trace tag, by callback group; -1 = not a tracepoint. */
static inline int tp_procs(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->spawn) return BMT_TP_process_spawn;
    if (tag == a->link || tag == a->unlink || tag == a->getting_linked ||
        tag == a->getting_unlinked)
        return BMT_TP_process_link;
    if (tag == a->exit) return BMT_TP_process_exit;
    if (tag == a->register_ || tag == a->unregister) return BMT_TP_process_register;
    return -1; /* spawned: OTP discards it too */
}

static inline int tp_ports(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->open) return BMT_TP_port_open;
    if (tag == a->closed) return BMT_TP_port_exit;
    if (tag == a->link || tag == a->unlink || tag == a->getting_linked ||
        tag == a->getting_unlinked)
        return BMT_TP_port_link;
    return -1; /* port register/unregister: discarded, as in OTP */
}

static inline int tp_running_procs(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_process_scheduled;
}

static inline int tp_running_ports(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_port_scheduled;
}

static inline int tp_call(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->call) return BMT_TP_function_call;
    if (tag == a->return_from || tag == a->return_to) return BMT_TP_function_return;
    if (tag == a->exception_from) return BMT_TP_function_exception;
    return -1;
}

static inline int tp_send(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_message_send;
}

static inline int tp_receive(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    (void)a, (void)tag;
    return BMT_TP_message_receive;
}

static inline int tp_gc(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    if (tag == a->gc_minor_start) return BMT_TP_gc_minor_start;
    if (tag == a->gc_minor_end) return BMT_TP_gc_minor_end;
    if (tag == a->gc_major_start) return BMT_TP_gc_major_start;
    if (tag == a->gc_major_end) return BMT_TP_gc_major_end;
    return -1;
}

typedef int tag_map_fn(const struct bmt_atoms *a, ERL_NIF_TERM tag);

/* Decides who wants the event with trace tag `tag` and tracer state
 * `state`; d->sinks is 0 when nobody does. */
/* Every callback below gets its own copy of this and of the two common
 * bodies (always_inline), with its tag map inlined: one function per
 * callback, no call inside on the path nobody listens to. */
#define HOT static inline __attribute__((always_inline))

HOT void decide(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM tag, ERL_NIF_TERM state,
                tag_map_fn *map, struct bmt_decision *d)
{
    d->tag = tag;
    d->state = state;
    d->sinks = 0;
    d->tp = map(&p->atom, tag);
    if (d->tp < 0)
        return;
    d->rec_tp = d->tp;
    d->session = bmt_resolve_session(&p->handles, env, state, &d->generation);
    d->sinks = bmt_sinks_wanting(p, d->session, d->generation, d->tp, 0);
    if ((d->sinks & BMT_SINK_RECORDER) &&
        (d->tp == BMT_TP_message_send || d->tp == BMT_TP_message_receive) &&
        (atomic_load_explicit(&d->session->format_option, memory_order_relaxed) &
         BMT_FORMAT_LINKS))
        d->rec_tp = d->tp == BMT_TP_message_send ? BMT_TP_message_send_link
                                                 : BMT_TP_message_receive_link;
}

HOT ERL_NIF_TERM enabled_common(ErlNifEnv *env, const ERL_NIF_TERM argv[], tag_map_fn *map)
{
    struct priv *p = enif_priv_data(env);
    struct bmt_decision d;
    decide(p, env, argv[0], argv[1], map, &d);
    if (!d.sinks)
        return p->atom.discard;
    struct thread_ctx *t = bmt_thread_ctx(&p->threads);
    if (t)
        t->decision = d;
    return p->atom.trace;
}

HOT ERL_NIF_TERM trace_common(ErlNifEnv *env, const ERL_NIF_TERM argv[], tag_map_fn *map)
{
    struct priv *p = enif_priv_data(env);
    struct thread_ctx *t = bmt_thread_ctx(&p->threads);
    struct bmt_decision fresh;
    const struct bmt_decision *dec = &fresh;
    if (t && t->decision.tag == argv[0] && t->decision.state == argv[1]) {
        dec = &t->decision;
        t->decision.tag = 0; /* one use: the fields below stay as they are */
    } else {
        decide(p, env, argv[0], argv[1], map, &fresh);
    }
    if (!dec->sinks)
        return p->atom.ok;
    struct bmt_session *s = dec->session;
    /* No slot, or re-entered from our own formatting (never recurse): the
     * recorder counts what it could not take. */
    if (!bmt_thread_enter(t)) {
        if (dec->sinks & BMT_SINK_RECORDER)
            bmt_rec_drop(s);
        return p->atom.ok;
    }
    int tp = dec->tp;
    unsigned sinks = dec->sinks;
    uint64_t generation = dec->generation;
    unsigned external = sinks & ~BMT_SINK_RECORDER;
    /* Message text: the recorder session's bound; OTP's 255 bytes for
     * LTTng; none when only USDT listens (no USDT probe carries it). */
    int message_bytes =
        (sinks & BMT_SINK_RECORDER)
            ? bmt_format_message_bytes(atomic_load_explicit(&s->format_option, memory_order_relaxed))
        : (sinks & BMT_SINK_LTTNG) ? BMT_OTP_MESSAGE_BYTES
                                   : 0;
    struct bmt_ring *ring = NULL;
    uint8_t *start = NULL, *dst = NULL;
    uint64_t ts = 0;
    if (sinks & BMT_SINK_RECORDER) {
        ts = bmt_clock_event_ns(&p->clock, &t->clock);
        ring = bmt_rec_enter(s, generation, (unsigned)t->slot);
        if (ring)
            dst = bmt_rec_reserve(s, ring, dec->rec_tp, ts, &start);
    }
    if (dst || external) {
        /* A link variant starts with OTP's fields: the other sinks read
         * those, as OTP's event. */
        int decoded = dst ? dec->rec_tp : tp;
        struct decode d;
        bmt_decode_init(&d, env, p, t, decoded, dst ? dst : t->scratch);
        d.message_bytes = message_bytes;
        d.tag = argv[0];
        d.tracee = argv[2];
        d.term = argv[3];
        d.opts = argv[4];
        /* The session is pinned while its ring is entered: its node name
         * stays put. */
        d.node = dst ? s->cfg.info.node : NULL;
        t->event.ts_ns = ts;
        bmt_decode_fields(&d, decoded);
        if (start)
            bmt_rec_commit(ring, start, d.cursor, ts);
        /* Ring space past the event is not ours: extras go to scratch. */
        if (external) {
            t->event.id = (uint16_t)tp;
            bmt_dispatch_external(p, &d, tp, external, start ? t->scratch : d.cursor);
        }
    }
    if (ring)
        bmt_rec_leave(s, (unsigned)t->slot, ts);
    bmt_thread_leave(t);
    return p->atom.ok;
}

/* enabled/3: every tag without a specific callback, and trace_status, which
 * asks whether the tracer is still alive. A tracer state naming a recorder
 * session is alive while that session runs, and after it stopped by itself
 * until stop/1 collects it (it counts what it is still offered, so its
 * figures stay exact); then `remove`, and the VM drops the tracer. `[]`
 * names beamtrace's sinks as a whole, which stay alive like OTP's dyntrace
 * on an LTTng build: an LTTng session or a USDT tracer may start listening
 * at any time. */
ERL_NIF_TERM bmt_nif_enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    if (argv[0] != p->atom.trace_status)
        return p->atom.discard;
    if (argv[1] == p->nil)
        return p->atom.trace;
    uint64_t gen;
    struct bmt_session *s = bmt_resolve_session(&p->handles, env, argv[1], &gen);
    return s && bmt_rec_known(s, gen) ? p->atom.trace : p->atom.remove;
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
