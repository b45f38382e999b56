/* The relayd client's internals, shared by its two files (contract in
 * relayd_client.h): relayd_client.c drives the connection (sockets, the
 * handshake, commands and their replies, reconnection), relayd_stream.c the
 * session's streams on it (packets as records, their data and indexes,
 * delivery confirmations, beacons, the end). One thread at a time (the
 * contract's driver) uses everything here.
 */
#ifndef BMT_RELAYD_CLIENT_PRIV_H
#define BMT_RELAYD_CLIENT_PRIV_H

#include "relayd_client.h"
#include "relayd_queue.h"

#include <pthread.h>

#define MS (UINT64_C(1000000))
#define CONFIRM_INTERVAL_NS (100 * MS) /* how often DATA_PENDING confirms delivery */
#define CONNECT_TIMEOUT_NS (5000 * MS)
#define HANDSHAKE_TIMEOUT_NS (10000 * MS) /* for any reply before streaming */
#define STALL_TIMEOUT_NS (60000 * MS)     /* a reply this late ends the connection */
#define BACKOFF_MIN_NS (500 * MS)
#define BACKOFF_MAX_NS (5000 * MS)
#define MAX_RECORDS 8192    /* packets queued or waiting for confirmation */
#define MAX_EXPECT 4096     /* replies outstanding */
#define CONTROL_QUEUE_BYTES (256 * 1024) /* commands, plus the metadata */
#define REPLY_BUFFER_BYTES (BMT_RELAYD_REPLY_SESSION_BYTES + BMT_RELAYD_PATH_MAX)
#define METADATA_CHANNEL "metadata"

enum conn {
    C_IDLE,       /* not connected; reconnect at retry_ns */
    C_CONNECTING, /* connects in progress */
    C_VERSION,    /* VERSION sent */
    C_SESSION,    /* session, chunk and metadata stream asked for */
    C_STREAMING,
    C_CLOSING,    /* streams and chunk being closed */
    C_CLOSED,
    C_FAILED,     /* never again */
};

enum reply {
    R_VERSION,
    R_SESSION,
    R_CHUNK,
    R_METADATA_STREAM,
    R_STREAM,     /* a data stream's handle */
    R_GENERIC,    /* STREAMS_SENT, SEND_INDEX, a beacon, CLOSE_STREAM */
    R_PENDING,    /* DATA_PENDING */
    R_CLOSE_CHUNK,
};

struct expect {
    uint8_t kind;         /* enum reply */
    uint32_t stream;
    uint64_t seq;
    uint64_t since_ns;    /* when the command was queued */
};

/* One packet on its way. */
struct record {
    uint32_t stream;
    uint32_t events;
    uint32_t bytes;       /* in the data queue until sent */
    uint8_t index_sent;   /* its data and its index went out */
    uint64_t net_seq;
    uint64_t ts_begin, ts_end;
    uint64_t discarded;   /* its events_discarded */
    uint64_t packet_seq;
};

struct stream {
    /* This connection. */
    uint8_t added;        /* ADD_STREAM sent */
    uint8_t has_handle;
    uint8_t querying;     /* a DATA_PENDING is out */
    uint8_t has_confirmed;
    uint8_t data_sent;    /* a packet went out (beacons need one) */
    uint64_t handle;
    uint64_t next_net_seq;
    uint64_t confirmed_seq;  /* written by the relayd up to here */
    uint64_t indexed_seq;    /* data and index sent up to here (valid if unindexed < queued) */
    uint64_t last_beacon_ns;
    /* The whole recording. */
    uint8_t ever;         /* has a packet in the relayd's copy, or on its way */
    uint32_t in_flight;   /* records of this stream */
    uint32_t unindexed;   /* of which not yet sent with their index */
    uint64_t next_packet_seq;
    uint64_t upstream_lost;  /* lost before the client (caps) */
    uint64_t net_lost;       /* lost by the client */
    uint64_t stamped;        /* events_discarded of the last packet confirmed */
    uint64_t last_ts_end;    /* of the last packet queued */
    uint64_t last_ring_discarded; /* the ring's count in the last packet queued */
    uint64_t events;         /* confirmed */
};

