/* Tables the analyses key their state by: interned strings (pids,
 * functions, exit reasons, registered names) with dense ids, and a map from
 * 64-bit keys to 32-bit values.
 *
 * Why interning: every analysis keeps per-process and per-function state;
 * turning "<0.66.0>" and "m:f/a" into small dense ids once per event lets
 * that state live in plain arrays, and the memory grows with the number of
 * distinct strings, never with the trace length. Both tables use open
 * addressing with linear probing at load <= 1/2 and never shrink.
 * Single-threaded.
 */
#ifndef BMT_CLI_STRTAB_H
#define BMT_CLI_STRTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One interned string: where its bytes are, and its key (bmt_strkey_of),
 * which for a string of up to 16 bytes is the whole string. */
struct bmt_strent {
    uint64_t head, tail;  /* the key: first and last 8 bytes (fewer when shorter) */
    uint64_t offset;      /* in bytes */
    uint32_t len;         /* in bytes */
};

struct bmt_strtab {
    char *bytes;          /* every string, NUL-terminated, back to back */
    size_t bytes_len, bytes_cap;
    struct bmt_strent *ents; /* by id */
    uint32_t count;       /* strings interned; ids are 0..count-1 */
    uint32_t id_cap;
    uint32_t *slots;      /* hash index: id + 1, or 0 when empty */
    uint32_t slot_mask;   /* slot count - 1 (a power of two) */
    uint32_t recent[2];   /* the ids bmt_strtab_lookup found or made last, the latest first
                           * (each valid when < count) */
};

/* Prepares an empty table (allocates lazily). */
void bmt_strtab_init(struct bmt_strtab *t);

/* The key of the `len` bytes at `s`: two words that, with the length,
 * determine a string of up to 16 bytes (its first and last 8 bytes, or 4,
 * overlapping; three of its bytes below 4), read without touching a byte
 * outside [s, s + len). Longer strings compare their middle bytes too. */
static inline __attribute__((always_inline)) struct bmt_strent
bmt_strkey_of(const char *s, size_t len)
{
    struct bmt_strent k = {0, 0, 0, (uint32_t)len};
    if (len >= 8) {
        memcpy(&k.head, s, 8);
        memcpy(&k.tail, s + len - 8, 8);
    } else if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + len - 4, 4);
        k.head = a;
        k.tail = b;
    } else if (len) {
        k.head = (uint64_t)(uint8_t)s[0] | (uint64_t)(uint8_t)s[len / 2] << 8 |
                 (uint64_t)(uint8_t)s[len - 1] << 16;
    }
    return k;
}

/* 64-bit FNV-1a-style hash of `len` bytes (word at a time), seeded. */
uint64_t bmt_hash_bytes(const void *p, size_t len, uint64_t seed);

/* The index hash of a string and its key: from the key alone up to 16
 * bytes (a few multiplies, no loop), from every byte beyond. */
static inline __attribute__((always_inline)) uint64_t
bmt_strtab_hash(const char *s, size_t len, const struct bmt_strent *k)
{
    if (len > 16)
        return bmt_hash_bytes(s, len, 0);
    uint64_t h = k->head * 0x9e3779b97f4a7c15ull ^ (k->tail + len) * 0xc2b2ae3d27d4eb4full;
    return h ^ h >> 32; /* the index takes low bits: fold the well-mixed high half in */
}

/* An 8-bit fingerprint of the `len` bytes at `s`, for bit-set prefilters
 * that spare most events a lookup: from the last 8 bytes and the length,
 * where pids differ (<0.85.0>, <0.86.0>), one load and one multiply for a
 * pid of 8 bytes or more. */
static inline __attribute__((always_inline)) unsigned bmt_strtab_mark(const char *s, size_t len)
{
    uint64_t t;
    if (__builtin_expect(len >= 8, 1)) {
        memcpy(&t, s + len - 8, 8);
    } else {
        struct bmt_strent k = bmt_strkey_of(s, len);
        t = k.tail ^ k.head << 32;
    }
    return (unsigned)(((t + len) * 0x9e3779b97f4a7c15ull) >> 56);
}

/* Returns the id of `s`/`len` if interned, or -1. Inline: the analyses
 * look up a pid or a function name on nearly every event, so a hit costs
 * a key, a hash, one probe and a two-word compare (a memcmp of the middle
 * bytes beyond 16 bytes). */
