/* TSDL parser (contract in tsdl.h).
 *
 * Recursive descent over the tokens of tsdl_lex.c. Declarations are kept
 * by name (aliases, named structs, enums and variants) in one list; scopes
 * reference the declared nodes and metadata.c deep-copies them when it
 * finishes a scope. Nesting is bounded by MAX_DEPTH so hostile metadata
 * ends in a message, never in a stack overflow. Every failure records the
 * first message and unwinds; nothing is freed here (the arena owns it).
 */
#include "tsdl.h"
#include "tsdl_lex.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 48
#define MAX_WORDS 8
#define MAX_DIMS 8

enum named_kind { N_ALIAS, N_STRUCT, N_ENUM, N_VARIANT };

struct named {
    enum named_kind kind;
    const char *name;
    struct bmt_ctf_type *type;
    struct named *next;
};

struct parser {
    struct bmt_arena *a;
    struct bmt_lex lx;
    struct bmt_tsdl *out;
    struct named *names;
    char *err;
    size_t err_bytes;
    int failed;
    unsigned depth;
    struct bmt_tsdl_stream **stream_tail;
    struct bmt_tsdl_event **event_tail;
    struct bmt_tsdl_clock **clock_tail;
    struct bmt_tsdl_env **env_tail;
};

static void fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parser *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(p->err, p->err_bytes, "line %u: ", p->lx.line);
    if (n > 0 && (size_t)n < p->err_bytes)
        vsnprintf(p->err + n, p->err_bytes - (size_t)n, fmt, ap);
    va_end(ap);
    p->failed = 1;
}

static void oom(struct parser *p)
{
    if (!p->failed)
        snprintf(p->err, p->err_bytes, "out of memory");
    p->failed = -ENOMEM;
}

static void *alloc(struct parser *p, size_t size)
{
    void *x = bmt_arena_alloc(p->a, size);
    if (!x)
        oom(p);
    return x;
}

static struct bmt_tok next(struct parser *p)
{
    struct bmt_tok t = bmt_lex_next(&p->lx);
    if (t.kind == BMT_T_BAD)
        fail(p, "a string or comment is not closed, or a string holds a NUL byte or an unknown escape");
    return t;
}

static struct bmt_tok peek(struct parser *p)
{
    return bmt_lex_peek(&p->lx);
}

static int expect(struct parser *p, char c, const char *after)
{
    struct bmt_tok t = next(p);
    if (bmt_tok_punct(&t, c))
        return 0;
    if (t.kind == BMT_T_EOF)
        fail(p, "the metadata ends where '%s' should follow %s (truncated?)",
             c == BMT_P_ASSIGN_TYPE ? ":=" : (char[]){c, 0}, after);
    else
        fail(p, "expected '%s' after %s, found '%.*s'",
             c == BMT_P_ASSIGN_TYPE ? ":=" : (char[]){c, 0}, after, (int)(t.len > 40 ? 40 : t.len),
             t.s);
    return -1;
}

static char *tok_dup(struct parser *p, const struct bmt_tok *t)
{
    char *s = bmt_arena_strndup(p->a, t->s, t->len);
    if (!s)
        oom(p);
    return s;
}

static char *str_value(struct parser *p, const struct bmt_tok *t)
{
    char *s = alloc(p, t->len + 1);
    if (s && bmt_tok_string(t, s, t->len + 1) < 0) {
        fail(p, "a string is too long");
        return NULL;
    }
    return s;
}

/* Field names lose one leading underscore, as every CTF reader does. */
static const char *field_name(struct parser *p, const struct bmt_tok *t)
{
    struct bmt_tok u = *t;
    if (u.len > 1 && u.s[0] == '_') {
        u.s++;
        u.len--;
    }
    return tok_dup(p, &u);
}

static struct named *find(struct parser *p, enum named_kind kind, const char *name)
{
    for (struct named *n = p->names; n; n = n->next)
        if (n->kind == kind && strcmp(n->name, name) == 0)
            return n;
    return NULL;
}

static void declare(struct parser *p, enum named_kind kind, const char *name, struct bmt_ctf_type *t)
{
    struct named *n = alloc(p, sizeof *n);
    if (!n)
        return;
    n->kind = kind;
    n->name = name;
    n->type = t;
    n->next = p->names; /* newest first: a redeclaration shadows */
    p->names = n;
}

/* Joins words[0..n) with single spaces into an arena string. */
static char *join(struct parser *p, struct bmt_tok *words, unsigned n)
{
    size_t len = 0;
    for (unsigned i = 0; i < n; i++)
        len += words[i].len + 1;
    char *s = alloc(p, len + 1);
    if (!s)
        return NULL;
    size_t at = 0;
    for (unsigned i = 0; i < n; i++) {
        if (i)
            s[at++] = ' ';
        memcpy(s + at, words[i].s, words[i].len);
        at += words[i].len;
    }
    s[at] = '\0';
    return s;
}

