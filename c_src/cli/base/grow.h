/* Arrays that grow by doubling, indexed by dense ids (pid ids, function
 * ids, ...): what every per-process and per-id table of the analyses
 * does, written once. Single-threaded. */
#ifndef BMT_CLI_GROW_H
#define BMT_CLI_GROW_H

#include <stddef.h>
#include <stdint.h>

/* Returns `arr` (*cap elements of `elem` bytes) grown so that index
 * `need` is in it: its size doubled from 64 as often as needed, the new
 * elements zeroed, *cap updated. Returns `arr` itself when need < *cap,
 * and NULL when out of memory (then `arr` and *cap are unchanged). */
void *bmt_grow_to(void *arr, uint32_t *cap, uint32_t need, size_t elem);

/* bmt_grow_to, with the common case (room already) inline: callers grow
 * per event. */
static inline void *bmt_grow(void *arr, uint32_t *cap, uint32_t need, size_t elem)
{
    return need < *cap ? arr : bmt_grow_to(arr, cap, need, elem);
}

/* The same, starting from `first` elements (> 0) instead of 64: for the
 * many small arrays of one kind (a call stack per process), where 64
 * elements each would cost more than the data they hold. Inline for the
 * common case, as bmt_grow; bmt_grow_more is the rest. */
void *bmt_grow_more(void *arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t first);
static inline void *bmt_grow_from(void *arr, uint32_t *cap, uint32_t need, size_t elem,
                                  uint32_t first)
{
    return need < *cap ? arr : bmt_grow_more(arr, cap, need, elem, first);
}

#endif
