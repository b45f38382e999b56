/* The erl_tracer callbacks: enabled_<flag>/3 decides, trace_<flag>/5 turns
 * one trace event into one catalogue event for every sink that wants it.
 *
 * One event's path: enabled_* maps the tag to a tracepoint, takes the
 * recorder's part of the answer from the thread's cache for tracer state []
 * (nif_dispatch.h: one word per tracepoint, refilled when the sessions
 * change; a handle is resolved to its session, nif_session.h), asks LTTng
 * and USDT (one state load, semaphore loads) and remembers the answer in
 * the thread's context; trace_*, which
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
#include "nif_flight_call.h"
#include "nif_format.h"
#include "nif_sample.h"
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

/* The tags trace/5 gets: seq_trace's, when beamtrace is the seq_trace
 * system tracer (every other tag has its own callback). */
static inline int tp_generic(const struct bmt_atoms *a, ERL_NIF_TERM tag)
{
    return tag == a->seq_trace ? BMT_TP_seq_trace : -1;
}

typedef int tag_map_fn(const struct bmt_atoms *a, ERL_NIF_TERM tag);

/* Every callback below gets its own copy of the two common bodies
 * (always_inline), with its tag map inlined: one function per callback,
 * whose common case (the recorder alone wants the event) calls nothing but
 * the VM's enif_* and misses in the caches; the rest is out of line. The
 * call and running callbacks leave by a tail call to a function per
 * tracepoint instead (out_of_line_tp, trace_cached). */
#define HOT static inline __attribute__((always_inline))

static inline int is_call_tp(int tp)
{
    return tp >= BMT_TP_function_call && tp <= BMT_TP_function_exception;
}

/* Sampling (nif_sample.h): 1 to keep the event the decision word `w`
 * gives the recorder. The word says whether its session samples this
 * tracepoint: a bit test, no load, unless it does. */
HOT int sample_keep(struct priv *p, const ERL_NIF_TERM argv[], uint64_t w, struct thread_ctx *t)
{
    if (__builtin_expect(!BMT_DW_SAMPLED(w), 1))
        return 1;
    return bmt_sample_keep(p, &p->rec.sessions[BMT_DW_SESSION(w)], BMT_DW_REC_TP(w), argv[0],
                           argv[2], t);
}

/* enabled_*'s rare paths: a handle as tracer state, a thread seen for the
 * first time, a change in the sessions since the thread's last event, or a
 * sampled tracepoint; `tp` >= 0. Out of line and reached by a tail call, so
 * the common path saves no register. */
static __attribute__((noinline)) ERL_NIF_TERM enabled_slow(struct priv *p, ErlNifEnv *env,
                                                           const ERL_NIF_TERM argv[], int tp)
{
    /* The thread's context if it has one already: a slot is given only to
     * a thread that has an event to record (below), so threads that never
     * record leave the slots to those that do. */
    struct thread_ctx *known = bmt_tls.instance == p->threads.instance ? bmt_tls.ctx : NULL;
    uint64_t w;
    if (known && argv[1] == p->nil) {
        w = bmt_decide_default_cached(p, known, tp);
        /* The words are this epoch's now: enabled_tp's one test (nif_thread.h). */
        bmt_tls.words_epoch = known->words_epoch;
    } else {
        w = bmt_decide_ctx(p, known, env, argv[1], tp);
    }
    if (!BMT_DW_SINKS(w)) {
        /* A state naming no session may be a flight recorder's call
         * trigger (nif_flight_call.h): its own answer. */
        if (is_call_tp(tp) && argv[1] != p->nil) {
            ERL_NIF_TERM r = bmt_flight_call_enabled(p, env, argv, tp);
            if (r)
                return r;
        }
        return p->atom.discard;
    }
    struct thread_ctx *t = known ? known : bmt_thread_ctx(&p->threads);
    if (!sample_keep(p, argv, w, t))
        return p->atom.discard;
    if (t) {
        t->decided_tag = argv[0];
        t->decided_state = argv[1];
        t->decided_identity = bmt_handle_identity(&p->handles, argv[1]);
        t->decision = w;
    }
    return p->atom.trace;
}

