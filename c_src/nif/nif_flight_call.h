/* The flight recorder's call-latency trigger ('Mod:Fun/Arity>15ms'),
 * decided in the tracer where the call's return is seen.
 *
 * A trigger is a slot of the library's table (nif_flight_slots.h), claimed by
 * a resource Erlang holds (the slot is given back when the resource
 * goes) and named by a small integer, its tag, which is the tracer state
 * of a meta trace pattern on Mod:Fun/Arity (beamtrace_flight sets it
 * through a tracing handle of its own). An immediate, not the resource:
 * the VM compares the meta tracer, copies it onto the process's stack
 * for every return_trace and updates its global copy on every call, and
 * with a resource term each of those walks, allocates and reference
 * counts a magic binary (about half of the trigger's cost per call).
 * So every call of that function reaches
 * enabled_call with this state, whatever the processes' flags and the
 * recording's sampling. On `call` the tracer stores the call's start
 * time in a per-process table and answers `trace` (the VM then runs the
 * pattern's match spec, which arms return_trace and exception_trace); on
 * `return_from` or `exception_from` it takes the time, computes the
 * latency, fires the session's capture when it passes the bound, and
 * answers `discard` (no term is built for the return). trace_call for the
 * call finds no session in this state and returns at once.
 *
 * Workload: the trigger function's every call and return, on any
 * scheduler; a few thousand processes inside it at once at most.
 *
 * The table: a fixed-size open-addressed array (allocated with the
 * trigger, 512 KiB), indexed by the pid's term word (a local pid is an
 * immediate). An entry is claimed by one compare-and-swap from empty or
 * free; after that only the thread running that process touches it (a
 * process runs on one thread at a time, and the VM's scheduling orders
 * its migrations), and gives it back (free) when the process's outermost
 * call of the function returns. Lookups stop at an empty entry (entries
 * are never emptied again, only freed), and look at most
 * BMT_CALL_PROBES entries: a call that finds no room is counted as
 * unmeasured. Recursion: the first BMT_CALL_LEVELS levels are timed, the
 * deeper ones counted. A slot's table is made at its first claim and
 * kept until the library's state goes; a slot given back is claimed
 * again (its table cleared) no sooner than 10 s later, so a callback that
 * read the tag just before the release is long done. What cannot be
 * guaranteed: a callback held up longer than that between its tag check
 * and its write can leave one stale entry in the next trigger's table
 * (freed by the sweep once its process is dead). Also: a process that exits
 * inside the function leaves its entry claimed; bmt_flight_call_sweep
 * (the flight controller, every minute) frees the entries of dead
 * processes; a return whose call began before the trigger existed is
 * counted as unmatched.
 */
#ifndef BMT_NIF_FLIGHT_CALL_H
#define BMT_NIF_FLIGHT_CALL_H

#include <erl_nif.h>

struct priv;

/* Opens (`flags`: create or take over) the trigger resource type into
 * p->flight_call_type. Returns 0 or -1. */
int bmt_flight_call_open_type(struct priv *p, ErlNifEnv *env, ErlNifResourceFlags flags);

/* enabled_call's answer for a tracer state that names no session: a
 * trigger's (above), or 0 when `state` is not a trigger of this library.
 * argv: enabled_call's (tag, state, tracee); `tp` the tag's tracepoint. */
ERL_NIF_TERM bmt_flight_call_enabled(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                                     int tp);

/* trace_call's, for such a state. OTP 25 asks a meta tracer module
 * whether it wants a call (and a return) through trace_call with only
 * (tag, state, tracee) given, the rest of argv unset: this answers as
 * enabled_call would, reading nothing past argv[2]; the trace_call that
 * follows a `trace' answer (the VM's, with the call's term) is a no-op.
 * 0 when `state` is not a trigger. */
ERL_NIF_TERM bmt_flight_call_trace(struct priv *p, ErlNifEnv *env, const ERL_NIF_TERM argv[],
                                   int tp);

/* enabled(trace_status, State): trace while a trigger's session is known,
 * remove after; 0 when `state` is not a trigger. */
ERL_NIF_TERM bmt_flight_call_status(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM state);

/* flight_call_trigger_nif(Session, {M, F, A}, BoundNs) -> {ok, Trigger,
 * State} (Trigger: the resource that holds the slot; State: the tracer
 * state for the pattern, a small integer) | {error, not_running |
 * not_flight_recorder | too_many_call_triggers | enomem}. */
ERL_NIF_TERM bmt_nif_flight_call_trigger(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* flight_call_sweep_nif(Trigger, OlderThanMs) -> #{swept, calls, slow,
 * unmeasured, unmatched, deep, in_calls}: frees the entries of dead
 * processes whose call began more than OlderThanMs ago; the figures. */
ERL_NIF_TERM bmt_nif_flight_call_sweep(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
