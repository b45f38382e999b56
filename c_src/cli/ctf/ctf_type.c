/* CTF type nodes: copies, scope finishing and babeltrace2's printing rule
 * (contract in ctf_type.h).
 *
 * Recursion depth is bounded by MAX_DEPTH: metadata is untrusted input and
 * a deeply nested declaration must end in a message, not a stack overflow.
 */
#include "ctf_type.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 64
#define SLOT_NONE UINT32_MAX

struct bmt_ctf_type *bmt_ctf_type_new(struct bmt_arena *a, enum bmt_ctf_kind kind)
{
    struct bmt_ctf_type *t = bmt_arena_alloc(a, sizeof *t);
    if (t) {
        t->kind = (uint8_t)kind;
        t->clock = -1;
        t->base = 10;
        t->slot = SLOT_NONE;
    }
    return t;
}

static struct bmt_ctf_type *copy(struct bmt_arena *a, const struct bmt_ctf_type *t, unsigned depth)
{
    if (depth > MAX_DEPTH)
        return NULL;
    struct bmt_ctf_type *c = bmt_arena_alloc(a, sizeof *c);
    if (!c)
        return NULL;
    *c = *t;
    if (t->members) {
        c->members = bmt_arena_alloc(a, t->member_count * sizeof *c->members);
        if (!c->members)
            return NULL;
        for (uint32_t i = 0; i < t->member_count; i++) {
            c->members[i].name = t->members[i].name;
            c->members[i].name_len = t->members[i].name_len;
            if (!(c->members[i].type = copy(a, t->members[i].type, depth + 1)))
                return NULL;
        }
    }
    if (t->elem && !(c->elem = copy(a, t->elem, depth + 1)))
        return NULL;
    return c;
}

struct bmt_ctf_type *bmt_ctf_type_copy(struct bmt_arena *a, const struct bmt_ctf_type *t)
{
    return copy(a, t, 0);
}

const struct bmt_ctf_member *bmt_ctf_member(const struct bmt_ctf_type *t, const char *name)
{
    for (uint32_t i = 0; i < t->member_count; i++)
        if (strcmp(t->members[i].name, name) == 0)
            return &t->members[i];
    return NULL;
}

unsigned bmt_ctf_enum_labels(const struct bmt_ctf_type *t, uint64_t v, const char **labels,
                             unsigned cap)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < t->range_count; i++) {
        const struct bmt_ctf_range *r = &t->ranges[i];
        int in = t->is_signed ? (int64_t)v >= (int64_t)r->lo && (int64_t)v <= (int64_t)r->hi
                              : v >= r->lo && v <= r->hi;
        if (!in)
            continue;
        /* One label per name: babeltrace2 lists a label once however many
         * of its ranges match. */
        int dup = 0;
        for (unsigned k = 0; k < n && k < cap; k++)
            if (strcmp(labels[k], r->label) == 0)
                dup = 1;
        if (dup)
            continue;
        if (n < cap)
            labels[n] = r->label;
        n++;
    }
    return n;
}

/* ---- finishing a scope ---- */

struct frame {
    const struct bmt_ctf_type *st;  /* enclosing struct */
    uint32_t index;                 /* member being finished */
};

struct finish {
    struct bmt_arena *a;
    struct bmt_ctf_scopes *s;
    enum bmt_ctf_scope scope;
    uint32_t *next_slot;
    char *err;
    size_t err_bytes;
    int failed;
    int oom;
    struct frame stack[MAX_DEPTH + 2];
    unsigned depth;
};

static const char *const SCOPE_NAMES[BMT_SCOPE_COUNT] = {
    "trace.packet.header", "stream.packet.context", "stream.event.header",
    "stream.event.context", "event.context", "event.fields",
};

static int fail(struct finish *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct finish *f, const char *fmt, ...)
{
    if (!f->failed) {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(f->err, f->err_bytes, "%s: ", SCOPE_NAMES[f->scope]);
        if (n > 0 && (size_t)n < f->err_bytes)
            vsnprintf(f->err + n, f->err_bytes - (size_t)n, fmt, ap);
        va_end(ap);
        f->failed = 1;
    }
    return -EINVAL;
}

static int is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

/* 1 when member name `m` is the path component `c` (`n` bytes); a
 * component may keep the '_' prefix the member's name lost. */
static int name_eq(const char *m, const char *c, size_t n)
{
    if (strlen(m) == n && memcmp(m, c, n) == 0)
        return 1;
    return n > 1 && c[0] == '_' && strlen(m) == n - 1 && memcmp(m, c + 1, n - 1) == 0;
}

/* Follows the dotted `path` down from struct or variant `t` through member
 * names. */
