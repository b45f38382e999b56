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
#include "nif_term_peek.h"
#include "nif_term_text.h"

#include <erl_nif.h>
#include <string.h>

/* ---- the session's formatting option ---- */

/* The session's message option: printed up to that many bytes, or only
 * the message's size in heap words. */
#define BMT_MESSAGE_SIZE_ONLY (-1)

/* OTP's LTTng buffers kept 255 bytes of a message: the length LTTng gets,
 * and the one used when no recorder session sets one. */
#define BMT_OTP_MESSAGE_BYTES 255

/* The session's tracer options, packed into the recorder's opaque
 * format_option: the message option in the low 16 bits (0xffff for
 * BMT_MESSAGE_SIZE_ONLY; BMT_MSG_MAX_BYTES fits), and BMT_FORMAT_LINKS when
 * message events are recorded as their link variants (message_send_link,
 * message_receive_link). */
#define BMT_FORMAT_LINKS 0x10000
/* BMT_FORMAT_RESULTS: function_return recorded as function_result (the
 * value returned); BMT_FORMAT_ARGS: function_call as function_call_args. */
#define BMT_FORMAT_RESULTS 0x20000
#define BMT_FORMAT_ARGS 0x40000
_Static_assert(BMT_MSG_MAX_BYTES < 0xffff, "the message option fits 16 bits");
/* `variants`: BMT_FORMAT_LINKS, _RESULTS and _ARGS or'ed. */
static inline int bmt_format_pack(int message_bytes, int variants)
{
    return (message_bytes & 0xffff) |
           (variants & (BMT_FORMAT_LINKS | BMT_FORMAT_RESULTS | BMT_FORMAT_ARGS));
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

/* Keyed by (module atom, function atom): atoms are immediates, so the key
 * names one function forever; the arity is checked against the term's.
 * 128 bytes, so an entry's address is a mask of the hash (bmt_mfa_entry),
 * not a multiply (the alignment is the first member's alone: on a
 * declarator list it would align each of them). */
struct mfa_cache_entry {
    _Alignas(128) ERL_NIF_TERM module;
    ERL_NIF_TERM function;
    ERL_NIF_TERM arity_word;     /* the arity as a small integer's word */
    uint32_t arity;
    uint8_t len;                 /* 0: empty entry */
    char text[MFA_CACHE_TEXT];   /* NUL-padded */
};
_Static_assert(sizeof(struct mfa_cache_entry) == 128, "an MFA entry is 128 bytes");

struct bmt_format_cache {
    ERL_NIF_TERM nil;           /* the word of [] (the state's, at hand) */
    /* The id entry of the last tracee bmt_format_tracee found: the process
     * running on this thread, the next event's too as a rule. Never NULL
     * once the thread has its context (nif_thread.c points it at slot 0). */
    const struct bmt_id_cache_entry *last_tracee;
    struct bmt_text_cache text; /* pids, ports and atoms */
    struct mfa_cache_entry mfas[MFA_CACHE_SIZE];
};

/* ---- the formatters ---- */

/* Each writes text at `out` (room for its kind's bound plus NUL) and returns
 * its length in bytes. The hits are inline; a miss (or anything odd) takes
 * the out-of-line *_miss, which also fills the cache. */
size_t bmt_format_id_miss(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out);
/* `vm_args`: the term's argument list (if any) was built by the VM for a
 * call, so it holds at most 255 elements. */
size_t bmt_format_mfa_miss(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                           char *out, int vm_args);
/* Printed term, at most `room` - 1 bytes plus NUL. */
static inline size_t bmt_format_term(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                                     char *out, size_t room)
{
    return bmt_term_text_cached(&c->text, env, term, out, room);
}
/* bmt_format_message for size_only and 0. */
size_t bmt_format_message_other(ErlNifEnv *env, ERL_NIF_TERM term, int message_bytes, char *out);
/* A message as the session's option says: printed up to `message_bytes`,
 * "<N words>" for BMT_MESSAGE_SIZE_ONLY, nothing for 0. The common message
 * (a flat tuple, nif_term_text.h) is printed inline, in the encoder that
 * asked: no call, so no register saves and reloads around one. */
static inline __attribute__((always_inline)) size_t
bmt_format_message(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                   int message_bytes, char *out)
{
    if (__builtin_expect(message_bytes > 0, 1)) {
        size_t n = bmt_term_text_flat(&c->text, env, term, out, (size_t)message_bytes + 1);
        if (__builtin_expect(n != BMT_TERM_TEXT_NOT_FLAT, 1))
            return n;
        return bmt_term_text_general(&c->text, env, term, out, (size_t)message_bytes + 1);
    }
    return bmt_format_message_other(env, term, message_bytes, out);
}
/* Heap words the VM would copy for `term` (exact for tuples, lists and
 * immediates, approximate where the NIF API hides the layout), walking at
 * most BMT_TERM_WORDS_BUDGET subterms: *complete is 0 when it gave up. */
#define BMT_TERM_WORDS_BUDGET 65536
size_t bmt_term_words(ErlNifEnv *env, ERL_NIF_TERM term, int *complete);

/* Every destination of an ID or MFA field has room for its kind's bound,
 * so a cache hit copies its whole fixed-size entry (a few vector moves,
 * the NUL among them: entries are NUL-padded) rather than a length-
 * dependent loop, which GCC turns into `rep movsb`, tens of cycles to start
 * on some CPUs. */
_Static_assert(sizeof(((struct bmt_id_cache_entry *)0)->text) <= BMT_ID_MAX_BYTES + 1,
               "id entries fit an ID field");
_Static_assert(MFA_CACHE_TEXT <= BMT_MFA_MAX_BYTES + 1, "mfa entries fit an MFA field");

/* A pid or port. */
static inline __attribute__((always_inline)) size_t
bmt_format_id(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out)
{
    const struct bmt_id_cache_entry *e = bmt_id_cache_hit(&c->text.ids, term);
    if (__builtin_expect(e != NULL, 1)) {
        memcpy(out, e->text, sizeof e->text);
        return e->len_bytes;
    }
    return bmt_format_id_miss(c, env, term, out);
}

/* An event's tracee's id entry, or NULL when it is not cached: tried
 * first against the last tracee's entry (one compare, no hash), which it
 * then remembers. No call. */
static inline __attribute__((always_inline)) const struct bmt_id_cache_entry *
bmt_tracee_hit(struct bmt_format_cache *c, ERL_NIF_TERM term)
{
    const struct bmt_id_cache_entry *e = c->last_tracee;
    if (__builtin_expect(e->key != term, 0)) {
        e = bmt_id_cache_hit(&c->text.ids, term);
        if (e)
            c->last_tracee = e;
    }
    return e;
}

/* Copies an id entry's text: the whole fixed-size entry. */
static inline __attribute__((always_inline)) size_t
bmt_id_copy(const struct bmt_id_cache_entry *e, char *out)
{
    memcpy(out, e->text, sizeof e->text);
    return e->len_bytes;
}

/* An event's tracee: bmt_format_id through bmt_tracee_hit. */
static inline __attribute__((always_inline)) size_t
bmt_format_tracee(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out)
{
    const struct bmt_id_cache_entry *e = bmt_tracee_hit(c, term);
    if (__builtin_expect(!e, 0))
        return bmt_format_id_miss(c, env, term, out);
    return bmt_id_copy(e, out);
}

/* An MFA's cache entry: the atoms' indices (a term's bits above its 6
 * tag bits), one times 9 plus the other, so that neither the functions of
 * one module nor one function name across modules (handle_call) share a
 * slot among 256 neighbours. The entry's byte offset comes straight from
 * the sum: (h >> 6) % 256 * 128 is (h << 1) & (255 << 7). */
static inline __attribute__((always_inline)) struct mfa_cache_entry *
bmt_mfa_entry(const struct bmt_format_cache *c, ERL_NIF_TERM module, ERL_NIF_TERM function)
{
    _Static_assert(MFA_CACHE_SIZE == 256 && sizeof(struct mfa_cache_entry) == 128,
                   "the offset below is the slot's");
    size_t offset = (size_t)((module * 9 + function) << 1) & (size_t)(255 << 7);
    return (struct mfa_cache_entry *)((char *)c->mfas + offset);
}

/* bmt_mfa_arity_is's answer without a call into the VM: 1 or 0, or -1
 * when only the VM's readers can tell (a reader not trusted, or an odd
 * term). `trust`: bmt_peek_trust()'s bits. */
static inline __attribute__((always_inline)) int
bmt_mfa_arity_inline(const struct bmt_format_cache *c, ERL_NIF_TERM args, unsigned arity,
                     int trust)
{
    int list_trusted = trust & 1 << BMT_PEEK_LIST;
    if (__builtin_expect((args & 3) == 1 && arity != 0 && list_trusted, 1)) {
        /* A list cell: its tail is the second word of the cell. */
        ERL_NIF_TERM cell = args;
        do
            cell = ((const ERL_NIF_TERM *)(cell - 1))[1];
        while (--arity && (cell & 3) == 1);
        return arity == 0 && cell == c->nil;
    }
    /* An arity (the `arity' flag, and running's MFA): its word. */
    if ((args & 0xF) == 0xF && __builtin_expect(trust & 1 << BMT_PEEK_SMALL, 1))
        return args == ((ERL_NIF_TERM)arity << 4 | 0xF);
    /* No arguments: [] is neither a cell nor an integer. */
    if (args == c->nil)
        return arity == 0;
    return -1;
}

/* 1 when an MFA's third element says `arity`: an integer (the `arity'
 * trace flag: the VM copies no arguments) equal to it, or a proper list of
 * that many elements (walked no further than that). `trust`: the term
 * readers' bits (bmt_peek_trust): with the list reader's, a call's
 * argument list (the common case) is walked in place, with no check per
 * cell. */
static inline __attribute__((always_inline)) int
bmt_mfa_arity_is(const struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM args,
                 unsigned arity, int trust)
{
    int64_t n;
    ERL_NIF_TERM head;
    int inline_answer = bmt_mfa_arity_inline(c, args, arity, trust);
    if (__builtin_expect(inline_answer >= 0, 1))
        return inline_answer;
    if (bmt_small_int(env, args, &n))
        return n == (int64_t)arity;
    if (arity == 0)
        return args == c->nil;
    do
        if (!bmt_peek_list_cell(env, args, &head, &args))
            return 0;
    while (--arity);
    return args == c->nil;
}

/* Copies a hit's text: the whole fixed-size entry (four vector moves, no
 * test of its length). */
static inline __attribute__((always_inline)) size_t
bmt_mfa_copy(const struct mfa_cache_entry *e, char *out)
{
    memcpy(out, e->text, sizeof e->text);
    return e->len;
}

/* bmt_format_mfa while the tuple reader is still being checked (or is
 * off): out of line. */
size_t bmt_format_mfa_checked(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                              char *out, int vm_args);

/* "m:f/a" of an {M, F, Args | Arity} tuple, or "undefined". Once the
 * tuple reader is trusted, a hit reads the tuple in place, and the
 * argument list too once the list reader is (one load for both). */
static inline __attribute__((always_inline)) size_t
bmt_format_mfa(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out,
               int vm_args)
{
    int trust = bmt_peek_trust();
    if (__builtin_expect(!(trust & 1 << BMT_PEEK_TUPLE), 0))
        return bmt_format_mfa_checked(c, env, term, out, vm_args);
    if (__builtin_expect((term & 3) == 2 && bmt_peek_boxed(term)[0] == (ERL_NIF_TERM)3 << 6, 1)) {
        const ERL_NIF_TERM *mfa = bmt_peek_boxed(term) + 1;
        const struct mfa_cache_entry *e = bmt_mfa_entry(c, mfa[0], mfa[1]);
        /* An empty entry's module is 0, which no atom is. */
        if (__builtin_expect(e->module == mfa[0] && e->function == mfa[1] &&
                                 bmt_mfa_arity_is(c, env, mfa[2], e->arity, trust),
                             1))
            return bmt_mfa_copy(e, out);
    }
    return bmt_format_mfa_miss(c, env, term, out, vm_args);
}

/* The cache entry of the MFA tuple `term` when both its tuple and its
 * arity are read in place, with no call (bmt_format_mfa's hit, once its
 * readers are trusted), else NULL: then bmt_format_mfa. For the VM's own
 * MFAs (a trace event's: an argument list has at most 255 cells).
 * `arity_first` (a constant): the third element is an arity as a rule
 * (running's), else an argument list (a call's). */
static inline __attribute__((always_inline)) const struct mfa_cache_entry *
bmt_mfa_hit(const struct bmt_format_cache *c, ERL_NIF_TERM term, int arity_first)
{
    /* The readers it needs: the tuple's, and the third element's. */
    int need = 1 << BMT_PEEK_TUPLE | 1 << (arity_first ? BMT_PEEK_SMALL : BMT_PEEK_LIST);
    int trust = bmt_peek_trust();
    if (__builtin_expect((trust & need) != need || (term & 3) != 2 ||
                             bmt_peek_boxed(term)[0] != (ERL_NIF_TERM)3 << 6,
                         0))
        return NULL;
    const ERL_NIF_TERM *mfa = bmt_peek_boxed(term) + 1;
    const struct mfa_cache_entry *e = bmt_mfa_entry(c, mfa[0], mfa[1]);
    if (__builtin_expect(e->module != mfa[0] || e->function != mfa[1], 0))
        return NULL;
    ERL_NIF_TERM args = mfa[2];
    /* An arity: one compare with the entry's word. */
    if (arity_first && args == e->arity_word)
        return e;
    /* An argument list, walked as far as the entry's arity; an entry of
     * arity 0 walks it to its end (255 cells at most) and says no. */
    if (!arity_first && (args & 3) == 1) {
        ERL_NIF_TERM cell = args;
        unsigned n = e->arity;
        do
            cell = ((const ERL_NIF_TERM *)(cell - 1))[1];
        while (--n && (cell & 3) == 1);
        return n == 0 && cell == c->nil ? e : NULL;
    }
    return bmt_mfa_arity_inline(c, args, e->arity, trust) == 1 ? e : NULL;
}

#endif
