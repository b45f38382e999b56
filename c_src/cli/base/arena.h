/* A bump allocator for data that lives as long as one object: the types,
 * names and classes parsed from one trace's metadata are allocated here and
 * freed together, so the parser needs no per-object clean-up path.
 *
 * Allocations are 16-byte aligned, never moved, and zero-filled. A failed
 * allocation returns NULL and leaves the arena usable. Single-threaded.
 */
#ifndef BMT_CLI_ARENA_H
#define BMT_CLI_ARENA_H

#include <stddef.h>

struct bmt_arena_chunk;

struct bmt_arena {
    struct bmt_arena_chunk *head;  /* newest chunk; older ones are linked from it */
    size_t used_bytes;             /* bytes of head in use */
    size_t total_bytes;            /* bytes allocated over every chunk */
};

/* Prepares an empty arena (allocates nothing yet). */
void bmt_arena_init(struct bmt_arena *a);

/* Returns `size` zeroed bytes owned by the arena, or NULL when out of
 * memory. */
void *bmt_arena_alloc(struct bmt_arena *a, size_t size);

/* Copies `len` bytes of `s` and a NUL into the arena; NULL when out of
 * memory. */
char *bmt_arena_strndup(struct bmt_arena *a, const char *s, size_t len);

/* Frees every allocation. Safe on a zeroed arena and twice. */
void bmt_arena_free(struct bmt_arena *a);

#endif
