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

size_t bmt_format_term(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out,
                       size_t room)
{
    return bmt_term_text_cached(&c->text, env, term, out, room);
}

/* Every destination of an ID or MFA field has room for its kind's bound,
 * so a cache hit copies its whole fixed-size entry (a few vector moves)
 * rather than a length-dependent loop, which GCC turns into `rep movsb`,
 * tens of cycles to start on some CPUs. The NUL is in the entry. */
_Static_assert(BMT_ID_CACHE_TEXT_BYTES + 1 <= BMT_ID_MAX_BYTES + 1, "id entries fit an ID field");
_Static_assert(MFA_CACHE_TEXT <= BMT_MFA_MAX_BYTES + 1, "mfa entries fit an MFA field");

size_t bmt_format_id(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term, char *out)
{
    const struct bmt_id_cache_entry *e = bmt_id_cache_hit(&c->text.ids, term);
    if (e) {
        memcpy(out, e->text, sizeof e->text);
        out[e->len_bytes] = '\0';
        return e->len_bytes;
    }
    return bmt_id_text(&c->text.ids, env, term, out, BMT_ID_MAX_BYTES + 1);
}

size_t bmt_format_mfa_miss(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                           char *out, int vm_args)
{
    static const char undefined[] = "undefined";
    const ERL_NIF_TERM *mfa;
    int size;
    unsigned long arity;
    if (!enif_get_tuple(env, term, &size, &mfa) || size != 3 ||
        !bmt_mfa_arity(c, env, mfa[2], vm_args, &arity))
        goto undef;
    if (!enif_is_atom(env, mfa[0]) || !enif_is_atom(env, mfa[1]))
        goto undef;
    int n = enif_snprintf(out, BMT_MFA_MAX_BYTES + 1, "%T:%T/%lu", mfa[0], mfa[1], arity);
    if (n < 0)
        goto undef;
    size_t len = (size_t)n <= BMT_MFA_MAX_BYTES ? (size_t)n : BMT_MFA_MAX_BYTES;
    if (len > 0 && len < MFA_CACHE_TEXT) {
        /* Only atom keys are ever stored, and a term word names one term,
         * so a later hit needs no type checks. */
        struct mfa_cache_entry *e = &c->mfas[bmt_mfa_slot(mfa[0], mfa[1], arity)];
        e->module = mfa[0];
        e->function = mfa[1];
        e->arity = arity;
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

size_t bmt_format_message(struct bmt_format_cache *c, ErlNifEnv *env, ERL_NIF_TERM term,
                          int message_bytes, char *out)
{
    if (message_bytes == BMT_MESSAGE_SIZE_ONLY) {
        int complete;
        size_t words = bmt_term_words(env, term, &complete);
        int n = enif_snprintf(out, 48, complete ? "<%lu words>" : "<more than %lu words>",
                              (unsigned long)words);
        return n > 0 ? (size_t)n : 0;
    }
    if (message_bytes == 0) {
        out[0] = '\0';
        return 0;
    }
    return bmt_format_term(c, env, term, out, (size_t)message_bytes + 1);
}
