/* Log-linear histogram (contract in histogram.h). */
#include "histogram.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_hist_init(struct bmt_hist *h)
{
    memset(h, 0, sizeof *h);
}

static inline void locate(uint64_t v, unsigned *block, unsigned *sub)
{
    if (v < BMT_HIST_SUB) {
        *block = 0;
        *sub = (unsigned)v;
        return;
    }
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = e - BMT_HIST_SUB_BITS;
    *block = shift + 1;
    *sub = (unsigned)(v >> shift) - BMT_HIST_SUB;
}

/* Lowest value and width of bucket (block, sub). */
static inline void bounds(unsigned block, unsigned sub, uint64_t *lo, uint64_t *width)
{
    if (block == 0) {
        *lo = sub;
        *width = 1;
        return;
    }
    unsigned shift = block - 1;
    *lo = ((uint64_t)(BMT_HIST_SUB + sub)) << shift;
    *width = 1ull << shift;
}

int bmt_hist_add(struct bmt_hist *h, uint64_t v)
{
    unsigned b, s;
    locate(v, &b, &s);
    if (!h->blocks[b]) {
        h->blocks[b] = calloc(BMT_HIST_SUB, sizeof(uint64_t));
        if (!h->blocks[b])
            return -ENOMEM;
    }
    h->blocks[b][s]++;
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (h->count == 0 || v > h->max)
        h->max = v;
    h->count++;
    h->sum = h->sum + v < h->sum ? UINT64_MAX : h->sum + v;
    return 0;
}

uint64_t bmt_hist_quantile(const struct bmt_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    double r = q * (double)h->count;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r)
        rank++;
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (unsigned b = 0; b < BMT_HIST_BLOCKS; b++) {
        if (!h->blocks[b])
            continue;
        for (unsigned s = 0; s < BMT_HIST_SUB; s++) {
            seen += h->blocks[b][s];
            if (seen >= rank) {
                uint64_t lo, w;
                bounds(b, s, &lo, &w);
                uint64_t mid = lo + w / 2;
                return mid < h->min ? h->min : mid > h->max ? h->max : mid;
            }
        }
    }
    return h->max;
}

void bmt_hist_pow2(const struct bmt_hist *h, uint64_t pow2[65])
{
    memset(pow2, 0, 65 * sizeof pow2[0]);
    for (unsigned b = 0; b < BMT_HIST_BLOCKS; b++) {
        if (!h->blocks[b])
            continue;
        for (unsigned s = 0; s < BMT_HIST_SUB; s++) {
            if (!h->blocks[b][s])
                continue;
            uint64_t lo, w;
            bounds(b, s, &lo, &w);
            unsigned k = lo ? 64u - (unsigned)__builtin_clzll(lo) : 0;
            pow2[k] += h->blocks[b][s];
        }
    }
}

void bmt_hist_free(struct bmt_hist *h)
{
    for (unsigned b = 0; b < BMT_HIST_BLOCKS; b++)
        free(h->blocks[b]);
    memset(h, 0, sizeof *h);
}
