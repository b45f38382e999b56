/* Writing packets: a ring's published packets to the trace directory and
 * the relayd client, with the caps applied (drain.c). Used by the consumer
 * thread while a session runs and by the finish (writers out) after.
 */
#ifndef BMT_REC_DRAIN_H
#define BMT_REC_DRAIN_H

#include "recorder.h"

/* Total events offered to `s` so far (recorded or dropped by the rings). */
uint64_t bmt_rec_offered_count(struct bmt_session *s);

/* Events offered to `s` that neither its trace on disk holds nor its
 * packets on disk count as discarded: what a crash now would lose. */
uint64_t bmt_rec_unwritten_count(struct bmt_session *s);

/* Writes (or, past a cap when `capped` is 0, or always when it is 1, or
 * after a write failure, counts as lost) at most one ring's worth of the
 * published packets of ring `i` of `s`. Returns the reason the session
 * must stop for, or BMT_REASON_NONE. */
enum bmt_stop_reason bmt_rec_drain_ring(struct bmt_session *s, int i, int capped);

#endif
