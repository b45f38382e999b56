/* The relayd client (contract in relayd_client.h): the connection
 * (sockets, handshake, commands and replies, reconnection) and the
 * session's streams on it (packets as records, their data and indexes,
 * delivery confirmations, beacons, the end).
 *
 * One file of ~1100 lines on purpose, for now: the connection and the
 * streams call each other (a reply settles records, a record needs a
 * command), and the two-file split this replaced made an include/use cycle
 * (tools/check_layers.py). The layered split (the queues and stream
 * bookkeeping as an "outbox" below the connection, no calls back) is work
 * in progress, not yet passing test/relayd.
 *
 * A connection goes CONNECTING (two non-blocking connects, then VERSION)
 * -> handshake (CREATE_SESSION, CREATE_TRACE_CHUNK, ADD_STREAM "metadata",
 * pipelined, then the metadata text once its stream handle is known) ->
 * STREAMING. Data streams are added when they have something to send.
 * Every command but SEND_METADATA is answered, in order: `expect` is the
 * FIFO of the replies to come, and a reply that is not what is expected
 * ends the connection.
 *
 * Packets wait as records (what the data header and index need) plus their
 * bytes in the data queue, both FIFO. A record goes out on the data
 * connection once its stream has a relayd handle; its index goes on the
 * control connection after it. Records stay until a DATA_PENDING reply
 * confirms them, so that a broken connection knows exactly which events it
 * took with it.
 *
 * One thread at a time (the contract's driver) uses everything here but
 * bmt_relayd_stats_get, which reads the published copy under pub_lock.
 */
#define _GNU_SOURCE /* MSG_NOSIGNAL, SOCK_NONBLOCK */
#include "relayd_client.h"
#include "relayd_proto.h"
#include "relayd_queue.h"
#include "core/event.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

/* ---- the connection (defined below) ---- */

/* CLOCK_MONOTONIC, ns. */
static uint64_t mono_ns(void);
/* Records the last failure: errno and a one-line text. */
static void set_error(struct bmt_relayd *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Copies the driver's figures to where bmt_relayd_stats_get reads them. */
static void publish(struct bmt_relayd *r);
/* Ends the connection (err != 0: a failure, said as `what`): what the
 * relayd confirmed counts as delivered, the rest as lost; a new attempt
 * comes after the backoff. */
static void drop(struct bmt_relayd *r, int err, const char *what);
/* Queues command bytes `msg` (`len`) whose reply is `kind` (none when
 * kind < 0). Returns 0, or -1 when the control queue or the reply FIFO is
 * full (nothing queued). */
static int command(struct bmt_relayd *r, const void *msg, size_t len, int kind,
                   uint32_t stream, uint64_t seq);
/* One step of everything, without blocking (bmt_relayd_pump without the
 * publishing). */
static void step(struct bmt_relayd *r, uint64_t now);

/* ---- the streams (defined at the end) ---- */

static inline struct record *record_at(const struct bmt_relayd *r, uint64_t abs)
{
    return &r->rec[abs % MAX_RECORDS];
}

/* 1 when record `rec` was confirmed written by the relayd. */
static int confirmed(const struct bmt_relayd *r, const struct record *rec);
/* The connection ended: settles every record (delivered if confirmed,
 * else lost) and forgets what the streams had on it. */
static void settle(struct bmt_relayd *r);
/* Streaming, each step: adds streams that have packets and no relayd
 * stream, and asks for delivery confirmations when due. */
static void streams_step(struct bmt_relayd *r, uint64_t now);
/* Sends packets on the data connection as far as it takes them, and
 * queues the indexes of those sent. Returns 0 or a negative errno. */
static int send_packets(struct bmt_relayd *r);
/* Counts the oldest records confirmed as delivered. */
static void pop_confirmed(struct bmt_relayd *r);
/* 1 when the next packet to send can go (its stream has a handle). */
static int data_ready(const struct bmt_relayd *r);
/* A live connection just opened: every stream gets its empty packet. */
static void open_live_streams(struct bmt_relayd *r);


static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *bmt_relayd_state_name(enum bmt_relayd_state state)
{
    switch (state) {
    case BMT_RELAYD_CONNECTING: return "connecting";
    case BMT_RELAYD_STREAMING: return "streaming";
    case BMT_RELAYD_DISCONNECTED: return "disconnected";
    case BMT_RELAYD_CLOSED: return "closed";
    case BMT_RELAYD_FAILED: return "failed";
    }
    return "failed";
}

static enum bmt_relayd_state public_state(enum conn c)
{
    switch (c) {
    case C_IDLE: return BMT_RELAYD_DISCONNECTED;
    case C_CONNECTING:
    case C_VERSION:
    case C_SESSION: return BMT_RELAYD_CONNECTING;
    case C_STREAMING:
    case C_CLOSING: return BMT_RELAYD_STREAMING;
    case C_CLOSED: return BMT_RELAYD_CLOSED;
    case C_FAILED: return BMT_RELAYD_FAILED;
    }
    return BMT_RELAYD_FAILED;
}

static void set_error(struct bmt_relayd *r, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->now.error_text, sizeof r->now.error_text, fmt, ap);
    r->texts_changed = 1;
    va_end(ap);
    r->now.error = err;
}

static void publish(struct bmt_relayd *r)
{
    r->now.state = public_state(r->conn);
    r->now.queued_bytes = r->data.len;
    pthread_mutex_lock(&r->pub_lock);
    if (r->texts_changed)
        r->pub = r->now;
    else
        memcpy(&r->pub, &r->now, offsetof(struct bmt_relayd_stats, url));
    r->texts_changed = 0;
    pthread_mutex_unlock(&r->pub_lock);
}

