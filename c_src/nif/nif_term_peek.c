/* The checked halves of the term readers (contract in nif_term_peek.h). */
#include "nif_term_peek.h"

/* Checks passed so far per reader, or -1 when off; the readers test the
 * bits of bmt_peek_trusted_bits, set from these. */
static int bmt_peek_state[BMT_PEEK_KINDS];
int bmt_peek_trusted_bits;
ERL_NIF_TERM bmt_peek_flatmap_header;

/* Counts one agreeing answer of reader `k`, or turns it off for good.
 * The count never moves from -1 (compare-and-swap, not an add that could
 * bring it back to 0), and its bit in bmt_peek_trusted_bits is set only
 * while it is not -1: a setter that finds it turned off meanwhile clears
 * the bit again, and the turner-off clears it after storing -1 (both
 * sequentially consistent), so one of the two clears last. */
void bmt_peek_count(enum bmt_peek_kind k, int agree)
{
    int bit = 1 << k;
    if (!agree) {
        __atomic_store_n(&bmt_peek_state[k], -1, __ATOMIC_SEQ_CST);
        __atomic_fetch_and(&bmt_peek_trusted_bits, ~bit, __ATOMIC_SEQ_CST);
        return;
    }
    int n = __atomic_load_n(&bmt_peek_state[k], __ATOMIC_RELAXED);
    do
        if (n < 0)
            return;
    while (!__atomic_compare_exchange_n(&bmt_peek_state[k], &n, n + 1, 1, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED));
    if (n + 1 >= BMT_PEEK_CHECKS) {
        __atomic_fetch_or(&bmt_peek_trusted_bits, bit, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&bmt_peek_state[k], __ATOMIC_SEQ_CST) < 0)
            __atomic_fetch_and(&bmt_peek_trusted_bits, ~bit, __ATOMIC_SEQ_CST);
    }
}

int bmt_peek_checking(enum bmt_peek_kind k)
{
    return sizeof(ERL_NIF_TERM) == 8 && __atomic_load_n(&bmt_peek_state[k], __ATOMIC_RELAXED) >= 0;
}

void bmt_peek_init(ErlNifEnv *env)
{
    ERL_NIF_TERM m = enif_make_new_map(env);
    /* A map header's low 6 bits are _TAG_HEADER_MAP; else the reader stays off. */
    if (sizeof(ERL_NIF_TERM) == 8 && (m & 3) == 2 && (bmt_peek_boxed(m)[0] & 0x3F) == 0x3C &&
        bmt_peek_boxed(m)[1] == 0)
        bmt_peek_flatmap_header = bmt_peek_boxed(m)[0];
    else
        __atomic_store_n(&bmt_peek_state[BMT_PEEK_MAP], -1, __ATOMIC_RELAXED);
}

int bmt_peek_tuple_checked(ErlNifEnv *env, ERL_NIF_TERM t, int *arity, const ERL_NIF_TERM **el)
{
    int r = enif_get_tuple(env, t, arity, el);
    if (bmt_peek_checking(BMT_PEEK_TUPLE)) {
        const ERL_NIF_TERM *b = bmt_peek_boxed(t);
        int mine = (t & 3) == 2 && (b[0] & 0x3F) == 0;
        bmt_peek_count(BMT_PEEK_TUPLE, mine == r && (!r || ((int)(b[0] >> 6) == *arity && b + 1 == *el)));
    }
    return r;
}

int bmt_peek_list_cell_checked(ErlNifEnv *env, ERL_NIF_TERM t, ERL_NIF_TERM *head,
                               ERL_NIF_TERM *tail)
{
    int r = enif_get_list_cell(env, t, head, tail);
    if (bmt_peek_checking(BMT_PEEK_LIST)) {
        const ERL_NIF_TERM *c = (const ERL_NIF_TERM *)(t - 1);
        int mine = (t & 3) == 1;
        bmt_peek_count(BMT_PEEK_LIST, mine == r && (!r || (c[0] == *head && c[1] == *tail)));
    }
    return r;
}

int bmt_peek_map_value_checked(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key,
                               ERL_NIF_TERM *value)
{
    int r = enif_get_map_value(env, map, key, value);
    const ERL_NIF_TERM *m = bmt_peek_boxed(map);
    if (bmt_peek_checking(BMT_PEEK_MAP) && (map & 3) == 2 && bmt_peek_flatmap_header &&
        m[0] == bmt_peek_flatmap_header) {
        /* The key tuple's header must say the map's size, or the layout
         * is not the one assumed. */
        if ((m[2] & 3) != 2 || bmt_peek_boxed(m[2])[0] != m[1] << 6) {
            bmt_peek_count(BMT_PEEK_MAP, 0);
            return r;
        }
        const ERL_NIF_TERM *keys = bmt_peek_boxed(m[2]) + 1;
        int mine = 0;
        ERL_NIF_TERM v = 0;
        for (ERL_NIF_TERM i = 0; i < m[1] && !mine; i++)
            if (keys[i] == key) {
                mine = 1;
                v = m[3 + i];
            }
        bmt_peek_count(BMT_PEEK_MAP, mine == r && (!r || v == *value));
    }
    return r;
}
