/* Sends matched to their receives for a timeline's flow arrows, when the
 * trace has no links (record --links gives exact ones: links.h): a send
 * and a receive match when they have the same receiver and message text,
 * first sent first received.
 *
 * One FIFO of pending sends per (receiver, message) hash; at most
 * BMT_FLOWS_MAX_PENDING sends wait at once (each about 16 bytes), beyond
 * which a send gets no arrow and is counted, so memory stays bounded when
 * receives are not traced. Single-threaded.
 */
#ifndef BMT_CLI_FLOWS_H
#define BMT_CLI_FLOWS_H

#include "core/event.h"
#include "base/strtab.h"

#include <stdint.h>

#define BMT_FLOWS_MAX_PENDING (1u << 20)

struct bmt_flows_pend;
struct bmt_flows_queue;

struct bmt_flows {
    struct bmt_u64map pending;     /* hash(receiver, message) -> queue index */
    struct bmt_flows_pend *pends;
    struct bmt_flows_queue *queues;
    uint32_t pend_count, pend_cap, pend_free, queue_count, queue_cap, queue_free;
    uint64_t dropped_count;        /* sends not kept: too many pending */
};

void bmt_flows_init(struct bmt_flows *f);

/* Notes a send at `ts` by `from` (any id the caller keeps, e.g. a pid id)
 * to the process whose pid text is `to`, of message text `msg`. Returns 0
 * or -ENOMEM. */
int bmt_flows_send(struct bmt_flows *f, const struct bmt_value *to, uint32_t from, uint64_t ts,
                   const struct bmt_value *msg);

/* The send a receive by `to` of `msg` matches: 1 with *from and *ts of
 * the oldest such send (no longer pending), or 0 when there is none. */
int bmt_flows_receive(struct bmt_flows *f, const struct bmt_value *to, const struct bmt_value *msg,
                      uint32_t *from, uint64_t *ts);

void bmt_flows_free(struct bmt_flows *f);

#endif
