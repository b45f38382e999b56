/* The `messages` analysis: every traced send matched to its receipt
 * (links.h, the rule of docs/cluster.md), with send -> receipt latency per
 * node pair and per process pair, and the oldest sends in flight at the
 * end. cmd/messages.c says more.
 *
 * Latency is the receipt's time minus the send's on the common timeline;
 * it can be negative (a remote send stamped after the message left, or
 * clocks within their error bounds), so it is kept as two histograms, one
 * per sign. With a filter, only pairs with a kept end are tabled. Memory:
 * per node pair, per process pair linked (a histogram each), and what
 * links.h holds.
 * In a sampled trace (send, receive kinds) the send and receipt events and
 * the links (per node and process pair) are scaled back: a link by the
 * product of its send's and its receipt's ratio (the two are kept apart);
 * what the other sends and receipts became is of the events kept (a
 * dropped receipt leaves its send not received), and latencies are as
 * measured. Single-threaded.
 */
#ifndef BMT_CLI_MESSAGES_H
#define BMT_CLI_MESSAGES_H

#include "acc.h"
#include "links.h"
#include "histogram.h"
#include "scope.h"

/* Signed latencies: magnitudes of negative ones and the others apart. */
struct bmt_slat {
    struct bmt_hist pos, neg;
};

struct bmt_msg_pair {
    uint32_t sender, receiver;      /* process ids of links.procs */
    uint64_t links;                 /* links, scaled back in a sampled trace */
    struct bmt_slat lat;
};

struct bmt_msg_left {
    uint32_t sender, receiver;
    uint64_t send_ns;
};

struct bmt_messages {
    struct bmt_an_scope *scope;
    struct bmt_reader *r;
    struct bmt_links links;
    int ready;
    unsigned top;
    uint32_t nodes;                 /* traced nodes */
    struct bmt_slat *node_lat;          /* nodes x nodes, by sender node then receiver node */
    uint64_t *node_links;           /* links, scaled back in a sampled trace */
    uint64_t *node_uncertain, *node_left;
    struct bmt_u64map pair_of;      /* sender << 32 | receiver -> pairs index */
    struct bmt_msg_pair *pairs;
    uint32_t pair_count, pair_cap;
    struct bmt_msg_left *lefts;             /* the `top` oldest sends left, oldest first */
    unsigned left_count;
    int error;                      /* -ENOMEM from a callback */
    int sampled;                    /* a link event was read while its kind was sampled */
};

/* Prepares `m` for `scope`; then set r (the reader the pass opens) and
 * top (how many of the oldest sends in flight to keep; 10). */
int bmt_messages_init(void *self, struct bmt_an_scope *scope);
/* Sets up the links and tables once the reader is open (on the first
 * packet or event). Returns 0 or -ENOMEM. */
int bmt_messages_ready(struct bmt_messages *m);
/* The reader's on_packet hook: losses make links uncertain. */
void bmt_messages_packet(void *ctx, const struct bmt_reader *r, unsigned stream,
                         const struct bmt_packet_info *info);
/* Takes every event (message_*_link events match; others advance time).
 * Returns 0 or -ENOMEM. */
int bmt_messages_feed(void *ctx, const struct bmt_record *rec);

/* Links of a signed latency, and its value at quantile q. */
uint64_t bmt_slat_count(const struct bmt_slat *s);
int64_t bmt_slat_quantile(const struct bmt_slat *s, double q);
void bmt_slat_free(struct bmt_slat *s);

void bmt_messages_free(void *self);

/* As an accumulator (acc.h): every event, and the link events' fields;
 * finish matches the receipts still held. */
extern const struct bmt_acc bmt_messages_acc;

#endif
