/* The compiled decoders' layouts and their runners: the hot half of
 * plan.h (the compilers, the slow half, are in plan.c). Inline, so the
 * reader's per-event loop (reader.c) runs them without calls.
 *
 * Every bound checked here is the generic decoder's (decode.c), in bytes:
 * positions are byte-aligned here, and for a byte-aligned position P, a
 * content end of E bits and a size of S bits (a multiple of 8),
 * E - P >= S exactly when E/8 - P/8 >= S/8 (E/8 rounded down). A fixed
 * region checked at once fits exactly when each of its fields fits. Pure;
 * single-threaded.
 */
#ifndef BMT_CLI_PLAN_RUN_H
#define BMT_CLI_PLAN_RUN_H

#include "plan.h"
#include "decode.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ---- event headers ---- */

enum { BMT_HDR_ROLE_ID = 1, BMT_HDR_ROLE_CLOCK = 2 };
#define BMT_HDR_MAX_READS 4

struct bmt_hdr_read {
    uint32_t off_bits;              /* from the header's (aligned) start */
    uint8_t size_bits;
    uint8_t role;                   /* BMT_HDR_ROLE_* */
};

struct bmt_hdr_option {
    uint32_t size_bits;             /* from the header's start to the option's end */
    uint32_t read_count;
    struct bmt_hdr_read reads[BMT_HDR_MAX_READS]; /* in decoding order: the last id wins */
};

struct bmt_hdr_range {
    uint64_t lo, hi;                /* inclusive; compared as int64_t when the tag is signed */
    int32_t option;                 /* index in options, or -1 */
};

/* The usual event, decoded without a loop: an unsigned id of `hot_id_bytes`
 * at the header's first byte, which is the event id when <= hot_max and
 * then selects an option holding only a clock field of `hot_clock_bytes`
 * at byte `hot_clock_at` (LTTng-UST's and beamtrace's large header: a
 * 16-bit id and a 32-bit time; a flat id + time header), or a 32-bit word
 * whose low `hot_id_bits` are the id and whose other bits are the time
 * (LTTng-UST's compact header: 5 + 27 bits). BMT_HOT_LARGE is BYTES with
 * LTTng-UST's large header's sizes (a 16-bit id, then a 32-bit time:
 * beamtrace's header), read with constant offsets. */
enum { BMT_HOT_NONE, BMT_HOT_BYTES, BMT_HOT_WORD32, BMT_HOT_LARGE };

struct bmt_header_plan {
    uint32_t align_bytes;           /* the header's alignment */
    uint8_t tagged;                 /* a tag then a variant; else one option */
    uint8_t tag_size_bits;          /* the tag: the header's first field, at offset 0 */
    uint8_t tag_signed;
    uint8_t tag_is_id;              /* the tag is the event id (until an option's id) */
    uint8_t hot;                    /* BMT_HOT_* */
    uint8_t hot_id_bytes, hot_clock_bytes, hot_clock_at, hot_bytes, hot_id_bits;
    uint64_t hot_max;
    uint64_t hot_clock_mask;        /* BYTES: the clock field's value bits */
    uint32_t range_count;
    const struct bmt_hdr_range *ranges;
    uint32_t option_count;
    struct bmt_hdr_option options[];
};

static inline uint64_t bmt_plan_align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

/* The unsigned little-endian integer of `bytes` (1, 2, 4 or 8) at `q`. */
static inline uint64_t bmt_plan_le(const uint8_t *q, unsigned bytes)
{
    switch (bytes) {
    case 1: return q[0];
    case 2: return bmt_get_u16(q);
    case 4: return bmt_get_u32(q);
    default: return bmt_get_u64(q);
    }
}

/* The unsigned `size`-bit little-endian integer at bit `off` of `p`; the
 * caller checked that its bytes are there. */
static inline uint64_t bmt_plan_bits(const uint8_t *p, uint32_t off, unsigned size)
{
    if ((off & 7) == 0 && (size == 8 || size == 16 || size == 32 || size == 64))
        return bmt_plan_le(p + (off >> 3), size / 8);
    return bmt_decode_bits(p, off, size, 0);
}