/* Reads consecutive identifiers (at most MAX_WORDS). */
static unsigned read_words(struct parser *p, struct bmt_tok *words)
{
    unsigned n = 0;
    for (;;) {
        struct bmt_tok t = peek(p);
        if (t.kind != BMT_T_IDENT)
            return n;
        if (n == MAX_WORDS) {
            fail(p, "a type name of more than %d words", MAX_WORDS);
            return n;
        }
        words[n++] = next(p);
    }
}

static struct bmt_ctf_type *alias_type(struct parser *p, struct bmt_tok *words, unsigned n)
{
    char *name = join(p, words, n);
    if (!name)
        return NULL;
    struct named *d = find(p, N_ALIAS, name);
    if (!d) {
        fail(p, "unknown type \"%s\" (no typealias declares it)", name);
        return NULL;
    }
    return d->type;
}

/* A value after '=': number, string, or a dotted identifier path. */
struct value {
    enum { V_NUM, V_STR, V_IDENT } kind;
    struct bmt_tok tok;   /* first token */
    uint64_t num;
    int negative;
    char *text;           /* V_STR: decoded; V_IDENT: the dotted path */
};

static int value(struct parser *p, struct value *v)
{
    struct bmt_tok t = next(p);
    memset(v, 0, sizeof *v);
    v->tok = t;
    if (t.kind == BMT_T_NUM) {
        v->kind = V_NUM;
        if (bmt_tok_int(&t, &v->num, &v->negative) < 0) {
            fail(p, "'%.*s' is not a 64-bit integer", (int)(t.len > 40 ? 40 : t.len), t.s);
            return -1;
        }
        return 0;
    }
    if (t.kind == BMT_T_STR) {
        v->kind = V_STR;
        v->text = str_value(p, &t);
        return v->text ? 0 : -1;
    }
    if (t.kind == BMT_T_IDENT) {
        v->kind = V_IDENT;
        struct bmt_tok parts[MAX_WORDS];
        unsigned n = 0;
        parts[n++] = t;
        while (bmt_tok_punct((struct bmt_tok[]){peek(p)}, '.') && n < MAX_WORDS) {
            next(p);
            struct bmt_tok w = next(p);
            if (w.kind != BMT_T_IDENT) {
                fail(p, "expected a name after '.'");
                return -1;
            }
            parts[n++] = w;
        }
        size_t len = 0;
        for (unsigned i = 0; i < n; i++)
            len += parts[i].len + 1;
        v->text = alloc(p, len + 1);
        if (!v->text)
            return -1;
        size_t at = 0;
        for (unsigned i = 0; i < n; i++) {
            if (i)
                v->text[at++] = '.';
            memcpy(v->text + at, parts[i].s, parts[i].len);
            at += parts[i].len;
        }
        return 0;
    }
    fail(p, "expected a value, found '%.*s'", (int)(t.len > 40 ? 40 : t.len), t.s);
    return -1;
}

static int ident_is(const struct value *v, const char *const *words)
{
    for (; *words; words++)
        if (v->kind == V_IDENT && strcmp(v->text, *words) == 0)
            return 1;
    return 0;
}

static int bool_value(struct parser *p, const struct value *v, const char *what)
{
    static const char *const yes[] = {"true", "TRUE", NULL}, *const no[] = {"false", "FALSE", NULL};
    if (ident_is(v, yes) || (v->kind == V_NUM && v->num != 0))
        return 1;
    if (ident_is(v, no) || (v->kind == V_NUM && v->num == 0))
        return 0;
    fail(p, "%s must be true or false", what);
    return -1;
}

static int byte_order_value(struct parser *p, const struct value *v)
{
    static const char *const le[] = {"le", "little", NULL}, *const be[] = {"be", "big", "network", NULL},
                             *const native[] = {"native", NULL};
    if (ident_is(v, le))
        return BMT_CTF_LE;
    if (ident_is(v, be))
        return BMT_CTF_BE;
    if (ident_is(v, native))
        return BMT_CTF_NATIVE;
    fail(p, "byte_order must be le, be, network or native");
    return -1;
}

static int small_uint(struct parser *p, const struct value *v, const char *what, uint64_t max,
                      uint32_t *out)
{
    if (v->kind != V_NUM || v->negative || v->num > max) {
        fail(p, "%s must be an integer from 0 to %llu", what, (unsigned long long)max);
        return -1;
    }
    *out = (uint32_t)v->num;
    return 0;
}

