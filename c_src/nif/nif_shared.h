/* What beamtrace's NIF library offers its sibling, the `dyntrace`
 * compatibility library (c_src/compat/dyntrace_nif.c): the erl_tracer
 * callbacks and a way to share beamtrace's state, so `{tracer, dyntrace, []}`
 * feeds the same sessions and sinks as `{tracer, beamtrace, []}`.
 *
 * The sibling finds `bmt_shared_api_v1` with dlsym in the already loaded
 * beamtrace_nif.so (RTLD_NOLOAD, which also pins it while dyntrace is
 * loaded). beamtrace:'$shared_state'/0 gives Erlang only the state's random
 * instance id, never an address: `retain` turns an id into the state while
 * that state is alive, and counts the sibling among its holders, so the
 * state outlives whichever module is unloaded first. retain and release run
 * inside NIF load/unload, which the VM serialises with all code loading.
 */
#ifndef BMT_NIF_SHARED_H
#define BMT_NIF_SHARED_H

#include <erl_nif.h>
#include <stdint.h>

#define BMT_SHARED_ABI 2

typedef ERL_NIF_TERM bmt_nif_fn(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

struct bmt_shared_api {
    uint32_t abi;           /* BMT_SHARED_ABI */
    uint32_t callback_count;
    /* The live state with instance id `instance`, counted as one more
     * holder; NULL when no live state has that id. */
    void *(*retain)(uint64_t instance);
    /* Drops a holder; the last one stops every session and frees the state. */
    void (*release)(void *state);
    /* The erl_tracer callbacks, in tracer_callbacks.def order. */
    struct {
        const char *name;
        unsigned arity;
        bmt_nif_fn *fn;
    } callbacks[18];
};

/* '$shared_state'() -> integer(): this state's instance id. Not an API. */
ERL_NIF_TERM bmt_nif_shared_state(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
