/* Session handles: the NIF resource `{tracer, beamtrace, Session}` and
 * beamtrace:start/1 hand to Erlang, and their resolution to a recorder
 * session.
 *
 * A handle names (instance, index, generation), so a stale handle, or a
 * tracer state naming a stopped session, is recognised without any lock,
 * and a handle from an earlier load of the library names nothing. The
 * tracer resolves its state on every event (inline below, [] without a
 * call; a handle through its thread's cache, nif_dispatch.h); making and
 * forgetting handles (nif_session.c) is control work, under the table's
 * lock, and moves the recorder's epoch, which empties those caches.
 *
 * A handle's identity: a resource term is a magic reference, whose words
 * are a header and the address of the resource's magic binary, the same in
 * every copy of the term (the VM copies a tracer state into the traced
 * process's heap when a match spec runs). So the words say which resource
 * a term is without asking the VM, while that resource lives: the caches
 * keep only handles of known sessions, which the table keeps alive until
 * it forgets them, moving the epoch. That layout is OTP's, not API: it is
 * learnt and proven at the first handle made (a copy keeps both words,
 * another resource differs), and the caches' first BMT_PEEK_CHECKS answers
 * are compared with enif_get_resource's (nif_term_peek.h, BMT_PEEK_HANDLE).
 */
#ifndef BMT_NIF_SESSION_H
#define BMT_NIF_SESSION_H

#include "recorder/recorder.h"

#include <erl_nif.h>

/* The resource handed to Erlang as a session handle. */
struct session_handle {
    uint64_t instance;          /* the state's instance id when it was made */
    int index;
    uint64_t generation;
};

/* The handles of one state: part of the library's state. */
struct bmt_handles {
    uint64_t instance;          /* the state's random id */
    ERL_NIF_TERM nil;           /* the word of [] */
    ERL_NIF_TERM undefined;     /* the atom */
    ErlNifResourceType *type;   /* "beamtrace_session" */
    struct bmt_recorder *rec;   /* the sessions handles name */
    /* One handle per session, kept (a resource reference) while the
     * session is known, so every term naming it is the same term (=:=):
     * start's, sessions()', the stop notification's. */
    ErlNifMutex *lock;
    struct session_handle *kept[BMT_MAX_SESSIONS];
    /* A resource term's header word (learnt at the first handle made,
     * under the lock; read with no lock), 0 until then or when the layout
     * did not prove out: bmt_handle_identity then always says 0. */
    ERL_NIF_TERM ref_header;
    int layout_learnt;          /* tried (under the lock) */
};

/* Prepares `h` (the lock; the resource type is opened apart, at every
 * load and upgrade). Returns 0 or -1. */
int bmt_handles_init(struct bmt_handles *h, uint64_t instance, ERL_NIF_TERM nil,
                     ERL_NIF_TERM undefined, struct bmt_recorder *rec);

/* Releases every kept handle and the lock. */
void bmt_handles_free(struct bmt_handles *h);

/* Opens (`flags`: create or take over) the handle resource type. Returns 0
 * or -1. */
int bmt_handles_open_type(struct bmt_handles *h, ErlNifEnv *env, ErlNifResourceFlags flags);

/* The identity of tracer state `state` if it is a resource term: its
 * magic binary's address, equal in every copy of the term; else 0. No
 * call, no allocation: the boxed term's header word, then the next. */
static inline ERL_NIF_TERM bmt_handle_identity(const struct bmt_handles *h, ERL_NIF_TERM state)
{
    ERL_NIF_TERM header = __atomic_load_n(&h->ref_header, __ATOMIC_RELAXED);
    if ((state & 3) != 2 || header == 0)
        return 0;
    const ERL_NIF_TERM *b = (const ERL_NIF_TERM *)(state - 2);
    /* An ordinary reference shares the header; its next word's low half
     * is all ones (a marker), never an aligned address. */
    if (b[0] != header || (b[1] & 7) != 0)
        return 0;
    return b[1];
}

/* The session a handle term names, and the generation it must still have;
 * NULL when `state` is not a handle of this state. */
struct bmt_session *bmt_resolve_handle(const struct bmt_handles *h, ErlNifEnv *env,
                                       ERL_NIF_TERM state, uint64_t *generation);

/* Resolves a tracer state ([] = the default session, or a handle) to its
 * session core and the generation it must still have. NULL when the state
 * names no session. */
static inline struct bmt_session *bmt_resolve_session(const struct bmt_handles *h, ErlNifEnv *env,
                                                      ERL_NIF_TERM state, uint64_t *generation)
{
    if (state == h->nil)
        return bmt_rec_default(h->rec, generation);
    return bmt_resolve_handle(h, env, state, generation);
}

/* The handle term of session (index, generation): the one kept while the
 * session is known, so handles compare equal; a new one (kept from now on)
 * the first time. 'undefined' when out of memory. */
ERL_NIF_TERM bmt_make_handle(struct bmt_handles *h, ErlNifEnv *env, int index,
                             uint64_t generation);

/* Lets go of the kept handle of a collected session (Erlang terms that
 * name it stay valid and name nothing). */
void bmt_forget_handle(struct bmt_handles *h, int index, uint64_t generation);

/* Reads a handle, or [] for the default session: 0 when `term` names no
 * session of this state. */
int bmt_get_handle(const struct bmt_handles *h, ErlNifEnv *env, ERL_NIF_TERM term, int *index,
                   uint64_t *generation);

#endif
