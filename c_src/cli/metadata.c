/* Minimal TSDL reader for beamtrace's own metadata (contract in metadata.h).
 *
 * Why a hand-written tokenizer rather than sscanf over known lines: the
 * metadata may be re-indented or commented by other tools (babeltrace2's
 * sink.ctf.fs rewrites it), and a token stream makes every malformed input
 * end in a message instead of a misread. Every read is bounded by `end`.
 */
#include "metadata.h"
#include "catalogue.h"
#include "event.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind { T_EOF, T_IDENT, T_NUM, T_STR, T_PUNCT, T_BAD };

struct tok {
    enum tok_kind kind;
    const char *s;  /* first byte (strings: after the opening quote) */
    size_t len;     /* bytes (strings: raw, escapes not decoded) */
    char punct;     /* T_PUNCT: the character; ":=" is 'A' */
};

struct lex {
    const char *p, *end;
    char *err;
    int failed;
};

/* One field as declared in an event block. */
struct decl_field {
    char name[64];
    int type; /* enum bmt_field_type, or -1 for a type beamtrace does not read */
};

static void fail(struct lex *lx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct lex *lx, const char *fmt, ...)
{
    if (lx->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lx->err, BMT_META_ERROR_BYTES, fmt, ap);
    va_end(ap);
    lx->failed = 1;
}

static int is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static struct tok next(struct lex *lx)
{
    struct tok t = {T_EOF, lx->p, 0, 0};
    const char *p = lx->p, *end = lx->end;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
            const char *q = p + 2;
            while (end - q >= 2 && !(q[0] == '*' && q[1] == '/'))
                q++;
            if (end - q < 2) {
                t.kind = T_BAD;
                lx->p = end;
                return t;
            }
            p = q + 2;
        } else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
        } else {
            break;
        }
    }
    t.s = p;
    if (p >= end) {
        lx->p = end;
        return t;
    }
    if (is_ident_start(*p)) {
        const char *q = p;
        while (q < end && is_ident_char(*q))
            q++;
        t.kind = T_IDENT;
        t.len = (size_t)(q - p);
        lx->p = q;
    } else if ((*p >= '0' && *p <= '9') || *p == '-' || *p == '+') {
        const char *q = p + 1;
        while (q < end && is_ident_char(*q))
            q++;
        t.kind = T_NUM;
        t.len = (size_t)(q - p);
        lx->p = q;
    } else if (*p == '"') {
        const char *q = p + 1;
        while (q < end && *q != '"') {
            if (*q == '\\' && q + 1 < end)
                q++;
            q++;
        }
        if (q >= end) {
            t.kind = T_BAD;
            lx->p = end;
            return t;
        }
        t.kind = T_STR;
        t.s = p + 1;
        t.len = (size_t)(q - p - 1);
        lx->p = q + 1;
    } else if (*p == ':' && end - p >= 2 && p[1] == '=') {
        t.kind = T_PUNCT;
        t.punct = 'A';
        t.len = 2;
        lx->p = p + 2;
    } else {
        t.kind = T_PUNCT;
        t.punct = *p;
        t.len = 1;
        lx->p = p + 1;
    }
    return t;
}

static int tok_is(const struct tok *t, const char *word)
{
    size_t n = strlen(word);
    return t->kind == T_IDENT && t->len == n && memcmp(t->s, word, n) == 0;
}

static int tok_punct(const struct tok *t, char c)
{
    return t->kind == T_PUNCT && t->punct == c;
}

/* Copies a string token into `out` (`cap` bytes), decoding \" and \\ and
 * the usual C escapes. Returns 0, or -1 when it does not fit. */
static int tok_string(const struct tok *t, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->s[i];
        if (c == '\\' && i + 1 < t->len) {
            c = t->s[++i];
            if (c == 'n')
                c = '\n';
            else if (c == 't')
                c = '\t';
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = c;
    }
    out[n] = '\0';
    return 0;
}

/* Parses a decimal (or 0x hex) integer token. Returns 0 or -1. */
static int tok_int(const struct tok *t, int64_t *v)
{
    char buf[32];
    if (t->kind != T_NUM || t->len >= sizeof buf)
        return -1;
    memcpy(buf, t->s, t->len);
    buf[t->len] = '\0';
    char *endp;
    errno = 0;
    long long x = strtoll(buf, &endp, 0);
    if (errno || *endp)
        return -1;
    *v = x;
    return 0;
}

