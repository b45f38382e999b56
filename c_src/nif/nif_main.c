/* The NIF library of module `beamtrace`: load, upgrade, unload, and the
 * function table (erl_tracer callbacks plus session control).
 *
 * Loading creates priv_data (nif_state.c: atoms, the session-handle
 * resource type, the recorder, the per-thread contexts). A code upgrade
 * that loads this library again hands the same priv_data over (refs counts
 * the holders), so sessions keep recording across `l(beamtrace)`; the last
 * unload stops every session, draining it to disk, before freeing
 * anything. A VM exit finishes every session too (the recorder's exit
 * hook).
 */
#include "nif_clock.h"
#include "nif_control.h"
#include "nif_flight.h"
#include "nif_flight_call.h"
#include "nif_pin.h"
#include "nif_shared.h"
#include "nif_state.h"
#include "nif_term_peek.h"
#include "nif_tracer.h"
#include "nif_user.h"

struct priv *_Atomic bmt_copy_priv;

static int load(ErlNifEnv *env, void **priv_data, ERL_NIF_TERM load_info)
{
    struct priv *p = bmt_priv_new(env, load_info, bmt_on_stopped);
    if (!p)
        return 1;
    bmt_peek_init(env);
    if (bmt_flight_call_open_type(p, env, ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER) != 0) {
        bmt_priv_release(p);
        return 1;
    }
    p->holder_code = bmt_pin_here();
    *priv_data = p;
    atomic_store_explicit(&bmt_copy_priv, p, memory_order_relaxed);
    return 0;
}

static int upgrade(ErlNifEnv *env, void **priv_data, void **old_priv_data, ERL_NIF_TERM load_info)
{
    (void)load_info;
    struct priv *p = *old_priv_data;
    /* Another build's state has another layout: taking it over would read
     * every field at the wrong place. Stop the sessions and load afresh. */
    if (!p || p->magic != BMT_PRIV_MAGIC || p->layout != BMT_PRIV_LAYOUT)
        return 1;
    /* The sessions' threads run the code of the copy that held the state
     * until now: it stays mapped when the VM closes it. */
    if (bmt_pin_other_copy(p->holder_code) != 0)
        return 1;
    if (bmt_handles_open_type(&p->handles, env, ERL_NIF_RT_TAKEOVER) != 0 ||
        bmt_flight_call_open_type(p, env, ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER) != 0)
        return 1;
    bmt_peek_init(env);
    p->refs++;
    p->holder_code = bmt_pin_here();
    *priv_data = p;
    atomic_store_explicit(&bmt_copy_priv, p, memory_order_relaxed);
    return 0;
}

static void unload(ErlNifEnv *env, void *priv_data)
{
    (void)env;
    bmt_priv_release(priv_data);
}

static ErlNifFunc nif_funcs[] = {
#define X(name, arity) {#name, arity, bmt_nif_##name, 0},
#include "tracer_callbacks.def"
#undef X
    {"start_nif", 2, bmt_nif_start, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"stop_nif", 1, bmt_nif_stop, ERL_NIF_DIRTY_JOB_IO_BOUND},
    /* Dirty: they take the recorder's control lock, which start and stop
     * hold across disk I/O. */
    {"info_nif", 1, bmt_nif_info, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"sessions_nif", 0, bmt_nif_sessions, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"snapshot_nif", 2, bmt_nif_snapshot, ERL_NIF_DIRTY_JOB_IO_BOUND},
    /* Dirty: the first call calibrates the clock (about 30 ms). */
    {"sinks_nif", 0, bmt_nif_sinks, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"$shared_state", 0, bmt_nif_shared_state, 0},
    {"user_probe_wanted", 2, bmt_nif_user_probe_wanted, 0},
    {"user_trace_s1_nif", 2, bmt_nif_user_trace_s1, 0},
    {"user_trace_i4s4_nif", 9, bmt_nif_user_trace_i4s4, 0},
    {"user_trace_n_nif", 10, bmt_nif_user_trace_n, 0},
    {"emit_nif", 3, bmt_nif_emit, 0},
    {"clock_ns", 0, bmt_nif_clock_ns, 0},
    /* The flight recorder (nif_flight.c). */
    {"flight_offer_nif", 5, bmt_nif_flight_offer, 0},
    {"trigger_nif", 1, bmt_nif_trigger, 0},
    {"flight_info_nif", 1, bmt_nif_flight_info, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"flight_call_trigger_nif", 3, bmt_nif_flight_call_trigger, 0},
    {"flight_call_sweep_nif", 2, bmt_nif_flight_call_sweep, ERL_NIF_DIRTY_JOB_CPU_BOUND},
};

ERL_NIF_INIT(beamtrace, nif_funcs, load, NULL, upgrade, unload)