void bmt_relayd_stats_get(struct bmt_relayd *r, struct bmt_relayd_stats *st)
{
    pthread_mutex_lock(&r->pub_lock);
    *st = r->pub;
    pthread_mutex_unlock(&r->pub_lock);
}

/* ---- setup ---- */

int bmt_relayd_resolve(struct bmt_relayd_config *cfg, char *why, size_t why_size)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = cfg->url.ipv6 ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(cfg->url.host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(why, why_size, "cannot resolve relayd host \"%s\" (%s): check the URL's host",
                 cfg->url.host, gai_strerror(rc));
        return rc == EAI_MEMORY ? -ENOMEM : -EHOSTUNREACH;
    }
    if (res->ai_addrlen > sizeof cfg->control_addr) {
        freeaddrinfo(res);
        return -EINVAL;
    }
    memcpy(&cfg->control_addr, res->ai_addr, res->ai_addrlen);
    memcpy(&cfg->data_addr, res->ai_addr, res->ai_addrlen);
    cfg->control_addr_len = cfg->data_addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    if (cfg->control_addr.ss_family == AF_INET6) {
        ((struct sockaddr_in6 *)&cfg->control_addr)->sin6_port = htons(cfg->url.control_port);
        ((struct sockaddr_in6 *)&cfg->data_addr)->sin6_port = htons(cfg->url.data_port);
    } else {
        ((struct sockaddr_in *)&cfg->control_addr)->sin_port = htons(cfg->url.control_port);
        ((struct sockaddr_in *)&cfg->data_addr)->sin_port = htons(cfg->url.data_port);
    }
    return 0;
}

struct bmt_relayd *bmt_relayd_new(const struct bmt_relayd_config *cfg)
{
    struct bmt_relayd *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->cfg = *cfg;
    r->ctl_fd = r->data_fd = -1;
    r->conn = C_IDLE;
    r->backoff_ns = BACKOFF_MIN_NS;
    if (pthread_mutex_init(&r->pub_lock, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->metadata = malloc(cfg->metadata_bytes ? cfg->metadata_bytes : 1);
    r->expect = calloc(MAX_EXPECT, sizeof *r->expect);
    r->rec = calloc(MAX_RECORDS, sizeof *r->rec);
    r->streams = calloc(cfg->stream_count ? cfg->stream_count : 1, sizeof *r->streams);
    size_t data_bytes = cfg->queue_bytes < 64 * 1024 ? 64 * 1024 : cfg->queue_bytes;
    if (!r->metadata || !r->expect || !r->rec || !r->streams ||
        bmt_byteq_init(&r->ctl, CONTROL_QUEUE_BYTES + cfg->metadata_bytes) != 0 ||
        bmt_byteq_init(&r->data, data_bytes) != 0) {
        bmt_relayd_free(r);
        return NULL;
    }
    memcpy(r->metadata, cfg->metadata, cfg->metadata_bytes);
    r->cfg.metadata = r->metadata;
    r->now.state = BMT_RELAYD_CONNECTING;
    memcpy(r->now.url, cfg->url.text, sizeof r->now.url);
    r->pub = r->now;
    return r;
}

static void close_fds(struct bmt_relayd *r)
{
    if (r->ctl_fd >= 0)
        close(r->ctl_fd);
    if (r->data_fd >= 0)
        close(r->data_fd);
    r->ctl_fd = r->data_fd = -1;
}

void bmt_relayd_free(struct bmt_relayd *r)
{
    if (!r)
        return;
    close_fds(r);
    bmt_byteq_free(&r->ctl);
    bmt_byteq_free(&r->data);
    free(r->metadata);
    free(r->expect);
    free(r->rec);
    free(r->streams);
    pthread_mutex_destroy(&r->pub_lock);
    free(r);
}

/* ---- the connection's end ---- */

static void drop(struct bmt_relayd *r, int err, const char *what)
{
    if (err && (r->conn == C_STREAMING || r->conn == C_CLOSING))
        r->now.disconnections++;
    if (err)
        set_error(r, err, "lttng-relayd at %s:%u: %s (%s)", r->cfg.url.host,
                  r->cfg.url.control_port, what, strerror(err));
    settle(r);
    bmt_byteq_clear(&r->ctl);
    bmt_byteq_clear(&r->data);
    r->expect_head = r->expect_count = 0;
    r->reply_len = 0;
    close_fds(r);
    r->conn = C_IDLE;
    uint64_t now = mono_ns();
    r->retry_ns = now + r->backoff_ns;
    r->backoff_ns = r->backoff_ns * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : r->backoff_ns * 2;
}

/* A failure no reconnection can cure. */
static void fail(struct bmt_relayd *r, int err, const char *fmt, const char *detail)
{
    drop(r, 0, "");
    set_error(r, err, fmt, detail);
    r->conn = C_FAILED;
}

/* ---- commands ---- */

static int expect_push(struct bmt_relayd *r, enum reply kind, uint32_t stream, uint64_t seq)
{
    if (r->expect_count == MAX_EXPECT)
        return -1;
    struct expect *e = &r->expect[(r->expect_head + r->expect_count) % MAX_EXPECT];
    e->kind = (uint8_t)kind;
    e->stream = stream;
    e->seq = seq;
    e->since_ns = mono_ns();
    r->expect_count++;
    return 0;
}

static int command(struct bmt_relayd *r, const void *msg, size_t len, int kind,
                   uint32_t stream, uint64_t seq)
{
    if (bmt_byteq_room(&r->ctl) < len || (kind >= 0 && r->expect_count == MAX_EXPECT))
        return -1;
    bmt_byteq_push(&r->ctl, msg, len);
    if (kind >= 0)
        expect_push(r, (enum reply)kind, stream, seq);
    return 0;
}

/* "20250102-030405", local time, as the relayd names directories. */
static void datetime(uint64_t t, char out[16])
{
    time_t tt = (time_t)t;
    struct tm tm;
    localtime_r(&tt, &tm);
    strftime(out, 16, "%Y%m%d-%H%M%S", &tm);
}

static void send_handshake(struct bmt_relayd *r)
{
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + 1024];
    struct bmt_relayd_session_args a = {0};
    a.session_name = r->cfg.session_name;
    a.hostname = r->cfg.hostname;
    a.base_path = r->cfg.url.base_path;
    a.live_timer_us = r->cfg.live_timer_us;
    a.name_contains_creation_time = r->cfg.name_is_final;
    /* A uuid of this connection's own: the relayd keys trace chunks by
     * (sessiond uuid, session id), and two connections sharing one would
     * share a chunk, and a directory. */
    if (getrandom(a.sessiond_uuid, sizeof a.sessiond_uuid, 0) != (ssize_t)sizeof a.sessiond_uuid)
        for (size_t i = 0; i < sizeof a.sessiond_uuid; i++)
            a.sessiond_uuid[i] = (uint8_t)(mono_ns() >> (i % 8 * 8) ^ i);
    a.sessiond_uuid[6] = (uint8_t)((a.sessiond_uuid[6] & 0x0f) | 0x40);
    a.session_id = 1;
    a.creation_time_s = r->cfg.start_time_s;
    long len = bmt_relayd_encode_create_session(msg, sizeof msg, &a);
    if (len < 0) {
        fail(r, EINVAL, "lttng-relayd: bad session or host name \"%s\"", r->cfg.session_name);
        return;
    }
    command(r, msg, (size_t)len, R_SESSION, 0, 0);
    command(r, msg, bmt_relayd_encode_create_chunk(msg, 0, r->conn_time_s), R_CHUNK, 0, 0);
    len = bmt_relayd_encode_add_stream(msg, sizeof msg, METADATA_CHANNEL, r->trace_dir, 0);
    if (len < 0) {
        fail(r, ENAMETOOLONG, "lttng-relayd: trace path too long: %s", r->trace_dir);
        return;
    }
    command(r, msg, (size_t)len, R_METADATA_STREAM, 0, 0);
    r->conn = C_SESSION;
}

/* ---- sockets ---- */

static int open_socket(const struct sockaddr_storage *addr, socklen_t len)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1, idle_s = 10, interval_s = 5, probes = 3;
    /* Commands are small and wait for their replies; packets go whole. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* A relayd host that vanishes while the session is idle (nothing owed,
     * so no reply can be late) is noticed in about 25 s, not the kernel's
     * default two hours. */
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    if (connect(fd, (const struct sockaddr *)addr, len) != 0 && errno != EINPROGRESS) {
        int err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

static void start_connect(struct bmt_relayd *r, uint64_t now)
{
    r->conn_time_s = (uint64_t)time(NULL);
    int fd = open_socket(&r->cfg.control_addr, r->cfg.control_addr_len);
    if (fd < 0) {
        drop(r, -fd, "cannot connect");
        return;
    }
    r->ctl_fd = fd;
    fd = open_socket(&r->cfg.data_addr, r->cfg.data_addr_len);
    if (fd < 0) {
        drop(r, -fd, "cannot connect the data port");
        return;
    }
    r->data_fd = fd;
    r->deadline_ns = now + CONNECT_TIMEOUT_NS;
    r->conn = C_CONNECTING;
}

/* 1 when fd's connect finished, 0 while in progress, -errno on failure. */
static int connected(int fd)
{
    struct pollfd p = {fd, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0)
        return 0;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return -errno;
    return err ? -err : 1;
}

static int send_queue(int fd, struct bmt_byteq *q)
{
    while (q->len > 0) {
        struct iovec iov[2];
        struct msghdr mh = {0};
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)bmt_byteq_iov(q, q->len, iov);
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -errno;
        }
        bmt_byteq_drop(q, (size_t)n);
    }
    return 0;
}