/* enabled_common for tracepoint `tp`, a constant in each copy. */
HOT ERL_NIF_TERM enabled_tp(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[], int tp)
{
    /* The TLS's words_epoch says at once that the thread has a context of
     * this state and that its words are current (nif_thread.h). */
    if (__builtin_expect(argv[1] != p->nil ||
                             bmt_tls.words_epoch !=
                                 atomic_load_explicit(&p->rec.epoch, memory_order_acquire),
                         0))
        return enabled_slow(p, env, argv, tp);
    struct thread_ctx *t = bmt_tls.ctx;
    /* bmt_decide_default_cached, its cache known to be current. */
    uint64_t w = t->default_words[tp] | bmt_external_word(p, tp);
    if (!BMT_DW_SINKS(w))
        return p->atom.discard;
    if (__builtin_expect(BMT_DW_SAMPLED(w), 0))
        return enabled_slow(p, env, argv, tp);
    t->decided_tag = argv[0];
    t->decided_state = argv[1];
    t->decision = w;
    return p->atom.trace;
}

/* The switch on the tag map's constants gives each tag its own copy of
 * enabled_tp, with its tracepoint's loads and semaphores at fixed places,
 * rather than one copy that tests the tracepoint again. */
HOT ERL_NIF_TERM enabled_common(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                                tag_map_fn *map)
{
    switch (map(&p->atom, argv[0])) {
#define TRACEPOINT(domain, name, flag, summary, fields) \
    case BMT_TP_##name: return enabled_tp(p, env, argv, BMT_TP_##name);
#include "core/catalogue.def"
#undef TRACEPOINT
    default: return p->atom.discard;
    }
}

/* An event some sink wants that this thread cannot take: no slot, or
 * re-entered from our own formatting (never recurse). The recorder counts
 * it. */
static __attribute__((noinline, cold)) void refuse(struct priv *p, uint64_t w)
{
    if (BMT_DW_SINKS(w) & BMT_SINK_RECORDER)
        bmt_rec_drop(&p->rec.sessions[BMT_DW_SESSION(w)]);
}

/* Writes an event the recorder takes (if its ring has room) into session
 * `s`'s (the decision word's) ring of thread `t` as tracepoint `rec_tp`
 * (the word's), stamped `ts`: returns where the event's fields start (NULL
 * when the ring had no room, or the session stopped meanwhile) and leaves
 * the ring entered when `*ring` is set. */
HOT uint8_t *record_event(struct priv *p, struct bmt_session *s, struct thread_ctx *t, ErlNifEnv *env,
                    const ERL_NIF_TERM argv[], uint64_t w, int rec_tp, uint64_t ts,
                    struct bmt_ring **ring, struct decode *d)
{
    uint8_t *start;
    *ring = bmt_rec_enter(s, BMT_DW_GENERATION(w), (unsigned)t->slot);
    if (!*ring)
        return NULL;
    uint8_t *dst = bmt_rec_reserve(s, *ring, rec_tp, ts, &start);
    if (!dst)
        return NULL;
    bmt_decode_init(d, env, p, t, rec_tp, dst, argv, s);
    bmt_decode_fields(d, rec_tp);
    bmt_rec_commit(*ring, start, d->cursor, ts);
    return dst;
}

/* record_event and the leave, for tracepoint `rec_tp` (a constant in each
 * copy: its fields' writers inline, and the decoder's state in
 * registers). */
HOT void record_only(struct priv *p, struct bmt_session *s, struct thread_ctx *t, ErlNifEnv *env,
                     const ERL_NIF_TERM argv[], uint64_t w, int rec_tp, uint64_t ts)
{
    struct bmt_ring *ring;
    struct decode d;
    record_event(p, s, t, env, argv, w, rec_tp, ts, &ring, &d);
    if (ring)
        bmt_rec_leave(s, ring, ts);
}

/* record_only for the tracepoint the word names, whichever it is: the
 * variants a session may record instead of the tracer's own (link
 * events, results, arguments). Out of line. */
