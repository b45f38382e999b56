/* Buffered output for the CLI: one large buffer, flushed with write(2),
 * with the integer, time and string formatting the printers need.
 *
 * Why not stdio: `view` prints tens of millions of lines; formatting each
 * field with printf costs more than reading the trace. These helpers append
 * bytes directly and format integers by hand. One writer per buffer; not
 * thread-safe.
 */
#ifndef BMT_CLI_OUT_H
#define BMT_CLI_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct bmt_out {
    int fd;
    char *buf;
    size_t len;   /* bytes pending, in buf */
    size_t cap;   /* buf size, bytes */
    int error;    /* first errno from write, 0 when healthy */
    int created;  /* a regular file this run made (bmt_an_out_open): only
                   * such a file may be removed when the output fails */
};

/* Prepares `o` to write to `fd` through a `cap`-byte buffer (>= 4096).
 * Returns 0 or -ENOMEM. */
int bmt_out_open(struct bmt_out *o, int fd, size_t cap);

/* Writes the pending bytes. Errors are remembered in o->error. */
void bmt_out_flush(struct bmt_out *o);

/* Flushes and frees the buffer. Returns 0 or the first write error (-errno). */
int bmt_out_close(struct bmt_out *o);

/* Appends `n` bytes (any size). */
void bmt_out_mem_slow(struct bmt_out *o, const void *p, size_t n);
static inline void bmt_out_mem(struct bmt_out *o, const void *p, size_t n)
{
    if (o->cap - o->len < n) {
        bmt_out_mem_slow(o, p, n);
        return;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static inline void bmt_out_str(struct bmt_out *o, const char *s)
{
    bmt_out_mem(o, s, strlen(s));
}

static inline void bmt_out_char(struct bmt_out *o, char c)
{
    if (o->len == o->cap)
        bmt_out_flush(o);
    o->buf[o->len++] = c;
}

/* Appends `v` in decimal. */
void bmt_out_u64(struct bmt_out *o, uint64_t v);

/* Appends `v` in decimal, zero-padded to `width` digits (width <= 20). */
void bmt_out_u64_pad(struct bmt_out *o, uint64_t v, unsigned width);

/* Appends `ns` as microseconds with exactly 3 fractional digits
 * ("12.345" for 12345 ns). */
void bmt_out_us3(struct bmt_out *o, uint64_t ns);

#endif
