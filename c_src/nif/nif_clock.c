/* The trace clock as Erlang sees it (contract in nif_clock.h). */
#include "nif_clock.h"

#include "core/clock.h"

ERL_NIF_TERM bmt_nif_clock_ns(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    return enif_make_uint64(env, bmt_clock_ns());
}