static __attribute__((noinline)) void record_variant(struct priv *p, struct bmt_session *s,
                                                     struct thread_ctx *t, ErlNifEnv *env,
                                                     const ERL_NIF_TERM argv[], uint64_t w,
                                                     uint64_t ts)
{
    record_only(p, s, t, env, argv, w, BMT_DW_REC_TP(w), ts);
}

/* An event LTTng or USDT wants, with or without the recorder: decoded
 * into the ring (when the recorder takes it) or the thread's scratch, then
 * handed to them. Out of line: the common case is the recorder alone. */
static __attribute__((noinline)) void trace_with_external(struct priv *p, struct thread_ctx *t,
                                                          ErlNifEnv *env,
                                                          const ERL_NIF_TERM argv[], uint64_t w)
{
    unsigned sinks = BMT_DW_SINKS(w), external = sinks & ~BMT_SINK_RECORDER;
    int tp = BMT_DW_TP(w);
    struct bmt_ring *ring = NULL;
    struct decode d;
    uint8_t *fields = NULL;
    uint64_t ts = 0;
    if (sinks & BMT_SINK_RECORDER) {
        ts = bmt_clock_event_ns(&p->clock, &t->clock);
        fields = record_event(p, &p->rec.sessions[BMT_DW_SESSION(w)], t, env, argv, w,
                              BMT_DW_REC_TP(w), ts, &ring, &d);
    }
    if (external) {
        uint8_t *spare = t->scratch;
        if (!fields) {
            /* No ring took it: OTP's event into scratch, OTP's choices. */
            bmt_decode_init(&d, env, p, t, tp, t->scratch, argv, NULL);
            bmt_decode_fields(&d, tp);
            fields = t->scratch;
            spare = d.cursor;
        }
        /* A link variant starts with OTP's fields: the other sinks read
         * those, as OTP's event. Before leaving the ring: its bytes stay
         * put until this thread publishes the packet. */
        bmt_dispatch_external(p, t, &d, tp, external, fields, ts, spare);
    }
    if (ring)
        bmt_rec_leave(&p->rec.sessions[BMT_DW_SESSION(w)], ring, ts);
}

static ERL_NIF_TERM trace_cached_by_number(struct priv *p, ErlNifEnv *env,
                                           const ERL_NIF_TERM argv[], tag_map_fn *map, int tp);
static inline int cached_fields_tp(int tp);

/* trace_*'s rare paths: no decision of this thread's enabled_* for this
 * event (a thread seen for the first time, or the VM did not ask), no slot,
 * or re-entered. */
