/* Events fired from Erlang rather than by the VM's tracer (nif_user.c):
 * the user probes and emit_nif/3, beamtrace's own derived events. */
#ifndef BMT_NIF_USER_H
#define BMT_NIF_USER_H

#include <erl_nif.h>

/* Labels of user_trace_n: 0..1023. */
#define BMT_USER_LABELS 1024

ERL_NIF_TERM bmt_nif_user_probe_wanted(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_s1(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_i4s4(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_n(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_emit(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
