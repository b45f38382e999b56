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
void *bmt_grow(void *arr, uint32_t *cap, uint32_t need, size_t elem);

#endif
