/* Field decoding (contract in decode.h).
 *
 * The hot path is a byte-aligned little-endian integer or a string: both
 * are handled before the general bit reader. Recursion follows the type
 * tree, whose depth metadata.c bounded.
 */
#include "decode.h"

#include <stdlib.h>
#include <string.h>

#define MAX_EMPTY_ELEMENTS (1u << 20)

uint64_t bmt_decode_bits(const uint8_t *base, uint64_t pos, unsigned size, int be)
{
    const uint8_t *p = base + (pos >> 3);
    unsigned shift = (unsigned)(pos & 7), nbytes = (shift + size + 7) / 8;
    uint64_t mask = size >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << size) - 1;
    unsigned __int128 acc = 0;
    if (!be) {
        for (unsigned i = 0; i < nbytes; i++)
            acc |= (unsigned __int128)p[i] << (8 * i);
        return (uint64_t)(acc >> shift) & mask;
    }
    for (unsigned i = 0; i < nbytes; i++)
        acc = acc << 8 | p[i];
    return (uint64_t)(acc >> (nbytes * 8 - shift - size)) & mask;
}

static int fail(struct bmt_decode *d, enum bmt_decode_error e, const char *field)
{
    d->error = e;
    d->error_field = field;
    return -1;
}

/* A clock-mapped field of `size` bits updates the clock as CTF 1.8 says: an
 * N-bit value wraps at most once between two updates. */
static void update_clock(struct bmt_decode *d, uint64_t v, unsigned size)
{
    if (size >= 64) {
        d->clock = v;
        return;
    }
    uint64_t mask = (UINT64_C(1) << size) - 1;
    uint64_t next = (d->clock & ~mask) | v;
    if (v < (d->clock & mask))
        next += mask + 1;
    d->clock = next;
}

static int decode(struct bmt_decode *d, const struct bmt_ctf_type *t, const char *name);

static int decode_int(struct bmt_decode *d, const struct bmt_ctf_type *t, const char *name)
{
    unsigned size = t->size_bits;
    if (d->end - d->pos < size)
        return fail(d, BMT_DEC_PAST_END, name);
    uint64_t v;
    if ((d->pos & 7) == 0 && t->byte_order == BMT_CTF_LE &&
        (size == 8 || size == 16 || size == 32 || size == 64)) {
        const uint8_t *p = d->base + (d->pos >> 3);
        v = size == 8 ? p[0] : size == 16 ? bmt_get_u16(p) : size == 32 ? bmt_get_u32(p) : bmt_get_u64(p);
    } else {
        v = bmt_decode_bits(d->base, d->pos, size, t->byte_order == BMT_CTF_BE);
    }
    d->pos += size;
    uint64_t stored = v;
    if (t->is_signed && size < 64 && (v >> (size - 1)) & 1)
        stored = v | ~((UINT64_C(1) << size) - 1);
    d->vals[t->slot].integer = stored;
    if (t->meaning) {
        d->seen |= UINT32_C(1) << t->meaning;
        d->meaning[t->meaning] = v;
    }
    if (t->clock >= 0)
        update_clock(d, v, size);
    return 0;
}

static int decode_array(struct bmt_decode *d, const struct bmt_ctf_type *t, const char *name)
{
    uint64_t n = t->kind == BMT_CTF_ARRAY ? t->length : d->vals[t->target->slot].integer;
    struct bmt_value *v = &d->vals[t->slot];
    if (t->is_text || t->meaning == BMT_M_UUID) {
        /* Bytes: one check for the whole run (alignment is 8, see ctf_type.c). */
        if ((d->end - d->pos) / 8 < n)
            return fail(d, BMT_DEC_PAST_END, name);
        const char *s = (const char *)d->base + (d->pos >> 3);
        if (t->meaning == BMT_M_UUID)
            d->uuid = (const uint8_t *)s;
        v->str = s;
        v->len = (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n);
        if (t->is_text) {
            const char *nul = memchr(s, 0, (size_t)n);
            if (nul)
                v->len = (uint32_t)(nul - s);
        }
        v->integer = d->pos;
        d->pos += n * 8;
        return 0;
    }
    uint64_t min = t->elem->min_bits;
    if (min == 0 ? n > MAX_EMPTY_ELEMENTS : n > (d->end - d->pos) / min)
        return fail(d, min == 0 ? BMT_DEC_TOO_LONG : BMT_DEC_PAST_END, name);
    v->integer = d->pos; /* the printer decodes the elements again from here */
    for (uint64_t i = 0; i < n; i++)
        if (decode(d, t->elem, name) < 0)
            return -1;
    return 0;
}

