/* babeltrace2-style field printing (contract in print_bt2.h).
 *
 * The renderings follow babeltrace2 2.0's src/plugins/text/pretty/print.c:
 * enumerations list every matching label, variants print their option's
 * value without its name, hexadecimal and octal values are masked to the field's size rounded up to
 * a whole digit, binary ones print every bit of the field, floats use %g.
 * Elements of non-text arrays are not kept by the reader (one slot per
 * node): they are decoded again from the array's start when printed.
 */
#include "print_bt2.h"
#include "ctf/decode.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

/* Appends `len` bytes of `s` between double quotes, escaped exactly as
 * babeltrace2's sink.text.pretty does (C escapes for \a \b \t \n \v \f \r
 * ESC ' ? " \, \xNN for other control bytes and DEL, bytes >= 0x80 raw). */
static void bt2_string(struct bmt_out *o, const char *s, size_t len)
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

struct printer {
    struct bmt_out *o;
    const struct bmt_reader_stream *s;
    struct bmt_value *vals;
};

void bmt_print_bt2_int(struct bmt_out *o, const struct bmt_ctf_type *t, uint64_t v)
{
    char buf[80];
    unsigned len = t->size_bits;
    switch (t->base) {
    case 2: {
        bmt_out_str(o, "0b");
        for (unsigned b = len; b-- > 0;)
            bmt_out_char(o, (v >> b) & 1 ? '1' : '0');
        return;
    }
    case 8:
        if (t->is_signed && len < 64) {
            unsigned rounded = ((len - 1) / 3 + 1) * 3;
            if (rounded < 64)
                v &= (UINT64_C(1) << rounded) - 1;
        }
        snprintf(buf, sizeof buf, "0%" PRIo64, v);
        bmt_out_str(o, buf);
        return;
    case 16:
        if (len < 64) {
            unsigned rounded = (len + 3) & ~3u;
            if (rounded < 64)
                v &= (UINT64_C(1) << rounded) - 1;
        }
        snprintf(buf, sizeof buf, "0x%" PRIX64, v);
        bmt_out_str(o, buf);
        return;
    default:
        if (t->is_signed && (int64_t)v < 0) {
            bmt_out_char(o, '-');
            bmt_out_u64(o, (uint64_t)0 - v);
        } else {
            bmt_out_u64(o, v);
        }
    }
}

static void value(struct printer *p, const struct bmt_ctf_type *t);

static void print_enum(struct printer *p, const struct bmt_ctf_type *t)
{
    const char *labels[16];
    uint64_t v = p->vals[t->slot].integer;
    unsigned n = bmt_ctf_enum_labels(t, v, labels, 16);
    bmt_out_str(p->o, "( ");
    if (n == 0)
        bmt_out_str(p->o, "<unknown>");
    for (unsigned i = 0; i < n && i < 16; i++) {
        if (i)
            bmt_out_str(p->o, ", ");
        bt2_string(p->o, labels[i], strlen(labels[i]));
    }
    bmt_out_str(p->o, " : container = ");
    bmt_print_bt2_int(p->o, t, v);
    bmt_out_str(p->o, " )");
}

static void print_float(struct printer *p, const struct bmt_ctf_type *t)
{
    uint64_t bits = p->vals[t->slot].integer;
    double d;
    if (t->size_bits == 32) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        d = f;
    } else {
        memcpy(&d, &bits, sizeof d);
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%g", d);
    bmt_out_str(p->o, buf);
}

static void print_struct(struct printer *p, const struct bmt_ctf_type *t)
{
    unsigned printed = 0;
    bmt_out_char(p->o, '{');
    for (uint32_t i = 0; i < t->member_count; i++) {
        const struct bmt_ctf_member *m = &t->members[i];
        if (!m->type->in_ir)
            continue;
        if (printed++)
            bmt_out_mem(p->o, ", ", 2);
        else
            bmt_out_char(p->o, ' ');
        bmt_out_mem(p->o, m->name, m->name_len);
        bmt_out_mem(p->o, " = ", 3);
        value(p, m->type);
    }
    bmt_out_str(p->o, " }");
}

static void print_array(struct printer *p, const struct bmt_ctf_type *t)
{
    const struct bmt_value *v = &p->vals[t->slot];
    if (t->is_text) {
        bt2_string(p->o, v->str, v->len);
        return;
    }
    uint64_t n = t->kind == BMT_CTF_ARRAY ? t->length : p->vals[t->target->slot].integer;
    struct bmt_decode d;
    memset(&d, 0, sizeof d);
    d.base = p->s->map + p->s->packet;
    d.pos = v->integer;
    d.end = p->s->content_bits > d.pos ? p->s->content_bits : d.pos;
    d.vals = p->vals;
    bmt_out_char(p->o, '[');
    for (uint64_t i = 0; i < n; i++) {
        if (bmt_decode(&d, t->elem) < 0)
            break; /* decoded once already: cannot fail */
        bmt_out_str(p->o, i ? ", [" : " [");
        bmt_out_u64(p->o, i);
        bmt_out_str(p->o, "] = ");
        value(p, t->elem);
    }
    bmt_out_str(p->o, " ]");
}

static void value(struct printer *p, const struct bmt_ctf_type *t)
{
    const struct bmt_value *v = &p->vals[t->slot];
    switch (t->kind) {
    case BMT_CTF_INT:
        bmt_print_bt2_int(p->o, t, v->integer);
        return;
    case BMT_CTF_ENUM:
        print_enum(p, t);
        return;
    case BMT_CTF_FLOAT:
        print_float(p, t);
        return;
    case BMT_CTF_STRING:
        bt2_string(p->o, v->str, v->len);
        return;
    case BMT_CTF_STRUCT:
        print_struct(p, t);
        return;
    case BMT_CTF_ARRAY:
    case BMT_CTF_SEQUENCE:
        print_array(p, t);
        return;
    case BMT_CTF_VARIANT: {
        const struct bmt_ctf_member *m = &t->members[v->integer < t->member_count ? v->integer : 0];
        bmt_out_str(p->o, "{ ");
        value(p, m->type); /* babeltrace2 2.0 does not name the option */
        bmt_out_str(p->o, " }");
        return;
    }
    }
}

void bmt_print_bt2_fields(struct bmt_out *o, const struct bmt_reader *r,
                          const struct bmt_record *rec)
{
    const struct bmt_reader_stream *s = &r->streams[rec->stream];
    int printed = bmt_print_bt2_packet(o, r, rec->stream);
    bmt_print_bt2_event(o, r, rec, printed);
    (void)s;
}

int bmt_print_bt2_packet(struct bmt_out *o, const struct bmt_reader *r, unsigned stream)
{
    const struct bmt_reader_stream *s = &r->streams[stream];
    struct printer p = {o, s, s->vals};
    const struct bmt_ctf_type *pc = s->sc->packet_context;
    if (!pc || !pc->in_ir)
        return 0;
    print_struct(&p, pc);
    return 1;
}

void bmt_print_bt2_event(struct bmt_out *o, const struct bmt_reader *r,
                         const struct bmt_record *rec, int printed)
{
    const struct bmt_reader_stream *s = &r->streams[rec->stream];
    struct printer p = {o, s, s->vals};
    const struct bmt_ctf_type *scopes[3] = {s->sc->event_context, rec->ec->context, rec->ec->fields};
    for (int i = 0; i < 3; i++) {
        if (!scopes[i] || !scopes[i]->in_ir)
            continue;
        if (printed++)
            bmt_out_mem(o, ", ", 2);
        print_struct(&p, scopes[i]);
    }
}
