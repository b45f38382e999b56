/* Compiled event decoders: the fast path of the reader.
 *
 * The generic decoder (decode.h) walks an event's type tree and stores
 * every field in its value slot. Most traces have one simple shape:
 * beamtrace's own and LTTng-UST's (a 16-bit id or 5-bit id enumeration
 * with a variant of a short and an extended timestamp, then byte-packed
 * integers, strings and text arrays). For those, each layout is resolved
 * once into a plan:
 *  - a header plan per stream class: where the id and the timestamp are in
 *    each variant option, at fixed bit offsets, and which option each tag
 *    value selects (the enumeration's labels matched to the options once,
 *    not per event);
 *  - a body plan per event class and field selection: a flat list of
 *    operations that stores the catalogue fields the caller reads
 *    (field_set.h), straight into catalogue order, and skips the rest by
 *    size (a run of fixed-size fields is one skip; a string is a scan for
 *    its NUL).
 * A layout outside that shape (bit fields or big-endian integers in the
 * body, variants, sequences of non-text, clock-mapped fields in the body,
 * alignments the header start does not fix) gets no plan: the reader
 * walks its type tree as before.
 *
 * A plan runner fails (returns -1 or NULL) wherever the generic decoder
 * fails on the same bytes (and possibly where it would not: a run of skipped
 * fields checked as one, say); the reader then decodes the event again
 * with the generic decoder, which accepts it or gives the exact error. So
 * the fast path accepts exactly what the generic path accepts, decodes the
 * same values for the fields asked for, and ends at the same position.
 *
 * Plans live in an arena; the runners (plan_run.h) are pure and
 * single-threaded.
 */
#ifndef BMT_CLI_PLAN_H
#define BMT_CLI_PLAN_H

#include "base/arena.h"
#include "core/event.h"
#include "ctf_type.h"

#include <stdint.h>

struct bmt_header_plan;
struct bmt_body_plan;

/* The header plan of a stream class whose (finished) event header is `h`,
 * in arena `a`. Sets *plan to NULL when the header needs the generic
 * decoder. Returns 0 or -ENOMEM. */
int bmt_plan_header(struct bmt_arena *a, const struct bmt_ctf_type *h,
                    const struct bmt_header_plan **plan);

/* The body plan of an event class whose (finished) stream event context,
 * event context and payload are `roots[0..3)` (NULL when absent). Field i
 * of the catalogue, whose payload node has value slot `cat_slot[i]`
 * (i < cat_count), is stored in catalogue position i when bit i of `want`
 * is set; cat_count 0 for an event outside the catalogue. Sets *plan to
 * NULL when the layout needs the generic decoder. Returns 0 or -ENOMEM. */
int bmt_plan_body(struct bmt_arena *a, const struct bmt_ctf_type *const roots[3],
                  const uint32_t *cat_slot, unsigned cat_count, uint32_t want,
                  const struct bmt_body_plan **plan);

/* The runners, bmt_plan_run_header and bmt_plan_run_body, are inline in
 * plan_run.h, for the reader's per-event loop. */

#endif
