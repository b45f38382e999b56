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

#include <erl_nif.h>

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
#define BMT_ID_CACHE_TEXT_BYTES 39    /* "#Port<0.18446744073709551615>" fits */

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
 * not public API, so the first BMT_SMALL_CHECKS decodes are also asked of
 * enif_get_int64 and compared: one difference turns the shortcut off for
 * the rest of the VM's life (a property of the running VM binary, shared by
 * every thread: one process-wide word, as the pid shortcut's in
 * nif_term_text.c). Checks passed so far, or -1 when off. */
#define BMT_SMALL_CHECKS 256
extern int bmt_small_layout_state __attribute__((visibility("hidden")));

/* The slow half of bmt_small_int: decodes with the VM and checks. */
int bmt_small_int_checked(ErlNifEnv *env, ERL_NIF_TERM t, int64_t *v);

/* 1 and *v when `t` is a small integer; 0 for anything else (a bignum is
 * not small: enif_get_int64 answers for it). */
static inline int bmt_small_int(ErlNifEnv *env, ERL_NIF_TERM t, int64_t *v)
{
    if ((t & 0xF) != 0xF || sizeof(ERL_NIF_TERM) != 8)
        return 0;
    if (__builtin_expect(__atomic_load_n(&bmt_small_layout_state, __ATOMIC_RELAXED) >=
                             BMT_SMALL_CHECKS,
                         1)) {
        *v = (int64_t)t >> 4;
        return 1;
    }
    return bmt_small_int_checked(env, t, v);
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

/* Text of a pid or port (any term works, with the same result as
 * bmt_term_text) for the per-event tracee field: a local pid or port is
 * served from `ids` (owned by the calling thread, not NULL) after the
 * first enif_snprintf. Same contract as bmt_term_text() otherwise. */
size_t bmt_id_text(struct bmt_id_cache *ids, ErlNifEnv *env,
                   ERL_NIF_TERM term, char *buf, size_t size);

#endif /* BMT_NIF_TERM_TEXT_H */
