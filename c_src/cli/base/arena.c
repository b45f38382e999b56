/* Bump allocator (contract in arena.h). Chunks grow to 64 KiB; a larger
 * request gets a chunk of its own. */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (64u << 10)

struct bmt_arena_chunk {
    struct bmt_arena_chunk *prev;
    size_t size;                          /* bytes in data[] */
    _Alignas(16) unsigned char data[];
};

void bmt_arena_init(struct bmt_arena *a)
{
    memset(a, 0, sizeof *a);
}

void *bmt_arena_alloc(struct bmt_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    if (!a->head || a->head->size - a->used_bytes < size) {
        size_t cap = size > CHUNK_BYTES ? size : CHUNK_BYTES;
        struct bmt_arena_chunk *c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->prev = a->head;
        c->size = cap;
        a->head = c;
        a->used_bytes = 0;
        a->total_bytes += cap;
    }
    void *p = a->head->data + a->used_bytes;
    a->used_bytes += size;
    memset(p, 0, size);
    return p;
}

char *bmt_arena_strndup(struct bmt_arena *a, const char *s, size_t len)
{
    char *p = bmt_arena_alloc(a, len + 1);
    if (p && len)
        memcpy(p, s, len);
    return p;
}

void bmt_arena_free(struct bmt_arena *a)
{
    struct bmt_arena_chunk *c = a->head;
    while (c) {
        struct bmt_arena_chunk *prev = c->prev;
        free(c);
        c = prev;
    }
    memset(a, 0, sizeof *a);
}