/* Skips to the ';' closing the current declaration, matching braces. */
static void skip_decl(struct lex *lx)
{
    int depth = 0;
    for (;;) {
        struct tok t = next(lx);
        if (t.kind == T_EOF || t.kind == T_BAD) {
            fail(lx, "the metadata ends inside a declaration (unbalanced braces, "
                     "string or comment); the trace was not closed cleanly: re-record it");
            return;
        }
        if (tok_punct(&t, '{') || tok_punct(&t, '(') || tok_punct(&t, '['))
            depth++;
        else if (tok_punct(&t, '}') || tok_punct(&t, ')') || tok_punct(&t, ']'))
            depth--;
        else if (tok_punct(&t, ';') && depth <= 0)
            return;
        if (depth < 0) {
            fail(lx, "unbalanced '}' in the metadata; the metadata file is corrupt: re-record the trace");
            return;
        }
    }
}

static int parse_uuid(const struct tok *t, uint8_t out[BMT_CTF_UUID_BYTES])
{
    int n = 0;
    for (size_t i = 0; i < t->len && n < 32; i++) {
        char c = t->s[i];
        int v;
        if (c == '-')
            continue;
        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v = c - 'A' + 10;
        else
            return -1;
        if (n % 2 == 0)
            out[n / 2] = (uint8_t)(v << 4);
        else
            out[n / 2] |= (uint8_t)v;
        n++;
    }
    return n == 32 ? 0 : -1;
}

/* One field declaration inside `fields := struct { ... }`: a type then a
 * name then ';'. The type is `string`, `integer { size = N; ... }`, or one of
 * the aliases beamtrace's metadata declares. */
static int parse_field(struct lex *lx, struct tok first, struct decl_field *f)
{
    int64_t size = 0;
    struct tok last = first;
    int depth = 0, saw_size = 0, saw_signed = 0, is_signed = 0;
    f->type = -1;
    if (tok_is(&first, "string"))
        f->type = BMT_FIELD_STRING;
    else if (tok_is(&first, "uint32_t"))
        f->type = BMT_FIELD_U32;
    else if (tok_is(&first, "uint64_t"))
        f->type = BMT_FIELD_U64;
    for (;;) {
        struct tok t = next(lx);
        if (t.kind == T_EOF || t.kind == T_BAD) {
            fail(lx, "the metadata ends inside an event's fields; the trace was not closed "
                     "cleanly: re-record it");
            return -1;
        }
        if (tok_punct(&t, '{')) {
            depth++;
        } else if (tok_punct(&t, '}')) {
            depth--;
        } else if (depth > 0 && tok_is(&t, "size")) {
            saw_size = 1;
        } else if (depth > 0 && tok_is(&t, "signed")) {
            saw_signed = 1;
        } else if (depth > 0 && saw_signed && (t.kind == T_NUM || t.kind == T_IDENT)) {
            int64_t v = 0;
            is_signed = t.kind == T_NUM ? tok_int(&t, &v) == 0 && v == 1
                                        : tok_is(&t, "true") || tok_is(&t, "TRUE");
            saw_signed = 0;
        } else if (depth > 0 && saw_size && t.kind == T_NUM) {
            if (tok_int(&t, &size) < 0)
                size = 0;
            saw_size = 0;
        } else if (depth == 0 && tok_punct(&t, ';')) {
            break;
        } else if (depth == 0 && t.kind == T_IDENT) {
            last = t;
        }
    }
    if (tok_is(&first, "integer"))
        f->type = size == 32 && !is_signed ? BMT_FIELD_U32
                  : size == 64             ? (is_signed ? BMT_FIELD_S64 : BMT_FIELD_U64)
                                           : -1;
    if (tok_is(&first, "unsigned")) /* "unsigned long": 64-bit in our metadata */
        f->type = BMT_FIELD_U64;
    const char *name = last.s;
    size_t len = last.len;
    if (len > 0 && name[0] == '_') { /* LTTng's prefix; CTF readers strip it */
        name++;
        len--;
    }
    if (len >= sizeof f->name)
        len = sizeof f->name - 1;
    memcpy(f->name, name, len);
    f->name[len] = '\0';
    return 0;
}

static int parse_fields(struct lex *lx, const char *event, struct decl_field *fields,
                        unsigned *count)
{
    struct tok t = next(lx);
    struct tok brace = next(lx);
    if (!tok_is(&t, "struct") || !tok_punct(&brace, '{')) {
        fail(lx, "event \"%s\": fields are not a struct; the metadata was not written by "
                 "beamtrace: read it with babeltrace2", event);
        return -1;
    }
    *count = 0;
    for (;;) {
        t = next(lx);
        if (tok_punct(&t, '}'))
            break;
        if (t.kind != T_IDENT) {
            fail(lx, "event \"%s\": unexpected text in its fields; the metadata is corrupt: "
                     "re-record the trace", event);
            return -1;
        }
        if (*count >= BMT_MAX_FIELDS) {
            fail(lx, "event \"%s\" declares more than %d fields; the trace was written by a "
                     "different beamtrace version: read it with babeltrace2", event, BMT_MAX_FIELDS);
            return -1;
        }
        if (parse_field(lx, t, &fields[*count]) < 0)
            return -1;
        (*count)++;
    }
    skip_decl(lx); /* the ';' after the struct, possibly after align(8) */
    return lx->failed ? -1 : 0;
}

