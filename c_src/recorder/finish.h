/* Finishing a session, and releasing its core afterwards (finish.c). All
 * with the recorder's control lock held.
 */
#ifndef BMT_REC_FINISH_H
#define BMT_REC_FINISH_H

#include "recorder.h"

/* Finishes `s` (control held, state already FINISHING, consumer stopped or
 * the calling thread) for `reason`: waits for writers, drains every ring,
 * seals and closes the trace, fills s->final, frees the rings. */
void bmt_rec_finish(struct bmt_recorder *rec, struct bmt_session *s, enum bmt_stop_reason reason);

/* Fills *stats with the figures of a finished session, with the events
 * offered since it ended (after_stop: not losses). */
void bmt_rec_collect(struct bmt_session *s, struct bmt_rec_stats *stats);

/* Closes a finished session's trace (control held); a failure lands in
 * s->error. */
void bmt_rec_close_trace(struct bmt_session *s);

/* Joins the consumer of `s` if it still has one (control held). */
void bmt_rec_join_consumer(struct bmt_session *s);

/* Releases a finished core for reuse (control held): joins its consumer,
 * clears it as the default session, makes it FREE. */
void bmt_rec_release_core(struct bmt_recorder *rec, struct bmt_session *s);

#endif
