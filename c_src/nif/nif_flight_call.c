/* The call-latency trigger (contract in nif_flight_call.h). */
#include "nif_flight_call.h"
#include "nif_flight_slots.h"
#include "nif_session.h"
#include "nif_state.h"
#include "nif_thread.h"

#include <string.h>

#define BMT_CALL_PROBES 32
#define EMPTY UINT64_C(0)    /* never claimed: ends a lookup */
#define FREE UINT64_C(1)     /* claimed before, given back (a pid word is never 0 or 1) */
/* A slot given back is not claimed again for this long: a callback that
 * read its tag just before is done with it by then. */
#define REUSE_NS UINT64_C(10000000000)

/* The resource Erlang holds: the slot is its trigger's while it lives. */
struct call_handle {
    struct bmt_flight_calls *calls;
    uint64_t tag;
};

static void count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The trigger resource's end: its slot is given back. */
static void destroy(ErlNifEnv *env, void *obj)
{
    (void)env;
    struct call_handle *h = obj;
    if (!h->calls)
        return;
    struct bmt_flight_call *fc = &h->calls->slot[h->tag & (BMT_FLIGHT_SLOTS - 1)];
    enif_mutex_lock(h->calls->lock);
    if (atomic_load(&fc->tag) == h->tag) {
        atomic_store_explicit(&fc->tag, 0, memory_order_release);
        fc->released_ns = bmt_clock_ns();
    }
    enif_mutex_unlock(h->calls->lock);
    bmt_flight_slots_drop(h->calls);
    h->calls = NULL;
}

int bmt_flight_call_open_type(struct priv *p, ErlNifEnv *env, ErlNifResourceFlags flags)
{
    p->flight_call_type =
        enif_open_resource_type(env, NULL, "beamtrace_flight_call", destroy, flags, NULL);
    if (!p->flight_call_type)
        return -1;
    if (p->flight_calls)
        return 0;
    /* Claim numbers start where the state's id says, so a tracer state
     * left from an earlier load names no slot of this one. */
    p->flight_calls = bmt_flight_slots_new(p->instance & UINT64_C(0xFFFFFFFFFF));
    return p->flight_calls ? 0 : -1;
}

/* The trigger a tracer state names: a small integer, the tag of a claimed
 * slot. NULL for anything else (a session's handle, a slot given back). */
static struct bmt_flight_call *get_trigger(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM term)
{
    ErlNifUInt64 tag;
    if (!p->flight_calls || !enif_get_uint64(env, term, &tag) || tag == 0)
        return NULL;
    struct bmt_flight_call *fc = &p->flight_calls->slot[tag & (BMT_FLIGHT_SLOTS - 1)];
    return atomic_load_explicit(&fc->tag, memory_order_acquire) == tag ? fc : NULL;
}

/* The trigger a resource from flight_call_trigger_nif names, NULL when
 * its slot is not its own any more (an earlier load's). */
static struct bmt_flight_call *get_handle(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM term)
{
    struct call_handle *h;
    if (!p->flight_call_type || !enif_get_resource(env, term, p->flight_call_type, (void **)&h) ||
        h->calls != p->flight_calls || !h->calls)
        return NULL;
    struct bmt_flight_call *fc = &h->calls->slot[h->tag & (BMT_FLIGHT_SLOTS - 1)];
    return atomic_load_explicit(&fc->tag, memory_order_acquire) == h->tag ? fc : NULL;
}

/* ---- the table ---- */

static inline uint32_t slot_of(uint64_t pid)
{
    return (uint32_t)((pid >> 4) * UINT64_C(0x9E3779B97F4A7C15) >> 40) & (BMT_CALL_TABLE_ENTRIES - 1);
}

/* The calling process's entry, or NULL when it has none. */
static struct bmt_call_entry *lookup(struct bmt_flight_call *fc, uint64_t pid)
{
    uint32_t h = slot_of(pid);
    for (uint32_t i = 0; i < BMT_CALL_PROBES; i++) {
        struct bmt_call_entry *e = &fc->table[(h + i) & (BMT_CALL_TABLE_ENTRIES - 1)];
        uint64_t k = atomic_load_explicit(&e->pid, memory_order_acquire);
        if (k == pid)
            return e;
        if (k == EMPTY)
            return NULL;
    }
    return NULL;
}

/* Claims an entry for `pid` (which has none): NULL when the probed
 * entries are all taken. */
