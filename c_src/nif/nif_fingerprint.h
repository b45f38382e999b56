/* A message's link fingerprint (nif_fingerprint.c says how and why). */
#ifndef BMT_NIF_FINGERPRINT_H
#define BMT_NIF_FINGERPRINT_H

#include <erl_nif.h>
#include <stdint.h>

/* The link fingerprint of `message`: 64 bits, equal for equal terms on
 * every node, at most 64 terms and 128 bytes of each binary looked at.
 * Calling thread only; no allocation. */
uint64_t bmt_fingerprint(ErlNifEnv *env, ERL_NIF_TERM message);

#endif
