/* The trace clock as Erlang sees it (nif_clock.c); the clock itself is
 * core/clock.h. */
#ifndef BMT_NIF_CLOCK_H
#define BMT_NIF_CLOCK_H

#include <erl_nif.h>

/* clock_ns() -> integer(): CLOCK_MONOTONIC now, ns: the clock of the
 * trace's timestamps (for estimating clock offsets between nodes). */
ERL_NIF_TERM bmt_nif_clock_ns(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