struct bmt_relayd {
    struct bmt_relayd_config cfg;
    char *metadata;
    enum conn conn;
    int ctl_fd, data_fd;
    uint64_t deadline_ns;     /* of the connect */
    uint64_t retry_ns;        /* when C_IDLE reconnects */
    uint64_t backoff_ns;
    uint64_t last_confirm_ns;
    uint64_t conn_time_s;     /* names the per-process directory */
    uint32_t minor;           /* negotiated */
    uint64_t metadata_handle;
    struct bmt_byteq ctl, data;
    struct expect *expect;
    unsigned expect_head, expect_count;
    uint8_t reply[REPLY_BUFFER_BYTES];
    size_t reply_len;
    struct record *rec;
    uint64_t rec_first;       /* absolute number of the oldest record */
    uint64_t rec_count;
    uint64_t rec_data;        /* absolute number of the first record not fully sent */
    size_t data_off;          /* bytes of it (header included) already sent */
    uint8_t data_hdr[BMT_RELAYD_DATA_HEADER_BYTES];
    uint64_t rec_index;       /* absolute number of the first record without index */
    struct stream *streams;
    char trace_dir[512];      /* ust/pid/<procname>-<pid>-<datetime> of this connection */
    /* Figures (the driver's), published to `pub` once per pump. */
    struct bmt_relayd_stats now;
    int texts_changed;        /* now's url, error_text or path changed since the last publish */
    pthread_mutex_t pub_lock;
    struct bmt_relayd_stats pub;
};

/* ---- relayd_client.c: the connection ---- */

/* CLOCK_MONOTONIC, ns. */
uint64_t bmt_relayd_mono_ns(void);
/* Records the last failure: errno and a one-line text. */
void bmt_relayd_set_error(struct bmt_relayd *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Copies the driver's figures to where bmt_relayd_stats_get reads them. */
void bmt_relayd_publish(struct bmt_relayd *r);
/* Ends the connection (err != 0: a failure, said as `what`): what the
 * relayd confirmed counts as delivered, the rest as lost; a new attempt
 * comes after the backoff. */
void bmt_relayd_drop(struct bmt_relayd *r, int err, const char *what);
/* Queues command bytes `msg` (`len`) whose reply is `kind` (none when
 * kind < 0). Returns 0, or -1 when the control queue or the reply FIFO is
 * full (nothing queued). */
int bmt_relayd_command(struct bmt_relayd *r, const void *msg, size_t len, int kind,
                       uint32_t stream, uint64_t seq);
/* One step of everything, without blocking (bmt_relayd_pump without the
 * publishing). */
void bmt_relayd_step(struct bmt_relayd *r, uint64_t now);

/* ---- relayd_stream.c: the streams ---- */

static inline struct record *bmt_relayd_record(const struct bmt_relayd *r, uint64_t abs)
{
    return &r->rec[abs % MAX_RECORDS];
}

/* 1 when record `rec` was confirmed written by the relayd. */
int bmt_relayd_confirmed(const struct bmt_relayd *r, const struct record *rec);
/* The connection ended: settles every record (delivered if confirmed,
 * else lost) and forgets what the streams had on it. */
void bmt_relayd_settle(struct bmt_relayd *r);
/* Streaming, each step: adds streams that have packets and no relayd
 * stream, and asks for delivery confirmations when due. */
void bmt_relayd_streams_step(struct bmt_relayd *r, uint64_t now);
/* Sends packets on the data connection as far as it takes them, and
 * queues the indexes of those sent. Returns 0 or a negative errno. */
int bmt_relayd_send_packets(struct bmt_relayd *r);
/* Counts the oldest records confirmed as delivered. */
void bmt_relayd_pop_confirmed(struct bmt_relayd *r);
/* 1 when the next packet to send can go (its stream has a handle). */
int bmt_relayd_data_ready(const struct bmt_relayd *r);
/* A live connection just opened: every stream gets its empty packet. */
void bmt_relayd_open_live_streams(struct bmt_relayd *r);

#endif
