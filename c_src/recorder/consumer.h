/* The consumer thread of a recording session (consumer.c): drains its
 * rings, flushes idle ones, applies its caps and rates, and finishes the
 * session when one of them stops it.
 */
#ifndef BMT_REC_CONSUMER_H
#define BMT_REC_CONSUMER_H

#include "recorder.h"

/* Starts the consumer thread of `s` (control held; s->state RUNNING, its
 * rings, wake_fd and generation set), in s->consumer. Returns 0, or
 * -EAGAIN when no thread could be made. */
int bmt_rec_consumer_start(struct bmt_recorder *rec, struct bmt_session *s);

#endif