/* A clock-mapped field of `size` bits updates the clock as CTF 1.8 says: an
 * N-bit value wraps at most once between two updates. */
static inline uint64_t bmt_plan_clock(uint64_t clock, uint64_t v, unsigned size)
{
    if (size >= 64)
        return v;
    uint64_t mask = (UINT64_C(1) << size) - 1;
    uint64_t next = (clock & ~mask) | v;
    if (v < (clock & mask))
        next += mask + 1;
    return next;
}

/* What a header plan's general case found (plan.c). */
struct bmt_hdr_result {
    const uint8_t *next;            /* the byte after the header, or NULL */
    uint64_t id, clock;
};

/* Any header the plan describes, from its aligned start `at` with the
 * stream's clock at `clock`: the event id, the new clock and the byte
 * after the header, or next NULL where the generic decoder might fail. */
struct bmt_hdr_result bmt_plan_run_header_slow(const struct bmt_header_plan *h, const uint8_t *at,
                                               const uint8_t *end, uint64_t clock);

/* Decodes the event header at `at` of the packet starting at `base`,
 * whose content ends at byte `end` (the content end rounded down to a
 * byte): sets *id to the event id and advances *clock (cycles) by the
 * header's time. Returns the byte after the header, or NULL (nothing
 * changed) where the generic decoder might fail. */
static inline __attribute__((always_inline)) const uint8_t *
bmt_plan_run_header(const struct bmt_header_plan *h, const uint8_t *base, const uint8_t *at,
                    const uint8_t *end, uint64_t *id, uint64_t *clock)
{
    if (h->align_bytes > 1) {
        uint64_t off = bmt_plan_align_up((uint64_t)(at - base), h->align_bytes);
        if (off > (uint64_t)(end - base))
            return NULL;
        at = base + off;
    }
    size_t room = (size_t)(end - at);
    if (h->hot == BMT_HOT_LARGE && room >= 6) {
        uint64_t v = bmt_get_u16(at);
        if (v <= h->hot_max) {
            uint64_t c = *clock, ts = bmt_get_u32(at + 2);
            uint64_t next = (c & ~(uint64_t)UINT32_MAX) | ts;
            if (ts < (c & UINT32_MAX))
                next += UINT64_C(1) << 32;
            *id = v;
            *clock = next;
            return at + 6;
        }
    } else if (h->hot == BMT_HOT_BYTES && room >= h->hot_bytes) {
        /* LTTng-UST's and beamtrace's sizes first: a predicted branch is
         * cheaper than the general switch. */
        uint64_t v = h->hot_id_bytes == 2 ? bmt_get_u16(at) : bmt_plan_le(at, h->hot_id_bytes);
        if (v <= h->hot_max) {
            const uint8_t *t = at + h->hot_clock_at;
            uint64_t c = *clock, m = h->hot_clock_mask;
            uint64_t ts = h->hot_clock_bytes == 4 ? bmt_get_u32(t) : bmt_plan_le(t, h->hot_clock_bytes);
            /* bmt_plan_clock with the mask precomputed (all ones: 64 bits) */
            uint64_t next = (c & ~m) | ts;
            if (ts < (c & m))
                next += m + 1;
            *id = v;
            *clock = next;
            return at + h->hot_bytes;
        }
    } else if (h->hot == BMT_HOT_WORD32 && room >= 4) {
        uint32_t w = bmt_get_u32(at);
        uint64_t v = w & ((UINT32_C(1) << h->hot_id_bits) - 1);
        if (v <= h->hot_max) {
            *id = v;
            *clock = bmt_plan_clock(*clock, w >> h->hot_id_bits, 32u - h->hot_id_bits);
            return at + 4;
        }
    }
    struct bmt_hdr_result res = bmt_plan_run_header_slow(h, at, end, *clock);
    if (res.next) {
        *id = res.id;
        *clock = res.clock;
    }
    return res.next;
}

/* ---- event bodies ---- */