/* ---- replies ---- */

static size_t reply_size(const struct bmt_relayd *r, enum reply kind)
{
    switch (kind) {
    case R_VERSION: return BMT_RELAYD_REPLY_VERSION_BYTES;
    case R_SESSION: {
        size_t path = r->reply_len >= BMT_RELAYD_REPLY_SESSION_BYTES
                          ? bmt_relayd_get_be32(r->reply + 12) : 0;
        return BMT_RELAYD_REPLY_SESSION_BYTES + path;
    }
    case R_METADATA_STREAM:
    case R_STREAM: return BMT_RELAYD_REPLY_STREAM_BYTES;
    case R_CLOSE_CHUNK: {
        size_t path = 0;
        /* The path follows only when the close succeeded. */
        if (r->reply_len >= BMT_RELAYD_REPLY_CLOSE_CHUNK_BYTES &&
            bmt_relayd_get_be32(r->reply) == BMT_RELAYD_OK)
            path = bmt_relayd_get_be32(r->reply + 4);
        return BMT_RELAYD_REPLY_CLOSE_CHUNK_BYTES + path;
    }
    case R_CHUNK:
    case R_GENERIC:
    case R_PENDING: return BMT_RELAYD_REPLY_GENERIC_BYTES;
    }
    return BMT_RELAYD_REPLY_GENERIC_BYTES;
}

static void on_version(struct bmt_relayd *r)
{
    uint32_t major = bmt_relayd_get_be32(r->reply), minor = bmt_relayd_get_be32(r->reply + 4);
    char detail[64];
    snprintf(detail, sizeof detail, "%u.%u", major, minor);
    if (major != BMT_RELAYD_MAJOR || minor < BMT_RELAYD_MIN_MINOR) {
        fail(r, EPROTONOSUPPORT,
             "lttng-relayd speaks protocol %s: beamtrace needs 2.11 or later (LTTng 2.11+); "
             "upgrade lttng-relayd", detail);
        return;
    }
    r->minor = minor < BMT_RELAYD_MINOR ? minor : BMT_RELAYD_MINOR;
    send_handshake(r);
}

