/* Session handles (contract in nif_session.h). */
#include "nif_session.h"

#include <string.h>

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

/* Learns a handle term's header word from two resources of this type,
 * proving what bmt_handle_identity assumes: a boxed term whose next word
 * is an aligned address, kept by a copy into another env, and different
 * for another resource. Anything else leaves ref_header 0 (no identity:
 * every handle asks the VM). */
static void learn_layout(struct bmt_handles *h, ErlNifEnv *env)
{
    h->ref_header = 0;
    if (sizeof(ERL_NIF_TERM) != 8)
        return;
    struct session_handle *a = enif_alloc_resource(h->type, sizeof *a);
    struct session_handle *b = enif_alloc_resource(h->type, sizeof *b);
    ErlNifEnv *other = enif_alloc_env();
    if (a && b && other) {
        memset(a, 0, sizeof *a);
        memset(b, 0, sizeof *b);
        ERL_NIF_TERM ta = enif_make_resource(env, a), tb = enif_make_resource(env, b);
        ERL_NIF_TERM copy = enif_make_copy(other, ta);
        const ERL_NIF_TERM *wa = (const ERL_NIF_TERM *)(ta - 2);
        const ERL_NIF_TERM *wb = (const ERL_NIF_TERM *)(tb - 2);
        const ERL_NIF_TERM *wc = (const ERL_NIF_TERM *)(copy - 2);
        if ((ta & 3) == 2 && (tb & 3) == 2 && (copy & 3) == 2 && copy != ta &&
            wa[0] == wb[0] && wa[0] == wc[0] && wa[1] == wc[1] && wa[1] != wb[1] &&
            (wa[1] & 7) == 0 && (wb[1] & 7) == 0 && wa[1] != 0)
            h->ref_header = wa[0];
    }
    if (other)
        enif_free_env(other);
    if (a)
        enif_release_resource(a);
    if (b)
        enif_release_resource(b);
}

int bmt_handles_open_type(struct bmt_handles *h, ErlNifEnv *env, ErlNifResourceFlags flags)
{
    h->type = enif_open_resource_type(env, NULL, "beamtrace_session", NULL, flags, NULL);
    if (!h->type)
        return -1;
    learn_layout(h, env);
    return 0;
}

/* A handle made or let go: the threads' handle caches (nif_dispatch.h)
 * start over, so none keeps the identity of a resource that may die. */
static void handles_changed(struct bmt_handles *h)
{
    atomic_fetch_add(&h->rec->epoch, 1);
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
        handles_changed(h);
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
        h->kept[index] = NULL;
        handles_changed(h);
        enif_release_resource(sh);
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
