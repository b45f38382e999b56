/* Events and the bytes they take (header included: what sizes a trace)
 * per tracepoint, drops, lost packets and the time span, counted in one
 * pass for `stats`.
 *
 * Why streams one after another rather than the time-ordered merge: counts
 * and the span do not depend on order, and walking each mapping
 * sequentially skips the heap and keeps the prefetcher busy. String fields
 * are only measured (memchr for the NUL), never printed or copied.
 * Single-threaded.
 */
#ifndef BMT_CLI_TALLY_H
#define BMT_CLI_TALLY_H

#include "ctf/reader.h"

#include <stdint.h>

struct bmt_tally {
    uint64_t *counts;           /* per event class (global index) */
    uint64_t *bits;             /* per event class: bits its events take */
    const char **names;         /* rows: distinct event names with events */
    uint64_t *row_counts;
    uint64_t *row_bits;
    unsigned row_count;
    uint64_t event_count;
    uint64_t discarded_count;
    uint64_t lost_packet_count;
    uint64_t packet_count;
    uint64_t first_ns, last_ns; /* trace clock; valid when event_count > 0 */
};

/* Reads every stream of `r` (opened) and fills `st`; one row per event
 * name (several traces may declare the same). Returns 0, -ENOMEM or the
 * reader's error, with r->error set (free `st` in every case). */
int bmt_tally_collect(struct bmt_reader *r, struct bmt_tally *st);
void bmt_tally_free(struct bmt_tally *st);

#endif