/* Handles the complete reply at the head of `expect`. Returns 0 or -1 when
 * the connection must end (already done). */
static int on_reply(struct bmt_relayd *r, const struct expect *e)
{
    const uint8_t *p = r->reply;
    uint32_t ret;
    switch ((enum reply)e->kind) {
    case R_VERSION:
        on_version(r);
        return r->conn == C_FAILED ? -1 : 0;
    case R_SESSION: {
        ret = bmt_relayd_get_be32(p + 8);
        if (ret != BMT_RELAYD_OK) {
            drop(r, EPROTO, "refused to create the session (is its output directory writable?)");
            return -1;
        }
        size_t path_len = bmt_relayd_get_be32(p + 12);
        /* <host>/<session>[-<datetime>], relative to the relayd's output;
         * then this connection's directory (both bounded: the path fits
         * the reply buffer, the directory 512 bytes). */
        char *out = r->now.path;
        r->texts_changed = 1;
        size_t n = path_len, dir = strlen(r->trace_dir);
        while (n > 0 && p[BMT_RELAYD_REPLY_SESSION_BYTES + n - 1] == '\0')
            n--;
        if (n + 1 + dir + 1 > sizeof r->now.path)
            n = sizeof r->now.path - dir - 2;
        memcpy(out, p + BMT_RELAYD_REPLY_SESSION_BYTES, n);
        out[n] = '/';
        memcpy(out + n + 1, r->trace_dir, dir + 1);
        return 0;
    }
    case R_METADATA_STREAM:
    case R_STREAM: {
        ret = bmt_relayd_get_be32(p + 8);
        if (ret != BMT_RELAYD_OK) {
            drop(r, EPROTO, "refused a stream");
            return -1;
        }
        uint64_t handle = bmt_relayd_get_be64(p);
        if (e->kind == R_STREAM) {
            r->streams[e->stream].handle = handle;
            r->streams[e->stream].has_handle = 1;
            return 0;
        }
        r->metadata_handle = handle;
        uint8_t hdr[36];
        size_t hlen = bmt_relayd_encode_metadata_header(hdr, handle, r->cfg.metadata_bytes);
        /* The queue was sized for this at creation. */
        if (command(r, hdr, hlen, -1, 0, 0) != 0 ||
            bmt_byteq_push(&r->ctl, r->metadata, r->cfg.metadata_bytes) != 0) {
            drop(r, ENOBUFS, "no room to send the metadata");
            return -1;
        }
        r->conn = C_STREAMING;
        if (r->cfg.live_timer_us)
            open_live_streams(r);
        /* The last failure stays said (error, error_text): it is why the
         * copy has a gap. */
        r->now.connections++;
        r->backoff_ns = BACKOFF_MIN_NS;
        return 0;
    }
    case R_PENDING: {
        struct stream *st = &r->streams[e->stream];
        st->querying = 0;
        ret = bmt_relayd_get_be32(p);
        if (ret == 0) {
            st->confirmed_seq = e->seq;
            st->has_confirmed = 1;
        } else if (ret != 1) {
            drop(r, EPROTO, "does not know a stream it accepted");
            return -1;
        }
        return 0;
    }
    case R_CLOSE_CHUNK:
        return 0; /* the chunk is closed either way: the connection ends next */
    case R_CHUNK:
    case R_GENERIC:
        ret = bmt_relayd_get_be32(p);
        if (ret != BMT_RELAYD_OK) {
            drop(r, EPROTO, e->kind == R_CHUNK ? "refused to create the trace chunk"
                                                : "refused a command");
            return -1;
        }
        return 0;
    }
    return 0;
}

/* Reads and handles every complete reply available. Returns 0 or -1 when
 * the connection ended. */
static int read_replies(struct bmt_relayd *r)
{
    for (;;) {
        if (r->expect_count == 0) {
            /* Nothing is owed: anything readable is EOF or a protocol
             * error. */
            uint8_t b;
            ssize_t n = recv(r->ctl_fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
            if (n == 0) {
                drop(r, ECONNRESET, "closed the connection");
                return -1;
            }
            if (n > 0) {
                drop(r, EPROTO, "sent an unexpected reply");
                return -1;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                drop(r, errno, "connection failed");
                return -1;
            }
            return 0;
        }
        struct expect *e = &r->expect[r->expect_head];
        size_t want = reply_size(r, (enum reply)e->kind);
        if (want > sizeof r->reply) {
            drop(r, EPROTO, "sent a reply longer than the protocol allows");
            return -1;
        }
        while (r->reply_len < want) {
            ssize_t n = recv(r->ctl_fd, r->reply + r->reply_len, want - r->reply_len,
                             MSG_DONTWAIT);
            if (n == 0) {
                drop(r, ECONNRESET, "closed the connection");
                return -1;
            }
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return 0;
                drop(r, errno, "connection failed");
                return -1;
            }
            r->reply_len += (size_t)n;
            /* A reply with a length field may have grown. */
            want = reply_size(r, (enum reply)e->kind);
            if (want > sizeof r->reply) {
                drop(r, EPROTO, "sent a reply longer than the protocol allows");
                return -1;
            }
        }
        struct expect done = *e;
        r->expect_head = (r->expect_head + 1) % MAX_EXPECT;
        r->expect_count--;
        int rc = on_reply(r, &done);
        r->reply_len = 0;
        if (rc < 0)
            return -1;
    }
}

/* ---- driving ---- */

