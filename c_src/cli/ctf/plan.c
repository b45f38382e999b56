/* Compiling event decoders (contract in plan.h; the layouts and runners
 * are in plan_run.h).
 *
 * A plan is refused (the generic decoder keeps the event class) rather
 * than made approximate: every property the runners rely on (little-endian
 * byte-sized integers, byte alignment, fixed offsets in the header,
 * lengths decoded in the same body) is checked here once.
 */
#include "plan.h"
#include "plan_run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- header plans ---- */

/* Lays out fixed-size node `t` at *off (bits from a header start aligned
 * to `max_align` bits), recording the id and clock fields it holds.
 * Returns 0, or -1 when `t` is not a fixed layout of little-endian
 * integers whose offsets the header's start fixes. */
static int lay_fixed(const struct bmt_ctf_type *t, uint64_t *off, uint32_t max_align,
                     struct bmt_hdr_option *o)
{
    if (t->align_bits > max_align)
        return -1;
    *off = bmt_plan_align_up(*off, t->align_bits);
    switch (t->kind) {
    case BMT_CTF_STRUCT:
        for (uint32_t i = 0; i < t->member_count; i++)
            if (lay_fixed(t->members[i].type, off, max_align, o) < 0)
                return -1;
        return 0;
    case BMT_CTF_INT:
    case BMT_CTF_ENUM: {
        if (t->byte_order != BMT_CTF_LE)
            return -1;
        uint8_t role = t->meaning == BMT_M_EVENT_ID ? BMT_HDR_ROLE_ID : 0;
        if (t->meaning != BMT_M_NONE && t->meaning != BMT_M_EVENT_ID)
            return -1;
        if (t->clock >= 0) {
            if (role)
                return -1;
            role = BMT_HDR_ROLE_CLOCK;
        }
        if (role) {
            if (o->read_count == BMT_HDR_MAX_READS || *off > UINT32_MAX)
                return -1;
            o->reads[o->read_count++] = (struct bmt_hdr_read){(uint32_t)*off, (uint8_t)t->size_bits, role};
        }
        *off += t->size_bits;
        return 0;
    }
    default:
        return -1;
    }
}

static int byte_sized(unsigned bits)
{
    return bits == 8 || bits == 16 || bits == 32 || bits == 64;
}

/* The loop-free case of header plan `p`, if it has one (plan_run.h, BMT_HOT_*). */
static void find_hot(struct bmt_header_plan *p)
{
    const struct bmt_hdr_option *o;
    uint64_t max;
    unsigned id_bits;
    if (p->tagged) {
        /* Tags 0..hi of the first range select one option: the id is the
         * tag, the option holds the time alone. */
        if (!p->tag_is_id || p->tag_signed || p->range_count == 0 || p->ranges[0].lo != 0 ||
            p->ranges[0].option < 0)
            return;
        o = &p->options[p->ranges[0].option];
        if (o->read_count != 1 || o->reads[0].role != BMT_HDR_ROLE_CLOCK)
            return;
        max = p->ranges[0].hi;
        id_bits = p->tag_size_bits;
        const struct bmt_hdr_read *c = &o->reads[0];
        if (!byte_sized(id_bits) && id_bits < 32 && o->size_bits == 32 &&
            c->off_bits == id_bits && c->size_bits == 32 - id_bits) {
            p->hot = BMT_HOT_WORD32;
            p->hot_id_bits = (uint8_t)id_bits;
            p->hot_max = max;
            return;
        }
        if (!byte_sized(id_bits) || c->off_bits % 8 || !byte_sized(c->size_bits))
            return;
        p->hot_clock_at = (uint8_t)(c->off_bits / 8);
        p->hot_clock_bytes = (uint8_t)(c->size_bits / 8);
    } else {
        /* One id and one time, anywhere. */
        o = &p->options[0];
        if (o->read_count != 2 || o->reads[0].role == o->reads[1].role)
            return;
        const struct bmt_hdr_read *i = &o->reads[o->reads[0].role == BMT_HDR_ROLE_ID ? 0 : 1];
        const struct bmt_hdr_read *c = &o->reads[o->reads[0].role == BMT_HDR_ROLE_ID ? 1 : 0];
        if (i->off_bits != 0 || !byte_sized(i->size_bits) || c->off_bits % 8 ||
            !byte_sized(c->size_bits))
            return;
        id_bits = i->size_bits;
        max = UINT64_MAX;
        p->hot_clock_at = (uint8_t)(c->off_bits / 8);
        p->hot_clock_bytes = (uint8_t)(c->size_bits / 8);
    }
    if (o->size_bits / 8 > UINT8_MAX || p->hot_clock_at + p->hot_clock_bytes > o->size_bits / 8)
        return;
    p->hot = BMT_HOT_BYTES;
    p->hot_clock_mask = p->hot_clock_bytes == 8 ? UINT64_MAX
                                                : (UINT64_C(1) << (8 * p->hot_clock_bytes)) - 1;
    p->hot_id_bytes = (uint8_t)(id_bits / 8);
    p->hot_bytes = (uint8_t)(o->size_bits / 8);
    p->hot_max = max;
    if (p->hot_id_bytes == 2 && p->hot_clock_at == 2 && p->hot_clock_bytes == 4 && p->hot_bytes == 6)
        p->hot = BMT_HOT_LARGE;
}

