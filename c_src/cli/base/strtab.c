/* Interned strings and a u64 -> u32 map (contract in strtab.h). */
#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t bmt_hash_bytes(const void *p, size_t len, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = seed ^ 0xcbf29ce484222325ull ^ (len * 0x9e3779b97f4a7c15ull);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

void bmt_strtab_init(struct bmt_strtab *t)
{
    memset(t, 0, sizeof *t);
}

static int strtab_grow_index(struct bmt_strtab *t)
{
    uint32_t n = t->slot_mask ? (t->slot_mask + 1) * 2 : 64;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    for (uint32_t id = 0; id < t->count; id++) {
        uint64_t h = bmt_strtab_hash(t->bytes + t->ents[id].offset, t->ents[id].len, &t->ents[id]);
        uint32_t i = (uint32_t)h & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->slot_mask = n - 1;
    return 0;
}

int64_t bmt_strtab_add(struct bmt_strtab *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return -ENOMEM;
    if (!t->slots || (uint64_t)(t->count + 1) * 2 > (uint64_t)t->slot_mask + 1)
        if (strtab_grow_index(t) < 0)
            return -ENOMEM;
    if (t->count == t->id_cap) {
        uint32_t cap = t->id_cap ? t->id_cap * 2 : 64;
        struct bmt_strent *e = realloc(t->ents, cap * sizeof *e);
        if (!e)
            return -ENOMEM;
        t->ents = e;
        t->id_cap = cap;
    }
    if (t->bytes_cap - t->bytes_len < len + 1) {
        size_t cap = t->bytes_cap ? t->bytes_cap : 4096;
        while (cap - t->bytes_len < len + 1)
            cap *= 2;
        char *b = realloc(t->bytes, cap);
        if (!b)
            return -ENOMEM;
        t->bytes = b;
        t->bytes_cap = cap;
    }
    uint32_t id = t->count++;
    struct bmt_strent *e = &t->ents[id];
    *e = bmt_strkey_of(s, len);
    e->offset = t->bytes_len;
    if (len)
        memcpy(t->bytes + t->bytes_len, s, len);
    t->bytes[t->bytes_len + len] = '\0';
    t->bytes_len += len + 1;
    uint32_t i = (uint32_t)bmt_strtab_hash(s, len, e) & t->slot_mask;
    while (t->slots[i])
        i = (i + 1) & t->slot_mask;
    t->slots[i] = id + 1;
    return id;
}

void bmt_strtab_free(struct bmt_strtab *t)
{
    free(t->bytes);
    free(t->ents);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static inline uint32_t mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

void bmt_u64map_init(struct bmt_u64map *m)
{
    memset(m, 0, sizeof *m);
}

static int u64map_grow(struct bmt_u64map *m)
{
    uint32_t n = m->keys ? (m->mask + 1) * 2 : 64;
    uint64_t *keys = malloc(n * sizeof *keys);
    uint32_t *vals = malloc(n * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    memset(vals, 0xff, n * sizeof *vals);
    if (m->keys) {
        for (uint32_t i = 0; i <= m->mask; i++) {
            if (m->vals[i] == UINT32_MAX)
                continue;
            uint32_t j = mix64(m->keys[i]) & (n - 1);
            while (vals[j] != UINT32_MAX)
                j = (j + 1) & (n - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->mask = n - 1;
    return 0;
}

uint32_t *bmt_u64map_get(struct bmt_u64map *m, uint64_t key, uint32_t fresh, int *created)
{
    *created = 0;
    if (!m->keys || (uint64_t)(m->count + 1) * 2 > (uint64_t)m->mask + 1)
        if (u64map_grow(m) < 0)
            return NULL;
    uint32_t i = mix64(key) & m->mask;
    while (m->vals[i] != UINT32_MAX) {
        if (m->keys[i] == key)
            return &m->vals[i];
        i = (i + 1) & m->mask;
    }
    m->keys[i] = key;
    m->vals[i] = fresh;
    m->count++;
    *created = 1;
    return &m->vals[i];
}

uint32_t bmt_u64map_find(const struct bmt_u64map *m, uint64_t key)
{
    if (!m->keys)
        return UINT32_MAX;
    uint32_t i = mix64(key) & m->mask;
    while (m->vals[i] != UINT32_MAX) {
        if (m->keys[i] == key)
            return m->vals[i];
        i = (i + 1) & m->mask;
    }
    return UINT32_MAX;
}

void bmt_u64map_remove(struct bmt_u64map *m, uint64_t key)
{
    if (!m->keys)
        return;
    uint32_t i = mix64(key) & m->mask;
    while (m->vals[i] != UINT32_MAX && m->keys[i] != key)
        i = (i + 1) & m->mask;
    if (m->vals[i] == UINT32_MAX)
        return;
    m->vals[i] = UINT32_MAX;
    m->count--;
    /* Backward shift: move later entries of the cluster into the hole. */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & m->mask; m->vals[j] != UINT32_MAX; j = (j + 1) & m->mask) {
        uint32_t home = mix64(m->keys[j]) & m->mask;
        if (((j - home) & m->mask) >= ((j - hole) & m->mask)) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            m->vals[j] = UINT32_MAX;
            hole = j;
        }
    }
}

void bmt_u64map_free(struct bmt_u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