int bmt_relayd_pollfds(const struct bmt_relayd *r, struct pollfd *fds)
{
    if (r->ctl_fd < 0)
        return 0;
    if (r->conn == C_CONNECTING) {
        fds[0] = (struct pollfd){r->ctl_fd, POLLOUT, 0};
        fds[1] = (struct pollfd){r->data_fd, POLLOUT, 0};
        return 2;
    }
    fds[0] = (struct pollfd){r->ctl_fd, (short)(POLLIN | (r->ctl.len ? POLLOUT : 0)), 0};
    fds[1] = (struct pollfd){r->data_fd, (short)(data_ready(r) ? POLLOUT : 0), 0};
    return 2;
}

/* The oldest reply owed is too late. */
static int stalled(const struct bmt_relayd *r, uint64_t now)
{
    if (r->expect_count == 0)
        return 0;
    uint64_t limit = r->conn == C_STREAMING || r->conn == C_CLOSING ? STALL_TIMEOUT_NS
                                                                     : HANDSHAKE_TIMEOUT_NS;
    uint64_t since = r->expect[r->expect_head].since_ns;
    return now > since && now - since > limit;
}

static void step(struct bmt_relayd *r, uint64_t now)
{
    if (r->conn == C_IDLE && now >= r->retry_ns) {
        /* A new connection writes a new per-process directory, named by
         * the second it starts in: never one an earlier connection had. */
        if ((uint64_t)time(NULL) <= r->conn_time_s)
            return;
        start_connect(r, now);
    }
    if (r->conn == C_CONNECTING) {
        int a = connected(r->ctl_fd), b = connected(r->data_fd);
        if (a < 0 || b < 0) {
            drop(r, a < 0 ? -a : -b, "cannot connect");
            return;
        }
        if (now > r->deadline_ns) {
            drop(r, ETIMEDOUT, "cannot connect");
            return;
        }
        if (a == 0 || b == 0)
            return;
        char dt[16];
        datetime(r->conn_time_s, dt);
        char proc[32];
        snprintf(proc, sizeof proc, "%s", r->cfg.procname[0] ? r->cfg.procname : "beam");
        for (char *c = proc; *c; c++)
            if (*c == '/' || *c == ' ')
                *c = '_';
        snprintf(r->trace_dir, sizeof r->trace_dir, "ust/pid/%s-%lld-%s", proc,
                 (long long)r->cfg.vpid, dt);
        uint8_t msg[32];
        command(r, msg, bmt_relayd_encode_version(msg, BMT_RELAYD_MAJOR, BMT_RELAYD_MINOR),
                R_VERSION, 0, 0);
        r->conn = C_VERSION;
    }
    if (r->conn < C_VERSION || r->conn > C_CLOSING)
        return;
    if (r->conn == C_STREAMING)
        streams_step(r, now);
    int rc = send_queue(r->ctl_fd, &r->ctl);
    if (rc == 0 && r->conn == C_STREAMING) {
        rc = send_packets(r);
        if (rc == 0)
            rc = send_queue(r->ctl_fd, &r->ctl);
    }
    if (rc < 0) {
        drop(r, -rc, "connection failed");
        return;
    }
    if (read_replies(r) < 0)
        return;
    pop_confirmed(r);
    if (stalled(r, now))
        drop(r, ETIMEDOUT, "stopped answering");
}

void bmt_relayd_pump(struct bmt_relayd *r, uint64_t now_ns)
{
    step(r, now_ns);
    publish(r);
}

int bmt_relayd_open(struct bmt_relayd *r, uint64_t timeout_ns, char *why, size_t why_size)
{
    uint64_t deadline = mono_ns() + timeout_ns;
    r->conn_time_s = 0;
    r->retry_ns = 0;
    for (;;) {
        uint64_t now = mono_ns();
        step(r, now);
        if (r->conn == C_STREAMING)
            break;
        if (r->conn == C_IDLE || r->conn == C_FAILED || now >= deadline) {
            int err = r->conn == C_IDLE || r->conn == C_FAILED ? r->now.error : ETIMEDOUT;
            if (err == 0)
                err = ETIMEDOUT;
            char text[sizeof r->now.error_text];
            if (r->conn == C_FAILED || r->now.error_text[0])
                snprintf(text, sizeof text, "%s", r->now.error_text);
            else
                snprintf(text, sizeof text, "lttng-relayd at %s:%u: no answer within %llu ms",
                         r->cfg.url.host, r->cfg.url.control_port,
                         (unsigned long long)(timeout_ns / MS));
            if (err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH ||
                err == ENETUNREACH)
                set_error(r, err, "%.140s; is lttng-relayd running there (lttng-relayd -C "
                          "tcp://0.0.0.0:%u -D tcp://0.0.0.0:%u)?",
                          text, r->cfg.url.control_port, r->cfg.url.data_port);
            else
                set_error(r, err, "%s", text);
            snprintf(why, why_size, "%s", r->now.error_text);
            close_fds(r);
            r->conn = C_FAILED;
            publish(r);
            return -err;
        }
        struct pollfd fds[2];
        int n = bmt_relayd_pollfds(r, fds);
        uint64_t left_ms = (deadline - now) / MS + 1;
        poll(fds, (nfds_t)n, (int)(left_ms < 50 ? left_ms : 50));
    }
    publish(r);
    return 0;
}

/* ======== the streams ======== */

/* ---- records ---- */

static int confirmed(const struct bmt_relayd *r, const struct record *rec)
{
    const struct stream *st = &r->streams[rec->stream];
    return rec->index_sent && st->has_confirmed && rec->net_seq <= st->confirmed_seq;
}

static void pop_confirmed(struct bmt_relayd *r)
{
    while (r->rec_count > 0) {
        struct record *rec = record_at(r, r->rec_first);
        if (!confirmed(r, rec))
            break;
        struct stream *st = &r->streams[rec->stream];
        st->events += rec->events;
        st->stamped = rec->discarded;
        st->in_flight--;
        r->now.events += rec->events;
        r->now.bytes += rec->bytes;
        r->rec_first++;
        r->rec_count--;
    }
}

