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

/* Learns a handle term's header word from handle term `term` (made in
 * `env`) and a resource made for the purpose, proving what
 * bmt_handle_identity assumes: a boxed term whose next word is an aligned
 * address, kept by a copy into another env, and different for another
 * resource. Else ref_header stays 0 (no identity: every handle asks the
 * VM). Not at load, where OTP does not allow making resources: at the
 * first handle, h->lock held; published with one release store. */
static void learn_layout(struct bmt_handles *h, ERL_NIF_TERM term)
{
    if (sizeof(ERL_NIF_TERM) != 8 || h->layout_learnt)
        return;
    h->layout_learnt = 1;
    struct session_handle *b = enif_alloc_resource(h->type, sizeof *b);
    ErlNifEnv *other = enif_alloc_env();
    if (b && other) {
        memset(b, 0, sizeof *b);
        ERL_NIF_TERM tb = enif_make_resource(other, b);
        ERL_NIF_TERM copy = enif_make_copy(other, term);
        const ERL_NIF_TERM *wa = (const ERL_NIF_TERM *)(term - 2);
        const ERL_NIF_TERM *wb = (const ERL_NIF_TERM *)(tb - 2);
        const ERL_NIF_TERM *wc = (const ERL_NIF_TERM *)(copy - 2);
        if ((term & 3) == 2 && (tb & 3) == 2 && (copy & 3) == 2 && copy != term &&
            wa[0] == wb[0] && wa[0] == wc[0] && wa[1] == wc[1] && wa[1] != wb[1] &&
            (wa[1] & 7) == 0 && (wb[1] & 7) == 0 && wa[1] != 0)
            __atomic_store_n(&h->ref_header, wa[0], __ATOMIC_RELEASE);
    }
    if (other)
        enif_free_env(other);
    if (b)
        enif_release_resource(b);
}

int bmt_handles_open_type(struct bmt_handles *h, ErlNifEnv *env, ErlNifResourceFlags flags)
{
    h->type = enif_open_resource_type(env, NULL, "beamtrace_session", NULL, flags, NULL);
    return h->type ? 0 : -1;
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
    int keep = 1;
    if (!sh || sh->generation != generation) {
        /* A caller that read (index, generation) before that session was
         * collected gets a handle naming it (it names nothing now), not
         * kept: the kept one stays the running session's, and the threads'
         * caches only ever hold handles the table keeps alive. Forgetting
         * takes this lock after the collection, so a known session here is
         * forgotten after this. */
        keep = bmt_rec_known(&h->rec->sessions[index], generation);
        struct session_handle *made = enif_alloc_resource(h->type, sizeof *made);
        if (made) {
            made->instance = h->instance;
            made->index = index;
            made->generation = generation;
        }
        if (keep) {
            if (sh)
                enif_release_resource(sh);
            h->kept[index] = made;
            handles_changed(h);
        }
        sh = made;
    }
    ERL_NIF_TERM term = sh ? enif_make_resource(env, sh) : h->undefined;
    if (sh && !keep)
        enif_release_resource(sh); /* the term holds it now */
    if (sh && keep)
        learn_layout(h, term);
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
