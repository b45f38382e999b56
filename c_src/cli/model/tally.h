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

#include "sampled.h"
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
    /* A sampled trace (bmt_tally_scale): per event class and per row, the
     * events scaled back by the ratio in force at each (sampled.h), and
     * whether any was sampled; NULL otherwise. */
    uint64_t *scaled, *row_scaled;
    uint8_t *sampled, *row_sampled;
    struct bmt_sampled ratios;  /* after bmt_tally_scale: ratio_max 0 when not sampled */
};

/* Reads every stream of `r` (opened) and fills `st`; one row per event
 * name (several traces may declare the same). Returns 0, -ENOMEM or the
 * reader's error, with r->error set (free `st` in every case). */
int bmt_tally_collect(struct bmt_reader *r, struct bmt_tally *st);
void bmt_tally_free(struct bmt_tally *st);

/* 1 when the trace `r` counted in `st` says it was sampled: it holds
 * sample_ratio events, or it is a capture whose metadata gives a ratio
 * (beamtrace_sample_<kind>). */
int bmt_tally_is_sampled(const struct bmt_reader *r, const struct bmt_tally *st);

/* For a sampled trace: reads `paths` (`count` of them, as `st` was
 * counted) once more into `r`, in time order, to scale each event back by
 * the ratio in force at its time; fills st->scaled, row_scaled, sampled,
 * row_sampled and ratios. Returns 0, -ENOMEM or the reader's error, with
 * r->error set (the caller closes `r` in every case). */
int bmt_tally_scale(struct bmt_reader *r, const char *const *paths, unsigned count,
                    struct bmt_tally *st);

#endif