int bmt_plan_header(struct bmt_arena *a, const struct bmt_ctf_type *h,
                    const struct bmt_header_plan **plan)
{
    *plan = NULL;
    if (!h || h->kind != BMT_CTF_STRUCT || h->align_bits % 8)
        return 0;
    uint32_t A = h->align_bits;
    const struct bmt_ctf_type *tag = NULL, *var = NULL;
    if (h->member_count == 2 && h->members[1].type->kind == BMT_CTF_VARIANT &&
        h->members[1].type->target == h->members[0].type) {
        tag = h->members[0].type;
        var = h->members[1].type;
        if (tag->clock >= 0 || tag->byte_order != BMT_CTF_LE ||
            (tag->meaning != BMT_M_NONE && tag->meaning != BMT_M_EVENT_ID) ||
            tag->align_bits > A)
            return 0;
    }
    uint32_t n = var ? var->member_count : 1;
    struct bmt_header_plan *p = bmt_arena_alloc(a, sizeof *p + n * sizeof p->options[0]);
    if (!p)
        return -ENOMEM;
    memset(p, 0, sizeof *p + n * sizeof p->options[0]);
    p->align_bytes = A / 8;
    p->option_count = n;
    if (!var) {
        uint64_t off = 0;
        if (lay_fixed(h, &off, A, &p->options[0]) < 0 || off % 8 || off > UINT32_MAX)
            return 0;
        p->options[0].size_bits = (uint32_t)off;
    } else {
        p->tagged = 1;
        p->tag_size_bits = (uint8_t)tag->size_bits;
        p->tag_signed = tag->is_signed;
        p->tag_is_id = tag->meaning == BMT_M_EVENT_ID;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t off = tag->size_bits;   /* the tag sits at offset 0: A >= its alignment */
            if (lay_fixed(var->members[i].type, &off, A, &p->options[i]) < 0 || off % 8 ||
                off > UINT32_MAX)
                return 0;
            p->options[i].size_bits = (uint32_t)off;
        }
        struct bmt_hdr_range *r = bmt_arena_alloc(a, (tag->range_count + 1) * sizeof *r);
        if (!r)
            return -ENOMEM;
        for (uint32_t i = 0; i < tag->range_count; i++)
            r[i] = (struct bmt_hdr_range){tag->ranges[i].lo, tag->ranges[i].hi, var->range_option[i]};
        p->ranges = r;
        p->range_count = tag->range_count;
    }
    find_hot(p);
    *plan = p;
    return 0;
}