static inline __attribute__((always_inline)) int64_t
bmt_strtab_find(const struct bmt_strtab *t, const char *s, size_t len)
{
    if (!t->slots)
        return -1;
    struct bmt_strent k = bmt_strkey_of(s, len);
    uint64_t h = bmt_strtab_hash(s, len, &k);
    for (uint32_t i = (uint32_t)h & t->slot_mask;; i = (i + 1) & t->slot_mask) {
        uint32_t v = t->slots[i];
        if (!v)
            return -1;
        const struct bmt_strent *e = &t->ents[v - 1];
        if (e->head == k.head && e->tail == k.tail && e->len == len &&
            (len <= 16 || memcmp(t->bytes + e->offset + 8, s + 8, len - 16) == 0))
            return v - 1;
    }
}

/* Interns a copy of the `len` bytes at `s`, not yet interned: returns its
 * id, or -ENOMEM. */
int64_t bmt_strtab_add(struct bmt_strtab *t, const char *s, size_t len);

/* 1 when entry `id` (< t->count) holds the `len` bytes at `s`, of key `k`. */
static inline __attribute__((always_inline)) int
bmt_strtab_is(const struct bmt_strtab *t, uint32_t id, const char *s, size_t len,
              const struct bmt_strent *k)
{
    const struct bmt_strent *e = &t->ents[id];
    return e->head == k->head && e->tail == k->tail && e->len == len &&
           (len <= 16 || memcmp(t->bytes + e->offset + 8, s + 8, len - 16) == 0);
}

/* bmt_strtab_find, trying first the two strings it found last: a trace
 * names the same few processes and functions on runs of consecutive
 * events (a scheduler's events come from the process it runs, and name
 * the processes it sends to; a return follows its call), and a repeat
 * then costs the key and a compare or two, no hash and no probe. */
static inline __attribute__((always_inline)) int64_t
bmt_strtab_lookup(struct bmt_strtab *t, const char *s, size_t len)
{
    uint32_t a = t->recent[0], b = t->recent[1];
    struct bmt_strent k = bmt_strkey_of(s, len);
    if (a < t->count && bmt_strtab_is(t, a, s, len, &k))
        return a;
    int64_t id = b < t->count && bmt_strtab_is(t, b, s, len, &k) ? b : bmt_strtab_find(t, s, len);
    if (id >= 0) {
        t->recent[1] = a;
        t->recent[0] = (uint32_t)id;
    }
    return id;
}

/* Returns the id of the `len` bytes at `s`, interning a copy the first time;
 * or -ENOMEM. */
static inline int64_t bmt_strtab_intern(struct bmt_strtab *t, const char *s, size_t len)
{
    int64_t id = bmt_strtab_lookup(t, s, len);
    if (id < 0 && (id = bmt_strtab_add(t, s, len)) >= 0) {
        t->recent[1] = t->recent[0];
        t->recent[0] = (uint32_t)id;
    }
    return id;
}

/* The NUL-terminated string with id `id` (< t->count); stable until the next
 * intern. */
static inline const char *bmt_strtab_str(const struct bmt_strtab *t, uint32_t id)
{
    return t->bytes + t->ents[id].offset;
}
static inline uint32_t bmt_strtab_len(const struct bmt_strtab *t, uint32_t id)
{
    return t->ents[id].len;
}

void bmt_strtab_free(struct bmt_strtab *t);

struct bmt_u64map {
    uint64_t *keys;
    uint32_t *vals;       /* UINT32_MAX marks an empty slot */
    uint32_t mask;        /* slot count - 1 */
    uint32_t count;
};

void bmt_u64map_init(struct bmt_u64map *m);

/* Returns the value slot of `key`, inserting it with value `fresh` when
 * absent (then *created = 1); NULL on out of memory. `fresh` must not be
 * UINT32_MAX. The pointer is valid until the next insertion. */
uint32_t *bmt_u64map_get(struct bmt_u64map *m, uint64_t key, uint32_t fresh, int *created);

/* Returns the value of `key`, or UINT32_MAX when absent. */
uint32_t bmt_u64map_find(const struct bmt_u64map *m, uint64_t key);

/* Removes `key` if present (backward-shift deletion keeps probes short). */
void bmt_u64map_remove(struct bmt_u64map *m, uint64_t key);

void bmt_u64map_free(struct bmt_u64map *m);

#endif
