/* What the relayd client has to send, by stream (relayd_outbox.c): the
 * session's packets as records (what the data header and the index need)
 * with their bytes in the data queue, the per-stream numbering of the
 * relayd's copy (packet sequence numbers, loss counts), sending them on
 * the data connection and their indexes on the control connection,
 * delivery confirmations (DATA_PENDING), live beacons, and the seal at
 * the end. Below the connection (relayd_client.c), which tells it when a
 * connection opens, answers and ends; it never calls back.
 *
 * Records stay until a DATA_PENDING reply confirms them, so that a broken
 * connection knows exactly which events it took with it (settle).
 *
 * One thread (the client's driver); no allocation after init; never waits.
 */
#ifndef BMT_RELAYD_OUTBOX_H
#define BMT_RELAYD_OUTBOX_H

#include "relayd_control.h"
#include "relayd_proto.h"
#include "relayd_queue.h"

#include <stddef.h>
#include <stdint.h>

struct bmt_relayd_record;
struct bmt_relayd_stream;

struct bmt_relayd_outbox {
    unsigned stream_count;
    uint64_t start_ns;        /* the recording's start, trace clock */
    uint8_t uuid[16];         /* the trace's */
    struct bmt_byteq data;    /* packets' bytes, oldest first */
    struct bmt_relayd_record *rec; /* ring of records */
    uint64_t rec_first;       /* absolute number of the oldest record */
    uint64_t rec_count;
    uint64_t rec_data;        /* absolute number of the first record not fully sent */
    size_t data_off;          /* bytes of it (header included) already sent */
    uint8_t data_hdr[BMT_RELAYD_DATA_HEADER_BYTES];
    uint64_t rec_index;       /* absolute number of the first record without index */
    struct bmt_relayd_stream *streams;
    uint64_t last_confirm_ns; /* when DATA_PENDING was last asked; 0: ask now */
    /* Figures of the whole recording. */
    uint64_t events;          /* confirmed in the relayd's copy */
    uint64_t bytes;           /* of those */
    uint64_t lost;            /* events lost for the relayd's copy */
    uint64_t unconfirmed;     /* of those, sent but never confirmed */
};

/* Allocates `stream_count` streams, the records and a data queue of
 * `queue_bytes` (at least 64 KiB). Returns 0 or -ENOMEM (then
 * bmt_relayd_outbox_free still applies). */
int bmt_relayd_outbox_init(struct bmt_relayd_outbox *o, unsigned stream_count, size_t queue_bytes,
                           uint64_t start_ns, const uint8_t uuid[16]);
/* Frees what init allocated (also after a failed init). */
void bmt_relayd_outbox_free(struct bmt_relayd_outbox *o);

/* Queues a copy of packet `pkt` (`bytes`, `events` events) of stream
 * `stream` for the relayd's copy, or, when it has no room or `accept` is
 * 0 (the session is over), counts its events lost. */
void bmt_relayd_outbox_packet(struct bmt_relayd_outbox *o, unsigned stream, const uint8_t *pkt,
                              size_t bytes, uint32_t events, int accept);
/* Stream `stream` lost `events` before the client (the ring's caps): the
 * copy's next packet says so. */
void bmt_relayd_outbox_lose(struct bmt_relayd_outbox *o, unsigned stream, uint64_t events);

/* The connection ended: settles every record (delivered if confirmed, else
 * lost), empties the data queue and forgets what the streams had on it. */
void bmt_relayd_outbox_settle(struct bmt_relayd_outbox *o);
/* A live connection just opened: every stream gets its empty packet. */
void bmt_relayd_outbox_open_live(struct bmt_relayd_outbox *o);

/* Streaming, each step: adds (ADD_STREAM, STREAMS_SENT on `c`, in
 * directory `trace_dir`) the streams that have packets and no relayd
 * stream, and asks for delivery confirmations when due. */
void bmt_relayd_outbox_step(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c,
                            const char *trace_dir, uint64_t now_ns);
/* Sends packets on data socket `fd` as far as it takes them, and queues
 * the indexes of those sent on `c`. Returns 0 or a negative errno. */
int bmt_relayd_outbox_send(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c, int fd);
/* 1 when the next packet to send can go (its stream has a handle). */
int bmt_relayd_outbox_ready(const struct bmt_relayd_outbox *o);
/* Counts the oldest records confirmed as delivered. */
void bmt_relayd_outbox_pop_confirmed(struct bmt_relayd_outbox *o);

/* The relayd's handle of stream `stream` (its ADD_STREAM reply): the
 * stream's packets can go. */
void bmt_relayd_outbox_handle(struct bmt_relayd_outbox *o, unsigned stream, uint64_t handle);
/* Whether the relayd wrote stream `stream`'s packets up to net sequence
 * number `seq` (DATA_PENDING's reply `pending`: 0 written, 1 not yet).
 * Returns 0, or -1 when the reply makes no sense (the relayd forgot the
 * stream). */
int bmt_relayd_outbox_pending(struct bmt_relayd_outbox *o, unsigned stream, uint64_t seq,
                              uint32_t pending);

/* Live: a beacon (an index without a packet) for idle stream `stream`,
 * saying it has nothing before `idle_until_ns`, once per `period_ns`. */
void bmt_relayd_outbox_beacon(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c,
                              unsigned stream, uint64_t idle_until_ns, uint64_t now_ns,
                              uint64_t period_ns);

/* Streaming, at the end: 1 when every stream's copy has its final loss
 * count (the rings' in `ring_discarded`, `count` streams) and everything
 * is confirmed; else queues a closing packet (stamped `ts_ns`) for every
 * stream where one is missing and nothing is in flight, and returns 0. */
int bmt_relayd_outbox_sealed(struct bmt_relayd_outbox *o, const uint64_t *ring_discarded,
                             unsigned count, uint64_t ts_ns);
/* Queues CLOSE_STREAM for every data stream the relayd knows. */
void bmt_relayd_outbox_close_streams(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c);

#endif