/* integer { ... } or floating_point { ... } or string { ... }: the attribute list. */
static int attrs(struct parser *p, struct bmt_ctf_type *t)
{
    if (expect(p, '{', t->kind == BMT_CTF_STRING ? "string" : "integer") < 0)
        return -1;
    uint32_t exp_dig = 0;
    struct bmt_tok seen[16];
    unsigned seen_count = 0;
    for (;;) {
        struct bmt_tok key = next(p);
        if (bmt_tok_punct(&key, '}'))
            break;
        if (key.kind != BMT_T_IDENT) {
            fail(p, "expected an attribute name, found '%.*s'", (int)(key.len > 40 ? 40 : key.len),
                 key.s);
            return -1;
        }
        for (unsigned i = 0; i < seen_count; i++)
            if (seen[i].len == key.len && memcmp(seen[i].s, key.s, key.len) == 0) {
                fail(p, "attribute \"%.*s\" is given twice", (int)key.len, key.s);
                return -1;
            }
        if (seen_count < 16)
            seen[seen_count++] = key;
        struct value v;
        if (expect(p, '=', "an attribute name") < 0 || value(p, &v) < 0 ||
            expect(p, ';', "an attribute value") < 0)
            return -1;
        if (bmt_tok_is(&key, "size")) {
            if (small_uint(p, &v, "size", 64, &t->size_bits) < 0)
                return -1;
        } else if (bmt_tok_is(&key, "align")) {
            if (small_uint(p, &v, "align", 1u << 20, &t->align_bits) < 0)
                return -1;
            if (!t->align_bits || (t->align_bits & (t->align_bits - 1))) {
                fail(p, "align must be a power of two, not %u", t->align_bits);
                return -1;
            }
            t->has_align = 1;
        } else if (bmt_tok_is(&key, "signed")) {
            int b = bool_value(p, &v, "signed");
            if (b < 0)
                return -1;
            t->is_signed = (uint8_t)b;
        } else if (bmt_tok_is(&key, "byte_order")) {
            int bo = byte_order_value(p, &v);
            if (bo < 0)
                return -1;
            t->byte_order = (uint8_t)bo;
        } else if (bmt_tok_is(&key, "base")) {
            static const char *const b2[] = {"binary", "bin", "b", NULL},
                                     *const b8[] = {"octal", "oct", "o", NULL},
                                     *const b10[] = {"decimal", "dec", "d", "i", "u", NULL},
                                     *const b16[] = {"hexadecimal", "hex", "x", "X", "p", NULL};
            if (v.kind == V_NUM && (v.num == 2 || v.num == 8 || v.num == 10 || v.num == 16))
                t->base = (uint8_t)v.num;
            else if (ident_is(&v, b2))
                t->base = 2;
            else if (ident_is(&v, b8))
                t->base = 8;
            else if (ident_is(&v, b10))
                t->base = 10;
            else if (ident_is(&v, b16))
                t->base = 16;
            else {
                fail(p, "unknown integer base");
                return -1;
            }
        } else if (bmt_tok_is(&key, "encoding")) {
            static const char *const text[] = {"UTF8", "utf8", "ASCII", "ascii", NULL},
                                     *const none[] = {"none", NULL};
            if (ident_is(&v, text))
                t->is_text = 1;
            else if (ident_is(&v, none))
                t->is_text = 0;
            else {
                fail(p, "unknown encoding");
                return -1;
            }
        } else if (bmt_tok_is(&key, "map")) {
            const char *s = v.kind == V_IDENT ? v.text : "";
            size_t n = strlen(s);
            if (strncmp(s, "clock.", 6) != 0 || n < 13 || strcmp(s + n - 6, ".value") != 0) {
                fail(p, "map must be clock.NAME.value");
                return -1;
            }
            char *name = bmt_arena_strndup(p->a, s + 6, n - 12);
            if (!name) {
                oom(p);
                return -1;
            }
            t->clock_name = name;
        } else if (bmt_tok_is(&key, "exp_dig")) {
            if (small_uint(p, &v, "exp_dig", 64, &exp_dig) < 0)
                return -1;
        } else if (bmt_tok_is(&key, "mant_dig")) {
            if (small_uint(p, &v, "mant_dig", 64, &t->mant_dig) < 0)
                return -1;
        }
        /* Other attributes (e.g. a string's unknown keys) do not change decoding. */
    }
    if (t->kind == BMT_CTF_FLOAT) {
        if (!exp_dig || !t->mant_dig) {
            fail(p, "a floating_point type without exp_dig or mant_dig");
            return -1;
        }
        t->size_bits = exp_dig + t->mant_dig;
    } else if (t->kind == BMT_CTF_INT && t->size_bits == 0) {
        fail(p, "an integer type without a size");
        return -1;
    }
    return 0;
}

static struct bmt_ctf_type *type_spec(struct parser *p);
static int members(struct parser *p, struct bmt_ctf_type *t, const char *what);