/* ---- running a header plan: the general case ---- */

struct bmt_hdr_result bmt_plan_run_header_slow(const struct bmt_header_plan *h, const uint8_t *at,
                                               const uint8_t *end, uint64_t clock)
{
    struct bmt_hdr_result res = {NULL, 0, clock};
    uint64_t room_bits = (uint64_t)(end - at) * 8;
    const struct bmt_hdr_option *o = h->options;
    if (h->tagged) {
        if (room_bits < h->tag_size_bits)
            return res;
        uint64_t tag = bmt_plan_bits(at, 0, h->tag_size_bits);
        if (h->tag_is_id)
            res.id = tag;
        if (h->tag_signed && h->tag_size_bits < 64 && (tag >> (h->tag_size_bits - 1)) & 1)
            tag |= ~((UINT64_C(1) << h->tag_size_bits) - 1);
        int32_t opt = -1;
        for (uint32_t r = 0; r < h->range_count; r++) {
            const struct bmt_hdr_range *g = &h->ranges[r];
            if (h->tag_signed ? (int64_t)tag >= (int64_t)g->lo && (int64_t)tag <= (int64_t)g->hi
                              : tag >= g->lo && tag <= g->hi) {
                opt = g->option;
                break;
            }
        }
        if (opt < 0)
            return res;
        o = &h->options[opt];
    }
    if (room_bits < o->size_bits)
        return res;
    for (uint32_t i = 0; i < o->read_count; i++) {
        const struct bmt_hdr_read *rd = &o->reads[i];
        uint64_t v = bmt_plan_bits(at, rd->off_bits, rd->size_bits);
        if (rd->role == BMT_HDR_ROLE_ID)
            res.id = v;
        else
            res.clock = bmt_plan_clock(res.clock, v, rd->size_bits);
    }
    res.next = at + o->size_bits / 8;
    return res;
}

/* ---- body plans ---- */

/* One field of the flattened body, before runs of skipped fields merge. */
struct item {
    const struct bmt_ctf_type *t;
    uint32_t align_bits;            /* align the cursor first (struct alignments folded in) */
    uint8_t code;                   /* BMT_FOP_SKIP (fixed size), BMT_FOP_STR, BMT_FOP_TEXT, BMT_FOP_TEXT_SEQ, int codes */
    uint8_t dst;
    uint8_t reg;                    /* BMT_FOP_NO_DST: not a sequence length */
    uint64_t bytes;                 /* BMT_FOP_SKIP, BMT_FOP_TEXT: size */
};

#define MAX_ITEMS 512

struct flat {
    struct item items[MAX_ITEMS];
    unsigned count;
    uint32_t pending_align;
    const uint32_t *cat_slot;
    unsigned cat_count;
    uint32_t want;
    int refused;
};

static struct item *add(struct flat *f, const struct bmt_ctf_type *t, uint8_t code, uint64_t bytes)
{
    if (f->count == MAX_ITEMS) {
        f->refused = 1;
        return NULL;
    }
    struct item *it = &f->items[f->count++];
    uint32_t a = t->align_bits > f->pending_align ? t->align_bits : f->pending_align;
    f->pending_align = 1;
    *it = (struct item){t, a, code, BMT_FOP_NO_DST, BMT_FOP_NO_DST, bytes};
    for (unsigned i = 0; i < f->cat_count; i++)
        if (f->cat_slot[i] == t->slot && (f->want >> i & 1))
            it->dst = (uint8_t)i;
    return it;
}