/* Checks an event block against the catalogue and records its id. */
static int bind_event(struct lex *lx, struct bmt_meta *m, const char *name, int64_t id,
                      const struct decl_field *fields, unsigned count, int has_fields)
{
    if (!name[0] || id < 0) {
        fail(lx, "an event block in the metadata has no name or id; the metadata is "
                 "corrupt: re-record the trace");
        return -1;
    }
    if (id >= BMT_META_NO_EVENT) {
        fail(lx, "event \"%s\" has id %lld, beyond what beamtrace reads (16-bit ids); the "
                 "trace was not written by beamtrace: read it with babeltrace2",
             name, (long long)id);
        return -1;
    }
    int tp = bmt_catalogue_find(name);
    if (tp < 0) {
        fail(lx, "event \"%s\" (id %lld) is not in beamtrace's catalogue; the trace was "
                 "written by another tool or a newer beamtrace: run `beamtrace list` to see "
                 "known tracepoints, or read it with babeltrace2", name, (long long)id);
        return -1;
    }
    const struct bmt_tracepoint *c = &bmt_catalogue[tp];
    if (!has_fields || count != c->field_count) {
        fail(lx, "event \"%s\" declares %u fields where beamtrace expects %u; the trace was "
                 "written by a different beamtrace version: read it with babeltrace2",
             name, has_fields ? count : 0, c->field_count);
        return -1;
    }
    for (unsigned i = 0; i < count; i++) {
        if (strcmp(fields[i].name, c->fields[i].name) != 0 ||
            fields[i].type != (int)c->fields[i].type) {
            fail(lx, "event \"%s\" field %u is \"%s\" (%s) where beamtrace expects \"%s\" (%s); "
                     "the trace was written by a different beamtrace version: read it with "
                     "babeltrace2", name, i + 1, fields[i].name,
                 fields[i].type == BMT_FIELD_STRING ? "string"
                 : fields[i].type == BMT_FIELD_U32  ? "u32"
                 : fields[i].type == BMT_FIELD_U64  ? "u64"
                 : fields[i].type == BMT_FIELD_S64  ? "s64" : "unknown type",
                 c->fields[i].name,
                 c->fields[i].type == BMT_FIELD_STRING ? "string"
                 : c->fields[i].type == BMT_FIELD_U32  ? "u32"
                 : c->fields[i].type == BMT_FIELD_U64  ? "u64" : "s64");
            return -1;
        }
    }
    if (m->id_map[id] != BMT_META_NO_EVENT) {
        fail(lx, "event id %lld is declared twice in the metadata; the metadata is corrupt: "
                 "re-record the trace", (long long)id);
        return -1;
    }
    m->id_map[id] = (uint16_t)tp;
    m->event_count++;
    return 0;
}

enum block { B_TRACE, B_ENV, B_CLOCK, B_EVENT, B_OTHER };