static int decode_variant(struct bmt_decode *d, const struct bmt_ctf_type *t, const char *name)
{
    /* The first range holding the tag decides, as the first label
     * babeltrace2 finds; its option was matched once (ctf_type.c). */
    const struct bmt_ctf_type *e = t->target;
    uint64_t tag = d->vals[e->slot].integer;
    for (uint32_t r = 0; r < e->range_count; r++) {
        const struct bmt_ctf_range *g = &e->ranges[r];
        int in = e->is_signed ? (int64_t)tag >= (int64_t)g->lo && (int64_t)tag <= (int64_t)g->hi
                              : tag >= g->lo && tag <= g->hi;
        if (!in)
            continue;
        int32_t i = t->range_option[r];
        if (i < 0)
            break;
        d->vals[t->slot].integer = (uint64_t)i;
        return decode(d, t->members[i].type, t->members[i].name);
    }
    return fail(d, BMT_DEC_BAD_TAG, name);
}

static int decode(struct bmt_decode *d, const struct bmt_ctf_type *t, const char *name)
{
    uint64_t a = t->align_bits;
    if (a > 1 && (d->pos & (a - 1))) {
        uint64_t p = (d->pos | (a - 1)) + 1;
        if (p > d->end || p < d->pos)
            return fail(d, BMT_DEC_PAST_END, name);
        d->pos = p;
    }
    switch (t->kind) {
    case BMT_CTF_STRING: {
        uint64_t at = d->pos >> 3, lim = d->end >> 3;
        if (at >= lim)
            return fail(d, BMT_DEC_NO_NUL, name);
        const char *s = (const char *)d->base + at;
        const char *nul = memchr(s, 0, (size_t)(lim - at));
        if (!nul)
            return fail(d, BMT_DEC_NO_NUL, name);
        d->vals[t->slot].str = s;
        d->vals[t->slot].len = (uint32_t)(nul - s);
        d->pos = (uint64_t)(nul - (const char *)d->base + 1) * 8;
        return 0;
    }
    case BMT_CTF_INT:
    case BMT_CTF_ENUM:
        return decode_int(d, t, name);
    case BMT_CTF_FLOAT:
        if (d->end - d->pos < t->size_bits)
            return fail(d, BMT_DEC_PAST_END, name);
        d->vals[t->slot].integer =
            bmt_decode_bits(d->base, d->pos, t->size_bits, t->byte_order == BMT_CTF_BE);
        d->pos += t->size_bits;
        return 0;
    case BMT_CTF_STRUCT:
        for (uint32_t i = 0; i < t->member_count; i++)
            if (decode(d, t->members[i].type, t->members[i].name) < 0)
                return -1;
        return 0;
    case BMT_CTF_ARRAY:
    case BMT_CTF_SEQUENCE:
        return decode_array(d, t, name);
    case BMT_CTF_VARIANT:
        return decode_variant(d, t, name);
    }
    return fail(d, BMT_DEC_PAST_END, name);
}

int bmt_decode(struct bmt_decode *d, const struct bmt_ctf_type *t)
{
    return decode(d, t, NULL);
}

/* ---- compiled scopes ---- */

enum op_code {
    OP_END,
    OP_U8, OP_U16, OP_U32, OP_U64,  /* byte-aligned little-endian unsigned integers */
    OP_INT,                         /* any other integer or enumeration */
    OP_STRING,
    OP_TEXT,                        /* text array or sequence */
    OP_TREE,                        /* anything else: walk the subtree */
};

struct bmt_decode_op {
    uint8_t code;
    uint32_t align_bits;            /* align the cursor first (1: nothing to do) */
    uint32_t slot;
    const struct bmt_ctf_type *type;
    const char *name;
};

struct compiler {
    struct bmt_decode_op *ops;
    unsigned count, cap;
    uint32_t pending_align;     /* an enclosing struct's alignment, applied by the next op */
    int oom;
};

static void emit(struct compiler *c, uint8_t code, const struct bmt_ctf_type *t, const char *name,
                 uint32_t align)
{
    /* Both are powers of two: aligning to the larger satisfies both. */
    if (c->pending_align > align)
        align = c->pending_align;
    c->pending_align = 1;
    if (c->count == c->cap) {
        unsigned cap = c->cap ? c->cap * 2 : 16;
        struct bmt_decode_op *o = realloc(c->ops, cap * sizeof *o);
        if (!o) {
            c->oom = 1;
            return;
        }
        c->ops = o;
        c->cap = cap;
    }
    c->ops[c->count++] = (struct bmt_decode_op){code, align, t ? t->slot : 0, t, name};
}