static void flatten(struct flat *f, const struct bmt_ctf_type *t)
{
    if (f->refused)
        return;
    switch (t->kind) {
    case BMT_CTF_STRUCT:
        if (t->align_bits > f->pending_align)
            f->pending_align = t->align_bits;
        for (uint32_t i = 0; i < t->member_count; i++)
            flatten(f, t->members[i].type);
        return;
    case BMT_CTF_INT:
    case BMT_CTF_ENUM: {
        unsigned size = t->size_bits;
        if ((size != 8 && size != 16 && size != 32 && size != 64) ||
            (t->byte_order != BMT_CTF_LE && size > 8) || t->clock >= 0 || t->meaning != BMT_M_NONE) {
            f->refused = 1;
            return;
        }
        uint8_t code = size == 8 ? BMT_FOP_U8 : size == 16 ? BMT_FOP_U16 : size == 32 ? BMT_FOP_U32 : BMT_FOP_U64;
        if (t->is_signed && size < 64)
            code = size == 8 ? BMT_FOP_S8 : size == 16 ? BMT_FOP_S16 : BMT_FOP_S32;
        struct item *it = add(f, t, code, size / 8);
        if (it && it->dst == BMT_FOP_NO_DST)
            it->code = BMT_FOP_SKIP;
        return;
    }
    case BMT_CTF_FLOAT:
        if (t->size_bits % 8) {
            f->refused = 1;
            return;
        }
        add(f, t, BMT_FOP_SKIP, t->size_bits / 8);
        return;
    case BMT_CTF_STRING:
        add(f, t, BMT_FOP_STR, 0);
        return;
    case BMT_CTF_ARRAY:
    case BMT_CTF_SEQUENCE: {
        const struct bmt_ctf_type *e = t->elem;
        if (t->meaning != BMT_M_NONE) {
            f->refused = 1;
            return;
        }
        if (t->is_text) {
            if (t->kind == BMT_CTF_ARRAY && t->length > UINT32_MAX) {
                f->refused = 1;
                return;
            }
            add(f, t, t->kind == BMT_CTF_ARRAY ? BMT_FOP_TEXT : BMT_FOP_TEXT_SEQ, t->length);
            return;
        }
        /* Fixed-size elements packed end to end: one skip. */
        if (t->kind != BMT_CTF_ARRAY ||
            !(e->kind == BMT_CTF_INT || e->kind == BMT_CTF_ENUM || e->kind == BMT_CTF_FLOAT) ||
            e->size_bits % 8 || e->size_bits % e->align_bits || e->clock >= 0 ||
            t->length > UINT32_MAX / (e->size_bits / 8)) {
            f->refused = 1;
            return;
        }
        struct item *it = add(f, t, BMT_FOP_SKIP, t->length * (e->size_bits / 8));
        if (it && it->dst != BMT_FOP_NO_DST)
            f->refused = 1;             /* the catalogue binds no such field */
        return;
    }
    default:
        f->refused = 1;
        return;
    }
}

/* Sequence lengths: the integer item each text sequence of the flattened
 * body `f` reads, kept in a register. Returns 0, or -1 when a length lies
 * outside the body (the header, the packet context) or registers run out:
 * the event class keeps the generic decoder. */
static int resolve_lengths(struct flat *f)
{
    unsigned regs = 0;
    for (unsigned i = 0; i < f->count; i++) {
        struct item *it = &f->items[i];
        if (it->code != BMT_FOP_TEXT_SEQ)
            continue;
        int found = 0;
        for (unsigned k = 0; k < i && !found; k++) {
            struct item *len = &f->items[k];
            if (len->t != it->t->target)
                continue;
            if (len->reg == BMT_FOP_NO_DST) {
                if (regs == BMT_FOP_MAX_REGS)
                    return -1;
                len->reg = (uint8_t)regs++;
            }
            it->reg = len->reg;
            found = 1;
        }
        if (!found)
            return -1;
    }
    return 0;
}

