/*
 * The output cursor of the term-text writers (nif_term_text.c and the
 * atom and binary writers it calls): bytes go to [p, end) and are cut at
 * end, where the caller's NUL goes. Header only: every write is a few
 * inlined instructions on the message-text path.
 */
#ifndef BMT_NIF_TERM_OUT_H
#define BMT_NIF_TERM_OUT_H

#include <stddef.h>
#include <string.h>

struct bmt_text_out {
    char *p;    /* next byte to write */
    char *end;  /* where the NUL goes: buf + size - 1 */
};

static inline int bmt_out_full(const struct bmt_text_out *o)
{
    return o->p >= o->end;
}

static inline void bmt_out_c(struct bmt_text_out *o, char c)
{
    if (o->p < o->end)
        *o->p++ = c;
}

static inline void bmt_out_s(struct bmt_text_out *o, const char *s, size_t n)
{
    size_t room = (size_t)(o->end - o->p);
    if (n > room)
        n = room;
    memcpy(o->p, s, n);
    o->p += n;
}

#endif
