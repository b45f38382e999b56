/* Session control NIFs (nif_control.c): start, stop, info, sessions,
 * snapshot and sinks, and the recorder's notify callback. They run on dirty
 * I/O schedulers (sinks on a normal one): never on the tracer's path.
 */
#ifndef BMT_NIF_CONTROL_H
#define BMT_NIF_CONTROL_H

#include "recorder/recorder.h"

#include <erl_nif.h>

ERL_NIF_TERM bmt_nif_start(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_sessions(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_snapshot(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_sinks(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* The recorder's notify callback (bmt_rec_notify_fn, `ctx` the state):
 * tells a session's `notify` process {beamtrace_stopped, Session, Reason}.
 * Runs on the session's consumer thread. */
void bmt_on_stopped(void *ctx, int index, uint64_t generation, enum bmt_stop_reason reason);

#endif