static struct bmt_ctf_type *struct_spec(struct parser *p)
{
    struct bmt_tok name = {0};
    struct bmt_ctf_type *t = NULL;
    if (peek(p).kind == BMT_T_IDENT)
        name = next(p);
    struct bmt_tok t2 = peek(p);
    if (bmt_tok_punct(&t2, '{')) {
        next(p);
        if (!(t = bmt_ctf_type_new(p->a, BMT_CTF_STRUCT))) {
            oom(p);
            return NULL;
        }
        if (members(p, t, "struct") < 0)
            return NULL;
        if (name.len) {
            char *n = tok_dup(p, &name);
            if (!n)
                return NULL;
            declare(p, N_STRUCT, n, t);
        }
    } else if (name.len) {
        char *n = tok_dup(p, &name);
        struct named *d = n ? find(p, N_STRUCT, n) : NULL;
        if (!d) {
            if (n)
                fail(p, "unknown struct \"%s\"", n);
            return NULL;
        }
        t = d->type;
    } else {
        fail(p, "struct without a name or a body");
        return NULL;
    }
    struct bmt_tok al = peek(p);
    if (bmt_tok_is(&al, "align")) {
        next(p);
        struct value v;
        uint32_t align;
        if (expect(p, '(', "align") < 0 || value(p, &v) < 0 ||
            small_uint(p, &v, "align", 1u << 20, &align) < 0 || expect(p, ')', "align(N") < 0)
            return NULL;
        if (!align || (align & (align - 1))) {
            fail(p, "align(%u) is not a power of two", align);
            return NULL;
        }
        struct bmt_ctf_type *c = alloc(p, sizeof *c);
        if (!c)
            return NULL;
        *c = *t; /* a reference with its own alignment */
        c->align_bits = align;
        c->has_align = 1;
        t = c;
    }
    return t;
}

static int enumerators(struct parser *p, struct bmt_ctf_type *t)
{
    uint64_t nextv = 0;
    uint32_t cap = 0;
    for (;;) {
        struct bmt_tok label = next(p);
        if (bmt_tok_punct(&label, '}'))
            return 0;
        if (label.kind != BMT_T_IDENT && label.kind != BMT_T_STR) {
            fail(p, "expected an enumeration label");
            return -1;
        }
        struct bmt_ctf_range r;
        r.label = label.kind == BMT_T_STR ? str_value(p, &label) : tok_dup(p, &label);
        if (!r.label)
            return -1;
        r.lo = r.hi = nextv;
        struct bmt_tok t2 = next(p);
        if (bmt_tok_punct(&t2, '=')) {
            struct value v;
            if (value(p, &v) < 0)
                return -1;
            if (v.kind != V_NUM) {
                fail(p, "enumeration value of \"%s\" is not an integer", r.label);
                return -1;
            }
            r.lo = r.hi = v.num;
            t2 = next(p);
            if (bmt_tok_punct(&t2, BMT_P_ELLIPSIS)) {
                if (value(p, &v) < 0)
                    return -1;
                if (v.kind != V_NUM) {
                    fail(p, "enumeration range of \"%s\" does not end in an integer", r.label);
                    return -1;
                }
                r.hi = v.num;
                t2 = next(p);
            }
        }
        nextv = r.hi + 1;
        if (t->range_count == cap) {
            uint32_t ncap = cap ? cap * 2 : 8;
            struct bmt_ctf_range *nr = alloc(p, ncap * sizeof *nr);
            if (!nr)
                return -1;
            if (cap)
                memcpy(nr, t->ranges, cap * sizeof *nr);
            t->ranges = nr;
            cap = ncap;
        }
        t->ranges[t->range_count++] = r;
        if (bmt_tok_punct(&t2, '}'))
            return 0;
        if (!bmt_tok_punct(&t2, ',')) {
            fail(p, "expected ',' or '}' after enumeration label \"%s\"", r.label);
            return -1;
        }
    }
}

static struct bmt_ctf_type *enum_spec(struct parser *p)
{
    struct bmt_tok name = {0};
    if (peek(p).kind == BMT_T_IDENT)
        name = next(p);
    struct bmt_ctf_type *container = NULL;
    struct bmt_tok t2 = peek(p);
    if (bmt_tok_punct(&t2, ':')) {
        next(p);
        struct bmt_tok w = peek(p);
        if (w.kind == BMT_T_IDENT && !bmt_tok_is(&w, "integer")) {
            struct bmt_tok words[MAX_WORDS];
            unsigned n = read_words(p, words);
            container = n ? alias_type(p, words, n) : NULL;
        } else {
            container = type_spec(p);
        }
        if (!container)
            return NULL;
    }
    t2 = peek(p);
    if (!bmt_tok_punct(&t2, '{')) {
        char *n = name.len ? tok_dup(p, &name) : NULL;
        struct named *d = n ? find(p, N_ENUM, n) : NULL;
        if (!d) {
            fail(p, "enumeration \"%s\" is not declared", n ? n : "");
            return NULL;
        }
        return d->type;
    }
    next(p);
    if (!container) {
        struct named *d = find(p, N_ALIAS, "int");
        if (!d) {
            fail(p, "enumeration without a container type, and no \"int\" typealias");
            return NULL;
        }
        container = d->type;
    }
    if (container->kind != BMT_CTF_INT) {
        fail(p, "an enumeration's container must be an integer");
        return NULL;
    }
    struct bmt_ctf_type *t = alloc(p, sizeof *t);
    if (!t)
        return NULL;
    *t = *container;
    t->kind = BMT_CTF_ENUM;
    t->container = container;
    t->ranges = NULL;
    t->range_count = 0;
    if (enumerators(p, t) < 0)
        return NULL;
    if (name.len) {
        char *n = tok_dup(p, &name);
        if (!n)
            return NULL;
        declare(p, N_ENUM, n, t);
    }
    return t;
}