static __attribute__((noinline)) ERL_NIF_TERM trace_slow(struct priv *p, ErlNifEnv *env,
                                                         const ERL_NIF_TERM argv[],
                                                         tag_map_fn *map)
{
    struct thread_ctx *t = bmt_thread_ctx(&p->threads);
    uint64_t w;
    if (t && t->decided_tag == argv[0] && t->decided_state != argv[1] &&
        t->decided_state != p->nil && t->decided_identity != 0 &&
        t->decided_identity == bmt_handle_identity(&p->handles, argv[1]) &&
        bmt_peek_trusted(BMT_PEEK_HANDLE) && !t->in_use) {
        /* enabled_* decided for this handle, and the VM hands trace_* a
         * copy of it (a match spec ran): the same resource, the same
         * decision, taken as decided_ctx would have. */
        t->decided_state = argv[1];
        int tp = map(&p->atom, argv[0]);
        if (cached_fields_tp(tp) && BMT_DW_SINKS(t->decision) == BMT_SINK_RECORDER)
            return trace_cached_by_number(p, env, argv, map, tp);
    }
    if (t && t->decided_tag == argv[0] && t->decided_state == argv[1]) {
        w = t->decision;
        t->decided_tag = 0; /* one use */
    } else {
        int tp = map(&p->atom, argv[0]);
        if (tp < 0)
            return p->atom.ok;
        /* The trace_call that follows a flight call trigger's `trace`
         * (nif_flight_call.h): a no-op, known without a look-up. */
        if (tp == BMT_TP_function_call && t && t->flight_pending == argv[2] &&
            t->flight_pending_state == argv[1]) {
            t->flight_pending = 0;
            return p->atom.ok;
        }
        w = bmt_decide_ctx(p, t, env, argv[1], tp);
        /* A flight recorder's call trigger (nif_flight_call.h): OTP 25
         * asks it through trace_call. Nothing past argv[2] is read. */
        if (!BMT_DW_SINKS(w) && is_call_tp(tp) && argv[1] != p->nil) {
            ERL_NIF_TERM r = bmt_flight_call_trace(p, env, argv, tp);
            if (r)
                return r;
        }
        /* Decided here, the event may still take trace_cached: the VM
         * calls trace_call for a return_from with no enabled_call first,
         * and, when a match spec runs (return_trace), hands trace_call a
         * copy of a boxed tracer state (a session handle), not the word
         * enabled_call got. The decision is stored as enabled_* would;
         * `t` is bmt_thread_ctx's, so the TLS names it for this state and
         * trace_cached's decided_ctx takes it. */
        if (cached_fields_tp(tp) && t && !t->in_use &&
            BMT_DW_SINKS(w) == BMT_SINK_RECORDER) {
            t->decided_tag = argv[0];
            t->decided_state = argv[1];
            t->decided_identity = 0; /* unused: decided_ctx compares the word */
            t->decision = w;
            return trace_cached_by_number(p, env, argv, map, tp);
        }
    }
    if (!BMT_DW_SINKS(w))
        return p->atom.ok;
    if (!bmt_thread_enter(t)) {
        refuse(p, w);
        return p->atom.ok;
    }
    trace_with_external(p, t, env, argv, w);
    bmt_thread_leave(t);
    return p->atom.ok;
}

/* trace_tp's other cases, once its decision is taken (one use) and the
 * thread entered: the recorder alone, writing a variant of `tp` (link
 * events, results, arguments), or LTTng or USDT (with or without the
 * recorder). */
static __attribute__((noinline)) void trace_tp_other(struct priv *p, struct thread_ctx *t,
                                                     ErlNifEnv *env, const ERL_NIF_TERM argv[],
                                                     uint64_t w)
{
    if (BMT_DW_SINKS(w) == BMT_SINK_RECORDER)
        record_variant(p, &p->rec.sessions[BMT_DW_SESSION(w)], t, env, argv, w,
                       bmt_clock_event_ns(&p->clock, &t->clock));
    else
        trace_with_external(p, t, env, argv, w);
}

/* The bits of a decision word that say "the recorder alone, writing `tp`
 * itself": one mask and one compare for both. */
#define FAST_MASK ((uint64_t)7 | (uint64_t)63 << 10)
#define FAST_WORD(tp) ((uint64_t)BMT_SINK_RECORDER | (uint64_t)(tp) << 10)
_Static_assert(BMT_DW_SINKS(FAST_MASK) == 7 && BMT_DW_REC_TP(FAST_MASK) == 63 &&
                   BMT_DW_SINKS(FAST_WORD(5)) == BMT_SINK_RECORDER && BMT_DW_REC_TP(FAST_WORD(5)) == 5 &&
                   !BMT_DW_SAMPLED(FAST_MASK) && BMT_DW_TP(FAST_MASK) == 0 &&
                   BMT_DW_SESSION(FAST_MASK) == 0 && BMT_DW_GENERATION(FAST_MASK) == 0,
               "FAST_MASK covers the sinks and the recorded tracepoint, nothing else");

/* The thread's context when its enabled_* decided for this event (the
 * same tag and tracer state) and it is not inside another event; else
 * NULL, for trace_slow. */
HOT struct thread_ctx *decided_ctx(struct priv *p, const ERL_NIF_TERM argv[])
{
    struct thread_ctx *t = bmt_tls.ctx;
    if (__builtin_expect(bmt_tls.instance != p->threads.instance || !t ||
                             t->decided_tag != argv[0] || t->decided_state != argv[1] ||
                             t->in_use,
                         0))
        return NULL;
    return t;
}

