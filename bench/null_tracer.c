/* The null erl_tracer: every enabled_* answers `trace`, every trace_* does
 * nothing and answers `ok`. It measures the floor, the VM's own cost of
 * dispatching a trace event to a NIF tracer, against which beamtrace is
 * compared in bench/run.sh; and noop/0, an empty NIF, the baseline of the
 * user probe timings. With the tracer state `discard` every enabled_*
 * answers `discard` instead (trace_status still `trace`): the floor of a
 * tracer that is loaded and listens to nothing, which beamtrace with no
 * sink listening is compared with. Benchmark-only; not part of the product.
 *
 * Atoms are made once at load, into a file-scope struct read without
 * enif_priv_data (a call of its own): the floor should cost what a tracer
 * cannot avoid, as ../shared/tools/instructions/nulltr_full.c does.
 */
#include <erl_nif.h>

struct null_atoms {
    ERL_NIF_TERM trace, ok, discard, trace_status;
};

static struct null_atoms atoms;

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
    (void)info;
    atoms.trace = enif_make_atom(env, "trace");
    atoms.ok = enif_make_atom(env, "ok");
    atoms.discard = enif_make_atom(env, "discard");
    atoms.trace_status = enif_make_atom(env, "trace_status");
    *priv = &atoms;
    return 0;
}

static int upgrade(ErlNifEnv *env, void **priv, void **old_priv, ERL_NIF_TERM info)
{
    (void)old_priv;
    return load(env, priv, info);
}

static ERL_NIF_TERM enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)env;
    return argv[1] == atoms.discard && argv[0] != atoms.trace_status ? atoms.discard : atoms.trace;
}

static ERL_NIF_TERM trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv, (void)env;
    return atoms.ok;
}

/* An empty NIF: the baseline user probes are measured against. */
static ERL_NIF_TERM noop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    return ((struct null_atoms *)enif_priv_data(env))->ok;
}

/* Same callback set as beamtrace, so the VM takes the same dispatch path. */
#define PAIR(group) {"enabled_" #group, 3, enabled, 0}, {"trace_" #group, 5, trace, 0},

static ErlNifFunc funcs[] = {
    {"enabled", 3, enabled, 0},
    {"trace", 5, trace, 0},
    {"noop", 0, noop, 0},
    PAIR(procs) PAIR(ports) PAIR(running_procs) PAIR(running_ports)
    PAIR(call) PAIR(send) PAIR(receive) PAIR(garbage_collection)
};

ERL_NIF_INIT(bmt_null_tracer, funcs, load, NULL, upgrade, NULL)