static const struct bmt_ctf_type *descend(const struct bmt_ctf_type *t, const char *path)
{
    while (t && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        const struct bmt_ctf_type *next = NULL;
        if (t->kind == BMT_CTF_STRUCT || t->kind == BMT_CTF_VARIANT) {
            for (uint32_t i = 0; i < t->member_count; i++) {
                if (name_eq(t->members[i].name, path, n))
                    next = t->members[i].type;
            }
        }
        t = next;
        path = dot ? dot + 1 : path + n;
    }
    return t;
}

static const struct bmt_ctf_type *resolve(struct finish *f, const char *path)
{
    static const struct {
        const char *prefix;
        enum bmt_ctf_scope scope;
    } abs[] = {
        {"trace.packet.header.", BMT_SCOPE_PACKET_HEADER},
        {"stream.packet.context.", BMT_SCOPE_PACKET_CONTEXT},
        {"stream.event.header.", BMT_SCOPE_EVENT_HEADER},
        {"stream.event.context.", BMT_SCOPE_EVENT_COMMON_CONTEXT},
        {"event.context.", BMT_SCOPE_EVENT_CONTEXT},
        {"event.fields.", BMT_SCOPE_EVENT_FIELDS},
    };
    for (unsigned i = 0; i < sizeof abs / sizeof abs[0]; i++) {
        size_t n = strlen(abs[i].prefix);
        if (strncmp(path, abs[i].prefix, n) == 0) {
            if (abs[i].scope > f->scope || !f->s->root[abs[i].scope])
                return NULL;
            return descend(f->s->root[abs[i].scope], path + n);
        }
    }
    /* Relative: the first component names a member declared before, in the
     * innermost enclosing struct that has one. */
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    for (unsigned d = f->depth; d-- > 0;) {
        const struct bmt_ctf_type *st = f->stack[d].st;
        for (uint32_t i = f->stack[d].index; i-- > 0;) {
            if (name_eq(st->members[i].name, path, n))
                return dot ? descend(st->members[i].type, dot + 1) : st->members[i].type;
        }
    }
    return NULL;
}

static enum bmt_ctf_meaning meaning_of(enum bmt_ctf_scope scope, const char *name)
{
    static const struct {
        enum bmt_ctf_scope scope;
        const char *name;
        enum bmt_ctf_meaning meaning;
    } rules[] = {
        {BMT_SCOPE_PACKET_HEADER, "magic", BMT_M_MAGIC},
        {BMT_SCOPE_PACKET_HEADER, "uuid", BMT_M_UUID},
        {BMT_SCOPE_PACKET_HEADER, "stream_id", BMT_M_STREAM_ID},
        {BMT_SCOPE_PACKET_HEADER, "stream_instance_id", BMT_M_STREAM_INSTANCE_ID},
        {BMT_SCOPE_PACKET_CONTEXT, "timestamp_begin", BMT_M_TS_BEGIN},
        {BMT_SCOPE_PACKET_CONTEXT, "timestamp_end", BMT_M_TS_END},
        {BMT_SCOPE_PACKET_CONTEXT, "content_size", BMT_M_CONTENT_SIZE},
        {BMT_SCOPE_PACKET_CONTEXT, "packet_size", BMT_M_PACKET_SIZE},
        {BMT_SCOPE_PACKET_CONTEXT, "events_discarded", BMT_M_DISCARDED},
        {BMT_SCOPE_PACKET_CONTEXT, "packet_seq_num", BMT_M_SEQ_NUM},
        {BMT_SCOPE_EVENT_HEADER, "id", BMT_M_EVENT_ID},
    };
    if (!name)
        return BMT_M_NONE;
    for (unsigned i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].scope == scope && strcmp(rules[i].name, name) == 0)
            return rules[i].meaning;
    return BMT_M_NONE;
}

static int finish_node(struct finish *f, struct bmt_ctf_type *t, const char *name);

static int finish_int(struct finish *f, struct bmt_ctf_type *t, const char *name)
{
    if (t->size_bits == 0 || t->size_bits > 64)
        return fail(f, "field %s: integers of %u bits are not supported (1 to 64)",
                    name ? name : "?", t->size_bits);
    if (t->clock_name) {
        t->clock = -1;
        for (unsigned i = 0; i < f->s->clock_count; i++)
            if (strcmp(f->s->clock_names[i], t->clock_name) == 0)
                t->clock = (int32_t)i;
        if (t->clock < 0)
            return fail(f, "field %s maps to clock \"%s\", which the metadata does not declare",
                        name ? name : "?", t->clock_name);
    }
    t->meaning = (uint8_t)meaning_of(f->scope, name);
    if ((t->meaning == BMT_M_TS_BEGIN || t->meaning == BMT_M_TS_END) && t->clock < 0 &&
        f->s->clock_count == 1)
        t->clock = 0; /* babeltrace2's quirk: unmapped packet times use the only clock */
    if (t->meaning == BMT_M_UUID)
        return fail(f, "field uuid is an integer, not an array of 16 bytes");
    if (t->kind == BMT_CTF_ENUM && t->range_count == 0)
        return fail(f, "enumeration %s has no labels", name ? name : "?");
    t->min_bits = t->size_bits;
    return 0;
}

