/*
 * Fast text of an Erlang term, byte-identical to enif_snprintf("%T").
 *
 * OTP's dyntrace probes carried their string fields as the VM's "%T"
 * rendering, and users' scripts match on those strings, so every string we
 * emit must be exactly those bytes. "%T" goes through the VM's generic
 * printer (a callback per character, the whole term walked even when the
 * buffer is long full), which is too slow for the message-send hot path.
 * bmt_term_text() renders atoms (Latin-1 ones; others are printed once by
 * the VM and cached), integers in int64/uint64 range, floats, tuples, lists
 * and strings, binaries, maps of up to 32 keys, and (through the id cache)
 * local pids and ports. It hands every other subterm (refs, funs, remote
 * pids and ports, larger bignums, larger maps, bitstrings, nesting deeper
 * than BMT_TERM_TEXT_MAX_DEPTH) to enif_snprintf: the VM's printer is
 * context-free, so a subterm printed on its own gives the same bytes as it
 * does inside its parent (the test checks this for every such type).
 *
 * Workload: called on scheduler threads from trace callbacks, once per
 * traced event and per string field; buffers are tens to a few thousand
 * bytes. No allocation of ours, no locks, no globals. The one allocation
 * that can happen is the VM's: enif_inspect_binary() copies a binary that
 * starts mid-byte (an unaligned sub-binary, rare) into a temporary that the
 * VM frees when the NIF or callback returns. C stack use is bounded: about
 * 200 bytes per nesting level up to BMT_TERM_TEXT_MAX_DEPTH (about 10 KiB)
 * plus one 1.3 KiB leaf frame. Time is linear in the term, not the buffer,
 * only where the VM's is too: deciding whether a list is a string (or a
 * binary printable) needs the whole list (binary) even if the buffer holds
 * ten bytes of it.
 *
 * Concurrency: the functions are reentrant. A cache struct belongs to one
 * thread (keep one per scheduler, e.g. thread-local or in per-scheduler
 * state); sharing one between threads without a lock is a data race.
 */
#ifndef BMT_NIF_TERM_TEXT_H
#define BMT_NIF_TERM_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <erl_nif.h>

#include "nif_term_peek.h"

/* Nesting (tuples, lists, maps) rendered natively; deeper subterms go to
 * enif_snprintf, which walks with its own heap stack. */
#define BMT_TERM_TEXT_MAX_DEPTH 48

/* Above this buffer size the whole term goes to enif_snprintf: the VM
 * printer stops after a budget of 100000 "units" (one per term, per string
 * character, per binary byte, per atom byte) and appends "... ". Each unit
 * prints at least one byte, so below this size the buffer fills first and
 * the budget can never show in our output. */
#define BMT_TERM_TEXT_NATIVE_MAX_BYTES 65536

/* Direct-mapped caches. Sizes are powers of two. */
#define BMT_ATOM_CACHE_ENTRIES 256
#define BMT_ATOM_CACHE_TEXT_BYTES 55  /* longer atom texts are not cached */
#define BMT_ID_CACHE_ENTRIES 128
#define BMT_ID_CACHE_TEXT_BYTES 32    /* "#Port<0.18446744073709551615>" fits (30
                                       * with its NUL): two vector moves */

/* Rendered atom text (quotes and escapes included) keyed by the atom's term
 * word. Atoms are immediates and the atom table never drops an entry, so a
 * word always names the same text. key 0 marks an empty slot (0 is never an
 * immediate term). */
struct bmt_atom_cache_entry {
    ERL_NIF_TERM key;
    uint8_t len_bytes;
    char text[BMT_ATOM_CACHE_TEXT_BYTES];
};

struct bmt_atom_cache {
    struct bmt_atom_cache_entry slot[BMT_ATOM_CACHE_ENTRIES];
};

/* Text of local pids and ports keyed by the term word. Only immediate terms
 * are cached: a local pid or port word encodes its whole identity, whereas
 * a boxed term's word is a heap pointer that moves and gets reused. key 0
 * marks an empty slot. The text is NUL-padded, so a copy of the whole
 * entry's text ends the string. */
struct bmt_id_cache_entry {
    ERL_NIF_TERM key;
    uint8_t len_bytes;
    char text[BMT_ID_CACHE_TEXT_BYTES];
};

struct bmt_id_cache {
    struct bmt_id_cache_entry slot[BMT_ID_CACHE_ENTRIES];
};

/* Multiplicative hash of a term word into `bits` bits: term words differ
 * mostly in their middle bits, above the tag. */
