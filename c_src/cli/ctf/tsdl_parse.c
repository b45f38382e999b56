/* TSDL parser (contract in tsdl.h).
 *
 * Recursive descent over the tokens of tsdl_lex.c. Declarations are kept
 * by name (aliases, named structs, enums and variants) in one list; scopes
 * reference the declared nodes and metadata.c deep-copies them when it
 * finishes a scope. Nesting is bounded by MAX_DEPTH so hostile metadata
 * ends in a message, never in a stack overflow. Every failure records the
 * first message and unwinds; nothing is freed here (the arena owns it).
 */
#include "tsdl_parser.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int parse_uuid(const char *s, uint8_t out[BMT_CTF_UUID_BYTES])
{
    int n = 0;
    for (; *s && n < 32; s++) {
        int v;
        if (*s == '-')
            continue;
        if (*s >= '0' && *s <= '9')
            v = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            v = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            v = *s - 'A' + 10;
        else
            return -1;
        if (n % 2 == 0)
            out[n / 2] = (uint8_t)(v << 4);
        else
            out[n / 2] |= (uint8_t)v;
        n++;
    }
    return n == 32 && !*s ? 0 : -1;
}

enum block { B_TRACE, B_ENV, B_CLOCK, B_STREAM, B_EVENT, B_OTHER };

struct block_state {
    struct bmt_tsdl_stream *stream;
    struct bmt_tsdl_event *event;
    struct bmt_tsdl_clock *clock;
};

/* An attribute of the trace block. */
static int trace_attr(struct parser *p, const char *key, const struct value *v)
{
    struct bmt_tsdl *o = p->out;
    if (strcmp(key, "uuid") == 0) {
        if (v->kind != V_STR || parse_uuid(v->text, o->uuid) < 0) {
            bmt_tp_fail(p, "the trace uuid is malformed");
            return -1;
        }
        o->has_uuid = 1;
    } else if (strcmp(key, "byte_order") == 0) {
        int bo = bmt_tp_byte_order_value(p, v);
        if (bo < 0)
            return -1;
        if (bo == BMT_CTF_NATIVE) {
            bmt_tp_fail(p, "the trace byte_order must be le or be");
            return -1;
        }
        o->has_byte_order = 1;
        o->big_endian = bo == BMT_CTF_BE;
    } else if (strcmp(key, "major") == 0 && v->kind == V_NUM) {
        o->major = v->num;
    } else if (strcmp(key, "minor") == 0 && v->kind == V_NUM) {
        o->minor = v->num;
    }
    return 0;
}

/* An attribute of a clock block. */
static int clock_attr(struct parser *p, struct bmt_ctf_clock *c, const char *key,
                      const struct value *v)
{
    if (strcmp(key, "name") == 0 && (v->kind == V_STR || v->kind == V_IDENT)) {
        c->name = v->text;
    } else if (strcmp(key, "freq") == 0) {
        if (v->kind != V_NUM || v->negative || v->num == 0) {
            bmt_tp_fail(p, "clock freq must be a positive integer");
            return -1;
        }
        c->freq_hz = v->num;
    } else if (strcmp(key, "uuid") == 0) {
        uint8_t u[BMT_CTF_UUID_BYTES];
        if (v->kind != V_STR || parse_uuid(v->text, u) < 0) {
            bmt_tp_fail(p, "a clock's uuid is malformed");
            return -1;
        }
    } else if (strcmp(key, "offset_s") == 0 || strcmp(key, "offset") == 0) {
        if (v->kind != V_NUM || (!v->negative && v->num > INT64_MAX)) {
            bmt_tp_fail(p, "clock %s must be an integer", key);
            return -1;
        }
        if (key[6] == '_')
            c->offset_s = (int64_t)v->num;
        else
            c->offset_cycles = (int64_t)v->num;
    }
    return 0;
}

/* An attribute of an event block. */
static int event_attr(struct parser *p, struct bmt_tsdl_event *e, const char *key,
                      const struct value *v)
{
    if (strcmp(key, "name") == 0 && (v->kind == V_STR || v->kind == V_IDENT)) {
        e->name = v->text;
    } else if (strcmp(key, "id") == 0 || strcmp(key, "stream_id") == 0) {
        if (v->kind != V_NUM || v->negative) {
            bmt_tp_fail(p, "event %s must be a non-negative integer", key);
            return -1;
        }
        if (key[0] == 'i') {
            e->id = v->num;
            e->has_id = 1;
        } else {
            e->stream_id = v->num;
            e->has_stream_id = 1;
        }
    }
    return 0;
}