/* trace_tp once decided_ctx gave this thread's context `t`: the common
 * case inline (only the recorder wants the event, as `tp` itself, a
 * constant in each copy), the others out of line. */
HOT ERL_NIF_TERM trace_decided_tp(struct priv *p, struct thread_ctx *t, ErlNifEnv *env,
                                  const ERL_NIF_TERM argv[], int tp)
{
    uint64_t w = t->decision;
    t->decided_tag = 0; /* one use */
    t->in_use = 1;
    if (__builtin_expect((w & FAST_MASK) == FAST_WORD(tp), 1))
        record_only(p, &p->rec.sessions[BMT_DW_SESSION(w)], t, env, argv, w, tp,
                    bmt_clock_event_ns(&p->clock, &t->clock));
    else
        trace_tp_other(p, t, env, argv, w);
    t->in_use = 0;
    return p->atom.ok;
}

HOT ERL_NIF_TERM trace_tp(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                          tag_map_fn *map, int tp)
{
    struct thread_ctx *t = decided_ctx(p, argv);
    if (__builtin_expect(!t, 0))
        return trace_slow(p, env, argv, map);
    return trace_decided_tp(p, t, env, argv, tp);
}

/* trace_decided_tp out of line, one function per tracepoint (those of
 * cached_fields_tp are called): trace_cached's way out for whatever it
 * could not do without a call (decided_ctx passed, the decision still
 * unused, the ring not entered), with the tracepoint still a constant, so
 * the event is written inline as before trace_cached existed. */
