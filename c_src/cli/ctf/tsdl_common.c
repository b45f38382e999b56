/* The TSDL parser's shared parts (tsdl_parser.h): failures, tokens,
 * values and the table of declared names. */
#include "tsdl_parser.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void bmt_tp_fail(struct parser *p, const char *fmt, ...)
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

void bmt_tp_oom(struct parser *p)
{
    if (!p->failed)
        snprintf(p->err, p->err_bytes, "out of memory");
    p->failed = -ENOMEM;
}

void *bmt_tp_alloc(struct parser *p, size_t size)
{
    void *x = bmt_arena_alloc(p->a, size);
    if (!x)
        bmt_tp_oom(p);
    return x;
}

struct bmt_tok bmt_tp_next(struct parser *p)
{
    struct bmt_tok t = bmt_lex_next(&p->lx);
    if (t.kind == BMT_T_BAD)
        bmt_tp_fail(p, "a string or comment is not closed, or a string holds a NUL byte or an unknown escape");
    return t;
}

struct bmt_tok bmt_tp_peek(struct parser *p)
{
    return bmt_lex_peek(&p->lx);
}

int bmt_tp_expect(struct parser *p, char c, const char *after)
{
    struct bmt_tok t = bmt_tp_next(p);
    if (bmt_tok_punct(&t, c))
        return 0;
    if (t.kind == BMT_T_EOF)
        bmt_tp_fail(p, "the metadata ends where '%s' should follow %s (truncated?)",
             c == BMT_P_ASSIGN_TYPE ? ":=" : (char[]){c, 0}, after);
    else
        bmt_tp_fail(p, "expected '%s' after %s, found '%.*s'",
             c == BMT_P_ASSIGN_TYPE ? ":=" : (char[]){c, 0}, after, (int)(t.len > 40 ? 40 : t.len),
             t.s);
    return -1;
}

char *bmt_tp_tok_dup(struct parser *p, const struct bmt_tok *t)
{
    char *s = bmt_arena_strndup(p->a, t->s, t->len);
    if (!s)
        bmt_tp_oom(p);
    return s;
}

char *bmt_tp_str_value(struct parser *p, const struct bmt_tok *t)
{
    char *s = bmt_tp_alloc(p, t->len + 1);
    if (s && bmt_tok_string(t, s, t->len + 1) < 0) {
        bmt_tp_fail(p, "a string is too long");
        return NULL;
    }
    return s;
}

/* Field names lose one leading underscore, as every CTF reader does. */
const char *bmt_tp_field_name(struct parser *p, const struct bmt_tok *t)
{
    struct bmt_tok u = *t;
    if (u.len > 1 && u.s[0] == '_') {
        u.s++;
        u.len--;
    }
    return bmt_tp_tok_dup(p, &u);
}

struct named *bmt_tp_find(struct parser *p, enum named_kind kind, const char *name)
{
    for (struct named *n = p->names; n; n = n->next)
        if (n->kind == kind && strcmp(n->name, name) == 0)
            return n;
    return NULL;
}

void bmt_tp_declare(struct parser *p, enum named_kind kind, const char *name, struct bmt_ctf_type *t)
{
    struct named *n = bmt_tp_alloc(p, sizeof *n);
    if (!n)
        return;
    n->kind = kind;
    n->name = name;
    n->type = t;
    n->next = p->names; /* newest first: a redeclaration shadows */
    p->names = n;
}