static int attr_value(struct parser *p, enum block kind, struct block_state *b, const char *key,
                      const struct value *v)
{
    switch (kind) {
    case B_TRACE:
        return trace_attr(p, key, v);
    case B_ENV: {
        struct bmt_tsdl_env *e = bmt_tp_alloc(p, sizeof *e);
        if (!e)
            return -1;
        e->env.key = key;
        if (v->kind == V_STR)
            e->env.str = v->text;
        else if (v->kind == V_NUM)
            e->env.integer = (int64_t)v->num;
        else
            e->env.str = v->text; /* an identifier: kept as text */
        *p->env_tail = e;
        p->env_tail = &e->next;
        return 0;
    }
    case B_CLOCK:
        return clock_attr(p, &b->clock->clock, key, v);
    case B_STREAM:
        if (strcmp(key, "id") == 0) {
            if (v->kind != V_NUM || v->negative) {
                bmt_tp_fail(p, "stream id must be a non-negative integer");
                return -1;
            }
            b->stream->id = v->num;
            b->stream->has_id = 1;
        }
        return 0;
    case B_EVENT:
        return event_attr(p, b->event, key, v);
    default:
        return 0;
    }
}

static int attr_type(struct parser *p, enum block kind, struct block_state *b, const char *key,
                     struct bmt_ctf_type *t)
{
    struct bmt_ctf_type **slot = NULL;
    if (kind == B_TRACE && strcmp(key, "packet.header") == 0)
        slot = &p->out->packet_header;
    else if (kind == B_STREAM && strcmp(key, "packet.context") == 0)
        slot = &b->stream->packet_context;
    else if (kind == B_STREAM && strcmp(key, "event.header") == 0)
        slot = &b->stream->event_header;
    else if (kind == B_STREAM && strcmp(key, "event.context") == 0)
        slot = &b->stream->event_context;
    else if (kind == B_EVENT && strcmp(key, "context") == 0)
        slot = &b->event->context;
    else if (kind == B_EVENT && strcmp(key, "fields") == 0)
        slot = &b->event->fields;
    if (!slot)
        return 0; /* a type for something beamtrace does not read */
    if (t->kind != BMT_CTF_STRUCT) {
        bmt_tp_fail(p, "%s must be a struct", key);
        return -1;
    }
    *slot = t;
    return 0;
}

/* Starts a block of kind `kind`: its record, linked where the output
 * keeps it. */
static int open_block(struct parser *p, enum block kind, struct block_state *b)
{
    if (kind == B_STREAM) {
        if (!(b->stream = bmt_tp_alloc(p, sizeof *b->stream)))
            return -1;
        *p->stream_tail = b->stream;
        p->stream_tail = &b->stream->next;
    } else if (kind == B_EVENT) {
        if (!(b->event = bmt_tp_alloc(p, sizeof *b->event)))
            return -1;
        *p->event_tail = b->event;
        p->event_tail = &b->event->next;
    } else if (kind == B_CLOCK) {
        if (!(b->clock = bmt_tp_alloc(p, sizeof *b->clock)))
            return -1;
        b->clock->clock.freq_hz = 1000000000;
        *p->clock_tail = b->clock;
        p->clock_tail = &b->clock->next;
    } else if (kind == B_TRACE) {
        if (p->out->has_trace) {
            bmt_tp_fail(p, "two trace blocks");
            return -1;
        }
        p->out->has_trace = 1;
    }
    return 0;
}

/* An attribute name starting with token `t`, dotted parts joined
 * ("packet.header"), copied into the arena; NULL on failure. */
static char *attr_name(struct parser *p, struct bmt_tok t)
{
    char key[128];
    size_t klen = 0;
    for (;;) {
        if (klen + t.len + 1 >= sizeof key) {
            bmt_tp_fail(p, "an attribute name is too long");
            return NULL;
        }
        memcpy(key + klen, t.s, t.len);
        klen += t.len;
        if (!bmt_tok_punct((struct bmt_tok[]){bmt_tp_peek(p)}, '.'))
            break;
        bmt_tp_next(p);
        key[klen++] = '.';
        t = bmt_tp_next(p);
        if (t.kind != BMT_T_IDENT) {
            bmt_tp_fail(p, "expected a name after '.'");
            return NULL;
        }
    }
    key[klen] = '\0';
    char *k = bmt_arena_strndup(p->a, key, klen);
    if (!k)
        bmt_tp_oom(p);
    return k;
}

