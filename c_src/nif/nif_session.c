/* Session handles (contract in nif_session.h). */
#include "nif_session.h"

int bmt_handles_init(struct bmt_handles *h, uint64_t instance, ERL_NIF_TERM nil,
                     ERL_NIF_TERM undefined, struct bmt_recorder *rec)
{
    h->instance = instance;
    h->nil = nil;
    h->undefined = undefined;
    h->rec = rec;
    h->lock = enif_mutex_create("beamtrace_handles");
    return h->lock ? 0 : -1;
}

void bmt_handles_free(struct bmt_handles *h)
{
    for (int i = 0; i < BMT_MAX_SESSIONS; i++)
        if (h->kept[i])
            enif_release_resource(h->kept[i]);
    if (h->lock)
        enif_mutex_destroy(h->lock);
    h->lock = NULL;
}

int bmt_handles_open_type(struct bmt_handles *h, ErlNifEnv *env, ErlNifResourceFlags flags)
{
    h->type = enif_open_resource_type(env, NULL, "beamtrace_session", NULL, flags, NULL);
    return h->type ? 0 : -1;
}

struct bmt_session *bmt_resolve_handle(const struct bmt_handles *h, ErlNifEnv *env,
                                       ERL_NIF_TERM state, uint64_t *generation)
{
    struct session_handle *sh;
    /* A handle from an earlier load of the library names nothing here. */
    if (enif_get_resource(env, state, h->type, (void **)&sh) && sh->instance == h->instance) {
        *generation = sh->generation;
        return &h->rec->sessions[sh->index];
    }
    return NULL;
}

ERL_NIF_TERM bmt_make_handle(struct bmt_handles *h, ErlNifEnv *env, int index,
                             uint64_t generation)
{
    enif_mutex_lock(h->lock);
    struct session_handle *sh = h->kept[index];
    if (!sh || sh->generation != generation) {
        if (sh)
            enif_release_resource(sh);
        sh = enif_alloc_resource(h->type, sizeof *sh);
        if (sh) {
            sh->instance = h->instance;
            sh->index = index;
            sh->generation = generation;
        }
        h->kept[index] = sh;
    }
    ERL_NIF_TERM term = sh ? enif_make_resource(env, sh) : h->undefined;
    enif_mutex_unlock(h->lock);
    return term;
}

void bmt_forget_handle(struct bmt_handles *h, int index, uint64_t generation)
{
    enif_mutex_lock(h->lock);
    struct session_handle *sh = h->kept[index];
    if (sh && sh->generation == generation) {
        enif_release_resource(sh);
        h->kept[index] = NULL;
    }
    enif_mutex_unlock(h->lock);
}

int bmt_get_handle(const struct bmt_handles *h, ErlNifEnv *env, ERL_NIF_TERM term, int *index,
                   uint64_t *generation)
{
    if (enif_is_empty_list(env, term)) {
        uint64_t packed = atomic_load(&h->rec->default_session);
        if (!packed)
            return 0;
        *index = (int)(packed & 0xff) - 1;
        *generation = packed >> 8;
        return 1;
    }
    struct session_handle *sh;
    if (!enif_get_resource(env, term, h->type, (void **)&sh) || sh->instance != h->instance)
        return 0;
    *index = sh->index;
    *generation = sh->generation;
    return 1;
}
