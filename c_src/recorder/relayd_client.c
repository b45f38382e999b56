/* The relayd client (contract in relayd_client.h): the connection, its
 * states and the meaning of the relayd's replies, on top of two layers
 * that never call back: relayd_control.c (commands out, the replies they
 * owe framed in order) and relayd_outbox.c (the session's packets by
 * stream: records, data, indexes, confirmations, beacons, the seal), both
 * over relayd_socket.c (non-blocking sockets).
 *
 * A connection goes CONNECTING (two non-blocking connects, then VERSION)
 * -> handshake (CREATE_SESSION, CREATE_TRACE_CHUNK, ADD_STREAM "metadata",
 * pipelined, then the metadata text once its stream handle is known) ->
 * STREAMING. Data streams are added when they have something to send.
 * Every command but SEND_METADATA is answered, in order; a reply that is
 * not what is expected ends the connection.
 *
 * One thread at a time (the contract's driver) uses everything here but
 * bmt_relayd_stats_get, which reads the published copy under pub_lock.
 */
#include "relayd_client.h"
#include "relayd_control.h"
#include "relayd_outbox.h"
#include "relayd_proto.h"
#include "relayd_socket.h"

#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define MS (UINT64_C(1000000))
#define CONNECT_TIMEOUT_NS (5000 * MS)
#define HANDSHAKE_TIMEOUT_NS (10000 * MS) /* for any reply before streaming */
#define STALL_TIMEOUT_NS (60000 * MS)     /* a reply this late ends the connection */
#define BACKOFF_MIN_NS (500 * MS)
#define BACKOFF_MAX_NS (5000 * MS)
#define CONTROL_QUEUE_BYTES (256 * 1024) /* commands, plus the metadata */
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

struct bmt_relayd {
    struct bmt_relayd_config cfg;
    char *metadata;
    enum conn conn;
    int ctl_fd, data_fd;
    uint64_t deadline_ns;     /* of the connect */
    uint64_t retry_ns;        /* when C_IDLE reconnects */
    uint64_t backoff_ns;
    uint64_t conn_time_s;     /* names the per-process directory */
    uint32_t minor;           /* negotiated */
    uint64_t metadata_handle;
    struct bmt_relayd_control ctl;
    struct bmt_relayd_outbox box;
    char trace_dir[512];      /* ust/pid/<procname>-<pid>-<datetime> of this connection */
    /* Figures (the driver's), published to `pub` once per pump. */
    struct bmt_relayd_stats now;
    int texts_changed;        /* now's url, error_text or path changed since the last publish */
    pthread_mutex_t pub_lock;
    struct bmt_relayd_stats pub;
};