enum bmt_fop_code {
    BMT_FOP_END,         /* arg: bytes of fixed-size fields not read, last in the body */
    BMT_FOP_ALIGN,       /* arg: alignment in bytes */
    BMT_FOP_SKIP,        /* arg: bytes of fixed-size fields not read */
    BMT_FOP_STR_SKIP,    /* arg strings not read */
    BMT_FOP_STR,         /* arg strings read into cat[dst], cat[dst + 1], ... */
    BMT_FOP_U8, BMT_FOP_U16, BMT_FOP_U32, BMT_FOP_U64, /* unsigned (or 64-bit): cat[dst] */
    BMT_FOP_S8, BMT_FOP_S16, BMT_FOP_S32,              /* signed, sign-extended */
    BMT_FOP_LEN,         /* an integer of `size_bits` kept in reg (and read into cat[dst]) */
    BMT_FOP_TEXT,        /* a text array of arg bytes (read into cat[dst] unless NO_DST) */
    BMT_FOP_TEXT_SEQ,    /* a text sequence whose length is in reg */
};

#define BMT_FOP_NO_DST 0xff
#define BMT_FOP_MAX_REGS 8

struct bmt_fop {
    uint8_t code;
    uint8_t dst;                    /* catalogue position, or BMT_FOP_NO_DST */
    uint8_t reg;                    /* LEN, TEXT_SEQ */
    uint8_t size_bits;              /* LEN */
    uint32_t arg;
};

struct bmt_body_plan {
    uint32_t op_count;
    /* A body whose fields are all skipped: `skip_strings` strings, then
     * `skip_bytes` of fixed-size fields; no loop over the operations. */
    uint8_t skip_only;
    uint32_t skip_strings, skip_bytes;
    struct bmt_fop ops[];
};

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the NUL scans assume a little-endian host");

/* A bit 7 in each zero byte of `w` and nowhere else (no carry crosses a
 * byte: 0x7f + 0x7f < 0x100). */
static inline uint64_t bmt_plan_zeros(uint64_t w)
{
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7full;
    return ~(((w & low7) + low7) | w | low7);
}

/* The byte after the `count`-th NUL from `s` (at most `n` bytes), or NULL:
 * sixteen bytes at a time (SSE2, every x86-64 has it) or eight while
 * that many remain (pids, names and function names are short: a call to
 * memchr costs more than the scan), then byte by byte. Never reads past
 * `n`. */
static inline const uint8_t *bmt_plan_skip_strings(const uint8_t *s, size_t n, unsigned count)
{
    size_t i = 0;
#ifdef __SSE2__
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));
        for (; m; m &= m - 1)
            if (--count == 0)
                return s + i + __builtin_ctz(m) + 1;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        for (uint64_t z = bmt_plan_zeros(w); z; z &= z - 1)
            if (--count == 0)
                return s + i + (__builtin_ctzll(z) >> 3) + 1;
    }
    for (; i < n; i++)
        if (!s[i] && --count == 0)
            return s + i + 1;
    return NULL;
}

/* The byte after the first NUL from `s` (at most `n` bytes), or NULL:
 * bmt_plan_skip_strings for one string, without its count (a read field
 * is one string; this runs for nearly every field an analysis reads). */
static inline __attribute__((always_inline)) const uint8_t *bmt_plan_str_end(const uint8_t *s,
                                                                            size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));
        if (m)
            return s + i + __builtin_ctz(m) + 1;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t z = bmt_plan_zeros(w);
        if (z)
            return s + i + (__builtin_ctzll(z) >> 3) + 1;
    }
    for (; i < n; i++)
        if (!s[i])
            return s + i + 1;
    return NULL;
}

static inline int64_t bmt_plan_sext(uint64_t v, unsigned bits)
{
    uint64_t m = UINT64_C(1) << (bits - 1);
    return (int64_t)((v ^ m) - m);
}

/* The operations most bodies never run (alignment, sequence lengths, text
 * arrays and sequences): bmt_plan_run_body's contract for one operation. */
