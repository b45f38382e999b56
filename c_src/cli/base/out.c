/* Buffered output and formatting (contract in out.h). */
#include "out.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int bmt_out_open(struct bmt_out *o, int fd, size_t cap)
{
    o->fd = fd;
    o->len = 0;
    o->error = 0;
    o->created = 0;
    o->cap = cap < 4096 ? 4096 : cap;
    o->buf = malloc(o->cap);
    return o->buf ? 0 : -ENOMEM;
}

static void write_all(struct bmt_out *o, const char *p, size_t n)
{
    while (n > 0 && !o->error) {
        ssize_t w = write(o->fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            o->error = errno;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

void bmt_out_flush(struct bmt_out *o)
{
    write_all(o, o->buf, o->len);
    o->len = 0;
}

int bmt_out_close(struct bmt_out *o)
{
    if (o->buf)
        bmt_out_flush(o);
    free(o->buf);
    o->buf = NULL;
    return -o->error;
}

void bmt_out_mem_slow(struct bmt_out *o, const void *p, size_t n)
{
    bmt_out_flush(o);
    if (n >= o->cap) {
        write_all(o, p, n);
        return;
    }
    memcpy(o->buf, p, n);
    o->len = n;
}

void bmt_out_u64(struct bmt_out *o, uint64_t v)
{
    char tmp[20];
    unsigned n = 0;
    do {
        tmp[19 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    bmt_out_mem(o, tmp + 20 - n, n);
}

void bmt_out_u64_pad(struct bmt_out *o, uint64_t v, unsigned width)
{
    char tmp[20];
    if (width > 20)
        width = 20;
    unsigned n = 0;
    while (n < width || v) {
        if (n == 20)
            break;
        tmp[19 - n++] = (char)('0' + v % 10);
        v /= 10;
    }
    bmt_out_mem(o, tmp + 20 - n, n);
}

void bmt_out_us3(struct bmt_out *o, uint64_t ns)
{
    bmt_out_u64(o, ns / 1000);
    bmt_out_char(o, '.');
    bmt_out_u64_pad(o, ns % 1000, 3);
}
