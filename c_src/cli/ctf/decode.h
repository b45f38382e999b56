/* Decoding CTF fields: a bit cursor over one packet and the walk of a
 * finished type tree (ctf_type.h) that stores each field's value in its
 * slot and applies babeltrace2's meanings (event id, packet sizes and
 * times, magic, uuid) and clock updates as the fields go by.
 *
 * Every read is checked against `end` (the packet's content end, or the
 * file's end while the packet header is read) before it happens; a field
 * that does not fit, a string without its NUL, a variant tag without an
 * option, or an absurd array fails with a reason, never an over-read.
 * Integers are read at any bit offset in either byte order (CTF 1.8: a
 * little-endian field starts at the least significant bit of its first
 * byte, a big-endian one at the most significant). Pure; single-threaded.
 */
#ifndef BMT_CLI_DECODE_H
#define BMT_CLI_DECODE_H

#include "ctf_type.h"
#include "core/event.h"

#include <stdint.h>

enum bmt_decode_error {
    BMT_DEC_OK,
    BMT_DEC_PAST_END,   /* a field runs past `end` */
    BMT_DEC_NO_NUL,     /* a string has no NUL before `end` */
    BMT_DEC_BAD_TAG,    /* a variant's tag selects no option */
    BMT_DEC_TOO_LONG,   /* an array of zero-bit elements longer than makes sense */
};

struct bmt_decode {
    const uint8_t *base;       /* the packet's first byte */
    uint64_t pos;              /* cursor, bits from base */
    uint64_t end;              /* limit, bits from base */
    struct bmt_value *vals;    /* value slots (ctf_type.h `slot`) */
    uint64_t clock;            /* the stream's clock, cycles: clock-mapped fields update it */
    uint32_t seen;             /* bit (1 << meaning) per meaning decoded */
    uint64_t meaning[BMT_M_COUNT];  /* the last value of each meaning */
    const uint8_t *uuid;       /* the packet header's uuid bytes, when decoded */
    enum bmt_decode_error error;
    const char *error_field;   /* the field that failed (may be NULL) */
};

/* Decodes a field of type `t` at d->pos (aligning first) and advances
 * d->pos. Returns 0, or -1 with d->error and d->error_field set. */
int bmt_decode(struct bmt_decode *d, const struct bmt_ctf_type *t);

/* A scope compiled to a flat list of operations: structs are flattened and
 * byte-aligned little-endian integers, strings and text arrays become
 * single steps, so the common event is decoded without recursion; other
 * nodes (variants, non-text arrays and sequences, floats) are one step that
 * walks their subtree. */
struct bmt_decode_op;

/* Compiles the finished scope roots `roots[0..n)` (NULL entries skipped)
 * into one program in arena `a`. NULL when out of memory. */
const struct bmt_decode_op *bmt_decode_compile(struct bmt_arena *a,
                                               const struct bmt_ctf_type *const *roots, unsigned n);

/* Runs program `prog` at d->pos: the same as bmt_decode of each root in
 * turn. Returns 0 or -1 as bmt_decode. */
int bmt_decode_run(struct bmt_decode *d, const struct bmt_decode_op *prog);

/* Reads the unsigned `size_bits`-bit integer at bit `pos` of `base` in the
 * given byte order (big_endian 0/1). The caller has checked the bounds. */
uint64_t bmt_decode_bits(const uint8_t *base, uint64_t pos, unsigned size_bits, int big_endian);

#endif
