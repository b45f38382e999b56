/* The relayd client's connection (contract in relayd_client.h; internals
 * in relayd_client_priv.h; the streams in relayd_stream.c).
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
 */
#define _GNU_SOURCE /* MSG_NOSIGNAL, SOCK_NONBLOCK */
#include "relayd_client_priv.h"

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
#include <time.h>
#include <unistd.h>

uint64_t bmt_relayd_mono_ns(void)
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

void bmt_relayd_set_error(struct bmt_relayd *r, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->now.error_text, sizeof r->now.error_text, fmt, ap);
    r->texts_changed = 1;
    va_end(ap);
    r->now.error = err;
}

void bmt_relayd_publish(struct bmt_relayd *r)
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

void bmt_relayd_drop(struct bmt_relayd *r, int err, const char *what)
{
    if (err && (r->conn == C_STREAMING || r->conn == C_CLOSING))
        r->now.disconnections++;
    if (err)
        bmt_relayd_set_error(r, err, "lttng-relayd at %s:%u: %s (%s)", r->cfg.url.host,
                             r->cfg.url.control_port, what, strerror(err));
    bmt_relayd_settle(r);
    bmt_byteq_clear(&r->ctl);
    bmt_byteq_clear(&r->data);
    r->expect_head = r->expect_count = 0;
    r->reply_len = 0;
    close_fds(r);
    r->conn = C_IDLE;
    uint64_t now = bmt_relayd_mono_ns();
    r->retry_ns = now + r->backoff_ns;
    r->backoff_ns = r->backoff_ns * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : r->backoff_ns * 2;
}

/* A failure no reconnection can cure. */
static void fail(struct bmt_relayd *r, int err, const char *fmt, const char *detail)
{
    bmt_relayd_drop(r, 0, "");
    bmt_relayd_set_error(r, err, fmt, detail);
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
    e->since_ns = bmt_relayd_mono_ns();
    r->expect_count++;
    return 0;
}

