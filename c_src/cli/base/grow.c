/* Growing arrays (contract in grow.h). */
#include "grow.h"

#include <stdlib.h>
#include <string.h>

void *bmt_grow_to(void *arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need < *cap)
        return arr;
    return bmt_grow_more(arr, cap, need, elem, 64);
}

void *bmt_grow_more(void *arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t first)
{
    if (need < *cap)
        return arr;
    uint64_t n = *cap ? *cap : first;
    while (n <= need)
        n *= 2;
    if (n > UINT32_MAX)
        return NULL;
    char *p = realloc(arr, (size_t)n * elem);
    if (!p)
        return NULL;
    memset(p + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *cap = (uint32_t)n;
    return p;
}