/* '<' path '>' of a variant: identifiers joined by '.'. */
static const char *tag_path(struct parser *p)
{
    next(p); /* '<' */
    char buf[512];
    size_t at = 0;
    for (;;) {
        struct bmt_tok t = next(p);
        if (bmt_tok_punct(&t, '>'))
            break;
        if (t.kind != BMT_T_IDENT && !bmt_tok_punct(&t, '.')) {
            fail(p, "expected a field path between '<' and '>'");
            return NULL;
        }
        if (at + t.len >= sizeof buf) {
            fail(p, "a variant tag path is too long");
            return NULL;
        }
        memcpy(buf + at, t.s, t.len);
        at += t.len;
    }
    char *r = bmt_arena_strndup(p->a, buf, at);
    if (!r)
        oom(p);
    return r;
}

static struct bmt_ctf_type *variant_spec(struct parser *p)
{
    struct bmt_tok name = {0};
    const char *tag = NULL;
    if (peek(p).kind == BMT_T_IDENT)
        name = next(p);
    if (bmt_tok_punct((struct bmt_tok[]){peek(p)}, '<') && !(tag = tag_path(p)))
        return NULL;
    struct bmt_ctf_type *t;
    if (bmt_tok_punct((struct bmt_tok[]){peek(p)}, '{')) {
        next(p);
        if (!(t = bmt_ctf_type_new(p->a, BMT_CTF_VARIANT))) {
            oom(p);
            return NULL;
        }
        if (members(p, t, "variant") < 0)
            return NULL;
        if (name.len) {
            char *n = tok_dup(p, &name);
            if (!n)
                return NULL;
            declare(p, N_VARIANT, n, t);
        }
    } else {
        char *n = name.len ? tok_dup(p, &name) : NULL;
        struct named *d = n ? find(p, N_VARIANT, n) : NULL;
        if (!d) {
            fail(p, "variant \"%s\" is not declared", n ? n : "");
            return NULL;
        }
        t = d->type;
    }
    if (tag) {
        struct bmt_ctf_type *c = alloc(p, sizeof *c);
        if (!c)
            return NULL;
        *c = *t;
        c->ref = tag;
        t = c;
    }
    return t;
}

/* A type specifier starting with a keyword (integer, floating_point,
 * string, struct, enum, variant). Alias names are handled by callers,
 * which know where the type's words end. */
static struct bmt_ctf_type *type_spec(struct parser *p)
{
    if (p->depth++ > MAX_DEPTH) {
        fail(p, "types nest more than %d levels deep", MAX_DEPTH);
        return NULL;
    }
    struct bmt_ctf_type *t = NULL;
    struct bmt_tok k = next(p);
    if (bmt_tok_is(&k, "integer")) {
        if ((t = bmt_ctf_type_new(p->a, BMT_CTF_INT)) && attrs(p, t) < 0)
            t = NULL;
    } else if (bmt_tok_is(&k, "floating_point")) {
        if ((t = bmt_ctf_type_new(p->a, BMT_CTF_FLOAT)) && attrs(p, t) < 0)
            t = NULL;
    } else if (bmt_tok_is(&k, "string")) {
        t = bmt_ctf_type_new(p->a, BMT_CTF_STRING);
        if (t && bmt_tok_punct((struct bmt_tok[]){peek(p)}, '{') && attrs(p, t) < 0)
            t = NULL;
    } else if (bmt_tok_is(&k, "struct")) {
        t = struct_spec(p);
    } else if (bmt_tok_is(&k, "enum")) {
        t = enum_spec(p);
    } else if (bmt_tok_is(&k, "variant")) {
        t = variant_spec(p);
    } else {
        fail(p, "expected a type, found '%.*s'", (int)(k.len > 40 ? 40 : k.len), k.s);
    }
    if (!t && !p->failed)
        oom(p);
    p->depth--;
    return p->failed ? NULL : t;
}

static int is_type_keyword(const struct bmt_tok *t)
{
    static const char *const kw[] = {"integer", "floating_point", "string", "struct", "enum",
                                     "variant", NULL};
    for (const char *const *k = kw; *k; k++)
        if (bmt_tok_is(t, *k))
            return 1;
    return 0;
}

/* Wraps `base` in the array/sequence dimensions written after a
 * declarator ("[16]", "[_len]", "[2][3]"). */
