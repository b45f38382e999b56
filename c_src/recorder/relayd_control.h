/* The relayd's control connection as a pipeline (relayd_control.c):
 * commands queued to go out, and the FIFO of the replies they owe, read
 * off the socket as they come. The relayd answers every command but
 * SEND_METADATA, in order, so each reply is the oldest owed; its kind says
 * its size (some carry a length field). What a reply means is the
 * caller's (relayd_client.c); this layer only frames them.
 *
 * One thread (the client's driver); no allocation after init; never waits.
 */
#ifndef BMT_RELAYD_CONTROL_H
#define BMT_RELAYD_CONTROL_H

#include "relayd_proto.h"
#include "relayd_queue.h"

#include <stddef.h>
#include <stdint.h>

#define BMT_RELAYD_MAX_EXPECT 4096 /* replies outstanding */
#define BMT_RELAYD_REPLY_MAX_BYTES (BMT_RELAYD_REPLY_SESSION_BYTES + BMT_RELAYD_PATH_MAX)

/* What a reply answers. */
enum bmt_relayd_expect_kind {
    BMT_RELAYD_EXPECT_VERSION,
    BMT_RELAYD_EXPECT_SESSION,
    BMT_RELAYD_EXPECT_CHUNK,
    BMT_RELAYD_EXPECT_METADATA_STREAM,
    BMT_RELAYD_EXPECT_STREAM,      /* a data stream's handle */
    BMT_RELAYD_EXPECT_GENERIC,     /* STREAMS_SENT, SEND_INDEX, a beacon, CLOSE_STREAM */
    BMT_RELAYD_EXPECT_PENDING,     /* DATA_PENDING */
    BMT_RELAYD_EXPECT_CLOSE_CHUNK,
};

struct bmt_relayd_expect {
    uint8_t kind;         /* enum bmt_relayd_expect_kind */
    uint32_t stream;      /* the data stream it is about (STREAM, PENDING) */
    uint64_t seq;         /* the net sequence number asked about (PENDING) */
    uint64_t since_ns;    /* when the command was queued, CLOCK_MONOTONIC */
};

struct bmt_relayd_control {
    struct bmt_byteq out;                     /* commands not yet sent */
    struct bmt_relayd_expect *expect;         /* ring of BMT_RELAYD_MAX_EXPECT */
    unsigned head, count;
    uint8_t reply[BMT_RELAYD_REPLY_MAX_BYTES]; /* the reply being read, or the last one read */
    size_t reply_len;                         /* bytes of it read so far */
};

/* Allocates the command queue (`queue_bytes`) and the reply FIFO. Returns
 * 0 or -ENOMEM (then bmt_relayd_control_free still applies). */
int bmt_relayd_control_init(struct bmt_relayd_control *c, size_t queue_bytes);
/* Frees what init allocated (also after a failed init). */
void bmt_relayd_control_free(struct bmt_relayd_control *c);
/* Forgets every queued command and owed reply (the connection ended). */
void bmt_relayd_control_clear(struct bmt_relayd_control *c);

/* Queues command bytes `msg` (`len`) whose reply is `kind` (none when
 * kind < 0), about `stream` and `seq`. Returns 0, or -1 when the command
 * queue or the reply FIFO is full (nothing queued). */
int bmt_relayd_command(struct bmt_relayd_control *c, const void *msg, size_t len, int kind,
                       uint32_t stream, uint64_t seq);

/* Reads the next complete reply from control socket `fd` without waiting.
 * Returns 1 with it in c->reply and what it answers in *done (valid until
 * the next call); 0 when none is complete yet; or a negative errno when
 * the connection must end, with what happened in *what: -ECONNRESET (the
 * relayd closed it), -EPROTO (a reply nothing asked for, or longer than
 * the protocol allows), or the socket's error. */
int bmt_relayd_reply_next(struct bmt_relayd_control *c, int fd, struct bmt_relayd_expect *done,
                          const char **what);

/* 1 when the oldest reply owed has been awaited more than `limit_ns`. */
int bmt_relayd_control_stalled(const struct bmt_relayd_control *c, uint64_t now_ns,
                               uint64_t limit_ns);

#endif
