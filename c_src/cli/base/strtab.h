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

struct bmt_strtab {
    char *bytes;          /* every string, NUL-terminated, back to back */
    size_t bytes_len, bytes_cap;
    uint64_t *offsets;    /* id -> offset in bytes */
    uint32_t *lens;       /* id -> length in bytes */
    uint32_t *hashes;     /* id -> low 32 bits of its hash (cheap mismatch test) */
    uint32_t count;       /* strings interned; ids are 0..count-1 */
    uint32_t id_cap;
    uint32_t *slots;      /* hash index: id + 1, or 0 when empty */
    uint32_t slot_mask;   /* slot count - 1 (a power of two) */
};

/* Prepares an empty table (allocates lazily). */
void bmt_strtab_init(struct bmt_strtab *t);

/* Returns the id of the `len` bytes at `s`, interning a copy the first time;
 * or -ENOMEM. */
int64_t bmt_strtab_intern(struct bmt_strtab *t, const char *s, size_t len);

/* Returns the id of `s`/`len` if interned, or -1. */
int64_t bmt_strtab_find(const struct bmt_strtab *t, const char *s, size_t len);

/* The NUL-terminated string with id `id` (< t->count); stable until the next
 * intern. */
static inline const char *bmt_strtab_str(const struct bmt_strtab *t, uint32_t id)
{
    return t->bytes + t->offsets[id];
}
static inline uint32_t bmt_strtab_len(const struct bmt_strtab *t, uint32_t id)
{
    return t->lens[id];
}

void bmt_strtab_free(struct bmt_strtab *t);

/* 64-bit FNV-1a-style hash of `len` bytes (word at a time), seeded. */
uint64_t bmt_hash_bytes(const void *p, size_t len, uint64_t seed);

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