static struct bmt_ctf_type *dims(struct parser *p, struct bmt_ctf_type *base)
{
    struct {
        int is_seq;
        uint64_t len;
        const char *ref;
    } d[MAX_DIMS];
    unsigned n = 0;
    while (bmt_tok_punct((struct bmt_tok[]){peek(p)}, '[')) {
        next(p);
        if (n == MAX_DIMS) {
            fail(p, "more than %d array dimensions", MAX_DIMS);
            return NULL;
        }
        struct value v;
        if (value(p, &v) < 0 || expect(p, ']', "an array length") < 0)
            return NULL;
        if (v.kind == V_NUM && !v.negative) {
            d[n].is_seq = 0;
            d[n].len = v.num;
            d[n].ref = NULL;
        } else if (v.kind == V_IDENT) {
            d[n].is_seq = 1;
            d[n].len = 0;
            d[n].ref = v.text;
        } else {
            fail(p, "an array length must be a count or a field name");
            return NULL;
        }
        n++;
    }
    struct bmt_ctf_type *t = base;
    while (n--) {
        struct bmt_ctf_type *a = bmt_ctf_type_new(p->a, d[n].is_seq ? BMT_CTF_SEQUENCE : BMT_CTF_ARRAY);
        if (!a) {
            oom(p);
            return NULL;
        }
        a->elem = t;
        a->length = d[n].len;
        a->ref = d[n].ref;
        t = a;
    }
    return t;
}

static int add_member(struct parser *p, struct bmt_ctf_type *st, uint32_t *cap, const char *name,
                      struct bmt_ctf_type *t)
{
    for (uint32_t i = 0; i < st->member_count; i++)
        if (strcmp(st->members[i].name, name) == 0) {
            fail(p, "two fields are named \"%s\"", name);
            return -1;
        }
    if (st->member_count == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 8;
        struct bmt_ctf_member *m = alloc(p, ncap * sizeof *m);
        if (!m)
            return -1;
        if (*cap)
            memcpy(m, st->members, *cap * sizeof *m);
        st->members = m;
        *cap = ncap;
    }
    st->members[st->member_count].name = name;
    st->members[st->member_count].name_len = (uint32_t)strlen(name);
    st->members[st->member_count].type = t;
    st->member_count++;
    return 0;
}

static int typealias_decl(struct parser *p);
static int typedef_decl(struct parser *p);

/* Member declarations up to the closing '}' of a struct or variant. */
static int members(struct parser *p, struct bmt_ctf_type *st, const char *what)
{
    uint32_t cap = 0;
    for (;;) {
        struct bmt_tok t = peek(p);
        if (bmt_tok_punct(&t, '}')) {
            next(p);
            return 0;
        }
        if (t.kind == BMT_T_EOF || t.kind == BMT_T_BAD) {
            next(p);
            fail(p, "the metadata ends inside a %s", what);
            return -1;
        }
        if (bmt_tok_is(&t, "typealias")) {
            next(p);
            if (typealias_decl(p) < 0)
                return -1;
            continue;
        }
        if (bmt_tok_is(&t, "typedef")) {
            next(p);
            if (typedef_decl(p) < 0)
                return -1;
            continue;
        }
        struct bmt_ctf_type *base;
        struct bmt_tok name;
        if (is_type_keyword(&t)) {
            if (!(base = type_spec(p)))
                return -1;
            name = next(p);
        } else if (t.kind == BMT_T_IDENT) {
            struct bmt_tok words[MAX_WORDS];
            unsigned n = read_words(p, words);
            if (p->failed)
                return -1;
            if (n < 2) {
                fail(p, "field \"%.*s\" in a %s has no type", (int)words[0].len, words[0].s, what);
                return -1;
            }
            if (!(base = alias_type(p, words, n - 1)))
                return -1;
            name = words[n - 1];
        } else {
            next(p);
            fail(p, "unexpected '%.*s' in a %s", (int)(t.len > 40 ? 40 : t.len), t.s, what);
            return -1;
        }
        for (;;) {
            if (name.kind != BMT_T_IDENT) {
                fail(p, "expected a field name in a %s", what);
                return -1;
            }
            const char *fname = field_name(p, &name);
            struct bmt_ctf_type *ft = fname ? dims(p, base) : NULL;
            if (!ft || add_member(p, st, &cap, fname, ft) < 0)
                return -1;
            struct bmt_tok sep = next(p);
            if (bmt_tok_punct(&sep, ';'))
                break;
            if (!bmt_tok_punct(&sep, ',')) {
                fail(p, "expected ';' after field \"%s\"", fname);
                return -1;
            }
            name = next(p);
        }
    }
}

/* typealias TYPE := NAME WORDS; (after the keyword) */
static int typealias_decl(struct parser *p)
{
    struct bmt_ctf_type *t;
    struct bmt_tok first = peek(p);
    if (is_type_keyword(&first)) {
        t = type_spec(p);
    } else {
        struct bmt_tok words[MAX_WORDS];
        unsigned n = read_words(p, words);
        t = n ? alias_type(p, words, n) : NULL;
        if (!n && !p->failed)
            fail(p, "typealias without a type");
    }
    if (!t || expect(p, BMT_P_ASSIGN_TYPE, "a typealias's type") < 0)
        return -1;
    struct bmt_tok words[MAX_WORDS];
    unsigned n = read_words(p, words);
    if (!n) {
        fail(p, "typealias without a name");
        return -1;
    }
    char *name = join(p, words, n);
    if (!name || expect(p, ';', "a typealias") < 0)
        return -1;
    declare(p, N_ALIAS, name, t);
    return p->failed ? -1 : 0;
}