/* ---- the connection's end ---- */

static void settle(struct bmt_relayd *r)
{
    for (uint64_t n = 0; n < r->rec_count; n++) {
        struct record *rec = record_at(r, r->rec_first + n);
        struct stream *st = &r->streams[rec->stream];
        if (confirmed(r, rec)) {
            st->events += rec->events;
            st->stamped = rec->discarded;
            r->now.events += rec->events;
            r->now.bytes += rec->bytes;
        } else {
            st->net_lost += rec->events;
            r->now.lost += rec->events;
            if (r->rec_first + n < r->rec_data)
                r->now.unconfirmed += rec->events;
        }
        st->in_flight--;
    }
    r->rec_first += r->rec_count;
    r->rec_count = 0;
    r->rec_data = r->rec_index = r->rec_first;
    r->data_off = 0;
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        st->added = st->has_handle = st->querying = st->has_confirmed = st->data_sent = 0;
        st->next_net_seq = 0;
        st->unindexed = 0;
    }
}

/* Adds the streams that have something to send and no relayd stream yet,
 * then publishes them to live viewers. */
static void add_streams(struct bmt_relayd *r)
{
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + 1024];
    int added = 0;
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        if (st->added || st->in_flight == 0)
            continue;
        char channel[32];
        snprintf(channel, sizeof channel, "channel0_%u", i);
        long len = bmt_relayd_encode_add_stream(msg, sizeof msg, channel, r->trace_dir, 0);
        if (len < 0 || bmt_byteq_room(&r->ctl) < (size_t)len + 2 * BMT_RELAYD_CMD_HEADER_BYTES ||
            r->expect_count + 2 > MAX_EXPECT)
            break;
        command(r, msg, (size_t)len, R_STREAM, i, 0);
        st->added = 1;
        added = 1;
    }
    if (added)
        command(r, msg, bmt_relayd_encode_streams_sent(msg), R_GENERIC, 0, 0);
}

/* Queues the index of every record whose data went out. */
static void queue_indexes(struct bmt_relayd *r)
{
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + BMT_RELAYD_INDEX_BYTES];
    while (r->rec_index < r->rec_data) {
        struct record *rec = record_at(r, r->rec_index);
        struct stream *st = &r->streams[rec->stream];
        struct bmt_relayd_index ix = {
            .relay_stream = st->handle,
            .net_seq_num = rec->net_seq,
            .packet_size_bits = (uint64_t)rec->bytes * 8,
            .content_size_bits = (uint64_t)rec->bytes * 8,
            .timestamp_begin = rec->ts_begin,
            .timestamp_end = rec->ts_end,
            .events_discarded = rec->discarded,
            .stream_class_id = 0,
            .stream_instance_id = rec->stream,
            .packet_seq_num = rec->packet_seq,
        };
        if (command(r, msg, bmt_relayd_encode_index(msg, &ix), R_GENERIC, 0, 0) != 0)
            break;
        rec->index_sent = 1;
        st->unindexed--;
        st->indexed_seq = rec->net_seq;
        r->rec_index++;
    }
}

/* Asks, once per interval, which streams' packets the relayd has written. */
static void confirm(struct bmt_relayd *r, uint64_t now)
{
    if (now - r->last_confirm_ns < CONFIRM_INTERVAL_NS)
        return;
    r->last_confirm_ns = now;
    uint8_t msg[40];
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        if (!st->has_handle || st->querying || st->in_flight == st->unindexed ||
            (st->has_confirmed && st->confirmed_seq == st->indexed_seq))
            continue;
        if (command(r, msg, bmt_relayd_encode_data_pending(msg, st->handle, st->indexed_seq),
                    R_PENDING, i, st->indexed_seq) != 0)
            break;
        st->querying = 1;
    }
}

/* Sends records' packets while their streams have handles. */
static int send_data(struct bmt_relayd *r)
{
    while (r->rec_data < r->rec_first + r->rec_count) {
        struct record *rec = record_at(r, r->rec_data);
        struct stream *st = &r->streams[rec->stream];
        if (!st->has_handle)
            return 0;
        if (r->data_off == 0)
            bmt_relayd_put_data_header(r->data_hdr, st->handle, rec->net_seq, rec->bytes, 0);
        size_t total = BMT_RELAYD_DATA_HEADER_BYTES + rec->bytes;
        while (r->data_off < total) {
            struct iovec iov[3];
            int n = 0;
            size_t payload_sent = 0;
            if (r->data_off < BMT_RELAYD_DATA_HEADER_BYTES) {
                iov[n].iov_base = r->data_hdr + r->data_off;
                iov[n].iov_len = BMT_RELAYD_DATA_HEADER_BYTES - r->data_off;
                n++;
            } else {
                payload_sent = r->data_off - BMT_RELAYD_DATA_HEADER_BYTES;
            }
            /* The queue's oldest bytes are this record's unsent ones. */
            n += bmt_byteq_iov(&r->data, rec->bytes - payload_sent, iov + n);
            struct msghdr mh = {0};
            mh.msg_iov = iov;
            mh.msg_iovlen = (size_t)n;
            ssize_t w = sendmsg(r->data_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return 0;
                return -errno;
            }
            size_t before = r->data_off;
            r->data_off += (size_t)w;
            size_t hdr_part = before < BMT_RELAYD_DATA_HEADER_BYTES
                                  ? (r->data_off < BMT_RELAYD_DATA_HEADER_BYTES
                                         ? r->data_off - before
                                         : BMT_RELAYD_DATA_HEADER_BYTES - before)
                                  : 0;
            bmt_byteq_drop(&r->data, (size_t)w - hdr_part);
        }
        r->data_off = 0;
        st->data_sent = 1;
        r->rec_data++;
    }
    return 0;
}