static struct bmt_call_entry *claim(struct bmt_flight_call *fc, uint64_t pid)
{
    uint32_t h = slot_of(pid);
    for (uint32_t i = 0; i < BMT_CALL_PROBES; i++) {
        struct bmt_call_entry *e = &fc->table[(h + i) & (BMT_CALL_TABLE_ENTRIES - 1)];
        uint64_t k = atomic_load_explicit(&e->pid, memory_order_relaxed);
        if ((k == EMPTY || k == FREE) &&
            atomic_compare_exchange_strong_explicit(&e->pid, &k, pid, memory_order_acquire,
                                                    memory_order_relaxed)) {
            e->depth = 0;
            return e;
        }
    }
    return NULL;
}

/* ---- the tracer's side ---- */

static uint64_t now_ns(struct priv *p)
{
    struct thread_ctx *t = bmt_thread_ctx(&p->threads);
    return t ? bmt_clock_event_ns(&p->clock, &t->clock) : bmt_clock_ns();
}

/* A call past the bound: its session's capture. Rare (slow calls): the
 * pid is printed here. */
static void fire(struct priv *p, struct bmt_flight_call *fc, ERL_NIF_TERM pid,
                 uint64_t latency_ns, uint64_t ts_ns)
{
    struct bmt_session *s = &p->rec.sessions[fc->index];
    if (!bmt_rec_live(s, fc->generation))
        return;
    struct bmt_trigger t;
    memset(&t, 0, sizeof t);
    t.kind = BMT_TRIGGER_CALL;
    t.ts_ns = ts_ns;
    t.value = latency_ns;
    t.bound = fc->bound_ns;
    enif_snprintf(t.pid, sizeof t.pid, "%T", pid);
    memcpy(t.function, fc->function, sizeof t.function);
    count(&fc->slow);
    (void)bmt_capture_fire(&s->capture, &t);
}

ERL_NIF_TERM bmt_flight_call_enabled(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                                     int tp)
{
    struct bmt_flight_call *fc = get_trigger(p, env, argv[1]);
    if (!fc)
        return 0;
    uint64_t pid = (uint64_t)argv[2];
    if (tp == BMT_TP_function_call) {
        count(&fc->calls);
        struct bmt_call_entry *e = lookup(fc, pid);
        if (!e)
            e = claim(fc, pid);
        if (!e) {
            count(&fc->unmeasured);
            return p->atom.discard; /* no return_trace armed: nothing to match */
        }
        if (e->depth < BMT_CALL_LEVELS)
            e->start_ns[e->depth] = now_ns(p);
        else
            count(&fc->deep);
        e->depth++;
        /* The VM's trace_call for this call comes next on this thread. */
        struct thread_ctx *t = bmt_thread_ctx(&p->threads);
        if (t) {
            t->flight_pending = argv[2];
            t->flight_pending_state = argv[1];
        }
        return p->atom.trace;
    }
    if (tp == BMT_TP_function_return || tp == BMT_TP_function_exception) {
        struct bmt_call_entry *e = lookup(fc, pid);
        if (!e || e->depth == 0) {
            count(&fc->unmatched);
            return p->atom.discard;
        }
        e->depth--;
        if (e->depth < BMT_CALL_LEVELS) {
            uint64_t now = now_ns(p);
            uint64_t latency = now - e->start_ns[e->depth];
            if (latency > fc->bound_ns)
                fire(p, fc, argv[2], latency, now);
        }
        if (e->depth == 0)
            atomic_store_explicit(&e->pid, FREE, memory_order_release);
        return p->atom.discard;
    }
    return p->atom.discard;
}

ERL_NIF_TERM bmt_flight_call_trace(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                                   int tp)
{
    if (tp == BMT_TP_function_call) {
        struct thread_ctx *t = bmt_thread_ctx(&p->threads);
        if (t && t->flight_pending == argv[2] && t->flight_pending_state == argv[1]) {
            t->flight_pending = 0;
            return p->atom.ok;
        }
    }
    return bmt_flight_call_enabled(p, env, argv, tp);
}

ERL_NIF_TERM bmt_flight_call_status(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM state)
{
    struct bmt_flight_call *fc = get_trigger(p, env, state);
    if (!fc)
        return 0;
    return bmt_rec_known(&p->rec.sessions[fc->index], fc->generation) ? p->atom.trace
                                                                        : p->atom.remove;
}

/* ---- control ---- */

