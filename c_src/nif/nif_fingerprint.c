/* A message's link fingerprint (contract in nif_decode.h).
 *
 * What it must be: equal for equal terms on every node and OTP release, so
 * that the sender's tracer (message_send_link) and the receiver's
 * (message_receive_link) compute the same value for one message; unequal
 * for different messages except by chance; and of bounded cost whatever
 * the message, since the traced process pays it (a 1 MiB binary must not
 * cost what erlang:phash2/1 costs for it, 0.9 ms).
 *
 * How, for a message of at most FP_SMALL_COST (terms, plus a term per 4
 * bytes of binary, maps of at most FP_MAP_SMALL entries, nested at most
 * FP_SMALL_DEPTH deep; measured first, cheaply, without hashing anything):
 * erlang:phash2/1 of the whole message (enif_hash(ERL_NIF_PHASH2), one
 * call: defined on the term, not on its node-local representation, so a
 * pid hashes the same where it is local and where it is remote, an atom by
 * its text, a map whatever its internal order), in the high 32 bits, and
 * the message's shape (terms, binary bytes) in the low ones. Most messages
 * are that small; the measure stops as soon as a message is not.
 *
 * A larger message: a walk over at most FP_BUDGET terms in a fixed order
 * (tuples and lists in element order), mixing into 64 bits:
 *  - each container's kind and size (tuple arity, map size, binary size);
 *  - atoms, integers, floats, pids, ports and references as
 *    enif_hash(ERL_NIF_PHASH2), which is erlang:phash2/1: defined on the
 *    term, not on its node-local representation (a pid hashes the same
 *    where it is local and where it is remote; an atom by its text);
 *  - up to FP_BINARY_BYTES bytes from each end of a binary, read
 *    little-endian whatever the CPU;
 *  - a map of at most FP_MAP_ENTRIES entries: each entry walked on its own
 *    (FP_ENTRY_BUDGET terms for the key and the value each) and the
 *    entries' values summed, so the map's internal order (which follows
 *    atom indices, and so differs between nodes) does not matter; a larger
 *    map contributes its size only;
 *  - a fun its kind only (its environment can be anything).
 * What the budget cuts off does not count: two messages that differ only
 * past it have the same fingerprint. Collisions between different
 * messages are as likely as for any 64-bit mix of 27-bit leaf hashes:
 * docs/cluster.md says what the matching does about them.
 *
 * No allocation (maps are walked only up to 32 entries, where the VM's map
 * iterator allocates nothing), no lock, no message: runs in the tracer
 * callbacks of the traced process.
 */
#include "nif_fingerprint.h"

#include <endian.h>
#include <string.h>

#define FP_SMALL_COST 256
#define FP_SMALL_DEPTH 32
/* The VM's map iterator allocates for maps of more entries (hash maps). */
#define FP_MAP_SMALL 32
#define FP_BUDGET 64
#define FP_BINARY_BYTES 64
#define FP_MAP_ENTRIES 8
#define FP_ENTRY_BUDGET 4

enum { TAG_TUPLE = 1, TAG_LIST, TAG_NIL, TAG_MAP, TAG_BINARY, TAG_BITS, TAG_FUN, TAG_LEAF };

struct fp {
    ErlNifEnv *env;
    uint64_t h;
    int budget; /* terms still to visit */
};

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v * UINT64_C(0x9e3779b97f4a7c15);
    h = (h << 27 | h >> 37) * UINT64_C(0x87c37b91114253d5);
    return h + UINT64_C(0x52dce729);
}

/* MurmurHash3's finaliser: every input bit reaches every output bit. */
static inline uint64_t finish(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ (h >> 33);
}

static uint64_t bytes_mix(uint64_t h, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix(h, le64toh(w));
        p += 8, n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        for (size_t i = 0; i < n; i++)
            w |= (uint64_t)p[i] << (8 * i);
        h = mix(h, w ^ (uint64_t)n << 56);
    }
    return h;
}

static void walk(struct fp *f, ERL_NIF_TERM t);

static void walk_map(struct fp *f, ERL_NIF_TERM t)
{
    size_t size = 0;
    enif_get_map_size(f->env, t, &size);
    f->h = mix(f->h, TAG_MAP | (uint64_t)size << 8);
    int cost = (int)size * 2 * FP_ENTRY_BUDGET;
    ErlNifMapIterator it;
    if (size == 0 || size > FP_MAP_ENTRIES || f->budget < cost ||
        !enif_map_iterator_create(f->env, t, &it, ERL_NIF_MAP_ITERATOR_FIRST))
        return;
    f->budget -= cost;
    uint64_t sum = 0;
    ERL_NIF_TERM key, value;
    while (enif_map_iterator_get_pair(f->env, &it, &key, &value)) {
        struct fp k = {f->env, 0, FP_ENTRY_BUDGET}, v = {f->env, 0, FP_ENTRY_BUDGET};
        walk(&k, key);
        walk(&v, value);
        sum += finish(mix(k.h, v.h));
        enif_map_iterator_next(f->env, &it);
    }
    enif_map_iterator_destroy(f->env, &it);
    f->h = mix(f->h, sum);
}