/* Records the last failure: errno and a one-line text. */
static void set_error(struct bmt_relayd *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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
    r->now.queued_bytes = r->box.data.len;
    r->now.events = r->box.events;
    r->now.bytes = r->box.bytes;
    r->now.lost = r->box.lost;
    r->now.unconfirmed = r->box.unconfirmed;
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
    int ctl_rc = bmt_relayd_control_init(&r->ctl, CONTROL_QUEUE_BYTES + cfg->metadata_bytes);
    int box_rc = bmt_relayd_outbox_init(&r->box, cfg->stream_count, cfg->queue_bytes,
                                        cfg->start_ns, cfg->uuid);
    if (!r->metadata || ctl_rc != 0 || box_rc != 0) {
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
    bmt_relayd_control_free(&r->ctl);
    bmt_relayd_outbox_free(&r->box);
    free(r->metadata);
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
    bmt_relayd_outbox_settle(&r->box);
    bmt_relayd_control_clear(&r->ctl);
    close_fds(r);
    r->conn = C_IDLE;
    uint64_t now = bmt_relayd_mono_ns();
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

/* ---- the handshake ---- */

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
     * share a chunk, and a directory. GRND_NONBLOCK: the driver never
     * waits (before the kernel's pool is ready, early in a boot, the
     * uuid is made of this connection's time, the process and the
     * client's address instead). */
    if (getrandom(a.sessiond_uuid, sizeof a.sessiond_uuid, GRND_NONBLOCK) !=
        (ssize_t)sizeof a.sessiond_uuid) {
        uint64_t mix[2] = {bmt_relayd_mono_ns() ^ ((uint64_t)r->cfg.vpid << 32),
                           (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)r};
        memcpy(a.sessiond_uuid, mix, sizeof a.sessiond_uuid);
    }
    a.sessiond_uuid[6] = (uint8_t)((a.sessiond_uuid[6] & 0x0f) | 0x40);
    a.session_id = 1;
    a.creation_time_s = r->cfg.start_time_s;
    long len = bmt_relayd_encode_create_session(msg, sizeof msg, &a);
    if (len < 0) {
        fail(r, EINVAL, "lttng-relayd: bad session or host name \"%s\"", r->cfg.session_name);
        return;
    }
    bmt_relayd_command(&r->ctl, msg, (size_t)len, BMT_RELAYD_EXPECT_SESSION, 0, 0);
    bmt_relayd_command(&r->ctl, msg, bmt_relayd_encode_create_chunk(msg, 0, r->conn_time_s), BMT_RELAYD_EXPECT_CHUNK, 0, 0);
    len = bmt_relayd_encode_add_stream(msg, sizeof msg, METADATA_CHANNEL, r->trace_dir, 0);
    if (len < 0) {
        fail(r, ENAMETOOLONG, "lttng-relayd: trace path too long: %s", r->trace_dir);
        return;
    }
    bmt_relayd_command(&r->ctl, msg, (size_t)len, BMT_RELAYD_EXPECT_METADATA_STREAM, 0, 0);
    r->conn = C_SESSION;
}

static void start_connect(struct bmt_relayd *r, uint64_t now)
{
    r->conn_time_s = (uint64_t)time(NULL);
    int fd = bmt_relayd_sock_open(&r->cfg.control_addr, r->cfg.control_addr_len);
    if (fd < 0) {
        drop(r, -fd, "cannot connect");
        return;
    }
    r->ctl_fd = fd;
    fd = bmt_relayd_sock_open(&r->cfg.data_addr, r->cfg.data_addr_len);
    if (fd < 0) {
        drop(r, -fd, "cannot connect the data port");
        return;
    }
    r->data_fd = fd;
    r->deadline_ns = now + CONNECT_TIMEOUT_NS;
    r->conn = C_CONNECTING;
}

/* ---- replies ---- */

static void on_version(struct bmt_relayd *r)
{
    const uint8_t *p = r->ctl.reply;
    uint32_t major = bmt_relayd_get_be32(p), minor = bmt_relayd_get_be32(p + 4);
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

/* The session is created: its directory, relative to the relayd's output,
 * and this connection's below it, are the copy's path. Returns 0 or -1
 * when the connection ended. */
static int on_session(struct bmt_relayd *r)
{
    const uint8_t *p = r->ctl.reply;
    if (bmt_relayd_get_be32(p + 8) != BMT_RELAYD_OK) {
        drop(r, EPROTO, "refused to create the session (is its output directory writable?)");
        return -1;
    }
    size_t path_len = bmt_relayd_get_be32(p + 12);
    /* <host>/<session>[-<datetime>]; then this connection's directory
     * (both bounded: the path fits the reply buffer, the directory 512
     * bytes). */
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

/* The metadata stream has its handle: the metadata goes, and the
 * connection streams. Returns 0 or -1 when the connection ended. */
static int on_metadata_stream(struct bmt_relayd *r, uint64_t handle)
{
    r->metadata_handle = handle;
    uint8_t hdr[36];
    size_t hlen = bmt_relayd_encode_metadata_header(hdr, handle, r->cfg.metadata_bytes);
    /* The queue was sized for this at creation. */
    if (bmt_relayd_command(&r->ctl, hdr, hlen, -1, 0, 0) != 0 ||
        bmt_byteq_push(&r->ctl.out, r->metadata, r->cfg.metadata_bytes) != 0) {
        drop(r, ENOBUFS, "no room to send the metadata");
        return -1;
    }
    r->conn = C_STREAMING;
    if (r->cfg.live_timer_us)
        bmt_relayd_outbox_open_live(&r->box);
    /* The last failure stays said (error, error_text): it is why the copy
     * has a gap. */
    r->now.connections++;
    r->backoff_ns = BACKOFF_MIN_NS;
    return 0;
}

/* Handles the complete reply in r->ctl.reply, which answers `e`. Returns 0
 * or -1 when the connection must end (already done). */
static int on_reply(struct bmt_relayd *r, const struct bmt_relayd_expect *e)
{
    const uint8_t *p = r->ctl.reply;
    switch ((enum bmt_relayd_expect_kind)e->kind) {
    case BMT_RELAYD_EXPECT_VERSION:
        on_version(r);
        return r->conn == C_FAILED ? -1 : 0;
    case BMT_RELAYD_EXPECT_SESSION:
        return on_session(r);
    case BMT_RELAYD_EXPECT_METADATA_STREAM:
    case BMT_RELAYD_EXPECT_STREAM:
        if (bmt_relayd_get_be32(p + 8) != BMT_RELAYD_OK) {
            drop(r, EPROTO, "refused a stream");
            return -1;
        }
        if (e->kind == BMT_RELAYD_EXPECT_METADATA_STREAM)
            return on_metadata_stream(r, bmt_relayd_get_be64(p));
        bmt_relayd_outbox_handle(&r->box, e->stream, bmt_relayd_get_be64(p));
        return 0;
    case BMT_RELAYD_EXPECT_PENDING:
        if (bmt_relayd_outbox_pending(&r->box, e->stream, e->seq, bmt_relayd_get_be32(p)) != 0) {
            drop(r, EPROTO, "does not know a stream it accepted");
            return -1;
        }
        return 0;
    case BMT_RELAYD_EXPECT_CLOSE_CHUNK:
        return 0; /* the chunk is closed either way: the connection ends next */
    case BMT_RELAYD_EXPECT_CHUNK:
    case BMT_RELAYD_EXPECT_GENERIC:
        if (bmt_relayd_get_be32(p) != BMT_RELAYD_OK) {
            drop(r, EPROTO, e->kind == BMT_RELAYD_EXPECT_CHUNK
                                ? "refused to create the trace chunk" : "refused a command");
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
        struct bmt_relayd_expect done;
        const char *what = "";
        int rc = bmt_relayd_reply_next(&r->ctl, r->ctl_fd, &done, &what);
        if (rc < 0) {
            drop(r, -rc, what);
            return -1;
        }
        if (rc == 0)
            return 0;
        if (on_reply(r, &done) < 0)
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
    fds[0] = (struct pollfd){r->ctl_fd, (short)(POLLIN | (r->ctl.out.len ? POLLOUT : 0)), 0};
    fds[1] = (struct pollfd){r->data_fd,
                             (short)(bmt_relayd_outbox_ready(&r->box) ? POLLOUT : 0), 0};
    return 2;
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
        int a = bmt_relayd_sock_connected(r->ctl_fd), b = bmt_relayd_sock_connected(r->data_fd);
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
        bmt_relayd_command(&r->ctl, msg, bmt_relayd_encode_version(msg, BMT_RELAYD_MAJOR, BMT_RELAYD_MINOR),
                BMT_RELAYD_EXPECT_VERSION, 0, 0);
        r->conn = C_VERSION;
    }
    if (r->conn < C_VERSION || r->conn > C_CLOSING)
        return;
    if (r->conn == C_STREAMING)
        bmt_relayd_outbox_step(&r->box, &r->ctl, r->trace_dir, now);
    int rc = bmt_relayd_sock_send(r->ctl_fd, &r->ctl.out);
    if (rc == 0 && r->conn == C_STREAMING) {
        rc = bmt_relayd_outbox_send(&r->box, &r->ctl, r->data_fd);
        if (rc == 0)
            rc = bmt_relayd_sock_send(r->ctl_fd, &r->ctl.out);
    }
    if (rc < 0) {
        drop(r, -rc, "connection failed");
        return;
    }
    if (read_replies(r) < 0)
        return;
    bmt_relayd_outbox_pop_confirmed(&r->box);
    uint64_t limit = r->conn == C_STREAMING || r->conn == C_CLOSING ? STALL_TIMEOUT_NS
                                                                     : HANDSHAKE_TIMEOUT_NS;
    if (bmt_relayd_control_stalled(&r->ctl, now, limit))
        drop(r, ETIMEDOUT, "stopped answering");
}

void bmt_relayd_pump(struct bmt_relayd *r, uint64_t now_ns)
{
    step(r, now_ns);
    publish(r);
}

int bmt_relayd_open(struct bmt_relayd *r, uint64_t timeout_ns, char *why, size_t why_size)
{
    uint64_t deadline = bmt_relayd_mono_ns() + timeout_ns;
    r->conn_time_s = 0;
    r->retry_ns = 0;
    for (;;) {
        uint64_t now = bmt_relayd_mono_ns();
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

/* ---- packets ---- */

void bmt_relayd_packet(struct bmt_relayd *r, unsigned stream, const uint8_t *pkt, size_t bytes,
                       uint32_t events)
{
    bmt_relayd_outbox_packet(&r->box, stream, pkt, bytes, events,
                             r->conn != C_FAILED && r->conn != C_CLOSED);
}

void bmt_relayd_lose(struct bmt_relayd *r, unsigned stream, uint64_t events)
{
    bmt_relayd_outbox_lose(&r->box, stream, events);
}

void bmt_relayd_idle(struct bmt_relayd *r, unsigned stream, uint64_t idle_until_ns,
                     uint64_t now_ns)
{
    if (r->cfg.live_timer_us == 0 || r->conn != C_STREAMING)
        return;
    bmt_relayd_outbox_beacon(&r->box, &r->ctl, stream, idle_until_ns, now_ns,
                             (uint64_t)r->cfg.live_timer_us * 1000);
}

/* ---- the end ---- */

int bmt_relayd_finish(struct bmt_relayd *r, const uint64_t *ring_discarded, unsigned count,
                      uint64_t ts_ns, uint64_t deadline_ns)
{
    int rc = -ETIMEDOUT;
    for (;;) {
        uint64_t now = bmt_relayd_mono_ns();
        if (r->conn == C_FAILED)
            break;
        if (r->conn == C_STREAMING &&
            bmt_relayd_outbox_sealed(&r->box, ring_discarded, count, ts_ns) &&
            r->ctl.count == 0 && r->ctl.out.len == 0) {
            /* Everything is written: close the streams and the chunk, as
             * lttng destroy does, and wait for the answers. */
            uint8_t msg[48];
            bmt_relayd_outbox_close_streams(&r->box, &r->ctl);
            bmt_relayd_command(&r->ctl, msg,
                               bmt_relayd_encode_close_stream(msg, r->metadata_handle, UINT64_MAX),
                               BMT_RELAYD_EXPECT_GENERIC, 0, 0);
            bmt_relayd_command(&r->ctl, msg,
                               bmt_relayd_encode_close_chunk(msg, 0, (uint64_t)time(NULL)),
                               BMT_RELAYD_EXPECT_CLOSE_CHUNK, 0, 0);
            r->conn = C_CLOSING;
        }
        if (r->conn == C_CLOSING && r->ctl.count == 0 && r->ctl.out.len == 0) {
            rc = 0;
            break;
        }
        if (now >= deadline_ns)
            break;
        /* Ask for confirmations as often as they can come. */
        r->box.last_confirm_ns = 0;
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