static int send_packets(struct bmt_relayd *r)
{
    int rc = send_data(r);
    queue_indexes(r);
    return rc;
}

static void streams_step(struct bmt_relayd *r, uint64_t now)
{
    add_streams(r);
    confirm(r, now);
}

static int data_ready(const struct bmt_relayd *r)
{
    return r->rec_data < r->rec_first + r->rec_count &&
           r->streams[record_at(r, r->rec_data)->stream].has_handle;
}

/* ---- packets ---- */

/* Appends a record for `bytes` of packet (header `head`, already numbered
 * for the copy, then `body`) of stream `i`; the caller checked the room. */
static void push_record(struct bmt_relayd *r, unsigned i, const uint8_t *head, const uint8_t *body,
                        size_t bytes, uint32_t events)
{
    struct stream *st = &r->streams[i];
    bmt_byteq_push(&r->data, head, BMT_PKT_HEADER_BYTES);
    bmt_byteq_push(&r->data, body, bytes - BMT_PKT_HEADER_BYTES);
    struct record *rec = record_at(r, r->rec_first + r->rec_count);
    r->rec_count++;
    rec->stream = i;
    rec->events = events;
    rec->bytes = (uint32_t)bytes;
    rec->index_sent = 0;
    rec->net_seq = st->next_net_seq++;
    rec->ts_begin = bmt_get_u64(head + BMT_PKT_TS_BEGIN);
    rec->ts_end = bmt_get_u64(head + BMT_PKT_TS_END);
    rec->discarded = bmt_get_u64(head + BMT_PKT_EVENTS_DISCARDED);
    rec->packet_seq = bmt_get_u64(head + BMT_PKT_SEQ_NUM);
    st->in_flight++;
    st->unindexed++;
    st->ever = 1;
    if (rec->ts_end > st->last_ts_end)
        st->last_ts_end = rec->ts_end;
}

/* Numbers header `head` as stream `i`'s next packet in the copy, with
 * `discarded` as its loss count. */
static void number_packet(struct stream *st, uint8_t *head, size_t bytes, uint64_t discarded)
{
    bmt_put_u64(head + BMT_PKT_SEQ_NUM, st->next_packet_seq++);
    bmt_put_u64(head + BMT_PKT_EVENTS_DISCARDED, discarded);
    bmt_put_u64(head + BMT_PKT_PACKET_SIZE, (uint64_t)bytes * 8);
    bmt_put_u64(head + BMT_PKT_CONTENT_SIZE, (uint64_t)bytes * 8);
}

/* Queues a copy of `pkt` for stream `i`, or counts it lost.
 *
 * A stream's first packet in the copy never carries a loss: readers count
 * losses as the growth of events_discarded from one packet to the next,
 * and of a first packet's count babeltrace2 says only that events "may"
 * have been discarded. So when the first packet would carry one, an empty
 * packet with none, stamped at the recording's start (before any event of
 * the stream; plus the stream's number in ns, as open_live_streams), goes
 * before it, and the loss shows as a number. */
static void queue_packet(struct bmt_relayd *r, unsigned i, const uint8_t *pkt, size_t bytes,
                         uint32_t events)
{
    struct stream *st = &r->streams[i];
    uint64_t discarded = bytes >= BMT_PKT_HEADER_BYTES
                             ? bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED) + st->upstream_lost +
                                   st->net_lost
                             : 0;
    size_t opening = !st->ever && discarded > 0 ? BMT_PKT_HEADER_BYTES : 0;
    if (r->conn == C_FAILED || r->conn == C_CLOSED ||
        r->rec_count + 1 + (opening > 0) > MAX_RECORDS || bytes < BMT_PKT_HEADER_BYTES ||
        bytes > UINT32_MAX || bmt_byteq_room(&r->data) < bytes + opening) {
        st->net_lost += events;
        r->now.lost += events;
        return;
    }
    uint8_t head[BMT_PKT_HEADER_BYTES];
    if (opening) {
        uint64_t ts = r->cfg.start_ns + i;
        bmt_ctf_packet_open(head, r->cfg.uuid, i, ts);
        bmt_ctf_packet_close(head, ts, sizeof head, 0, 0);
        number_packet(st, head, sizeof head, 0);
        push_record(r, i, head, head + sizeof head, sizeof head, 0);
    }
    /* The copy's header: numbered for the relayd's copy, which may have
     * lost packets the ring did not, and its own losses added. */
    memcpy(head, pkt, sizeof head);
    number_packet(st, head, bytes, discarded);
    push_record(r, i, head, pkt + sizeof head, bytes, events);
    st->last_ring_discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
}

void bmt_relayd_packet(struct bmt_relayd *r, unsigned stream, const uint8_t *pkt, size_t bytes,
                       uint32_t events)
{
    if (stream < r->cfg.stream_count)
        queue_packet(r, stream, pkt, bytes, events);
}

void bmt_relayd_lose(struct bmt_relayd *r, unsigned stream, uint64_t events)
{
    if (stream < r->cfg.stream_count)
        r->streams[stream].upstream_lost += events;
}