static int block(struct parser *p, enum block kind)
{
    struct block_state b = {0};
    const char *seen[32];
    unsigned seen_count = 0;
    if (open_block(p, kind, &b) < 0)
        return -1;
    for (;;) {
        struct bmt_tok t = bmt_tp_next(p);
        if (bmt_tok_punct(&t, '}'))
            break;
        if (t.kind == BMT_T_EOF || p->failed) {
            bmt_tp_fail(p, "the metadata ends inside a block (truncated?)");
            return -1;
        }
        if (bmt_tok_is(&t, "typealias")) {
            if (bmt_tp_typealias_decl(p) < 0)
                return -1;
            continue;
        }
        if (bmt_tok_is(&t, "typedef")) {
            if (bmt_tp_typedef_decl(p) < 0)
                return -1;
            continue;
        }
        if (t.kind != BMT_T_IDENT) {
            bmt_tp_fail(p, "expected an attribute name, found '%.*s'", (int)(t.len > 40 ? 40 : t.len), t.s);
            return -1;
        }
        char *k = attr_name(p, t);
        if (!k)
            return -1;
        if (kind != B_ENV && kind != B_OTHER) {
            for (unsigned i = 0; i < seen_count; i++)
                if (strcmp(seen[i], k) == 0) {
                    bmt_tp_fail(p, "attribute \"%s\" is given twice in a block", k);
                    return -1;
                }
            if (seen_count < sizeof seen / sizeof seen[0])
                seen[seen_count++] = k;
        }
        struct bmt_tok op = bmt_tp_next(p);
        if (bmt_tok_punct(&op, BMT_P_ASSIGN_TYPE)) {
            struct bmt_ctf_type *ty = bmt_tp_block_type(p);
            if (!ty || attr_type(p, kind, &b, k, ty) < 0)
                return -1;
        } else if (bmt_tok_punct(&op, '=')) {
            struct value v;
            if (bmt_tp_value(p, &v) < 0 || attr_value(p, kind, &b, k, &v) < 0)
                return -1;
        } else {
            bmt_tp_fail(p, "expected '=' or ':=' after \"%s\"", k);
            return -1;
        }
        if (bmt_tp_expect(p, ';', "an attribute") < 0)
            return -1;
    }
    if (kind == B_CLOCK && !b.clock->clock.name) {
        bmt_tp_fail(p, "a clock has no name");
        return -1;
    }
    if (kind == B_EVENT && !b.event->name) {
        bmt_tp_fail(p, "an event block has no name");
        return -1;
    }
    struct bmt_tok semi = bmt_tp_next(p);
    if (!bmt_tok_punct(&semi, ';')) {
        bmt_tp_fail(p, "expected ';' after a block's '}'");
        return -1;
    }
    return 0;
}

int bmt_tsdl_parse(struct bmt_arena *a, const char *text, size_t len, struct bmt_tsdl *out,
                   char *err, size_t err_bytes)
{
    struct parser p;
    memset(&p, 0, sizeof p);
    p.a = a;
    p.out = out;
    p.err = err;
    p.err_bytes = err_bytes;
    p.stream_tail = &out->streams;
    p.event_tail = &out->events;
    p.clock_tail = &out->clocks;
    p.env_tail = &out->env;
    bmt_lex_init(&p.lx, text, len);
    while (!p.failed) {
        struct bmt_tok t = bmt_tp_next(&p);
        if (t.kind == BMT_T_EOF || p.failed)
            break;
        if (bmt_tok_punct(&t, ';'))
            continue;
        if (bmt_tok_is(&t, "typealias")) {
            bmt_tp_typealias_decl(&p);
            continue;
        }
        if (bmt_tok_is(&t, "typedef")) {
            bmt_tp_typedef_decl(&p);
            continue;
        }
        enum block kind = bmt_tok_is(&t, "trace")    ? B_TRACE
                          : bmt_tok_is(&t, "env")    ? B_ENV
                          : bmt_tok_is(&t, "clock")  ? B_CLOCK
                          : bmt_tok_is(&t, "stream") ? B_STREAM
                          : bmt_tok_is(&t, "event")  ? B_EVENT
                          : bmt_tok_is(&t, "callsite") ? B_OTHER
                                                     : (enum block)-1;
        if ((int)kind >= 0) {
            if (bmt_tp_expect(&p, '{', "a block name") < 0)
                break;
            block(&p, kind);
            continue;
        }
        if (bmt_tok_is(&t, "struct") || bmt_tok_is(&t, "enum") || bmt_tok_is(&t, "variant")) {
            p.lx.p = t.s; /* let type_spec read the keyword */
            if (!bmt_tp_type_spec(&p))
                break;
            bmt_tp_expect(&p, ';', "a type declaration");
            continue;
        }
        bmt_tp_fail(&p, "unexpected '%.*s' at the top level", (int)(t.len > 40 ? 40 : t.len), t.s);
    }
    if (p.failed)
        return p.failed < 0 ? p.failed : -EINVAL;
    return 0;
}