static int parse_block(struct lex *lx, struct bmt_meta *m, enum block kind)
{
    char name[256] = "";
    int64_t id = -1, freq = 1000000000;
    struct decl_field fields[BMT_MAX_FIELDS];
    unsigned count = 0;
    int has_fields = 0;

    for (;;) {
        struct tok t = next(lx);
        if (tok_punct(&t, '}'))
            break;
        if (t.kind == T_EOF || t.kind == T_BAD) {
            fail(lx, "the metadata ends inside a block; the trace was not closed cleanly: "
                     "re-record it");
            return -1;
        }
        /* Key: identifiers joined by '.', up to '=' or ':='. */
        char key[64];
        size_t klen = 0;
        while (t.kind == T_IDENT || tok_punct(&t, '.')) {
            if (klen + t.len < sizeof key) {
                memcpy(key + klen, t.s, t.len);
                klen += t.len;
            }
            t = next(lx);
        }
        key[klen] = '\0';
        if (tok_punct(&t, 'A')) {
            if (kind == B_EVENT && strcmp(key, "fields") == 0) {
                if (parse_fields(lx, name[0] ? name : "?", fields, &count) < 0)
                    return -1;
                has_fields = 1;
            } else {
                skip_decl(lx);
            }
            continue;
        }
        if (!tok_punct(&t, '=')) {
            if (!tok_punct(&t, ';'))
                skip_decl(lx);
            if (lx->failed)
                return -1;
            continue;
        }
        struct tok v = next(lx);
        if (kind == B_TRACE && strcmp(key, "uuid") == 0 && v.kind == T_STR) {
            if (parse_uuid(&v, m->uuid) < 0) {
                fail(lx, "the trace uuid in the metadata is malformed; the metadata is corrupt: "
                         "re-record the trace");
                return -1;
            }
            m->has_uuid = 1;
        } else if (kind == B_ENV && strcmp(key, "hostname") == 0 && v.kind == T_STR) {
            m->has_hostname = tok_string(&v, m->hostname, sizeof m->hostname) == 0;
        } else if (kind == B_CLOCK && strcmp(key, "offset_s") == 0) {
            if (tok_int(&v, &m->clock_offset_s) < 0)
                fail(lx, "clock offset_s is not an integer; the metadata is corrupt: re-record "
                         "the trace");
        } else if (kind == B_CLOCK && strcmp(key, "offset") == 0) {
            if (tok_int(&v, &m->clock_offset_ns) < 0)
                fail(lx, "clock offset is not an integer; the metadata is corrupt: re-record "
                         "the trace");
        } else if (kind == B_CLOCK && strcmp(key, "freq") == 0) {
            if (tok_int(&v, &freq) < 0)
                freq = 0;
        } else if (kind == B_EVENT && strcmp(key, "name") == 0 && v.kind == T_STR) {
            if (tok_string(&v, name, sizeof name) < 0)
                fail(lx, "an event name in the metadata is too long; the metadata is corrupt: "
                         "re-record the trace");
        } else if (kind == B_EVENT && strcmp(key, "id") == 0) {
            if (tok_int(&v, &id) < 0)
                id = -1;
        }
        if (lx->failed)
            return -1;
        if (!tok_punct(&v, ';'))
            skip_decl(lx);
        if (lx->failed)
            return -1;
    }
    skip_decl(lx); /* the ';' after the block */
    if (lx->failed)
        return -1;
    if (kind == B_CLOCK && freq != 1000000000) {
        fail(lx, "the trace clock runs at %lld Hz; beamtrace reads only nanosecond clocks "
                 "(1000000000 Hz): read this trace with babeltrace2", (long long)freq);
        return -1;
    }
    if (kind == B_EVENT)
        return bind_event(lx, m, name, id, fields, count, has_fields);
    return 0;
}

int bmt_meta_parse(struct bmt_meta *m, const char *text, size_t len, char *err)
{
    memset(m, 0, sizeof *m);
    err[0] = '\0';
    static const char header[] = "/* CTF 1.8";
    if (len >= 4 && bmt_get_u32((const uint8_t *)text) == 0x75D11D57u) {
        snprintf(err, BMT_META_ERROR_BYTES,
                 "the metadata is packetized, which beamtrace does not read; convert the "
                 "trace with babeltrace2 or read it with babeltrace2");
        return -EINVAL;
    }
    if (len < sizeof header - 1 || memcmp(text, header, sizeof header - 1) != 0) {
        snprintf(err, BMT_META_ERROR_BYTES,
                 "the metadata file does not start with \"/* CTF 1.8\"; this is not a CTF "
                 "1.8 trace or the metadata was truncated: re-record the trace");
        return -EINVAL;
    }
    m->id_map = malloc(65536 * sizeof m->id_map[0]);
    if (!m->id_map)
        return -ENOMEM;
    memset(m->id_map, 0xff, 65536 * sizeof m->id_map[0]);

    struct lex lx = {text, text + len, err, 0};
    for (;;) {
        struct tok t = next(&lx);
        if (t.kind == T_EOF)
            break;
        if (t.kind == T_BAD) {
            fail(&lx, "the metadata ends inside a string or comment; the trace was not closed "
                      "cleanly: re-record it");
            break;
        }
        enum block kind = tok_is(&t, "trace") ? B_TRACE
                          : tok_is(&t, "env")  ? B_ENV
                          : tok_is(&t, "clock") ? B_CLOCK
                          : tok_is(&t, "event") ? B_EVENT : B_OTHER;
        if (kind != B_OTHER) {
            const char *save = lx.p;
            struct tok brace = next(&lx);
            if (tok_punct(&brace, '{')) {
                if (parse_block(&lx, m, kind) < 0)
                    break;
                continue;
            }
            lx.p = save;
        }
        if (tok_punct(&t, ';'))
            continue;
        skip_decl(&lx);
        if (lx.failed)
            break;
    }
    if (!lx.failed && !m->has_uuid)
        fail(&lx, "the metadata declares no trace uuid; beamtrace traces always have one: "
                  "re-record the trace");
    if (!lx.failed && m->event_count == 0)
        fail(&lx, "the metadata declares no events; the metadata is truncated: re-record "
                  "the trace");
    return lx.failed ? -EINVAL : 0;
}

void bmt_meta_free(struct bmt_meta *m)
{
    free(m->id_map);
    m->id_map = NULL;
}
