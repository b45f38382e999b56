/* What beamtrace's NIF library offers its sibling, the `dyntrace`
 * compatibility library (c_src/compat/dyntrace_nif.c): the erl_tracer
 * callbacks and a way to share beamtrace's state, so `{tracer, dyntrace, []}`
 * feeds the same sessions and sinks as `{tracer, beamtrace, []}`.
 *
 * The sibling finds `bmt_shared_api_v1` with dlsym in the already loaded
 * beamtrace_nif.so (RTLD_NOLOAD, which also pins it while dyntrace is
 * loaded), and receives beamtrace's state from beamtrace:'$shared_state'/0,
 * checked by `magic`. retain/release count it among the state's holders, so
 * the state outlives whichever module is unloaded first. Both run inside NIF
 * load/unload, which the VM serialises with all code loading.
 */
#ifndef BMT_NIF_SHARED_H
#define BMT_NIF_SHARED_H

#include <erl_nif.h>
#include <stdint.h>

#define BMT_SHARED_ABI 1
#define BMT_PRIV_MAGIC UINT64_C(0x62656d7472616365) /* "bemtrace" */

typedef ERL_NIF_TERM bmt_nif_fn(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

struct bmt_shared_api {
    uint32_t abi;           /* BMT_SHARED_ABI */
    uint32_t callback_count;
    /* Returns 0 and counts a new holder when `state` is beamtrace's live
     * state; -1 otherwise. */
    int (*retain)(void *state);
    /* Drops a holder; the last one stops every session and frees the state. */
    void (*release)(void *state);
    /* The erl_tracer callbacks, in BMT_TRACER_NIFS order. */
    struct {
        const char *name;
        unsigned arity;
        bmt_nif_fn *fn;
    } callbacks[18];
};

#endif