#define TRACEPOINT(domain, name, flag, summary, fields)                                  \
    static __attribute__((noinline, unused)) ERL_NIF_TERM trace_general_##name(           \
        struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[])                        \
    {                                                                                    \
        return trace_decided_tp(p, bmt_tls.ctx, env, argv, BMT_TP_##name);               \
    }
#include "core/catalogue.def"
#undef TRACEPOINT

/* trace_general_<tracepoint> of `tp`, a constant: one tail call. */
HOT ERL_NIF_TERM trace_general(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[], int tp)
{
    switch (tp) {
#define TRACEPOINT(domain, name, flag, summary, fields) \
    case BMT_TP_##name: return trace_general_##name(p, env, argv);
#include "core/catalogue.def"
#undef TRACEPOINT
    }
    return p->atom.ok;
}

/* trace_cached's leave when it has work (a flush asked for, a packet to
 * wake the consumer for). */
static __attribute__((noinline)) ERL_NIF_TERM trace_leave_work(struct priv *p,
                                                               struct bmt_session *s,
                                                               struct bmt_ring *ring, uint64_t ts)
{
    bmt_rec_leave(s, ring, ts);
    return p->atom.ok;
}

/* The tracepoints whose fields are all cache entries and constants: the
 * tracee's id, the event's MFA, and a depth or a type (calls, returns,
 * scheduling). None where the clock has no inline read (no TSC off
 * x86-64): trace_cached would give every event up to the general path. */
static inline int cached_fields_tp(int tp)
{
#if defined(__x86_64__)
    return tp == BMT_TP_function_call || tp == BMT_TP_function_return ||
           tp == BMT_TP_process_scheduled;
#else
    (void)tp;
    return 0;
#endif
}

/* trace_tp's common case for a cached_fields_tp, written with no call at
 * all, so that it saves no register and keeps everything in registers:
 * what it needs is checked first (the decision, both cache entries, the
 * clock's anchor, the ring, room in its open packet), and anything else
 * starts over in trace_general, a tail call, before the event is written.
 * The fields are bmt_decode_fields' own, from the entries found. */
HOT ERL_NIF_TERM trace_cached(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                              tag_map_fn *map, int tp)
{
    struct thread_ctx *t = decided_ctx(p, argv);
    if (__builtin_expect(!t, 0))
        return trace_slow(p, env, argv, map);
    uint64_t w = t->decision;
    const struct bmt_id_cache_entry *tracee = bmt_tracee_hit(&t->fmt, argv[2]);
    const struct mfa_cache_entry *mfa =
        bmt_mfa_hit(&t->fmt, argv[3], tp != BMT_TP_function_call);
    if (__builtin_expect((w & FAST_MASK) != FAST_WORD(tp) || !tracee || !mfa, 0))
        return trace_general(p, env, argv, tp);
    uint64_t ts;
    if (__builtin_expect(!bmt_clock_event_ns_inline(&p->clock, &t->clock, &ts), 0))
        return trace_general(p, env, argv, tp);
    struct bmt_session *s = &p->rec.sessions[BMT_DW_SESSION(w)];
    struct bmt_slot *sl = bmt_rec_slot_at(s, t->rec_slot_offset);
    if (__builtin_expect(!bmt_rec_try_enter(s, BMT_DW_GENERATION(w), sl), 0))
        return trace_general(p, env, argv, tp);
    struct bmt_ring *ring = &sl->ring;
    uint8_t *start, *dst;
    if (__builtin_expect(!bmt_rec_reserve_open(s, ring, tp, ts, &start, &dst), 0)) {
        bmt_rec_leave_quiet(ring);
        return trace_general(p, env, argv, tp);
    }
    struct decode d;
    bmt_decode_init(&d, env, p, t, tp, dst, argv, s);
    d.tracee_hit = tracee;
    d.mfa_hit = mfa;
    bmt_decode_fields(&d, tp);
    bmt_rec_commit(ring, start, d.cursor, ts);
    t->decided_tag = 0; /* one use */
    if (bmt_rec_leave_has_work(ring))
        return trace_leave_work(p, s, ring, ts);
    bmt_rec_leave_quiet(ring);
    return p->atom.ok;
}

/* The tracepoints whose trace path is a function of its own (below),
 * reached from the callback by a tail call: those of cached_fields_tp, so
 * that the callback saves no register on their way, and the call
 * callback's third (function_exception), which would otherwise make the
 * call callback save them. The others stay inline in their callbacks, as
 * one copy each with the callback's own registers. */
static inline int out_of_line_tp(int tp)
{
    return cached_fields_tp(tp) || is_call_tp(tp);
}

/* One function per tracepoint, out of line: trace_cached for those of
 * cached_fields_tp, else trace_tp (only those of out_of_line_tp are
 * called). */
#define TRACEPOINT(domain, name, flag, summary, fields)                                  \
    static __attribute__((noinline, unused)) ERL_NIF_TERM trace_tp_##name(                \
        struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[], tag_map_fn *map)       \
    {                                                                                    \
        return cached_fields_tp(BMT_TP_##name)                                           \
                   ? trace_cached(p, env, argv, map, BMT_TP_##name)                      \
                   : trace_tp(p, env, argv, map, BMT_TP_##name);                         \
    }
#include "core/catalogue.def"
#undef TRACEPOINT

/* trace_tp_<tracepoint> of tracepoint `tp`, one of cached_fields_tp, for
 * trace_slow once it decided: a tail call. */
static ERL_NIF_TERM trace_cached_by_number(struct priv *p, ErlNifEnv *env,
                                           const ERL_NIF_TERM argv[], tag_map_fn *map, int tp)
{
    switch (tp) {
#define TRACEPOINT(domain, name, flag, summary, fields) \
    case BMT_TP_##name:                                 \
        if (cached_fields_tp(BMT_TP_##name))            \
            return trace_tp_##name(p, env, argv, map);  \
        break;
#include "core/catalogue.def"
#undef TRACEPOINT
    }
    return p->atom.ok; /* not one of them: trace_slow never asks */
}

/* As enabled_common: a copy of trace_tp per tracepoint of the tag map,
 * or a tail call to its own function (out_of_line_tp). */
HOT ERL_NIF_TERM trace_common(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                              tag_map_fn *map)
{
    switch (map(&p->atom, argv[0])) {
#define TRACEPOINT(domain, name, flag, summary, fields) \
    case BMT_TP_##name:                                                      \
        return out_of_line_tp(BMT_TP_##name) ? trace_tp_##name(p, env, argv, map) \
                                             : trace_tp(p, env, argv, map, BMT_TP_##name);
#include "core/catalogue.def"
#undef TRACEPOINT
    default: return trace_slow(p, env, argv, map);
    }
}

/* enabled/3: trace_status, which asks whether the tracer is still alive,
 * and seq_trace (beamtrace as the seq_trace system tracer), the one tag
 * without a callback of its own. A tracer state naming a recorder session
 * is alive while that session runs, and after it stopped by itself until
 * stop/1 collects it (it counts what it is still offered, so its figures
 * stay exact); then `remove`, and the VM drops the tracer. `[]` names
 * beamtrace's sinks as a whole, which stay alive like OTP's dyntrace on an
 * LTTng build: an LTTng session or a USDT tracer may start listening at
 * any time. */
static __attribute__((noinline)) ERL_NIF_TERM enabled_generic_rest(struct priv *p, ErlNifEnv *env,
                                                                   const ERL_NIF_TERM argv[])
{
    if (argv[0] == p->atom.trace_status) {
        uint64_t gen;
        struct thread_ctx *known =
            bmt_tls.instance == p->threads.instance ? bmt_tls.ctx : NULL;
        struct bmt_session *s = bmt_resolve_session_cached(p, known, env, argv[1], &gen);
        if (!s) {
            ERL_NIF_TERM r = bmt_flight_call_status(p, env, argv[1]);
            if (r)
                return r;
        }
        return s && bmt_rec_known(s, gen) ? p->atom.trace : p->atom.remove;
    }
    return enabled_common(p, env, argv, tp_generic);
}

/* trace_status is asked on every event of some kinds (calls): [] at once,
 * with no register saved; the rest out of line. Not `trace` for every tag
 * of []: the VM asks seq_trace's on each send that carries a token, and
 * bumps the token's serial only when the answer is `trace`, so the answer
 * must be the sinks' (enabled_common). */
HOT ERL_NIF_TERM enabled_generic(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[])
{
    if (__builtin_expect(argv[0] == p->atom.trace_status && argv[1] == p->nil, 1))
        return p->atom.trace;
    return enabled_generic_rest(p, env, argv);
}

/* trace/5: the events of the tags without a callback of their own:
 * seq_trace's (its third argument is the token's label, not a tracee). */
HOT ERL_NIF_TERM trace_generic(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[])
{
    return trace_common(p, env, argv, tp_generic);
}

/* Each callback twice: bmt_nif_* for module beamtrace, whose state is this
 * copy's (bmt_copy_priv: no enif_priv_data call), and bmt_shared_* for the
 * dyntrace module's trampolines (nif_shared.h), whose state is the one its
 * env carries. */
#define TRACER_ENTRY(name, body)                                                         \
    ERL_NIF_TERM bmt_nif_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])     \
    {                                                                                    \
        (void)argc;                                                                      \
        return body(atomic_load_explicit(&bmt_copy_priv, memory_order_relaxed), env, argv); \
    }                                                                                    \
    ERL_NIF_TERM bmt_shared_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])  \
    {                                                                                    \
        (void)argc;                                                                      \
        return body(enif_priv_data(env), env, argv);                                     \
    }

TRACER_ENTRY(enabled, enabled_generic)
TRACER_ENTRY(trace, trace_generic)

#define TRACER_PAIR(group, map)                                                          \
    HOT ERL_NIF_TERM enabled_##group(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[]) \
    {                                                                                    \
        return enabled_common(p, env, argv, map);                                        \
    }                                                                                    \
    HOT ERL_NIF_TERM trace_##group(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[])   \
    {                                                                                    \
        return trace_common(p, env, argv, map);                                          \
    }                                                                                    \
    TRACER_ENTRY(enabled_##group, enabled_##group)                                       \
    TRACER_ENTRY(trace_##group, trace_##group)

TRACER_PAIR(procs, tp_procs)
TRACER_PAIR(ports, tp_ports)
TRACER_PAIR(running_procs, tp_running_procs)
TRACER_PAIR(running_ports, tp_running_ports)
TRACER_PAIR(call, tp_call)
TRACER_PAIR(send, tp_send)
TRACER_PAIR(receive, tp_receive)
TRACER_PAIR(garbage_collection, tp_gc)
