/* The relayd's control connection as a pipeline (contract in
 * relayd_control.h): commands out through a byte queue, replies matched to
 * their commands by order. A reply is read in as many pieces as the socket
 * gives; its size is known from its kind, and for the two replies that end
 * with a path, from the length field once that much has arrived.
 */
#define _GNU_SOURCE /* MSG_DONTWAIT */
#include "relayd_control.h"
#include "relayd_socket.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

int bmt_relayd_control_init(struct bmt_relayd_control *c, size_t queue_bytes)
{
    c->head = c->count = 0;
    c->reply_len = 0;
    c->expect = calloc(BMT_RELAYD_MAX_EXPECT, sizeof *c->expect);
    if (bmt_byteq_init(&c->out, queue_bytes) != 0 || !c->expect)
        return -ENOMEM;
    return 0;
}

void bmt_relayd_control_free(struct bmt_relayd_control *c)
{
    bmt_byteq_free(&c->out);
    free(c->expect);
    c->expect = NULL;
}

void bmt_relayd_control_clear(struct bmt_relayd_control *c)
{
    bmt_byteq_clear(&c->out);
    c->head = c->count = 0;
    c->reply_len = 0;
}

int bmt_relayd_command(struct bmt_relayd_control *c, const void *msg, size_t len, int kind,
                       uint32_t stream, uint64_t seq)
{
    if (bmt_byteq_room(&c->out) < len || (kind >= 0 && c->count == BMT_RELAYD_MAX_EXPECT))
        return -1;
    bmt_byteq_push(&c->out, msg, len);
    if (kind < 0)
        return 0;
    struct bmt_relayd_expect *e = &c->expect[(c->head + c->count) % BMT_RELAYD_MAX_EXPECT];
    e->kind = (uint8_t)kind;
    e->stream = stream;
    e->seq = seq;
    e->since_ns = bmt_relayd_mono_ns();
    c->count++;
    return 0;
}

/* The size of the reply of kind `kind`, as far as the bytes read so far
 * tell it. */
static size_t reply_size(const struct bmt_relayd_control *c, enum bmt_relayd_expect_kind kind)
{
    switch (kind) {
    case BMT_RELAYD_EXPECT_VERSION: return BMT_RELAYD_REPLY_VERSION_BYTES;
    case BMT_RELAYD_EXPECT_SESSION: {
        size_t path = c->reply_len >= BMT_RELAYD_REPLY_SESSION_BYTES
                          ? bmt_relayd_get_be32(c->reply + 12) : 0;
        return BMT_RELAYD_REPLY_SESSION_BYTES + path;
    }
    case BMT_RELAYD_EXPECT_METADATA_STREAM:
    case BMT_RELAYD_EXPECT_STREAM: return BMT_RELAYD_REPLY_STREAM_BYTES;
    case BMT_RELAYD_EXPECT_CLOSE_CHUNK: {
        size_t path = 0;
        /* The path follows only when the close succeeded. */
        if (c->reply_len >= BMT_RELAYD_REPLY_CLOSE_CHUNK_BYTES &&
            bmt_relayd_get_be32(c->reply) == BMT_RELAYD_OK)
            path = bmt_relayd_get_be32(c->reply + 4);
        return BMT_RELAYD_REPLY_CLOSE_CHUNK_BYTES + path;
    }
    case BMT_RELAYD_EXPECT_CHUNK:
    case BMT_RELAYD_EXPECT_GENERIC:
    case BMT_RELAYD_EXPECT_PENDING: return BMT_RELAYD_REPLY_GENERIC_BYTES;
    }
    return BMT_RELAYD_REPLY_GENERIC_BYTES;
}

/* Nothing is owed: anything readable is EOF or a protocol error. */
static int nothing_owed(int fd, const char **what)
{
    uint8_t b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
    if (n == 0) {
        *what = "closed the connection";
        return -ECONNRESET;
    }
    if (n > 0) {
        *what = "sent an unexpected reply";
        return -EPROTO;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        *what = "connection failed";
        return -errno;
    }
    return 0;
}

int bmt_relayd_reply_next(struct bmt_relayd_control *c, int fd, struct bmt_relayd_expect *done,
                          const char **what)
{
    if (c->count == 0)
        return nothing_owed(fd, what);
    const struct bmt_relayd_expect *e = &c->expect[c->head];
    for (;;) {
        /* A reply with a length field may have grown as it came in. */
        size_t want = reply_size(c, (enum bmt_relayd_expect_kind)e->kind);
        if (want > sizeof c->reply) {
            *what = "sent a reply longer than the protocol allows";
            return -EPROTO;
        }
        if (c->reply_len >= want)
            break;
        ssize_t n = recv(fd, c->reply + c->reply_len, want - c->reply_len, MSG_DONTWAIT);
        if (n == 0) {
            *what = "closed the connection";
            return -ECONNRESET;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            *what = "connection failed";
            return -errno;
        }
        c->reply_len += (size_t)n;
    }
    *done = *e;
    c->head = (c->head + 1) % BMT_RELAYD_MAX_EXPECT;
    c->count--;
    /* The bytes stay in c->reply for the caller; the next reply starts
     * over them. */
    c->reply_len = 0;
    return 1;
}

int bmt_relayd_control_stalled(const struct bmt_relayd_control *c, uint64_t now_ns,
                               uint64_t limit_ns)
{
    if (c->count == 0)
        return 0;
    uint64_t since = c->expect[c->head].since_ns;
    return now_ns > since && now_ns - since > limit_ns;
}
