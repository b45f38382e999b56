/* Field text for the tracer: pids, ports, MFAs and terms, as OTP's dyntrace
 * printed them with enif_snprintf("%T").
 *
 * Terms go through bmt_term_text (nif_term_text.c), byte-identical to "%T"
 * and much faster; pids and ports through its per-thread id cache. MFAs are
 * cached here by (module atom, function atom, arity): atoms are immediates,
 * so the key names one text forever. A struct bmt_format_cache is owned by
 * one thread, so the caches need no locks (contract in nif_format.h).
 */
#include "nif_format.h"

#include <string.h>

size_t bmt_format_id_miss(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out)
{
    return bmt_id_text(&c->text.ids, env, term, out, BMT_ID_MAX_BYTES + 1);
}

/* The arity an MFA's third element says: [] is 0; a list of arguments its
 * length (the VM's own walk when the VM built it for a call; else counted
 * up to 256, since no function takes more than 255); an integer itself
 * (the `arity' trace flag). Returns 0 for anything else. */
static int mfa_arity(const struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM args,
                     int vm_args, unsigned long *arity)
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

size_t bmt_format_mfa_checked(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                              char *out, int vm_args)
{
    const ERL_NIF_TERM *mfa;
    if (bmt_peek_tuple_of(env, term, 3, &mfa)) {
        const struct mfa_cache_entry *e = bmt_mfa_entry(c, mfa[0], mfa[1]);
        if (e->module == mfa[0] && e->function == mfa[1] &&
            bmt_mfa_arity_is(c, env, mfa[2], e->arity, bmt_peek_trust()))
            return bmt_mfa_copy(e, out);
    }
    return bmt_format_mfa_miss(c, env, term, out, vm_args);
}

size_t bmt_format_mfa_miss(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                           char *out, int vm_args)
{
    static const char undefined[] = "undefined";
    const ERL_NIF_TERM *mfa;
    int size;
    unsigned long arity;
    if (!enif_get_tuple(env, term, &size, &mfa) || size != 3 ||
        !mfa_arity(c, env, mfa[2], vm_args, &arity))
        goto undef;
    if (!enif_is_atom(env, mfa[0]) || !enif_is_atom(env, mfa[1]))
        goto undef;
    int n = enif_snprintf(out, BMT_MFA_MAX_BYTES + 1, "%T:%T/%lu", mfa[0], mfa[1], arity);
    if (n < 0)
        goto undef;
    size_t len = (size_t)n <= BMT_MFA_MAX_BYTES ? (size_t)n : BMT_MFA_MAX_BYTES;
    if (len > 0 && len < MFA_CACHE_TEXT && arity <= 255) {
        /* Only atom keys are ever stored, and a term word names one term,
         * so a later hit needs no type checks. */
        struct mfa_cache_entry *e = bmt_mfa_entry(c, mfa[0], mfa[1]);
        e->module = mfa[0];
        e->function = mfa[1];
        e->arity = (uint32_t)arity;
        e->arity_word = (ERL_NIF_TERM)arity << 4 | 0xF;
        e->len = (uint8_t)len;
        memset(e->text, 0, sizeof e->text);
        memcpy(e->text, out, len + 1);
    }
    return len;
undef:
    memcpy(out, undefined, sizeof undefined);
    return sizeof undefined - 1;
}

/* Heap words of `term` as the VM would copy it into a message, without
 * printing it. Approximate where the NIF API hides the layout (bignums,
 * off-heap binaries, maps); exact for tuples, lists and immediates. The walk
 * is bounded by `*budget` subterms in all (a term with shared subterms, like
 * {T, T} nested 40 deep, is small in memory but exponential to walk) and by
 * nesting depth: past either it stops, leaving *budget negative. */
static size_t term_words(ErlNifEnv *env, ERL_NIF_TERM term, int depth, long *budget)
{
    if (--*budget < 0)
        return 0;
    if (depth > 64)
        return 1;
    const ERL_NIF_TERM *elems;
    int arity;
    ErlNifBinary bin;
    ERL_NIF_TERM head, tail;
    size_t words = 0;
    switch (enif_term_type(env, term)) {
    case ERL_NIF_TERM_TYPE_TUPLE:
        enif_get_tuple(env, term, &arity, &elems);
        words = 1 + (size_t)arity;
        for (int i = 0; i < arity && *budget >= 0; i++)
            words += term_words(env, elems[i], depth + 1, budget);
        return words;
    case ERL_NIF_TERM_TYPE_LIST:
        while (*budget >= 0 && enif_get_list_cell(env, term, &head, &tail)) {
            words += 2 + term_words(env, head, depth + 1, budget);
            term = tail;
        }
        if (*budget < 0 || enif_is_empty_list(env, term))
            return words;
        return words + term_words(env, term, depth + 1, budget);
    case ERL_NIF_TERM_TYPE_BITSTRING:
        if (!enif_inspect_binary(env, term, &bin)) /* a bitstring, not whole bytes */
            return 3;
        /* Heap binaries up to 64 bytes live in the message; larger ones
         * are reference-counted and cost a fixed header. */
        return bin.size <= 64 ? 2 + (bin.size + 7) / 8 : 6;
    case ERL_NIF_TERM_TYPE_FLOAT: return 2;
    case ERL_NIF_TERM_TYPE_REFERENCE: return 4;
    case ERL_NIF_TERM_TYPE_FUN: return 8;
    case ERL_NIF_TERM_TYPE_MAP: {
        size_t n = 0;
        enif_get_map_size(env, term, &n);
        return 3 + 3 * n;
    }
    case ERL_NIF_TERM_TYPE_INTEGER: {
        ErlNifSInt64 i;
        return enif_get_int64(env, term, &i) && i >= -(INT64_C(1) << 59) && i < (INT64_C(1) << 59)
                   ? 0 : 3;
    }
    default: return 0; /* atoms, local pids and ports, small integers: immediates */
    }
}

size_t bmt_term_words(ErlNifEnv *env, ERL_NIF_TERM term, int *complete)
{
    long budget = BMT_TERM_WORDS_BUDGET;
    size_t words = term_words(env, term, 0, &budget);
    *complete = budget >= 0;
    return words;
}

size_t bmt_format_message_other(ErlNifEnv *env, ERL_NIF_TERM term, int message_bytes, char *out)
{
    if (message_bytes == BMT_MESSAGE_SIZE_ONLY) {
        int complete;
        size_t words = bmt_term_words(env, term, &complete);
        int n = enif_snprintf(out, 48, complete ? "<%lu words>" : "<more than %lu words>",
                              (unsigned long)words);
        return n > 0 ? (size_t)n : 0;
    }
    out[0] = '\0';
    return 0;
}