static inline const uint8_t *bmt_plan_run_rare(const struct bmt_fop *op, const uint8_t *base,
                                               const uint8_t *at, const uint8_t *end,
                                               struct bmt_value *cat, uint64_t *regs)
{
    size_t room = (size_t)(end - at);
    switch (op->code) {
    case BMT_FOP_ALIGN: {
        uint64_t off = bmt_plan_align_up((uint64_t)(at - base), op->arg);
        return off > (uint64_t)(end - base) ? NULL : base + off;
    }
    case BMT_FOP_LEN: {
        unsigned bytes = op->size_bits / 8u;
        if (room < bytes)
            return NULL;
        uint64_t v = bmt_plan_le(at, bytes);   /* lengths are unsigned (ctf_type.c) */
        regs[op->reg] = v;
        if (op->dst != BMT_FOP_NO_DST)
            cat[op->dst].integer = v;
        return at + bytes;
    }
    default: { /* BMT_FOP_TEXT, BMT_FOP_TEXT_SEQ */
        uint64_t n = op->code == BMT_FOP_TEXT ? op->arg : regs[op->reg];
        if (room < n)
            return NULL;
        if (op->dst != BMT_FOP_NO_DST) {
            const uint8_t *nul = memchr(at, 0, (size_t)n);
            cat[op->dst].str = (const char *)at;
            cat[op->dst].len = (uint32_t)(nul ? (uint64_t)(nul - at) : n > UINT32_MAX ? UINT32_MAX : n);
            cat[op->dst].integer = (uint64_t)(at - base) * 8;
        }
        return at + n;
    }
    }
}

/* Decodes an event body at `at` (byte-aligned, right after the header):
 * the fields the plan reads go to cat[i] (str and len for strings, integer
 * for integers; other members untouched). Returns the position after the
 * body, or NULL where the generic decoder might fail. */
static inline __attribute__((always_inline)) const uint8_t *
bmt_plan_run_body(const struct bmt_body_plan *p, const uint8_t *base, const uint8_t *at,
                  const uint8_t *end, struct bmt_value *cat)
{
    if (p->skip_only) {
        if (p->skip_strings &&
            !(at = bmt_plan_skip_strings(at, (size_t)(end - at), p->skip_strings)))
            return NULL;
        return (size_t)(end - at) < p->skip_bytes ? NULL : at + p->skip_bytes;
    }
    uint64_t regs[BMT_FOP_MAX_REGS];
    for (const struct bmt_fop *op = p->ops; at; op++) {
        size_t room = (size_t)(end - at);
        switch (op->code) {
        case BMT_FOP_END:           /* arg: a last run of skipped fixed-size fields */
            return room < op->arg ? NULL : at + op->arg;
        case BMT_FOP_SKIP:
            at = room < op->arg ? NULL : at + op->arg;
            break;
        case BMT_FOP_STR_SKIP:
            at = bmt_plan_skip_strings(at, room, op->arg);
            break;
        case BMT_FOP_STR: {
            struct bmt_value *v = &cat[op->dst];
            for (uint32_t i = op->arg; i; i--, v++) {
                const uint8_t *next = bmt_plan_str_end(at, (size_t)(end - at));
                if (!next)
                    return NULL;
                v->str = (const char *)at;
                v->len = (uint32_t)(next - at - 1);
                at = next;
            }
            break;
        }
        case BMT_FOP_U8:
        case BMT_FOP_U16:
        case BMT_FOP_U32:
        case BMT_FOP_U64: {
            unsigned bytes = 1u << (op->code - BMT_FOP_U8);
            if (room < bytes)
                return NULL;
            cat[op->dst].integer = bmt_plan_le(at, bytes);
            at += bytes;
            break;
        }
        case BMT_FOP_S8:
        case BMT_FOP_S16:
        case BMT_FOP_S32: {
            unsigned bytes = 1u << (op->code - BMT_FOP_S8);
            if (room < bytes)
                return NULL;
            cat[op->dst].integer = (uint64_t)bmt_plan_sext(bmt_plan_le(at, bytes), 8 * bytes);
            at += bytes;
            break;
        }
        default:
            at = bmt_plan_run_rare(op, base, at, end, cat, regs);
            break;
        }
    }
    return NULL;
}

#endif