/* Writes the plan of the flattened body `f` (lengths resolved) into `a`. */
static int emit_plan(struct bmt_arena *a, struct flat *f, const struct bmt_body_plan **plan)
{
    /* Emit, merging runs of skipped fixed-size fields. */
    struct bmt_body_plan *p =
        bmt_arena_alloc(a, sizeof *p + (2 * f->count + 2) * sizeof p->ops[0]);
    if (!p)
        return -ENOMEM;
    unsigned n = 0;
    for (unsigned i = 0; i < f->count; i++) {
        struct item *it = &f->items[i];
        if (it->align_bits > 8)
            p->ops[n++] = (struct bmt_fop){BMT_FOP_ALIGN, BMT_FOP_NO_DST, 0, 0, it->align_bits / 8};
        uint8_t code = it->code;
        if (it->reg != BMT_FOP_NO_DST && code != BMT_FOP_TEXT_SEQ)
            code = BMT_FOP_LEN;             /* a sequence's length: kept, read or not */
        if (code == BMT_FOP_SKIP) {
            struct bmt_fop *last = n ? &p->ops[n - 1] : NULL;
            if (last && last->code == BMT_FOP_SKIP && it->align_bits <= 8 &&
                last->arg + it->bytes <= UINT32_MAX)
                last->arg += (uint32_t)it->bytes;
            else
                p->ops[n++] = (struct bmt_fop){BMT_FOP_SKIP, BMT_FOP_NO_DST, 0, 0, (uint32_t)it->bytes};
            continue;
        }
        if (code == BMT_FOP_STR) {
            /* Runs of strings: skipped ones, or ones read into
             * consecutive catalogue positions (beamtrace's layout). */
            struct bmt_fop *last = n ? &p->ops[n - 1] : NULL;
            int skip = it->dst == BMT_FOP_NO_DST;
            if (last && it->align_bits <= 8 &&
                (skip ? last->code == BMT_FOP_STR_SKIP
                      : last->code == BMT_FOP_STR && last->dst + last->arg == it->dst))
                last->arg++;
            else
                p->ops[n++] = (struct bmt_fop){skip ? BMT_FOP_STR_SKIP : BMT_FOP_STR, it->dst, 0,
                                               0, 1};
            continue;
        }
        p->ops[n++] = (struct bmt_fop){code, it->dst, it->reg, (uint8_t)it->t->size_bits,
                                   (uint32_t)it->bytes};
    }
    if (f->pending_align > 8)
        p->ops[n++] = (struct bmt_fop){BMT_FOP_ALIGN, BMT_FOP_NO_DST, 0, 0, f->pending_align / 8};
    if (n && p->ops[n - 1].code == BMT_FOP_SKIP)
        p->ops[n - 1].code = BMT_FOP_END;   /* the last skip ends the body: one step less */
    else
        p->ops[n++] = (struct bmt_fop){BMT_FOP_END, BMT_FOP_NO_DST, 0, 0, 0};
    p->op_count = n;
    /* Nothing read: strings then fixed-size fields, or either alone. */
    const struct bmt_fop *o = p->ops;
    if (o->code == BMT_FOP_STR_SKIP && n == 2 && o[1].code == BMT_FOP_END) {
        p->skip_only = 1;
        p->skip_strings = o->arg;
        p->skip_bytes = o[1].arg;
    } else if (o->code == BMT_FOP_END) {
        p->skip_only = 1;
        p->skip_bytes = o->arg;
    }
    *plan = p;
    return 0;
}

int bmt_plan_body(struct bmt_arena *a, const struct bmt_ctf_type *const roots[3],
                  const uint32_t *cat_slot, unsigned cat_count, uint32_t want,
                  const struct bmt_body_plan **plan)
{
    *plan = NULL;
    struct flat *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->pending_align = 1;
    f->cat_slot = cat_slot;
    f->cat_count = cat_count;
    f->want = want;
    for (int i = 0; i < 3; i++)
        if (roots[i])
            flatten(f, roots[i]);
    int rc = f->refused || resolve_lengths(f) < 0 ? 0 : emit_plan(a, f, plan);
    free(f);
    return rc;
}