/* The option each range of variant `t`'s tag selects: the first member
 * named like the range's label (or like the label without its leading
 * '_'), as the per-event label lookup of babeltrace2 does. */
static int match_options(struct finish *f, struct bmt_ctf_type *t)
{
    const struct bmt_ctf_type *tag = t->target;
    int32_t *opt = bmt_arena_alloc(f->a, (tag->range_count + 1) * sizeof *opt);
    if (!opt) {
        f->oom = 1;
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < tag->range_count; r++) {
        const char *label = tag->ranges[r].label;
        opt[r] = -1;
        for (uint32_t i = 0; i < t->member_count && opt[r] < 0; i++) {
            const char *m = t->members[i].name;
            if (strcmp(m, label) == 0 || (label[0] == '_' && strcmp(m, label + 1) == 0))
                opt[r] = (int32_t)i;
        }
    }
    t->range_option = opt;
    return 0;
}

/* A struct: its members in order, its alignment the largest of theirs. */
static int finish_struct(struct finish *f, struct bmt_ctf_type *t)
{
    uint32_t align = t->has_align ? t->align_bits : 1;
    f->stack[f->depth].st = t;
    f->depth++;
    t->min_bits = 0;
    for (uint32_t i = 0; i < t->member_count; i++) {
        f->stack[f->depth - 1].index = i;
        struct bmt_ctf_type *m = t->members[i].type;
        if (finish_node(f, m, t->members[i].name) < 0)
            return -EINVAL;
        if (m->align_bits > align)
            align = m->align_bits;
        t->min_bits += m->min_bits;
    }
    f->depth--;
    t->align_bits = align;
    return 0;
}

/* An array or sequence: its element, its length field, whether it is text
 * (and the packet header's uuid). */
static int finish_array(struct finish *f, struct bmt_ctf_type *t, const char *name)
{
    struct bmt_ctf_type *e = t->elem;
    if (t->kind == BMT_CTF_SEQUENCE) {
        const struct bmt_ctf_type *len = resolve(f, t->ref);
        if (!len || (len->kind != BMT_CTF_INT && len->kind != BMT_CTF_ENUM) || len->is_signed ||
            len->slot == SLOT_NONE || len->slot >= t->slot)
            return fail(f, "sequence %s: its length \"%s\" is not an unsigned integer field "
                           "declared before it", name ? name : "?", t->ref);
        t->target = len;
    }
    if (finish_node(f, e, NULL) < 0)
        return -EINVAL;
    /* The element's own name-based meaning does not apply; the array's
     * does (the packet header's uuid). */
    t->meaning = (uint8_t)meaning_of(f->scope, name);
    if (t->meaning == BMT_M_UUID &&
        !(t->kind == BMT_CTF_ARRAY && t->length == 16 && e->kind == BMT_CTF_INT &&
          e->size_bits == 8 && e->align_bits % 8 == 0))
        return fail(f, "field uuid is not an array of 16 bytes");
    if (t->meaning != BMT_M_UUID)
        t->meaning = BMT_M_NONE;
    t->align_bits = e->align_bits > t->align_bits ? e->align_bits : t->align_bits;
    t->is_text = e->kind == BMT_CTF_INT && e->is_text && e->size_bits == 8 &&
                 e->align_bits % 8 == 0;
    if (t->kind == BMT_CTF_ARRAY)
        t->min_bits = e->min_bits && t->length > UINT64_MAX / e->min_bits
                          ? UINT64_MAX : t->length * e->min_bits;
    return 0;
}

/* A variant: its tag and its options, matched to the tag's labels once. */
static int finish_variant(struct finish *f, struct bmt_ctf_type *t, const char *name)
{
    const struct bmt_ctf_type *tag = resolve(f, t->ref ? t->ref : "");
    if (!tag || tag->kind != BMT_CTF_ENUM || tag->slot == SLOT_NONE || tag->slot >= t->slot)
        return fail(f, "variant %s: its tag \"%s\" is not an enumeration field declared "
                       "before it", name ? name : "?", t->ref ? t->ref : "");
    t->target = tag;
    if (t->member_count == 0)
        return fail(f, "variant %s has no options", name ? name : "?");
    uint64_t min = UINT64_MAX;
    for (uint32_t i = 0; i < t->member_count; i++) {
        if (finish_node(f, t->members[i].type, t->members[i].name) < 0)
            return -EINVAL;
        if (t->members[i].type->min_bits < min)
            min = t->members[i].type->min_bits;
    }
    t->min_bits = min;
    t->align_bits = 1;
    return match_options(f, t);
}

