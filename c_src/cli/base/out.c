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

/* babeltrace2's escape of each byte; NULL: the byte prints as itself. */
static const char *bt2_escape(unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    static char x[32][5]; /* \xNN for control bytes, built on first use */
    static char del[5] = "\\x7f";
    switch (c) {
    case '\a': return "\\a";
    case '\b': return "\\b";
    case '\t': return "\\t";
    case '\n': return "\\n";
    case '\v': return "\\v";
    case '\f': return "\\f";
    case '\r': return "\\r";
    case 0x1b: return "\\e";
    case '\'': return "\\'";
    case '?': return "\\?";
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case 0x7f: return del;
    default:
        if (c < 0x20) {
            if (!x[c][0]) {
                x[c][0] = '\\';
                x[c][1] = 'x';
                x[c][2] = hex[c >> 4];
                x[c][3] = hex[c & 15];
            }
            return x[c];
        }
        return NULL;
    }
}

/* 1 for bytes babeltrace2 escapes. */
static const unsigned char needs_bt2_escape[256] = {
    [0 ... 0x1f] = 1, ['\''] = 1, ['?'] = 1, ['"'] = 1, ['\\'] = 1, [0x7f] = 1,
};

void bmt_out_bt2_string(struct bmt_out *o, const char *s, size_t len)
{
    bmt_out_char(o, '"');
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!needs_bt2_escape[c])
            continue;
        bmt_out_mem(o, s + run, i - run);
        bmt_out_str(o, bt2_escape(c));
        run = i + 1;
    }
    bmt_out_mem(o, s + run, len - run);
    bmt_out_char(o, '"');
}

void bmt_out_json_string(struct bmt_out *o, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    bmt_out_char(o, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            bmt_out_char(o, '\\');
            bmt_out_char(o, (char)c);
        } else if (c == '\n') {
            bmt_out_mem(o, "\\n", 2);
        } else if (c < 0x20 || c == 0x7f) {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            bmt_out_mem(o, u, 6);
        } else {
            bmt_out_char(o, (char)c);
        }
    }
    bmt_out_char(o, '"');
}