static void walk(struct fp *f, ERL_NIF_TERM t)
{
    if (f->budget <= 0)
        return;
    f->budget--;
    switch (enif_term_type(f->env, t)) {
    case ERL_NIF_TERM_TYPE_TUPLE: {
        int arity = 0;
        const ERL_NIF_TERM *el;
        enif_get_tuple(f->env, t, &arity, &el);
        f->h = mix(f->h, TAG_TUPLE | (uint64_t)arity << 8);
        for (int i = 0; i < arity && f->budget > 0; i++)
            walk(f, el[i]);
        break;
    }
    case ERL_NIF_TERM_TYPE_LIST: {
        ERL_NIF_TERM head;
        f->h = mix(f->h, TAG_LIST);
        while (f->budget > 0 && enif_get_list_cell(f->env, t, &head, &t))
            walk(f, head);
        if (f->budget > 0) {
            if (enif_is_empty_list(f->env, t))
                f->h = mix(f->h, TAG_NIL);
            else
                walk(f, t); /* an improper tail */
        }
        break;
    }
    case ERL_NIF_TERM_TYPE_MAP:
        walk_map(f, t);
        break;
    case ERL_NIF_TERM_TYPE_BITSTRING: {
        ErlNifBinary bin;
        if (!enif_inspect_binary(f->env, t, &bin)) {
            f->h = mix(f->h, TAG_BITS);
            break;
        }
        f->h = mix(f->h, TAG_BINARY | (uint64_t)bin.size << 8);
        if (bin.size <= 2 * FP_BINARY_BYTES) {
            f->h = bytes_mix(f->h, bin.data, bin.size);
        } else {
            f->h = bytes_mix(f->h, bin.data, FP_BINARY_BYTES);
            f->h = bytes_mix(f->h, bin.data + bin.size - FP_BINARY_BYTES, FP_BINARY_BYTES);
        }
        break;
    }
    case ERL_NIF_TERM_TYPE_FUN:
        f->h = mix(f->h, TAG_FUN);
        break;
    default: /* atom, integer, float, pid, port, reference */
        f->h = mix(f->h, TAG_LEAF | enif_hash(ERL_NIF_PHASH2, t, 0) << 8);
        break;
    }
}

/* The cost of `t` (terms, and a term per 4 bytes of binary) into *cost,
 * stopping once it passes FP_SMALL_COST; *bytes: binary bytes seen. Maps
 * of at most FP_MAP_SMALL entries are looked into whole (their order does
 * not change the sum); a larger map is too large, and so is nesting deeper
 * than FP_SMALL_DEPTH (which also bounds this recursion). So phash2 of a
 * small message hashes at most 1 KiB of binary. */
static void measure(ErlNifEnv *env, ERL_NIF_TERM t, int depth, int *cost, uint64_t *bytes)
{
    if (++*cost > FP_SMALL_COST)
        return;
    if (depth > FP_SMALL_DEPTH) {
        *cost = FP_SMALL_COST + 1;
        return;
    }
    switch (enif_term_type(env, t)) {
    case ERL_NIF_TERM_TYPE_TUPLE: {
        int arity = 0;
        const ERL_NIF_TERM *el;
        enif_get_tuple(env, t, &arity, &el);
        for (int i = 0; i < arity && *cost <= FP_SMALL_COST; i++)
            measure(env, el[i], depth + 1, cost, bytes);
        break;
    }
    case ERL_NIF_TERM_TYPE_LIST: {
        ERL_NIF_TERM head;
        while (*cost <= FP_SMALL_COST && enif_get_list_cell(env, t, &head, &t)) {
            ++*cost;
            measure(env, head, depth + 1, cost, bytes);
        }
        if (*cost <= FP_SMALL_COST && !enif_is_empty_list(env, t))
            measure(env, t, depth + 1, cost, bytes);
        break;
    }
    case ERL_NIF_TERM_TYPE_MAP: {
        size_t size = 0;
        ErlNifMapIterator it;
        ERL_NIF_TERM key, value;
        enif_get_map_size(env, t, &size);
        if (size > FP_MAP_SMALL) {
            *cost = FP_SMALL_COST + 1;
            break;
        }
        if (size == 0 || !enif_map_iterator_create(env, t, &it, ERL_NIF_MAP_ITERATOR_FIRST))
            break;
        while (*cost <= FP_SMALL_COST && enif_map_iterator_get_pair(env, &it, &key, &value)) {
            measure(env, key, depth + 1, cost, bytes);
            measure(env, value, depth + 1, cost, bytes);
            enif_map_iterator_next(env, &it);
        }
        enif_map_iterator_destroy(env, &it);
        break;
    }
    case ERL_NIF_TERM_TYPE_BITSTRING: {
        ErlNifBinary bin;
        if (enif_inspect_binary(env, t, &bin)) {
            *bytes += bin.size;
            *cost += (int)(bin.size > (size_t)FP_SMALL_COST * 4 ? (size_t)FP_SMALL_COST
                                                                : bin.size / 4);
        } else {
            *cost = FP_SMALL_COST + 1; /* a bitstring: its hash walks it whole */
        }
        break;
    }
    case ERL_NIF_TERM_TYPE_FUN:
        *cost = FP_SMALL_COST + 1; /* its environment can be anything */
        break;
    default:
        break;
    }
}

uint64_t bmt_fingerprint(ErlNifEnv *env, ERL_NIF_TERM message)
{
    int cost = 0;
    uint64_t bytes = 0;
    measure(env, message, 0, &cost, &bytes);
    if (cost <= FP_SMALL_COST)
        return enif_hash(ERL_NIF_PHASH2, message, 0) << 32 |
               (finish(mix((uint64_t)cost, bytes)) & UINT64_C(0xffffffff));
    struct fp f = {env, 0, FP_BUDGET};
    walk(&f, message);
    /* Bit 63 set: phash2 is 27 bits, so the two kinds never meet. */
    return finish(f.h) | UINT64_C(1) << 63;
}
