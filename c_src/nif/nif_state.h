/* The NIF library's state: the atoms, the recorder, the sinks, the clock
 * and the per-thread contexts. Lives in the library's priv_data (one per
 * load, handed over on upgrade and shared with the dyntrace library);
 * never in globals. nif_state.c makes and frees it.
 *
 * Threads: the tracer callbacks run on any scheduler thread (normal or
 * dirty) at once and only read this state (each writes its own thread
 * context); start/stop/info/snapshot run on dirty I/O schedulers and the
 * recorder serialises them; each running session has a consumer thread
 * (recorder/consumer.c) that may call back into bmt_on_stopped (nif_control.c).
 */
#ifndef BMT_NIF_STATE_H
#define BMT_NIF_STATE_H

#include "core/clock.h"
#include "nif_session.h"
#include "nif_thread.h"
#include "recorder/recorder.h"
#include "sinks/sinks.h"

#include <erl_nif.h>
#include <pthread.h>
#include <stdatomic.h>

/* Atoms made once at load. Tag atoms are the erl_tracer trace tags.
 * X(name) makes atom `name` in field `name`; Y(field, "text") where the text
 * is a C keyword. */
#define BMT_ATOMS(X, Y)                                                      \
    X(ok) X(error) Y(true_, "true") Y(false_, "false") X(undefined) X(badopt) \
    X(trace) X(discard) X(remove) X(trace_status) X(extra)                   \
    X(spawn) X(link) X(unlink) X(getting_linked) X(getting_unlinked)         \
    X(exit) Y(register_, "register") X(unregister) X(open) X(closed)         \
    X(in) X(out) X(in_exiting) X(out_exiting) X(out_exited)                  \
    X(call) X(return_from) X(return_to) X(exception_from)                    \
    X(gc_minor_start) X(gc_minor_end) X(gc_major_start) X(gc_major_end)      \
    X(wordsize) X(heap_block_size) X(old_heap_block_size)                    \
    X(dir) X(events) X(mode) X(overwrite) X(buffer_size) X(subbuffers)       \
    X(message_length) X(size_only) Y(default_, "default") X(not_running)     \
    X(too_many_sessions) X(discarded) X(overwritten) X(written_bytes) X(state) \
    X(running) X(stopped) X(reason) X(infinity)                              \
    X(file_mode) X(max_bytes) X(max_events) X(duration) X(max_rate)          \
    X(tracefile_size) X(tracefile_count) X(flush_interval) X(notify)         \
    X(node) X(wakeups) X(not_flight_recorder) X(beamtrace)                   \
    X(erlang) X(hibernate) X(port_control) X(command) X(close) X(connect)    \
    X(recorder) X(lttng) X(usdt) X(unavailable) X(s1) X(i4s4) X(n)           \
    X(term) X(send) X(send_to_non_existing_process) X(match_spec_result)    \
    X(links) X(results) X(args) X(clock) X(tsc) X(clock_gettime) X(seq_trace) Y(receive_, "receive") X(print) \
    X(relayd) X(live) X(relayd_session) X(relayd_buffer) X(url) X(path) \
    X(lost) X(unconfirmed) X(queued_bytes) X(connections) X(disconnections) \
    X(offset_ns) X(env) \
    /* the flight recorder (nif_flight.c) */                                 \
    X(flight) X(window) X(after) X(max_captures) X(triggers) X(none)         \
    X(started) X(extended) X(skipped) X(captures) X(fired) X(absorbed)       \
    X(skipped_rate) X(skipped_long) X(skipped_bytes) X(lost_packets)         \
    X(capture_bytes) X(capture_error) X(probe)                               \
    X(long_gc) X(long_schedule) X(large_heap) X(busy_port) X(busy_dist_port) \
    X(long_message_queue) X(message_queue)                                   \
    /* sampling (nif_sample.c) */                                            \
    X(sample) X(on_max_rate) X(stop) X(sampling) X(ratios) X(reactions)      \
    X(garbage_collection) X(procs) X(ports) \
    X(after_stop) X(schedulers)

