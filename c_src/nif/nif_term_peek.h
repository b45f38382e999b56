/* Tuple elements, list cells and small-map values read straight from the
 * term's words, without a call into the VM per element: the hot path's
 * replacement for enif_get_tuple, enif_get_list_cell and
 * enif_get_map_value on the terms every event carries (a call's MFA and
 * arguments, a message, the options map's `extra`).
 *
 * The layouts are OTP's on 64-bit builds since R16 (a boxed term points at
 * a header word, a tuple's is arity << 6, a list cell is two words, a flat
 * map is header, size, key tuple, values), but not public API. So, as
 * bmt_small_int in nif_term_text.h, each reader's first BMT_PEEK_CHECKS
 * answers are also asked of the VM and compared: one difference turns that
 * reader off for the rest of the VM's life (a property of the running VM
 * binary: process-wide words), and it then asks the VM every time. The
 * flat map's header word is learnt at load from a map the VM built.
 *
 * Any thread; no allocation, no lock. Terms belong to `env`.
 */
#ifndef BMT_NIF_TERM_PEEK_H
#define BMT_NIF_TERM_PEEK_H

#include <erl_nif.h>

#define BMT_PEEK_CHECKS 256

/* The readers: tuples, list cells, flat maps, small integers (read as
 * the word value << 4 | 0xF: nif_term_text.h's bmt_small_int), and a
 * resource term's identity (nif_session.h's bmt_handle_identity: the
 * session a handle names, from a thread's cache). */
enum bmt_peek_kind {
    BMT_PEEK_TUPLE,
    BMT_PEEK_LIST,
    BMT_PEEK_MAP,
    BMT_PEEK_SMALL,
    BMT_PEEK_HANDLE,
    BMT_PEEK_KINDS
};

/* Bit k (1 << k) set while reader k is trusted (its checks passed, not
 * off): one load gives a caller that reads several kinds their trust. */
extern int bmt_peek_trusted_bits __attribute__((visibility("hidden")));
/* A flat map's header word (0: unknown, the map reader stays off). */
extern ERL_NIF_TERM bmt_peek_flatmap_header __attribute__((visibility("hidden")));

/* 1 while reader `k` is still being checked (not off); its checked half
 * then compares its answer with the VM's and tells bmt_peek_count. */
int bmt_peek_checking(enum bmt_peek_kind k);
/* Counts one answer of reader `k` that agreed with the VM's (`agree`), or
 * turns the reader off for good. */
void bmt_peek_count(enum bmt_peek_kind k, int agree);

/* Learns the flat map header from `env` (load, any env). */
void bmt_peek_init(ErlNifEnv *env);

/* The checked halves (the first answers, and every answer once off). */
int bmt_peek_tuple_checked(ErlNifEnv *env, ERL_NIF_TERM t, int *arity, const ERL_NIF_TERM **el);
int bmt_peek_list_cell_checked(ErlNifEnv *env, ERL_NIF_TERM t, ERL_NIF_TERM *head,
                               ERL_NIF_TERM *tail);
int bmt_peek_map_value_checked(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key,
                               ERL_NIF_TERM *value);

/* The trust bits (bmt_peek_trusted_bits), at once. */
static inline __attribute__((always_inline)) int bmt_peek_trust(void)
{
    return sizeof(ERL_NIF_TERM) == 8 ? __atomic_load_n(&bmt_peek_trusted_bits, __ATOMIC_RELAXED)
                                     : 0;
}

/* Whether reader `k` is trusted: its bit. */
static inline __attribute__((always_inline)) int bmt_peek_trusted(enum bmt_peek_kind k)
{
    return bmt_peek_trust() >> k & 1;
}

static inline const ERL_NIF_TERM *bmt_peek_boxed(ERL_NIF_TERM t)
{
    return (const ERL_NIF_TERM *)(t - 2);
}

/* As enif_get_tuple: 1 with *arity and *el when `t` is a tuple, else 0. */
static inline int bmt_peek_tuple(ErlNifEnv *env, ERL_NIF_TERM t, int *arity,
                                 const ERL_NIF_TERM **el)
{
    if (__builtin_expect(bmt_peek_trusted(BMT_PEEK_TUPLE), 1)) {
        if ((t & 3) != 2)
            return 0;
        const ERL_NIF_TERM *b = bmt_peek_boxed(t);
        if ((b[0] & 0x3F) != 0)
            return 0;
        *arity = (int)(b[0] >> 6);
        *el = b + 1;
        return 1;
    }
    return bmt_peek_tuple_checked(env, t, arity, el);
}

/* bmt_peek_tuple for a tuple of `arity` elements: 1 with *el when `t` is
 * one, else 0. Trusted, one compare of the header word says both. */
static inline __attribute__((always_inline)) int
bmt_peek_tuple_of(ErlNifEnv *env, ERL_NIF_TERM t, int arity, const ERL_NIF_TERM **el)
{
    if (__builtin_expect(bmt_peek_trusted(BMT_PEEK_TUPLE), 1)) {
        if ((t & 3) != 2 || bmt_peek_boxed(t)[0] != (ERL_NIF_TERM)arity << 6)
            return 0;
        *el = bmt_peek_boxed(t) + 1;
        return 1;
    }
    int size;
    return bmt_peek_tuple_checked(env, t, &size, el) && size == arity;
}

/* As enif_get_list_cell: 1 with *head and *tail for a list cell, else 0. */
static inline int bmt_peek_list_cell(ErlNifEnv *env, ERL_NIF_TERM t, ERL_NIF_TERM *head,
                                     ERL_NIF_TERM *tail)
{
    if (__builtin_expect(bmt_peek_trusted(BMT_PEEK_LIST), 1)) {
        if ((t & 3) != 1)
            return 0;
        const ERL_NIF_TERM *c = (const ERL_NIF_TERM *)(t - 1);
        *head = c[0];
        *tail = c[1];
        return 1;
    }
    return bmt_peek_list_cell_checked(env, t, head, tail);
}

/* As enif_get_map_value for an immediate `key` (an atom): a flat map is
 * searched in place, any other map asks the VM. */
static inline int bmt_peek_map_value(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key,
                                     ERL_NIF_TERM *value)
{
    if (__builtin_expect(bmt_peek_trusted(BMT_PEEK_MAP), 1) && (map & 3) == 2) {
        const ERL_NIF_TERM *m = bmt_peek_boxed(map);
        if (m[0] == bmt_peek_flatmap_header) {
            ERL_NIF_TERM n = m[1];
            const ERL_NIF_TERM *keys = bmt_peek_boxed(m[2]) + 1;
            /* A flat map's keys are sorted, and the tracer's options map
             * holds `extra` first when it holds it: tried before the loop. */
            if (__builtin_expect(n != 0 && keys[0] == key, 1)) {
                *value = m[3];
                return 1;
            }
            for (ERL_NIF_TERM i = 1; i < n; i++)
                if (keys[i] == key) {
                    *value = m[3 + i];
                    return 1;
                }
            return 0;
        }
    }
    return bmt_peek_map_value_checked(env, map, key, value);
}

#endif
