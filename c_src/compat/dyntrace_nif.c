/* The NIF library of the `dyntrace` compatibility module: OTP's tracer
 * module name backed by beamtrace, so `{tracer, dyntrace, []}` and
 * dyntrace:p/N light up on a stock VM. Loaded by beamtrace:install_dyntrace/0.
 *
 * The VM only calls NIFs of the tracer module, so each erl_tracer callback
 * here is a trampoline into beamtrace's own (nif_shared.h), and this
 * library's priv_data is beamtrace's state itself: the callbacks'
 * enif_priv_data() finds the same sessions, sinks and thread contexts.
 * The callback pointers are set once at load and never change after.
 */
#include "nif/nif_shared.h"

#include <dlfcn.h>
#include <string.h>

static const struct bmt_shared_api *api;

#define X(name, arity)                                                                  \
    static bmt_nif_fn *cb_##name;                                                       \
    static ERL_NIF_TERM tramp_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) \
    {                                                                                   \
        return cb_##name(env, argc, argv);                                              \
    }
#include "nif/tracer_callbacks.def"
#undef X

static ErlNifFunc nif_funcs[] = {
#define X(name, arity) {#name, arity, tramp_##name, 0},
#include "nif/tracer_callbacks.def"
#undef X
};

/* Takes every callback from beamtrace's table; 0 when all were found. */
static int bind_callbacks(const struct bmt_shared_api *table)
{
    int missing = 0;
#define X(fn_name, fn_arity)                                                    \
    cb_##fn_name = NULL;                                                        \
    for (unsigned i = 0; i < table->callback_count; i++)                        \
        if (strcmp(table->callbacks[i].name, #fn_name) == 0 &&                  \
            table->callbacks[i].arity == fn_arity)                              \
            cb_##fn_name = table->callbacks[i].fn;                              \
    missing |= cb_##fn_name == NULL;
#include "nif/tracer_callbacks.def"
#undef X
    return missing;
}

/* load_info: {BeamtraceLibraryPath, Instance :: integer()}, the instance
 * id beamtrace:'$shared_state'/0 gives. */
static int load(ErlNifEnv *env, void **priv_data, ERL_NIF_TERM load_info)
{
    const ERL_NIF_TERM *info;
    int arity;
    ErlNifBinary path_bin;
    ErlNifUInt64 instance;
    char path[4096];
    void *state;
    if (!enif_get_tuple(env, load_info, &arity, &info) || arity != 2 ||
        !enif_inspect_iolist_as_binary(env, info[0], &path_bin) || path_bin.size >= sizeof path ||
        !enif_get_uint64(env, info[1], &instance))
        return 1;
    memcpy(path, path_bin.data, path_bin.size);
    path[path_bin.size] = '\0';
    /* RTLD_NOLOAD: only the copy the VM already loaded for beamtrace. The
     * handle is never closed: it keeps that code mapped for as long as this
     * library may call into it. */
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return 1;
    const struct bmt_shared_api *table = dlsym(lib, "bmt_shared_api_v1");
    if (!table || table->abi != BMT_SHARED_ABI || bind_callbacks(table) != 0 ||
        (state = table->retain(instance)) == NULL)
        return 1;
    api = table;
    *priv_data = state;
    return 0;
}

/* The old code may be OTP's own dyntrace with its own NIF library (its
 * priv_data is not ours), or an earlier copy of this one: either way this
 * instance takes beamtrace's state from load_info like a fresh load, and
 * each unload releases what its load or upgrade retained. */
static int upgrade(ErlNifEnv *env, void **priv_data, void **old_priv_data, ERL_NIF_TERM load_info)
{
    (void)old_priv_data;
    return load(env, priv_data, load_info);
}

static void unload(ErlNifEnv *env, void *priv_data)
{
    (void)env;
    api->release(priv_data);
}

ERL_NIF_INIT(dyntrace, nif_funcs, load, NULL, upgrade, unload)