/* typedef TYPE NAME; (after the keyword) */
static int typedef_decl(struct parser *p)
{
    struct bmt_ctf_type *t;
    struct bmt_tok words[MAX_WORDS];
    unsigned n;
    struct bmt_tok first = peek(p);
    if (is_type_keyword(&first)) {
        t = type_spec(p);
        n = read_words(p, words);
        if (!n && !p->failed)
            fail(p, "typedef without a name");
    } else {
        n = read_words(p, words);
        if (n < 2 && !p->failed)
            fail(p, "typedef without a type or a name");
        t = n >= 2 ? alias_type(p, words, n - 1) : NULL;
        if (n >= 2) {
            words[0] = words[n - 1];
            n = 1;
        }
    }
    if (!t || p->failed)
        return -1;
    char *name = join(p, words, n);
    if (!name)
        return -1;
    struct bmt_ctf_type *full = dims(p, t);
    if (!full || expect(p, ';', "a typedef") < 0)
        return -1;
    declare(p, N_ALIAS, name, full);
    return 0;
}

/* The type after ':=' in a block: a keyword type or an alias name. */
static struct bmt_ctf_type *block_type(struct parser *p)
{
    struct bmt_tok first = peek(p);
    if (is_type_keyword(&first))
        return type_spec(p);
    struct bmt_tok words[MAX_WORDS];
    unsigned n = read_words(p, words);
    if (!n) {
        if (!p->failed)
            fail(p, "expected a type after ':='");
        return NULL;
    }
    return alias_type(p, words, n);
}

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

