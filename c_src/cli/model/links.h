/* Matching each traced send to its receipt: the rule of docs/cluster.md
 * ("Matching a send to its receipt"; its reference implementation is
 * test/cluster/bmt_links.erl), over message_send_link and
 * message_receive_link events read in time order from one trace or a
 * cluster (process texts node-qualified by the reader, nodes.h).
 *
 * One FIFO queue of sends per (sender, receiver); a receipt is matched
 * against the queues it may come from (its sender when the receipt names
 * it, else every sender of its `from_node`; plus those senders' queues to
 * process aliases of its node) by the first send with its fingerprint.
 * One hit links; the sends before it in its queue were not received. No
 * hit: unmatched. Several: ambiguous, never guessed. Sends left at the end
 * are in flight (or to a receiver not traced). A link is uncertain when
 * its queue holds another send with the same fingerprint and a loss
 * (discarded events) on either node falls between send and receipt, or the
 * send precedes the receiver's trace.
 *
 * Why receipts wait: the rule orders nothing across nodes, but a reader
 * in time order may give a receipt before its send (OTP stamps a remote
 * send after the message may have left; clock offsets are estimates). So
 * each receipt is held back BMT_LINKS_DELAY_NS of trace time before it is
 * matched; a receipt stamped more than that before its send is unmatched.
 * Memory: per process pair with sends pending, per process, the sends
 * pending (at most BMT_LINKS_MAX_PENDING) and the receipts of the last
 * BMT_LINKS_DELAY_NS; never per event of the whole trace. Single-threaded.
 */
#ifndef BMT_CLI_LINKS_H
#define BMT_CLI_LINKS_H

#include "names.h"
#include "proc_state.h"
#include "ctf/reader.h"
#include "base/strtab.h"

#include <stdint.h>

#define BMT_LINKS_DELAY_NS 100000000ull  /* 100 ms */
#define BMT_LINKS_NONE UINT32_MAX
/* Sends pending at once (about 32 bytes each), beyond which a send is not
 * queued but counted (BMT_L_NOT_QUEUED): memory stays bounded when a
 * receiver's receipts are not traced. Its receipt then shows as unmatched. */
#define BMT_LINKS_MAX_PENDING (1u << 22)

/* What each send and receipt became (docs/cluster.md). */
enum bmt_links_kind {
    BMT_L_LINKED, BMT_L_UNCERTAIN,    /* sends (uncertain: also counted as linked) */
    BMT_L_NOT_RECEIVED, BMT_L_IN_FLIGHT, BMT_L_NOT_TRACED, BMT_L_DEAD, BMT_L_UNRESOLVED,
    BMT_L_EXTERNAL_SEND,
    BMT_L_NOT_QUEUED,                 /* more than BMT_LINKS_MAX_PENDING sends pending */
    BMT_L_UNMATCHED, BMT_L_AMBIGUOUS, BMT_L_EXTERNAL_RECEIPT, /* receipts */
    BMT_L_KIND_COUNT
};

/* A link, given to on_link when it is made (receipts are matched late:
 * calls are not in time order). Ids index bmt_links.procs. */
struct bmt_link {
    uint32_t sender, receiver;        /* process ids (receiver: the receipt's `to`) */
    uint32_t sender_node, receiver_node; /* node ids (bmt_links_node_name) */
    uint64_t send_ns, receipt_ns;     /* reader time */
    int uncertain;
    uint64_t weight;                  /* links it stands for: the send's and the receipt's ratios' product */
};

/* A send left in a queue at the end, given to on_left. */
struct bmt_left_send {
    uint32_t sender, receiver, sender_node, receiver_node;
    uint64_t send_ns;
    enum bmt_links_kind kind;         /* BMT_L_IN_FLIGHT or BMT_L_NOT_TRACED */
};

struct bmt_links_send;
struct bmt_links_queue;
struct bmt_links_receipt;

struct bmt_links {
    const struct bmt_reader *r;     /* set before the first event */
    const struct bmt_names *names;  /* registered names, for sends to a name */
    struct bmt_strtab procs;        /* process (and alias) texts -> ids */
    uint32_t *proc_node;            /* per process: node id */
    uint32_t *proc_queues;          /* per receiver: first queue to it, or NONE */
    uint8_t *proc_receives;         /* per process: has receipts in the trace */
    uint32_t proc_cap;
    struct bmt_links_send *sends;   /* pool; free list through next */
    uint32_t send_count, send_cap, send_free;
    struct bmt_links_queue *queues;
    uint32_t queue_count, queue_cap;
    struct bmt_u64map queue_of;     /* sender << 32 | receiver -> queue */
    struct bmt_u64map fp_count;     /* (queue, fingerprint) -> sends pending (links.c) */
    uint32_t *alias_queues;         /* per node: first queue to an alias of that node */
    struct bmt_links_receipt *held; /* receipts waiting, a ring in time order */
    uint32_t held_head, held_count, held_cap;
    uint64_t *trace_start_ns;       /* per trace: first event + 1, or 0 */
    struct bmt_window **losses;     /* per trace: ranges with discarded events */
    unsigned *loss_count, *loss_cap;
    unsigned trace_count;
    uint64_t count[BMT_L_KIND_COUNT];
    uint64_t link_send_count, link_receipt_count; /* events fed */
    /* Sampled (send, receive kinds: sampled.h): the caller sets `weight`,
     * the ratio in force, before feeding each event (1 when not sampled).
     * The same counts scaled back; links by the product of their send's and
     * receipt's. count[] is of the events kept. */
    uint32_t weight;
    uint64_t link_send_scaled, link_receipt_scaled, linked_scaled;
    void (*on_link)(void *ctx, const struct bmt_link *l);
    void (*on_left)(void *ctx, const struct bmt_left_send *s);
    void *ctx;
};

/* Prepares `l` for reader `r` (opened) and names `names` (kept current by
 * the caller). Returns 0 or -ENOMEM. */
int bmt_links_init(struct bmt_links *l, const struct bmt_reader *r, const struct bmt_names *names);

/* Takes one event (in time order; others than message_*_link, and the
 * trace's first events, only advance time). Returns 0 or -ENOMEM. */
int bmt_links_feed(struct bmt_links *l, const struct bmt_record *rec);

/* Notes that trace `trace` discarded events between reader times
 * [from_ns, to_ns]. Returns 0 or -ENOMEM. */
int bmt_links_loss(struct bmt_links *l, unsigned trace, uint64_t from_ns, uint64_t to_ns);

/* The same from a reader's on_packet hook (reader.h): the gap before a
 * packet that counts newly discarded events, or follows lost packets. */
int bmt_links_packet(struct bmt_links *l, const struct bmt_reader *r, unsigned stream,
                     const struct bmt_packet_info *info);

/* Matches every receipt still held, then classifies the sends left (on_left
 * for each). Returns 0 or -ENOMEM. */
int bmt_links_finish(struct bmt_links *l);

/* The name of node id `node` (a bmt_link's sender_node or receiver_node):
 * owned by the reader; "" for a single trace that names no node, "?" for
 * an id the reader does not know. */
const char *bmt_links_node_name(const struct bmt_links *l, uint32_t node);

/* How many traced nodes there are: their ids are 0 .. count-1 (a single
 * trace is node 0). */
uint32_t bmt_links_node_count(const struct bmt_links *l);

void bmt_links_free(struct bmt_links *l);

#endif