static inline size_t bmt_term_slot(ERL_NIF_TERM t, unsigned bits)
{
    return (size_t)(((uint64_t)t * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

#define BMT_ID_CACHE_BITS 7

/* The cached text of the pid or port `t`, or NULL: the whole hit path of
 * the per-event tracee field, with no call into the VM. */
static inline const struct bmt_id_cache_entry *bmt_id_cache_hit(const struct bmt_id_cache *ids,
                                                                ERL_NIF_TERM t)
{
    const struct bmt_id_cache_entry *e = &ids->slot[bmt_term_slot(t, BMT_ID_CACHE_BITS)];
    return e->key == t ? e : NULL;
}

/* Small integers without a call into the VM. On 64-bit OTP (every release
 * since R7) a small integer is the immediate (value << 4 | 0xF). That is
 * not public API, so it is one of nif_term_peek.h's readers
 * (BMT_PEEK_SMALL): its first BMT_PEEK_CHECKS decodes are also asked of
 * enif_get_int64 and compared, and one difference turns the shortcut off
 * for the rest of the VM's life. */

/* The slow half of bmt_small_int: decodes with the VM and checks. */
int bmt_small_int_checked(ErlNifEnv *env, ERL_NIF_TERM t, int64_t *v);

/* 1 once the small-integer layout has passed its checks: a small integer
 * v is then the word v << 4 | 0xF. */
static inline __attribute__((always_inline)) int bmt_small_trusted(void)
{
    return bmt_peek_trusted(BMT_PEEK_SMALL);
}

/* bmt_small_int for a term whose tag (t & 0xF == 0xF) says small integer. */
static inline __attribute__((always_inline)) int bmt_small_int_tagged(ErlNifEnv *env,
                                                                      ERL_NIF_TERM t, int64_t *v)
{
    if (__builtin_expect(bmt_small_trusted(), 1)) {
        *v = (int64_t)t >> 4;
        return 1;
    }
    return bmt_small_int_checked(env, t, v);
}

/* 1 and *v when `t` is a small integer; 0 for anything else (a bignum is
 * not small: enif_get_int64 answers for it). */
static inline int bmt_small_int(ErlNifEnv *env, ERL_NIF_TERM t, int64_t *v)
{
    if ((t & 0xF) != 0xF || sizeof(ERL_NIF_TERM) != 8)
        return 0;
    return bmt_small_int_tagged(env, t, v);
}

/* Both caches, as one thread's formatting state. */
struct bmt_text_cache {
    struct bmt_atom_cache atoms;
    struct bmt_id_cache ids;
};

/* Empties `cache` (any memory; no allocation). Equivalent to zero-filling,
 * so a zero-initialised struct is already valid. */
void bmt_text_cache_init(struct bmt_text_cache *cache);

/* Writes the text of `term` exactly as enif_snprintf(buf, size, "%T", term)
 * would (same bytes, same truncation to size-1 bytes plus NUL) and returns
 * the number of bytes written, NUL excluded. `size` >= 1 is the capacity of
 * `buf` in bytes; `env` is the environment `term` belongs to. No cache:
 * pids and ports go through enif_snprintf on every call. */
size_t bmt_term_text(ErlNifEnv *env, ERL_NIF_TERM term, char *buf,
                     size_t size);

/* As bmt_term_text(), using and filling `cache` (owned by the calling
 * thread; NULL allowed, meaning no cache). This is the hot-path entry. */
size_t bmt_term_text_cached(struct bmt_text_cache *cache, ErlNifEnv *env,
                            ERL_NIF_TERM term, char *buf, size_t size);

/* bmt_term_text_cached without its fast half (below): for a
 * caller whose bmt_term_text_flat answered BMT_TERM_TEXT_NOT_FLAT. */
size_t bmt_term_text_general(struct bmt_text_cache *cache, ErlNifEnv *env, ERL_NIF_TERM term,
                             char *buf, size_t size);

/* Text of a pid or port (any term works, with the same result as
 * bmt_term_text) for the per-event tracee field: a local pid or port is
 * served from `ids` (owned by the calling thread, not NULL) after the
 * first enif_snprintf. Same contract as bmt_term_text() otherwise. */
size_t bmt_id_text(struct bmt_id_cache *ids, ErlNifEnv *env,
                   ERL_NIF_TERM term, char *buf, size_t size);

/* ---- the fast half, inline in the tracer's event encoders ----
 *
 * The common message ({Self, ping, 42}: a tuple of cached atoms, local
 * pids and ports, small integers) and a cached atom, printed straight from
 * the term with no VM call and no call of ours, so the message field costs
 * its copies and digits, not a call's register saves. Anything else (or an
 * element not cached yet) answers BMT_TERM_TEXT_NOT_FLAT, and the caller
 * takes bmt_term_text_general, which prints it in full and fills the
 * caches. */

#define BMT_ATOM_CACHE_BITS 8
_Static_assert((1u << BMT_ATOM_CACHE_BITS) == BMT_ATOM_CACHE_ENTRIES, "atom cache bits");

/* "00".."99": two digits per division. */
#define P(t) t "0" t "1" t "2" t "3" t "4" t "5" t "6" t "7" t "8" t "9"
static const char bmt_two_digits[201] = P("0") P("1") P("2") P("3") P("4") P("5") P("6") P("7")
    P("8") P("9");
#undef P

/* Writes the decimal digits of v ending at `end`; returns the start. */
static inline __attribute__((always_inline)) char *bmt_u64_digits(uint64_t v, char *end)
{
    /* Four digits per division while there are more than four. */
    while (v >= 10000) {
        uint64_t q = v / 10000;
        unsigned r = (unsigned)(v - q * 10000);
        end -= 4;
        memcpy(end, bmt_two_digits + (r / 100) * 2, 2);
        memcpy(end + 2, bmt_two_digits + (r % 100) * 2, 2);
        v = q;
    }
    if (v >= 100) {
        end -= 2;
        memcpy(end, bmt_two_digits + (v % 100) * 2, 2);
        v /= 100;
    }
    if (v >= 10) {
        end -= 2;
        memcpy(end, bmt_two_digits + v * 2, 2);
    } else {
        *--end = (char)('0' + v);
    }
    return end;
}

/* x / 100 for x < 10000, and x / 10000 for x < 10^8, as a multiply and a
 * shift (exact in those ranges): the compiler emits a divide instruction
 * instead where it judges the code cold, tens of cycles each. */
static inline unsigned bmt_div100(unsigned x)
{
    return (x * 5243u) >> 19;
}
static inline unsigned bmt_div10000(uint64_t x)
{
    return (unsigned)((x * UINT64_C(109951163)) >> 40);
}

/* 1 to 4 digits of v (< 10000) at p; returns the end. */
static inline __attribute__((always_inline)) char *bmt_short_text_at(char *p, unsigned v)
{
    if (v < 100) {
        if (v < 10) {
            *p = (char)('0' + v);
            return p + 1;
        }
        memcpy(p, bmt_two_digits + v * 2, 2);
        return p + 2;
    }
    unsigned hi = bmt_div100(v), lo = v - hi * 100;
    if (hi < 10)
        *p++ = (char)('0' + hi);
    else {
        memcpy(p, bmt_two_digits + hi * 2, 2);
        p += 2;
    }
    memcpy(p, bmt_two_digits + lo * 2, 2);
    return p + 2;
}

/* Decimal digits of v at p (at least 20 bytes of room); returns the end.
 * Below 10^8 (a message's counters and sizes, nearly always) by length
 * tests, with no digit count first; above, counted from the bit length. */
static inline __attribute__((always_inline)) char *bmt_u64_text_at(char *p, uint64_t v)
{
    if (v < 10000)
        return bmt_short_text_at(p, (unsigned)v);
    if (v < 100000000) {
        unsigned hi = bmt_div10000(v), lo = (unsigned)v - hi * 10000;
        unsigned lo_hi = bmt_div100(lo);
        p = bmt_short_text_at(p, hi);
        memcpy(p, bmt_two_digits + lo_hi * 2, 2);
        memcpy(p + 2, bmt_two_digits + (lo - lo_hi * 100) * 2, 2);
        return p + 4;
    }
    static const uint64_t pow10[20] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
        100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
        10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull};
    /* Digits: from the bit length (log10(2) ~ 1233/4096), one compare. */
    unsigned bits = 64u - (unsigned)__builtin_clzll(v);
    unsigned n = (bits * 1233) >> 12;
    n += v >= pow10[n];
    char *end = p + n;
    bmt_u64_digits(v, end);
    return end;
}

/* A small integer at p (at least 21 bytes of room); returns the end. */
static inline __attribute__((always_inline)) char *bmt_small_text_at(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return bmt_u64_text_at(p, 0 - (uint64_t)v);
    }
    return bmt_u64_text_at(p, (uint64_t)v);
}

/* Room the unchecked flat-tuple path needs per element: the largest cached
 * text (an atom's), or 21 bytes of integer, plus a comma. */
#define BMT_FLAT_MAX 8
#define BMT_FLAT_ELEMENT_BYTES (BMT_ATOM_CACHE_TEXT_BYTES + 1)
_Static_assert(BMT_ID_CACHE_TEXT_BYTES <= BMT_ATOM_CACHE_TEXT_BYTES && 21 <= BMT_ATOM_CACHE_TEXT_BYTES,
               "an atom's entry is the largest element");

/* The common message, {Self, ping, 42}: a tuple of up to BMT_FLAT_MAX
 * immediates the caches know (atoms, local pids and ports) or small
 * integers, printed with no VM call at all (the tuple read in place,
 * nif_term_peek.h): each element's tag picks its cache (a slot holds only
 * words of its own kind), and with room for the worst case (`end` - `p`)
 * the text is written unchecked. Returns where the text ends, or NULL
 * (having written nothing worth keeping) when the term has another shape
 * or an element is not cached yet: the general printer then starts over
 * (and fills the caches). Output is what put_subterm would write. */
static inline __attribute__((always_inline)) char *
bmt_flat_tuple(const struct bmt_text_cache *cache, ErlNifEnv *env, ERL_NIF_TERM t, char *p,
               const char *end)
{
    const ERL_NIF_TERM *el;
    int arity;
    if ((t & 3) != 2 || !bmt_peek_tuple(env, t, &arity, &el) || arity > BMT_FLAT_MAX ||
        (size_t)(end - p) < 2 + (size_t)arity * BMT_FLAT_ELEMENT_BYTES)
        return NULL;
    *p++ = '{';
    if (arity == 0) {
        *p++ = '}';
        return p;
    }
    /* A pointer walk (no index or count kept live), and a chain of tests
     * rather than a switch's jump table: pids, atoms and integers, the
     * common elements, in two or three instructions each. */
    for (const ERL_NIF_TERM *e = el, *stop = el + arity; e != stop; e++) {
        ERL_NIF_TERM w = *e;
        int64_t v;
        if ((w & 0xB) == 0x3) { /* local pid (0x3), local port (0x7) */
            const struct bmt_id_cache_entry *d = &cache->ids.slot[bmt_term_slot(w, BMT_ID_CACHE_BITS)];
            if (d->key != w)
                return NULL;
            memcpy(p, d->text, sizeof d->text);
            p += d->len_bytes;
        } else if ((w & 0xF) == 0xB) { /* atom (or [], which no atom slot holds) */
            const struct bmt_atom_cache_entry *a = &cache->atoms.slot[bmt_term_slot(w, BMT_ATOM_CACHE_BITS)];
            if (a->key != w)
                return NULL; /* not cached yet, or [] */
            memcpy(p, a->text, sizeof a->text);
            p += a->len_bytes;
        } else if ((w & 0xF) == 0xF) { /* small integer */
            if (!bmt_small_int_tagged(env, w, &v))
                return NULL;
            p = bmt_small_text_at(p, v);
        } else {
            return NULL; /* boxed or a list cell: not this path */
        }
        *p++ = ',';
    }
    /* The last comma becomes the brace. */
    p[-1] = '}';
    return p;
}

/* What bmt_term_text_flat answers for a term it leaves to the general
 * printer. */
#define BMT_TERM_TEXT_NOT_FLAT ((size_t)-1)

/* bmt_term_text_cached's fast half: the text of `term` in `buf` (`size`
 * bytes, NUL included) and its length, when it is a cached atom or a flat
 * tuple; BMT_TERM_TEXT_NOT_FLAT (nothing worth keeping written) for
 * anything else. `cache` may be NULL (then always NOT_FLAT). */
static inline __attribute__((always_inline)) size_t
bmt_term_text_flat(const struct bmt_text_cache *cache, ErlNifEnv *env, ERL_NIF_TERM term,
                   char *buf, size_t size)
{
    if (!cache || size > BMT_TERM_TEXT_NATIVE_MAX_BYTES)
        return BMT_TERM_TEXT_NOT_FLAT;
    if ((term & 0xF) == 0xB) {
        /* A cached atom (an exit's reason, a registered name): one
         * fixed-size copy. [] shares the tag, but no atom slot holds it. */
        const struct bmt_atom_cache_entry *a =
            &cache->atoms.slot[bmt_term_slot(term, BMT_ATOM_CACHE_BITS)];
        if (a->key == term && size > sizeof a->text) {
            memcpy(buf, a->text, sizeof a->text);
            buf[a->len_bytes] = '\0';
            return a->len_bytes;
        }
    }
    char *end = bmt_flat_tuple(cache, env, term, buf, buf + size - 1);
    if (!end)
        return BMT_TERM_TEXT_NOT_FLAT;
    *end = '\0';
    return (size_t)(end - buf);
}

#endif /* BMT_NIF_TERM_TEXT_H */
