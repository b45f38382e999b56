/* Two NIFs that switch callgrind's collection on and off, so that only a
 * workload's window is counted (the process runs under
 * `valgrind --tool=callgrind --collect-atstart=no`; outside valgrind the
 * client requests do nothing). Benchmark-only. */
#include <erl_nif.h>
#include <valgrind/callgrind.h>

static ERL_NIF_TERM on(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    CALLGRIND_TOGGLE_COLLECT;
    return enif_make_atom(env, "ok");
}

static ERL_NIF_TERM off(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    CALLGRIND_TOGGLE_COLLECT;
    return enif_make_atom(env, "ok");
}

static ErlNifFunc funcs[] = {{"on", 0, on, 0}, {"off", 0, off, 0}};

ERL_NIF_INIT(bmt_cgctl, funcs, NULL, NULL, NULL, NULL)
