/* Field text for the tracer: pids, ports, MFAs, terms and messages, as
 * OTP's dyntrace printed them with enif_snprintf("%T"), through one
 * thread's caches.
 *
 * The hits are inline here (an id or an MFA already printed: one hash, one
 * compare, one fixed-size copy); nif_format.c prints what misses and fills
 * the caches. Terms go through nif_term_text.c. A struct bmt_format_cache
 * belongs to one thread (its thread context), so nothing here locks.
 */
#ifndef BMT_NIF_FORMAT_H
#define BMT_NIF_FORMAT_H

#include "core/catalogue.h"
#include "nif_term_text.h"

#include <erl_nif.h>
#include <string.h>

/* ---- the session's formatting option ---- */

/* The session's message option: printed up to that many bytes, or only
 * the message's size in heap words. */
#define BMT_MESSAGE_SIZE_ONLY (-1)

/* The session's tracer options, packed into the recorder's opaque
 * format_option: the message option in the low 16 bits (0xffff for
 * BMT_MESSAGE_SIZE_ONLY; BMT_MSG_MAX_BYTES fits), and BMT_FORMAT_LINKS when
 * message events are recorded as their link variants (message_send_link,
 * message_receive_link). */
#define BMT_FORMAT_LINKS 0x10000
_Static_assert(BMT_MSG_MAX_BYTES < 0xffff, "the message option fits 16 bits");
static inline int bmt_format_pack(int message_bytes, int links)
{
    return (message_bytes & 0xffff) | (links ? BMT_FORMAT_LINKS : 0);
}
static inline int bmt_format_message_bytes(int format_option)
{
    int bytes = format_option & 0xffff;
    return bytes == 0xffff ? BMT_MESSAGE_SIZE_ONLY : bytes;
}

/* ---- one thread's caches ---- */

#define MFA_CACHE_SIZE 256
/* Longest MFA text the cache keeps; every entry is copied as a whole
 * fixed-size block (no length-dependent copy loop). */
#define MFA_CACHE_TEXT 64

struct mfa_cache_entry {
    ERL_NIF_TERM module, function;
    unsigned long arity;
    uint8_t len; /* 0: empty entry */
    char text[MFA_CACHE_TEXT];
};

struct bmt_format_cache {
    ERL_NIF_TERM nil;           /* the word of [] (the state's, at hand) */
    struct bmt_text_cache text; /* pids, ports and atoms */
    struct mfa_cache_entry mfas[MFA_CACHE_SIZE];
};

/* ---- the formatters ---- */

/* Each writes text at `out` (room for its kind's bound plus NUL) and returns
 * its length in bytes. */
size_t bmt_format_id(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out);
/* `vm_args`: the term's argument list (if any) was built by the VM for a
 * call, so it holds at most 255 elements. The cache hit is inline; a miss
 * (or anything odd) takes bmt_format_mfa_miss, which also fills the cache. */
size_t bmt_format_mfa_miss(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                           char *out, int vm_args);
/* Printed term, at most `room` - 1 bytes plus NUL. */
size_t bmt_format_term(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out,
                       size_t room);
/* A message as the session's option says: printed up to `message_bytes`,
 * "<N words>" for BMT_MESSAGE_SIZE_ONLY, nothing for 0. */
size_t bmt_format_message(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                          int message_bytes, char *out);
/* Heap words the VM would copy for `term` (exact for tuples, lists and
 * immediates, approximate where the NIF API hides the layout), walking at
 * most BMT_TERM_WORDS_BUDGET subterms: *complete is 0 when it gave up. */
#define BMT_TERM_WORDS_BUDGET 65536
size_t bmt_term_words(ErlNifEnv *env, ERL_NIF_TERM term, int *complete);

static inline unsigned bmt_mfa_slot(ERL_NIF_TERM module, ERL_NIF_TERM function,
                                    unsigned long arity)
{
    uint64_t x = (uint64_t)module * UINT64_C(0x9E3779B97F4A7C15) ^
                 ((uint64_t)function + arity) * UINT64_C(0xbf58476d1ce4e5b9);
    return (unsigned)(x >> 56) % MFA_CACHE_SIZE;
}

/* The arity an MFA's third element says: [] is 0 (compared by its word, a
 * constant the cache keeps); a list of arguments its length (the VM's own
 * walk when the VM built it for a call; else counted up to 256, since no
 * function takes more than 255); an integer itself (the `arity' trace flag:
 * the VM copies no arguments). Returns 0 for anything else. */
static inline int bmt_mfa_arity(const struct bmt_format_cache *c, ErlNifEnv *env,
                                ERL_NIF_TERM args, int vm_args, unsigned long *arity)
{
    unsigned len;
    if (args == c->nil) {
        *arity = 0;
        return 1;
    }
    if (vm_args) {
        if (enif_get_list_length(env, args, &len)) {
            *arity = len;
            return 1;
        }
    } else if (enif_is_list(env, args)) {
        ERL_NIF_TERM head;
        for (len = 0; len <= 255 && enif_get_list_cell(env, args, &head, &args);)
            len++;
        *arity = len;
        return len <= 255 && enif_is_empty_list(env, args);
    }
    return enif_get_ulong(env, args, arity);
}

static inline size_t bmt_format_mfa(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                                    char *out, int vm_args)
{
    const ERL_NIF_TERM *mfa;
    int size;
    unsigned long arity;
    if (enif_get_tuple(env, term, &size, &mfa) && size == 3 &&
        bmt_mfa_arity(c, env, mfa[2], vm_args, &arity)) {
        const struct mfa_cache_entry *e = &c->mfas[bmt_mfa_slot(mfa[0], mfa[1], arity)];
        if (e->len && e->module == mfa[0] && e->function == mfa[1] && e->arity == arity) {
            memcpy(out, e->text, sizeof e->text);
            return e->len;
        }
    }
    return bmt_format_mfa_miss(c, env, term, out, vm_args);
}

#endif
