/* Which catalogue fields a reader's caller reads: one bit per field of
 * each tracepoint (bit f of `tp[t]` is field f, a BMT_F_* index, of
 * tracepoint t). The reader decodes those and skips every other field by
 * its size (bmt_reader_select, reader.h).
 *
 * A set is plain data: the command's pass (model/run.c) makes it from
 * what its accumulators declare they read (model/acc.h). Pure; no
 * allocation.
 */
#ifndef BMT_CLI_FIELD_SET_H
#define BMT_CLI_FIELD_SET_H

#include "core/catalogue.h"

#include <stdint.h>

_Static_assert(BMT_MAX_FIELDS <= 32, "a field set holds 32 fields per tracepoint");

struct bmt_field_set {
    uint32_t tp[BMT_TP_COUNT];      /* bit f: field f of tracepoint tp is read */
};

/* Every field of a tracepoint. */
#define BMT_FIELDS_ALL UINT32_MAX

/* dst |= src. */
static inline void bmt_field_set_or(struct bmt_field_set *dst, const struct bmt_field_set *src)
{
    for (unsigned i = 0; i < BMT_TP_COUNT; i++)
        dst->tp[i] |= src->tp[i];
}

/* Every field of every tracepoint: what a caller that reads anything gets
 * (the reader's default). */
static inline void bmt_field_set_all(struct bmt_field_set *s)
{
    for (unsigned i = 0; i < BMT_TP_COUNT; i++)
        s->tp[i] = BMT_FIELDS_ALL;
}

#endif
