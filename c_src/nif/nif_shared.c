/* The state handover to the dyntrace compatibility library (contract in
 * nif_shared.h).
 *
 * Live states are kept in a small process-wide registry: the sibling
 * library asks for a state by its instance id, and an id is all Erlang
 * ever sees, so no caller can hand a forged address to native code.
 */
#include "nif_priv.h"
#include "nif_shared.h"

#include <pthread.h>

#define MAX_STATES 8

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct priv *registry[MAX_STATES];

int bmt_shared_remember(struct priv *p)
{
    int rc = -1;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_STATES; i++) {
        if (!registry[i]) {
            registry[i] = p;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

void bmt_shared_forget(struct priv *p)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_STATES; i++)
        if (registry[i] == p)
            registry[i] = NULL;
    pthread_mutex_unlock(&registry_lock);
}

static void *retain(uint64_t instance)
{
    struct priv *found = NULL;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_STATES; i++) {
        struct priv *p = registry[i];
        if (p && p->instance == instance && p->magic == BMT_PRIV_MAGIC &&
            p->layout == BMT_PRIV_LAYOUT) {
            p->refs++;
            found = p;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

__attribute__((visibility("default"))) extern const struct bmt_shared_api bmt_shared_api_v1;
const struct bmt_shared_api bmt_shared_api_v1 = {
    BMT_SHARED_ABI,
    18,
    retain,
    bmt_priv_release,
    {
#define X(name, arity) {#name, arity, bmt_nif_##name},
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