static int finish_node(struct finish *f, struct bmt_ctf_type *t, const char *name)
{
    if (f->depth > MAX_DEPTH)
        return fail(f, "types nest more than %d levels deep", MAX_DEPTH);
    if (t->byte_order == BMT_CTF_NATIVE)
        t->byte_order = f->s->big_endian ? BMT_CTF_BE : BMT_CTF_LE;
    if (t->align_bits == 0)
        t->align_bits = t->kind == BMT_CTF_INT || t->kind == BMT_CTF_ENUM || t->kind == BMT_CTF_FLOAT
                            ? (t->size_bits % 8 == 0 ? 8 : 1)
                            : t->kind == BMT_CTF_STRING ? 8 : 1;
    if (!is_pow2(t->align_bits))
        return fail(f, "field %s: alignment %u is not a power of two", name ? name : "?",
                    t->align_bits);
    t->slot = (*f->next_slot)++;
    switch (t->kind) {
    case BMT_CTF_INT:
    case BMT_CTF_ENUM:
        return finish_int(f, t, name);
    case BMT_CTF_FLOAT:
        if (!((t->size_bits == 32 && t->mant_dig == 24) || (t->size_bits == 64 && t->mant_dig == 53)))
            return fail(f, "field %s: only 32- and 64-bit IEEE 754 floats are supported",
                        name ? name : "?");
        t->min_bits = t->size_bits;
        return 0;
    case BMT_CTF_STRING:
        if (name && meaning_of(f->scope, name) == BMT_M_UUID)
            return fail(f, "field uuid is a string, not an array of 16 bytes");
        t->min_bits = 8;
        return 0;
    case BMT_CTF_STRUCT:
        return finish_struct(f, t);
    case BMT_CTF_ARRAY:
    case BMT_CTF_SEQUENCE:
        return finish_array(f, t, name);
    case BMT_CTF_VARIANT:
        return finish_variant(f, t, name);
    }
    return fail(f, "field %s has an unknown type", name ? name : "?");
}

int bmt_ctf_finish_scope(struct bmt_arena *a, struct bmt_ctf_scopes *s, enum bmt_ctf_scope which,
                         uint32_t *next_slot, char *err, size_t err_bytes)
{
    struct bmt_ctf_type *root = s->root[which];
    if (!root)
        return 0;
    struct finish f = {a, s, which, next_slot, err, err_bytes, 0, 0, {{0, 0}}, 0};
    if (root->kind != BMT_CTF_STRUCT)
        return fail(&f, "the scope is not a struct");
    int rc = finish_node(&f, root, NULL);
    return f.oom ? -ENOMEM : rc;
}

/* ---- babeltrace2's "in IR" rule ---- */

static void mark(struct bmt_ctf_type *t, unsigned depth)
{
    if (depth > MAX_DEPTH)
        return;
    switch (t->kind) {
    case BMT_CTF_INT:
    case BMT_CTF_ENUM:
        t->in_ir = (t->clock < 0 && t->meaning == BMT_M_NONE) || t->needed;
        return;
    case BMT_CTF_STRUCT:
        t->in_ir = 0;
        for (uint32_t i = t->member_count; i-- > 0;) {
            mark(t->members[i].type, depth + 1);
            if (t->members[i].type->in_ir)
                t->in_ir = 1;
        }
        return;
    case BMT_CTF_VARIANT:
        t->in_ir = 0;
        for (uint32_t i = t->member_count; i-- > 0;) {
            mark(t->members[i].type, depth + 1);
            if (t->members[i].type->in_ir)
                t->in_ir = 1;
        }
        if (t->in_ir)
            ((struct bmt_ctf_type *)t->target)->needed = 1;
        return;
    case BMT_CTF_ARRAY:
    case BMT_CTF_SEQUENCE:
        mark(t->elem, depth + 1);
        t->in_ir = t->elem->in_ir && t->meaning != BMT_M_UUID;
        if (t->kind == BMT_CTF_SEQUENCE && t->in_ir)
            ((struct bmt_ctf_type *)t->target)->needed = 1;
        return;
    default:
        t->in_ir = 1;
        return;
    }
}

void bmt_ctf_mark_printed(struct bmt_ctf_scopes *s)
{
    for (int i = BMT_SCOPE_COUNT; i-- > 0;)
        if (s->root[i])
            mark(s->root[i], 0);
}