static void flatten(struct compiler *c, const struct bmt_ctf_type *t, const char *name)
{
    switch (t->kind) {
    case BMT_CTF_STRUCT:
        if (t->align_bits > c->pending_align)
            c->pending_align = t->align_bits;
        for (uint32_t i = 0; i < t->member_count; i++)
            flatten(c, t->members[i].type, t->members[i].name);
        return;
    case BMT_CTF_INT:
    case BMT_CTF_ENUM: {
        unsigned size = t->size_bits;
        int plain = t->byte_order == BMT_CTF_LE && !t->is_signed && t->align_bits % 8 == 0 &&
                    (size == 8 || size == 16 || size == 32 || size == 64);
        uint8_t code = !plain ? OP_INT : size == 8 ? OP_U8 : size == 16 ? OP_U16
                                       : size == 32 ? OP_U32 : OP_U64;
        emit(c, code, t, name, t->align_bits);
        return;
    }
    case BMT_CTF_STRING:
        emit(c, OP_STRING, t, name, 8);
        return;
    case BMT_CTF_ARRAY:
    case BMT_CTF_SEQUENCE:
        if (t->is_text && t->meaning != BMT_M_UUID) {
            emit(c, OP_TEXT, t, name, t->align_bits);
            return;
        }
        emit(c, OP_TREE, t, name, 1);
        return;
    default:
        emit(c, OP_TREE, t, name, 1);
        return;
    }
}

const struct bmt_decode_op *bmt_decode_compile(struct bmt_arena *a,
                                               const struct bmt_ctf_type *const *roots, unsigned n)
{
    struct compiler c = {NULL, 0, 0, 1, 0};
    for (unsigned i = 0; i < n; i++)
        if (roots[i])
            flatten(&c, roots[i], NULL);
    emit(&c, OP_END, NULL, NULL, 1);
    struct bmt_decode_op *prog = c.oom ? NULL : bmt_arena_alloc(a, c.count * sizeof *prog);
    if (prog)
        memcpy(prog, c.ops, c.count * sizeof *prog);
    free(c.ops);
    return prog;
}

/* The NUL ending the string at `s`, at most `n` bytes: eight bytes at a
 * time (most strings are short pids and names, where calling memchr costs
 * more than the scan), never reading past `n`. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "find_nul assumes a little-endian host");

static inline const char *find_nul(const char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n && i < 64; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t z = (w - ones) & ~w & highs;
        if (z)
            return s + i + (__builtin_ctzll(z) >> 3); /* little-endian host: first byte lowest */
    }
    if (i < 64) {
        for (; i < n; i++)
            if (!s[i])
                return s + i;
        return NULL;
    }
    return memchr(s + i, 0, n - i);
}

int bmt_decode_run(struct bmt_decode *d, const struct bmt_decode_op *op)
{
    for (;; op++) {
        uint64_t a = op->align_bits;
        if (a > 1 && (d->pos & (a - 1))) {
            uint64_t p = (d->pos | (a - 1)) + 1;
            if (p > d->end || p < d->pos)
                return fail(d, BMT_DEC_PAST_END, op->name);
            d->pos = p;
        }
        switch (op->code) {
        case OP_END:
            return 0;
        case OP_U8:
        case OP_U16:
        case OP_U32:
        case OP_U64: {
            unsigned size = op->code == OP_U8 ? 8 : op->code == OP_U16 ? 16 : op->code == OP_U32 ? 32 : 64;
            if (d->end - d->pos < size)
                return fail(d, BMT_DEC_PAST_END, op->name);
            const uint8_t *p = d->base + (d->pos >> 3);
            uint64_t v = size == 8 ? p[0] : size == 16 ? bmt_get_u16(p)
                                          : size == 32 ? bmt_get_u32(p) : bmt_get_u64(p);
            d->vals[op->slot].integer = v;
            d->pos += size;
            const struct bmt_ctf_type *t = op->type;
            if (t->meaning) {
                d->seen |= UINT32_C(1) << t->meaning;
                d->meaning[t->meaning] = v;
            }
            if (t->clock >= 0)
                update_clock(d, v, size);
            break;
        }
        case OP_INT:
            if (decode_int(d, op->type, op->name) < 0)
                return -1;
            break;
        case OP_STRING: {
            uint64_t at = d->pos >> 3, lim = d->end >> 3;
            if (at >= lim)
                return fail(d, BMT_DEC_NO_NUL, op->name);
            const char *s = (const char *)d->base + at;
            const char *nul = find_nul(s, (size_t)(lim - at));
            if (!nul)
                return fail(d, BMT_DEC_NO_NUL, op->name);
            d->vals[op->slot].str = s;
            d->vals[op->slot].len = (uint32_t)(nul - s);
            d->pos = (uint64_t)(nul - (const char *)d->base + 1) * 8;
            break;
        }
        case OP_TEXT:
            if (decode_array(d, op->type, op->name) < 0)
                return -1;
            break;
        case OP_TREE:
            if (op->type && decode(d, op->type, op->name) < 0)
                return -1;
            break;
        }
    }
}