/* Joins words[0..n) with single spaces into an arena string. */
char *bmt_tp_join(struct parser *p, struct bmt_tok *words, unsigned n)
{
    size_t len = 0;
    for (unsigned i = 0; i < n; i++)
        len += words[i].len + 1;
    char *s = bmt_tp_alloc(p, len + 1);
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
unsigned bmt_tp_read_words(struct parser *p, struct bmt_tok *words)
{
    unsigned n = 0;
    for (;;) {
        struct bmt_tok t = bmt_tp_peek(p);
        if (t.kind != BMT_T_IDENT)
            return n;
        if (n == MAX_WORDS) {
            bmt_tp_fail(p, "a type name of more than %d words", MAX_WORDS);
            return n;
        }
        words[n++] = bmt_tp_next(p);
    }
}

struct bmt_ctf_type *bmt_tp_alias_type(struct parser *p, struct bmt_tok *words, unsigned n)
{
    char *name = bmt_tp_join(p, words, n);
    if (!name)
        return NULL;
    struct named *d = bmt_tp_find(p, N_ALIAS, name);
    if (!d) {
        bmt_tp_fail(p, "unknown type \"%s\" (no typealias declares it)", name);
        return NULL;
    }
    return d->type;
}


int bmt_tp_value(struct parser *p, struct value *v)
{
    struct bmt_tok t = bmt_tp_next(p);
    memset(v, 0, sizeof *v);
    v->tok = t;
    if (t.kind == BMT_T_NUM) {
        v->kind = V_NUM;
        if (bmt_tok_int(&t, &v->num, &v->negative) < 0) {
            bmt_tp_fail(p, "'%.*s' is not a 64-bit integer", (int)(t.len > 40 ? 40 : t.len), t.s);
            return -1;
        }
        return 0;
    }
    if (t.kind == BMT_T_STR) {
        v->kind = V_STR;
        v->text = bmt_tp_str_value(p, &t);
        return v->text ? 0 : -1;
    }
    if (t.kind == BMT_T_IDENT) {
        v->kind = V_IDENT;
        struct bmt_tok parts[MAX_WORDS];
        unsigned n = 0;
        parts[n++] = t;
        while (bmt_tok_punct((struct bmt_tok[]){bmt_tp_peek(p)}, '.') && n < MAX_WORDS) {
            bmt_tp_next(p);
            struct bmt_tok w = bmt_tp_next(p);
            if (w.kind != BMT_T_IDENT) {
                bmt_tp_fail(p, "expected a name after '.'");
                return -1;
            }
            parts[n++] = w;
        }
        size_t len = 0;
        for (unsigned i = 0; i < n; i++)
            len += parts[i].len + 1;
        v->text = bmt_tp_alloc(p, len + 1);
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
    bmt_tp_fail(p, "expected a value, found '%.*s'", (int)(t.len > 40 ? 40 : t.len), t.s);
    return -1;
}

int bmt_tp_ident_is(const struct value *v, const char *const *words)
{
    for (; *words; words++)
        if (v->kind == V_IDENT && strcmp(v->text, *words) == 0)
            return 1;
    return 0;
}

int bmt_tp_bool_value(struct parser *p, const struct value *v, const char *what)
{
    static const char *const yes[] = {"true", "TRUE", NULL}, *const no[] = {"false", "FALSE", NULL};
    if (bmt_tp_ident_is(v, yes) || (v->kind == V_NUM && v->num != 0))
        return 1;
    if (bmt_tp_ident_is(v, no) || (v->kind == V_NUM && v->num == 0))
        return 0;
    bmt_tp_fail(p, "%s must be true or false", what);
    return -1;
}

int bmt_tp_byte_order_value(struct parser *p, const struct value *v)
{
    static const char *const le[] = {"le", "little", NULL}, *const be[] = {"be", "big", "network", NULL},
                             *const native[] = {"native", NULL};
    if (bmt_tp_ident_is(v, le))
        return BMT_CTF_LE;
    if (bmt_tp_ident_is(v, be))
        return BMT_CTF_BE;
    if (bmt_tp_ident_is(v, native))
        return BMT_CTF_NATIVE;
    bmt_tp_fail(p, "byte_order must be le, be, network or native");
    return -1;
}

int bmt_tp_small_uint(struct parser *p, const struct value *v, const char *what, uint64_t max,
                      uint32_t *out)
{
    if (v->kind != V_NUM || v->negative || v->num > max) {
        bmt_tp_fail(p, "%s must be an integer from 0 to %llu", what, (unsigned long long)max);
        return -1;
    }
    *out = (uint32_t)v->num;
    return 0;
}