static int attr_value(struct parser *p, enum block kind, struct block_state *b, const char *key,
                      const struct value *v)
{
    struct bmt_tsdl *o = p->out;
    switch (kind) {
    case B_TRACE:
        if (strcmp(key, "uuid") == 0) {
            if (v->kind != V_STR || parse_uuid(v->text, o->uuid) < 0) {
                fail(p, "the trace uuid is malformed");
                return -1;
            }
            o->has_uuid = 1;
        } else if (strcmp(key, "byte_order") == 0) {
            int bo = byte_order_value(p, v);
            if (bo < 0)
                return -1;
            if (bo == BMT_CTF_NATIVE) {
                fail(p, "the trace byte_order must be le or be");
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
    case B_ENV: {
        struct bmt_tsdl_env *e = alloc(p, sizeof *e);
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
    case B_CLOCK: {
        struct bmt_ctf_clock *c = &b->clock->clock;
        if (strcmp(key, "name") == 0 && (v->kind == V_STR || v->kind == V_IDENT)) {
            c->name = v->text;
        } else if (strcmp(key, "freq") == 0) {
            if (v->kind != V_NUM || v->negative || v->num == 0) {
                fail(p, "clock freq must be a positive integer");
                return -1;
            }
            c->freq_hz = v->num;
        } else if (strcmp(key, "uuid") == 0) {
            uint8_t u[BMT_CTF_UUID_BYTES];
            if (v->kind != V_STR || parse_uuid(v->text, u) < 0) {
                fail(p, "a clock's uuid is malformed");
                return -1;
            }
        } else if (strcmp(key, "offset_s") == 0 || strcmp(key, "offset") == 0) {
            if (v->kind != V_NUM || (!v->negative && v->num > INT64_MAX)) {
                fail(p, "clock %s must be an integer", key);
                return -1;
            }
            if (key[6] == '_')
                c->offset_s = (int64_t)v->num;
            else
                c->offset_cycles = (int64_t)v->num;
        }
        return 0;
    }
    case B_STREAM:
        if (strcmp(key, "id") == 0) {
            if (v->kind != V_NUM || v->negative) {
                fail(p, "stream id must be a non-negative integer");
                return -1;
            }
            b->stream->id = v->num;
            b->stream->has_id = 1;
        }
        return 0;
    case B_EVENT:
        if (strcmp(key, "name") == 0 && (v->kind == V_STR || v->kind == V_IDENT)) {
            b->event->name = v->text;
        } else if (strcmp(key, "id") == 0 || strcmp(key, "stream_id") == 0) {
            if (v->kind != V_NUM || v->negative) {
                fail(p, "event %s must be a non-negative integer", key);
                return -1;
            }
            if (key[0] == 'i') {
                b->event->id = v->num;
                b->event->has_id = 1;
            } else {
                b->event->stream_id = v->num;
                b->event->has_stream_id = 1;
            }
        }
        return 0;
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
        fail(p, "%s must be a struct", key);
        return -1;
    }
    *slot = t;
    return 0;
}

static int block(struct parser *p, enum block kind)
{
    struct block_state b = {0};
    const char *seen[32];
    unsigned seen_count = 0;
    if (kind == B_STREAM) {
        if (!(b.stream = alloc(p, sizeof *b.stream)))
            return -1;
        *p->stream_tail = b.stream;
        p->stream_tail = &b.stream->next;
    } else if (kind == B_EVENT) {
        if (!(b.event = alloc(p, sizeof *b.event)))
            return -1;
        *p->event_tail = b.event;
        p->event_tail = &b.event->next;
    } else if (kind == B_CLOCK) {
        if (!(b.clock = alloc(p, sizeof *b.clock)))
            return -1;
        b.clock->clock.freq_hz = 1000000000;
        *p->clock_tail = b.clock;
        p->clock_tail = &b.clock->next;
    } else if (kind == B_TRACE) {
        if (p->out->has_trace) {
            fail(p, "two trace blocks");
            return -1;
        }
        p->out->has_trace = 1;
    }
    for (;;) {
        struct bmt_tok t = next(p);
        if (bmt_tok_punct(&t, '}'))
            break;
        if (t.kind == BMT_T_EOF || p->failed) {
            fail(p, "the metadata ends inside a block (truncated?)");
            return -1;
        }
        if (bmt_tok_is(&t, "typealias")) {
            if (typealias_decl(p) < 0)
                return -1;
            continue;
        }
        if (bmt_tok_is(&t, "typedef")) {
            if (typedef_decl(p) < 0)
                return -1;
            continue;
        }
        if (t.kind != BMT_T_IDENT) {
            fail(p, "expected an attribute name, found '%.*s'", (int)(t.len > 40 ? 40 : t.len), t.s);
            return -1;
        }
        char key[128];
        size_t klen = 0;
        for (;;) {
            if (klen + t.len + 1 >= sizeof key) {
                fail(p, "an attribute name is too long");
                return -1;
            }
            memcpy(key + klen, t.s, t.len);
            klen += t.len;
            if (!bmt_tok_punct((struct bmt_tok[]){peek(p)}, '.'))
                break;
            next(p);
            key[klen++] = '.';
            t = next(p);
            if (t.kind != BMT_T_IDENT) {
                fail(p, "expected a name after '.'");
                return -1;
            }
        }
        key[klen] = '\0';
        char *k = bmt_arena_strndup(p->a, key, klen);
        if (!k) {
            oom(p);
            return -1;
        }
        if (kind != B_ENV && kind != B_OTHER) {
            for (unsigned i = 0; i < seen_count; i++)
                if (strcmp(seen[i], k) == 0) {
                    fail(p, "attribute \"%s\" is given twice in a block", k);
                    return -1;
                }
            if (seen_count < sizeof seen / sizeof seen[0])
                seen[seen_count++] = k;
        }
        struct bmt_tok op = next(p);
        if (bmt_tok_punct(&op, BMT_P_ASSIGN_TYPE)) {
            struct bmt_ctf_type *ty = block_type(p);
            if (!ty || attr_type(p, kind, &b, k, ty) < 0)
                return -1;
        } else if (bmt_tok_punct(&op, '=')) {
            struct value v;
            if (value(p, &v) < 0 || attr_value(p, kind, &b, k, &v) < 0)
                return -1;
        } else {
            fail(p, "expected '=' or ':=' after \"%s\"", k);
            return -1;
        }
        if (expect(p, ';', "an attribute") < 0)
            return -1;
    }
    if (kind == B_CLOCK && !b.clock->clock.name) {
        fail(p, "a clock has no name");
        return -1;
    }
    if (kind == B_EVENT && !b.event->name) {
        fail(p, "an event block has no name");
        return -1;
    }
    struct bmt_tok semi = next(p);
    if (!bmt_tok_punct(&semi, ';')) {
        fail(p, "expected ';' after a block's '}'");
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
        struct bmt_tok t = next(&p);
        if (t.kind == BMT_T_EOF || p.failed)
            break;
        if (bmt_tok_punct(&t, ';'))
            continue;
        if (bmt_tok_is(&t, "typealias")) {
            typealias_decl(&p);
            continue;
        }
        if (bmt_tok_is(&t, "typedef")) {
            typedef_decl(&p);
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
            if (expect(&p, '{', "a block name") < 0)
                break;
            block(&p, kind);
            continue;
        }
        if (bmt_tok_is(&t, "struct") || bmt_tok_is(&t, "enum") || bmt_tok_is(&t, "variant")) {
            p.lx.p = t.s; /* let type_spec read the keyword */
            if (!type_spec(&p))
                break;
            expect(&p, ';', "a type declaration");
            continue;
        }
        fail(&p, "unexpected '%.*s' at the top level", (int)(t.len > 40 ? 40 : t.len), t.s);
    }
    if (p.failed)
        return p.failed < 0 ? p.failed : -EINVAL;
    return 0;
}
