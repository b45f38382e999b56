/* The state handover to the dyntrace compatibility library (contract in
 * nif_shared.h): the exported table, and the instance id for Erlang. The
 * registry of live states that retain reads is nif_state.c's.
 */
#include "nif_shared.h"
#include "nif_state.h"
#include "nif_tracer.h"

__attribute__((visibility("default"))) extern const struct bmt_shared_api bmt_shared_api_v1;
const struct bmt_shared_api bmt_shared_api_v1 = {
    BMT_SHARED_ABI,
    18,
    bmt_priv_retain,
    bmt_priv_release,
    {
#define X(name, arity) {#name, arity, bmt_shared_##name},
#include "tracer_callbacks.def"
#undef X
    },
};

ERL_NIF_TERM bmt_nif_shared_state(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    const struct priv *p = enif_priv_data(env);
    return enif_make_uint64(env, p->instance);
}
