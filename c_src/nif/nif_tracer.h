/* The erl_tracer callbacks (nif_tracer.c), declared from their table,
 * tracer_callbacks.def: enabled_<flag>/3 decides, trace_<flag>/5 records. */
#ifndef BMT_NIF_TRACER_H
#define BMT_NIF_TRACER_H

#include <erl_nif.h>

#define X(name, arity)                                                                  \
    ERL_NIF_TERM bmt_nif_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);    \
    ERL_NIF_TERM bmt_shared_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
#include "tracer_callbacks.def"
#undef X

#endif