void bmt_relayd_idle(struct bmt_relayd *r, unsigned stream, uint64_t idle_until_ns,
                     uint64_t now_ns)
{
    if (stream >= r->cfg.stream_count || r->cfg.live_timer_us == 0 || r->conn != C_STREAMING)
        return;
    struct stream *st = &r->streams[stream];
    if (!st->has_handle || !st->data_sent || st->unindexed > 0 ||
        now_ns - st->last_beacon_ns < (uint64_t)r->cfg.live_timer_us * 1000)
        return;
    /* Never before what the stream already said: viewers need its time to
     * go forward. Less the stream's number in ns: streams idle together
     * would otherwise say the same time, which babeltrace2 warns it cannot
     * order (an earlier time claims less, so this is always safe). */
    uint64_t until = idle_until_ns > stream ? idle_until_ns - stream : idle_until_ns;
    uint64_t ts = until > st->last_ts_end ? until : st->last_ts_end;
    struct bmt_relayd_index ix = {0};
    ix.relay_stream = st->handle;
    ix.net_seq_num = st->next_net_seq - 1;
    ix.timestamp_end = ts;
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + BMT_RELAYD_INDEX_BYTES];
    if (command(r, msg, bmt_relayd_encode_index(msg, &ix), R_GENERIC, 0, 0) == 0)
        st->last_beacon_ns = now_ns;
}

/* A header-only packet for stream `i`, stamped `ts_ns`, carrying the
 * ring's loss count `ring_discarded` (the client adds its own). */
static void queue_empty_packet(struct bmt_relayd *r, unsigned i, uint64_t ts_ns,
                               uint64_t ring_discarded)
{
    uint8_t pkt[BMT_PKT_HEADER_BYTES];
    bmt_ctf_packet_open(pkt, r->cfg.uuid, i, ts_ns);
    bmt_ctf_packet_close(pkt, ts_ns, sizeof pkt, 0, ring_discarded);
    queue_packet(r, i, pkt, sizeof pkt, 0);
}

/* Live sessions: every stream exists, with a packet, from the start of a
 * connection. A viewer must never meet a stream whose first packet is
 * older than what it has already shown from the others (babeltrace2 stops
 * with an error), which a stream added when its thread first records
 * could be; and a relayd honours a stream's beacons only once the stream
 * has a packet. The packet is empty, stamped no later than anything the
 * stream will send: its last packet's end, or the recording's start plus
 * the stream's number in ns (the start precedes any event by the whole
 * session start, milliseconds; distinct times spare babeltrace2 a warning
 * per stream that it cannot order identical messages). */
static void open_live_streams(struct bmt_relayd *r)
{
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        if (st->in_flight == 0)
            queue_empty_packet(r, i, st->ever ? st->last_ts_end : r->cfg.start_ns + i,
                               st->last_ring_discarded);
    }
}

/* ---- the end ---- */

/* Every stream's relayd copy has its final loss count and everything is
 * confirmed. Queues a closing packet where one is missing. */
static int sealed(struct bmt_relayd *r, const uint64_t *ring_discarded, unsigned count,
                  uint64_t ts_ns)
{
    int done = r->rec_count == 0;
    for (unsigned i = 0; i < count && i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        uint64_t ring = ring_discarded ? ring_discarded[i] : 0;
        uint64_t target = ring + st->upstream_lost + st->net_lost;
        if ((!st->ever && target == 0) || (st->ever && st->in_flight == 0 && st->stamped == target))
            continue;
        done = 0;
        if (st->in_flight > 0 || r->conn != C_STREAMING)
            continue;
        /* A header-only packet carrying the count, as trace_dir.c seals a
         * stream file. */
        queue_empty_packet(r, i, ts_ns > st->last_ts_end ? ts_ns : st->last_ts_end, ring);
    }
    return done;
}

int bmt_relayd_finish(struct bmt_relayd *r, const uint64_t *ring_discarded, unsigned count,
                      uint64_t ts_ns, uint64_t deadline_ns)
{
    int rc = -ETIMEDOUT;
    for (;;) {
        uint64_t now = mono_ns();
        if (r->conn == C_FAILED)
            break;
        if (r->conn == C_STREAMING && sealed(r, ring_discarded, count, ts_ns) &&
            r->expect_count == 0 && r->ctl.len == 0) {
            /* Everything is written: close the streams and the chunk, as
             * lttng destroy does, and wait for the answers. */
            uint8_t msg[48];
            for (unsigned i = 0; i < r->cfg.stream_count; i++)
                if (r->streams[i].has_handle)
                    command(r, msg,
                            bmt_relayd_encode_close_stream(msg, r->streams[i].handle,
                                                           r->streams[i].next_net_seq - 1),
                            R_GENERIC, 0, 0);
            command(r, msg, bmt_relayd_encode_close_stream(msg, r->metadata_handle, UINT64_MAX),
                    R_GENERIC, 0, 0);
            command(r, msg, bmt_relayd_encode_close_chunk(msg, 0, (uint64_t)time(NULL)),
                    R_CLOSE_CHUNK, 0, 0);
            r->conn = C_CLOSING;
        }
        if (r->conn == C_CLOSING && r->expect_count == 0 && r->ctl.len == 0) {
            rc = 0;
            break;
        }
        if (now >= deadline_ns)
            break;
        /* Ask for confirmations as often as they can come. */
        r->last_confirm_ns = 0;
        step(r, now);
        publish(r);
        struct pollfd fds[2];
        int n = bmt_relayd_pollfds(r, fds);
        uint64_t left_ms = (deadline_ns - now) / MS + 1;
        poll(fds, (nfds_t)n, (int)(left_ms < 20 ? left_ms : 20));
    }
    /* What is not confirmed now never will be. */
    int closed = rc == 0;
    char before[sizeof r->now.error_text];
    memcpy(before, r->now.error_text, sizeof before);
    drop(r, 0, "");
    if (!closed)
        set_error(r, ETIMEDOUT,
                             "lttng-relayd at %s:%u: the trace's end could not be delivered in "
                             "time; the relayd's copy lacks it (counted as discarded)%s%.150s",
                             r->cfg.url.host, r->cfg.url.control_port,
                             before[0] ? "; before: " : "", before);
    r->conn = closed ? C_CLOSED : C_FAILED;
    publish(r);
    return rc;
}
