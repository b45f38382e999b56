/* A bounded FIFO of bytes (a circular buffer) for what waits to go out on
 * a socket: push copies in, iov points at the oldest bytes (two pieces when
 * they wrap), drop releases what the socket took. One thread; no
 * allocation after init. Used by the relayd client (relayd_socket.c,
 * relayd_control.c, relayd_outbox.c).
 */
#ifndef BMT_RELAYD_QUEUE_H
#define BMT_RELAYD_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

struct bmt_byteq {
    uint8_t *buf;
    size_t cap;   /* bytes */
    size_t rd;    /* offset of the oldest byte */
    size_t len;   /* bytes held */
};

/* Allocates `cap` bytes. Returns 0 or -1 (out of memory). */
static inline int bmt_byteq_init(struct bmt_byteq *q, size_t cap)
{
    q->buf = malloc(cap);
    q->cap = q->buf ? cap : 0;
    q->rd = q->len = 0;
    return q->buf ? 0 : -1;
}

static inline void bmt_byteq_free(struct bmt_byteq *q)
{
    free(q->buf);
    q->buf = NULL;
    q->cap = q->rd = q->len = 0;
}

static inline size_t bmt_byteq_room(const struct bmt_byteq *q)
{
    return q->cap - q->len;
}

/* Appends `n` bytes, all or nothing. Returns 0, or -1 when they do not fit. */
static inline int bmt_byteq_push(struct bmt_byteq *q, const void *p, size_t n)
{
    if (n > q->cap - q->len)
        return -1;
    size_t wr = (q->rd + q->len) % (q->cap ? q->cap : 1);
    size_t first = q->cap - wr < n ? q->cap - wr : n;
    memcpy(q->buf + wr, p, first);
    memcpy(q->buf, (const uint8_t *)p + first, n - first);
    q->len += n;
    return 0;
}

/* Points iov at up to `max` of the oldest bytes. Returns the iov count
 * (0 when empty). */
static inline int bmt_byteq_iov(const struct bmt_byteq *q, size_t max, struct iovec iov[2])
{
    size_t n = q->len < max ? q->len : max;
    if (n == 0)
        return 0;
    size_t first = q->cap - q->rd < n ? q->cap - q->rd : n;
    iov[0].iov_base = q->buf + q->rd;
    iov[0].iov_len = first;
    if (first == n)
        return 1;
    iov[1].iov_base = q->buf;
    iov[1].iov_len = n - first;
    return 2;
}

/* Releases the `n` oldest bytes (n <= len). */
static inline void bmt_byteq_drop(struct bmt_byteq *q, size_t n)
{
    q->rd = (q->rd + n) % q->cap;
    q->len -= n;
    if (q->len == 0)
        q->rd = 0;
}

static inline void bmt_byteq_clear(struct bmt_byteq *q)
{
    q->rd = q->len = 0;
}

#endif