struct bmt_atoms {
#define X(name) ERL_NIF_TERM name;
#define Y(field, text) ERL_NIF_TERM field;
    BMT_ATOMS(X, Y)
#undef X
#undef Y
};

#define BMT_PRIV_MAGIC UINT64_C(0x62656d7472616365) /* "bemtrace" */

/* Layout of the shared state: a library built with another layout must not
 * take this state over (upgrade, dyntrace shim). The sizes catch most
 * changes; bump the version for the rest (4: the thread contexts' cached
 * decision words; 5: their 128-byte MFA entries and clock slack; 6: the
 * sessions' live word, the clock's fast_ticks and the thread contexts'
 * last tracee; 7: the thread contexts' slot offset, MFA entries of 128
 * bytes indeed, with the arity's word, and the slots' frozen word's two
 * bits; 9: the thread contexts' handle cache (identity, session, words)
 * and decided identity, the handles' learnt header). */
#define BMT_PRIV_LAYOUT                                                              \
    ((UINT64_C(9) << 48) + (sizeof(struct priv) << 24) + (sizeof(struct bmt_session) << 8) + \
     sizeof(struct bmt_atoms) / 8)

struct priv {
    uint64_t magic;             /* BMT_PRIV_MAGIC while alive */
    uint64_t layout;            /* BMT_PRIV_LAYOUT of the library that made it */
    uint64_t instance;          /* random: tells this state from any earlier one */
    struct bmt_atoms atom;
    ERL_NIF_TERM nil;           /* the word of [], a constant: compared, never called for */
    const struct bmt_lttng_provider *lttng; /* NULL when LTTng-UST is absent */
    /* Each tracepoint's enabled state in lttng-ust (the provider's
     * state[tp]), or a constant 0 when LTTng is absent: the tracer's check
     * is two loads, with no test for the provider (nif_dispatch.h). */
    const int *lttng_enabled[BMT_TP_COUNT];
    char lttng_why[160];        /* why it is absent */
    struct bmt_clock clock;
    int refs;                   /* load + upgrades not yet unloaded */
    const void *holder_code;    /* in the copy that last took it (nif_pin.h) */
    struct bmt_threads threads; /* each thread's context */
    struct bmt_handles handles; /* the session handles given to Erlang */
    ErlNifResourceType *flight_call_type; /* call-latency triggers (nif_flight_call.c) */
    struct bmt_flight_calls *flight_calls; /* their slots (nif_flight_slots.h) */
    struct bmt_recorder rec;
};

/* This copy of the library's state: what enif_priv_data gives every NIF
 * of the module, set by its load and upgrade (nif_main.c) before the VM
 * can call any of them, and left as it is at unload (the module's NIFs
 * are gone then). The tracer callbacks read it instead of calling
 * enif_priv_data: three calls per traced event. Each copy of the library
 * has its own. Atomic (relaxed: the same machine code) because an upgrade
 * to the same copy stores it, with the same value, while other schedulers
 * may be reading it. */
extern struct priv *_Atomic bmt_copy_priv __attribute__((visibility("hidden")));

/* Makes the state at load: atoms in `env`, the thread slots, the recorder
 * (which calls `notify` when a session stops by itself) and the sinks;
 * load_info is {PrivDir, Threads} (the priv directory holds the optional
 * sink libraries; Threads is how many thread slots to keep). Registers the
 * state for bmt_priv_retain. Returns NULL when something could not be made
 * (nothing is left behind). */
struct priv *bmt_priv_new(ErlNifEnv *env, ERL_NIF_TERM load_info, bmt_rec_notify_fn *notify);

/* The live state with instance id `instance`, counted as one more holder;
 * NULL when no live state has that id (the dyntrace library's load). */
void *bmt_priv_retain(uint64_t instance);

/* Drops one holder of `p` (a load, an upgrade or the dyntrace library); the
 * last one stops every session, draining it to disk, and frees the state. */
void bmt_priv_release(void *p);

#endif
