/* The `sched` analysis: latency from a message_send to the receiver's next
 * process_scheduled(in), from the first send the receiver has not run
 * since (a queue's delay) or the last (the scheduler's reaction, as the D
 * script). cmd/sched.c says more. Memory: per process and name.
 * Single-threaded.
 */
#ifndef BMT_CLI_SCHED_H
#define BMT_CLI_SCHED_H

#include "acc.h"
#include "scope.h"
#include "histogram.h"

struct bmt_sched {
    struct bmt_an_scope *scope;
    int from_last;              /* latency from the latest unconsumed send (the D script) */
    uint64_t *pending_ns;       /* per pid id: the send latencies count from, + 1, or 0 */
    uint32_t pid_cap;
    struct bmt_hist hist;       /* send -> scheduled in latency, ns */
    /* Sends are scaled back by the send ratio in force at each (sampled.h). */
    uint64_t send_count;        /* message_send events in the window */
    uint64_t resolved_count;    /* ... whose receiver is a known pid the filter keeps */
    /* A send or an `in` was read while its kind was sampled: a latency runs
     * from a send kept to the receiver's next `in` kept, so a dropped `in`
     * lengthens it and a dropped send hides it. The latencies are of the
     * events kept, neither scaled nor unbiased; the output says so. */
    int sampled_pairs;
    uint64_t cut_count;         /* latencies cut by the window's edges, not counted */
};

int bmt_sched_init(void *self, struct bmt_an_scope *scope);
int bmt_sched_feed(void *ctx, const struct bmt_record *rec);
void bmt_sched_free(void *self);

/* As an accumulator (acc.h): set from_last after init. */
extern const struct bmt_acc bmt_sched_acc;

#endif