int bmt_relayd_command(struct bmt_relayd *r, const void *msg, size_t len, int kind,
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
            a.sessiond_uuid[i] = (uint8_t)(bmt_relayd_mono_ns() >> (i % 8 * 8) ^ i);
    a.sessiond_uuid[6] = (uint8_t)((a.sessiond_uuid[6] & 0x0f) | 0x40);
    a.session_id = 1;
    a.creation_time_s = r->cfg.start_time_s;
    long len = bmt_relayd_encode_create_session(msg, sizeof msg, &a);
    if (len < 0) {
        fail(r, EINVAL, "lttng-relayd: bad session or host name \"%s\"", r->cfg.session_name);
        return;
    }
    bmt_relayd_command(r, msg, (size_t)len, R_SESSION, 0, 0);
    bmt_relayd_command(r, msg, bmt_relayd_encode_create_chunk(msg, 0, r->conn_time_s), R_CHUNK, 0, 0);
    len = bmt_relayd_encode_add_stream(msg, sizeof msg, METADATA_CHANNEL, r->trace_dir, 0);
    if (len < 0) {
        fail(r, ENAMETOOLONG, "lttng-relayd: trace path too long: %s", r->trace_dir);
        return;
    }
    bmt_relayd_command(r, msg, (size_t)len, R_METADATA_STREAM, 0, 0);
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
        bmt_relayd_drop(r, -fd, "cannot connect");
        return;
    }
    r->ctl_fd = fd;
    fd = open_socket(&r->cfg.data_addr, r->cfg.data_addr_len);
    if (fd < 0) {
        bmt_relayd_drop(r, -fd, "cannot connect the data port");
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
            bmt_relayd_drop(r, EPROTO, "refused to create the session (is its output directory writable?)");
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
            bmt_relayd_drop(r, EPROTO, "refused a stream");
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
        if (bmt_relayd_command(r, hdr, hlen, -1, 0, 0) != 0 ||
            bmt_byteq_push(&r->ctl, r->metadata, r->cfg.metadata_bytes) != 0) {
            bmt_relayd_drop(r, ENOBUFS, "no room to send the metadata");
            return -1;
        }
        r->conn = C_STREAMING;
        if (r->cfg.live_timer_us)
            bmt_relayd_open_live_streams(r);
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
            bmt_relayd_drop(r, EPROTO, "does not know a stream it accepted");
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
            bmt_relayd_drop(r, EPROTO, e->kind == R_CHUNK ? "refused to create the trace chunk"
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
                bmt_relayd_drop(r, ECONNRESET, "closed the connection");
                return -1;
            }
            if (n > 0) {
                bmt_relayd_drop(r, EPROTO, "sent an unexpected reply");
                return -1;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                bmt_relayd_drop(r, errno, "connection failed");
                return -1;
            }
            return 0;
        }
        struct expect *e = &r->expect[r->expect_head];
        size_t want = reply_size(r, (enum reply)e->kind);
        if (want > sizeof r->reply) {
            bmt_relayd_drop(r, EPROTO, "sent a reply longer than the protocol allows");
            return -1;
        }
        while (r->reply_len < want) {
            ssize_t n = recv(r->ctl_fd, r->reply + r->reply_len, want - r->reply_len,
                             MSG_DONTWAIT);
            if (n == 0) {
                bmt_relayd_drop(r, ECONNRESET, "closed the connection");
                return -1;
            }
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return 0;
                bmt_relayd_drop(r, errno, "connection failed");
                return -1;
            }
            r->reply_len += (size_t)n;
            /* A reply with a length field may have grown. */
            want = reply_size(r, (enum reply)e->kind);
            if (want > sizeof r->reply) {
                bmt_relayd_drop(r, EPROTO, "sent a reply longer than the protocol allows");
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
    fds[1] = (struct pollfd){r->data_fd, (short)(bmt_relayd_data_ready(r) ? POLLOUT : 0), 0};
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

void bmt_relayd_step(struct bmt_relayd *r, uint64_t now)
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
            bmt_relayd_drop(r, a < 0 ? -a : -b, "cannot connect");
            return;
        }
        if (now > r->deadline_ns) {
            bmt_relayd_drop(r, ETIMEDOUT, "cannot connect");
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
        bmt_relayd_command(r, msg, bmt_relayd_encode_version(msg, BMT_RELAYD_MAJOR, BMT_RELAYD_MINOR),
                R_VERSION, 0, 0);
        r->conn = C_VERSION;
    }
    if (r->conn < C_VERSION || r->conn > C_CLOSING)
        return;
    if (r->conn == C_STREAMING)
        bmt_relayd_streams_step(r, now);
    int rc = send_queue(r->ctl_fd, &r->ctl);
    if (rc == 0 && r->conn == C_STREAMING) {
        rc = bmt_relayd_send_packets(r);
        if (rc == 0)
            rc = send_queue(r->ctl_fd, &r->ctl);
    }
    if (rc < 0) {
        bmt_relayd_drop(r, -rc, "connection failed");
        return;
    }
    if (read_replies(r) < 0)
        return;
    bmt_relayd_pop_confirmed(r);
    if (stalled(r, now))
        bmt_relayd_drop(r, ETIMEDOUT, "stopped answering");
}

void bmt_relayd_pump(struct bmt_relayd *r, uint64_t now_ns)
{
    bmt_relayd_step(r, now_ns);
    bmt_relayd_publish(r);
}

int bmt_relayd_open(struct bmt_relayd *r, uint64_t timeout_ns, char *why, size_t why_size)
{
    uint64_t deadline = bmt_relayd_mono_ns() + timeout_ns;
    r->conn_time_s = 0;
    r->retry_ns = 0;
    for (;;) {
        uint64_t now = bmt_relayd_mono_ns();
        bmt_relayd_step(r, now);
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
                bmt_relayd_set_error(r, err, "%.140s; is lttng-relayd running there (lttng-relayd -C "
                          "tcp://0.0.0.0:%u -D tcp://0.0.0.0:%u)?",
                          text, r->cfg.url.control_port, r->cfg.url.data_port);
            else
                bmt_relayd_set_error(r, err, "%s", text);
            snprintf(why, why_size, "%s", r->now.error_text);
            close_fds(r);
            r->conn = C_FAILED;
            bmt_relayd_publish(r);
            return -err;
        }
        struct pollfd fds[2];
        int n = bmt_relayd_pollfds(r, fds);
        uint64_t left_ms = (deadline - now) / MS + 1;
        poll(fds, (nfds_t)n, (int)(left_ms < 50 ? left_ms : 50));
    }
    bmt_relayd_publish(r);
    return 0;
}