ERL_NIF_TERM bmt_nif_flight_call_trigger(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    const ERL_NIF_TERM *mfa;
    int arity;
    ErlNifUInt64 bound;
    int index;
    uint64_t generation;
    if (!enif_get_tuple(env, argv[1], &arity, &mfa) || arity != 3 || !enif_is_atom(env, mfa[0]) ||
        !enif_is_atom(env, mfa[1]) || !enif_is_number(env, mfa[2]) ||
        !enif_get_uint64(env, argv[2], &bound) || bound == 0)
        return enif_make_badarg(env);
    if (!bmt_get_handle(&p->handles, env, argv[0], &index, &generation) ||
        !bmt_rec_live(&p->rec.sessions[index], generation))
        return enif_make_tuple2(env, p->atom.error, p->atom.not_running);
    if (!bmt_capture_on(&p->rec.sessions[index].capture))
        return enif_make_tuple2(env, p->atom.error, p->atom.not_flight_recorder);
    struct call_handle *h = enif_alloc_resource(p->flight_call_type, sizeof *h);
    if (!h)
        return enif_make_tuple2(env, p->atom.error, enif_make_atom(env, "enomem"));
    h->calls = NULL;
    struct bmt_flight_calls *fcs = p->flight_calls;
    struct bmt_flight_call *fc = NULL;
    uint64_t now = bmt_clock_ns();
    int nomem = 0;
    enif_mutex_lock(fcs->lock);
    for (unsigned i = 0; i < BMT_FLIGHT_SLOTS && !fc; i++) {
        struct bmt_flight_call *c = &fcs->slot[i];
        if (atomic_load(&c->tag) != 0 || (c->released_ns && now - c->released_ns < REUSE_NS))
            continue;
        if (!c->table && !(c->table = enif_alloc(BMT_CALL_TABLE_ENTRIES * sizeof *c->table))) {
            nomem = 1;
            break;
        }
        fc = c;
        memset(fc->table, 0, BMT_CALL_TABLE_ENTRIES * sizeof *fc->table);
        atomic_store(&fc->calls, 0);
        atomic_store(&fc->slow, 0);
        atomic_store(&fc->unmeasured, 0);
        atomic_store(&fc->unmatched, 0);
        atomic_store(&fc->deep, 0);
        fc->index = index;
        fc->generation = generation;
        fc->bound_ns = bound;
        enif_snprintf(fc->function, sizeof fc->function, "%T:%T/%T", mfa[0], mfa[1], mfa[2]);
        /* A small integer (1 .. 2^59 - 1): claim numbers wrap. */
        fcs->claims = fcs->claims % ((UINT64_C(1) << 53) - 1) + 1;
        h->tag = fcs->claims << BMT_FLIGHT_SLOT_BITS | i;
        h->calls = fcs;
        atomic_fetch_add(&fcs->holders, 1);
        atomic_store_explicit(&fc->tag, h->tag, memory_order_release);
    }
    enif_mutex_unlock(fcs->lock);
    if (!fc) {
        enif_release_resource(h);
        return enif_make_tuple2(env, p->atom.error,
                                enif_make_atom(env, nomem ? "enomem" : "too_many_call_triggers"));
    }
    ERL_NIF_TERM term = enif_make_resource(env, h);
    enif_release_resource(h);
    return enif_make_tuple3(env, p->atom.ok, term, enif_make_uint64(env, h->tag));
}

ERL_NIF_TERM bmt_nif_flight_call_sweep(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    struct bmt_flight_call *fc = get_handle(p, env, argv[0]);
    ErlNifUInt64 older_ms;
    if (!fc || !enif_get_uint64(env, argv[1], &older_ms))
        return enif_make_badarg(env);
    uint64_t now = bmt_clock_ns(), swept = 0, in_calls = 0;
    for (uint32_t i = 0; i < BMT_CALL_TABLE_ENTRIES; i++) {
        struct bmt_call_entry *e = &fc->table[i];
        uint64_t k = atomic_load_explicit(&e->pid, memory_order_acquire);
        if (k == EMPTY || k == FREE)
            continue;
        in_calls++;
        ErlNifPid pid;
        /* Only a dead process's entry: it never runs again, so nobody
         * else writes the entry while it is given back. */
        if (now - e->start_ns[0] > older_ms * 1000000 &&
            enif_get_local_pid(env, (ERL_NIF_TERM)k, &pid) && !enif_is_process_alive(env, &pid) &&
            atomic_compare_exchange_strong(&e->pid, &k, FREE))
            swept++;
    }
    ERL_NIF_TERM keys[] = {enif_make_atom(env, "swept"), enif_make_atom(env, "calls"),
                           enif_make_atom(env, "slow"), enif_make_atom(env, "unmeasured"),
                           enif_make_atom(env, "unmatched"), enif_make_atom(env, "deep"),
                           enif_make_atom(env, "in_calls")};
    ERL_NIF_TERM values[] = {
        enif_make_uint64(env, swept),
        enif_make_uint64(env, atomic_load(&fc->calls)),
        enif_make_uint64(env, atomic_load(&fc->slow)),
        enif_make_uint64(env, atomic_load(&fc->unmeasured)),
        enif_make_uint64(env, atomic_load(&fc->unmatched)),
        enif_make_uint64(env, atomic_load(&fc->deep)),
        enif_make_uint64(env, in_calls - swept)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, sizeof keys / sizeof keys[0], &map);
    return map;
}
