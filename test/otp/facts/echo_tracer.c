/* An erl_tracer that forwards every trace/5 call, unchanged, to the pid
 * given as tracer state: {trace5, Tag, Tracee, TraceTerm, Opts}. It shows
 * what a NIF tracer receives on the running OTP (test/otp/facts/). enabled/3
 * answers `trace`, or `remove` for trace_status once the pid is dead. */
#include <erl_nif.h>

static ERL_NIF_TERM atom_trace, atom_remove, atom_ok, atom_trace5, atom_trace_status;

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
    (void)priv, (void)info;
    atom_trace = enif_make_atom(env, "trace");
    atom_remove = enif_make_atom(env, "remove");
    atom_ok = enif_make_atom(env, "ok");
    atom_trace5 = enif_make_atom(env, "trace5");
    atom_trace_status = enif_make_atom(env, "trace_status");
    return 0;
}

static ERL_NIF_TERM enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    ErlNifPid to;
    (void)argc;
    if (!enif_get_local_pid(env, argv[1], &to) || !enif_is_process_alive(env, &to))
        return atom_remove;
    (void)atom_trace_status;
    return atom_trace;
}

static ERL_NIF_TERM trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    ErlNifPid to;
    (void)argc;
    if (enif_get_local_pid(env, argv[1], &to))
        enif_send(env, &to, NULL, enif_make_tuple5(env, atom_trace5, argv[0], argv[2], argv[3], argv[4]));
    return atom_ok;
}

static ErlNifFunc funcs[] = {{"enabled", 3, enabled, 0}, {"trace", 5, trace, 0}};

ERL_NIF_INIT(bmt_echo_tracer, funcs, load, NULL, NULL, NULL)
