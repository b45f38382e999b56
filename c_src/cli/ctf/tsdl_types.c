/* TSDL type specifiers and declarations (tsdl_parser.h): integer,
 * floating_point and string attributes, struct, enum and variant (named,
 * anonymous or referenced), array and sequence dimensions, member lists,
 * typealias and typedef. Nesting is bounded by MAX_DEPTH. */
#include "tsdl_parser.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* base = 2 | 8 | 10 | 16 or one of their names. */
static int base_attr(struct parser *p, const struct value *v, struct bmt_ctf_type *t)
{
    static const char *const b2[] = {"binary", "bin", "b", NULL},
                             *const b8[] = {"octal", "oct", "o", NULL},
                             *const b10[] = {"decimal", "dec", "d", "i", "u", NULL},
                             *const b16[] = {"hexadecimal", "hex", "x", "X", "p", NULL};
    if (v->kind == V_NUM && (v->num == 2 || v->num == 8 || v->num == 10 || v->num == 16))
        t->base = (uint8_t)v->num;
    else if (bmt_tp_ident_is(v, b2))
        t->base = 2;
    else if (bmt_tp_ident_is(v, b8))
        t->base = 8;
    else if (bmt_tp_ident_is(v, b10))
        t->base = 10;
    else if (bmt_tp_ident_is(v, b16))
        t->base = 16;
    else {
        bmt_tp_fail(p, "unknown integer base");
        return -1;
    }
    return 0;
}

/* encoding = UTF8 | ASCII | none; map = clock.NAME.value. */
static int encoding_attr(struct parser *p, const struct value *v, struct bmt_ctf_type *t)
{
    static const char *const text[] = {"UTF8", "utf8", "ASCII", "ascii", NULL},
                             *const none[] = {"none", NULL};
    if (bmt_tp_ident_is(v, text))
        t->is_text = 1;
    else if (bmt_tp_ident_is(v, none))
        t->is_text = 0;
    else {
        bmt_tp_fail(p, "unknown encoding");
        return -1;
    }
    return 0;
}

static int map_attr(struct parser *p, const struct value *v, struct bmt_ctf_type *t)
{
    const char *s = v->kind == V_IDENT ? v->text : "";
    size_t n = strlen(s);
    if (strncmp(s, "clock.", 6) != 0 || n < 13 || strcmp(s + n - 6, ".value") != 0) {
        bmt_tp_fail(p, "map must be clock.NAME.value");
        return -1;
    }
    char *name = bmt_arena_strndup(p->a, s + 6, n - 12);
    if (!name) {
        bmt_tp_oom(p);
        return -1;
    }
    t->clock_name = name;
    return 0;
}

/* One attribute `key` = `v` of type `t` (a float's exp_dig into *exp_dig).
 * Other attributes (e.g. a string's unknown keys) do not change decoding. */
static int attr(struct parser *p, const struct bmt_tok *key, const struct value *v,
                struct bmt_ctf_type *t, uint32_t *exp_dig)
{
    if (bmt_tok_is(key, "size"))
        return bmt_tp_small_uint(p, v, "size", 64, &t->size_bits);
    if (bmt_tok_is(key, "align")) {
        if (bmt_tp_small_uint(p, v, "align", 1u << 20, &t->align_bits) < 0)
            return -1;
        if (!t->align_bits || (t->align_bits & (t->align_bits - 1))) {
            bmt_tp_fail(p, "align must be a power of two, not %u", t->align_bits);
            return -1;
        }
        t->has_align = 1;
        return 0;
    }
    if (bmt_tok_is(key, "signed")) {
        int b = bmt_tp_bool_value(p, v, "signed");
        if (b < 0)
            return -1;
        t->is_signed = (uint8_t)b;
        return 0;
    }
    if (bmt_tok_is(key, "byte_order")) {
        int bo = bmt_tp_byte_order_value(p, v);
        if (bo < 0)
            return -1;
        t->byte_order = (uint8_t)bo;
        return 0;
    }
    if (bmt_tok_is(key, "base"))
        return base_attr(p, v, t);
    if (bmt_tok_is(key, "encoding"))
        return encoding_attr(p, v, t);
    if (bmt_tok_is(key, "map"))
        return map_attr(p, v, t);
    if (bmt_tok_is(key, "exp_dig"))
        return bmt_tp_small_uint(p, v, "exp_dig", 64, exp_dig);
    if (bmt_tok_is(key, "mant_dig"))
        return bmt_tp_small_uint(p, v, "mant_dig", 64, &t->mant_dig);
    return 0;
}

/* integer { ... } or floating_point { ... } or string { ... }: the attribute list. */
static int attrs(struct parser *p, struct bmt_ctf_type *t)
{
    if (bmt_tp_expect(p, '{', t->kind == BMT_CTF_STRING ? "string" : "integer") < 0)
        return -1;
    uint32_t exp_dig = 0;
    struct bmt_tok seen[16];
    unsigned seen_count = 0;
    for (;;) {
        struct bmt_tok key = bmt_tp_next(p);
        if (bmt_tok_punct(&key, '}'))
            break;
        if (key.kind != BMT_T_IDENT) {
            bmt_tp_fail(p, "expected an attribute name, found '%.*s'", (int)(key.len > 40 ? 40 : key.len),
                 key.s);
            return -1;
        }
        for (unsigned i = 0; i < seen_count; i++)
            if (seen[i].len == key.len && memcmp(seen[i].s, key.s, key.len) == 0) {
                bmt_tp_fail(p, "attribute \"%.*s\" is given twice", (int)key.len, key.s);
                return -1;
            }
        if (seen_count < 16)
            seen[seen_count++] = key;
        struct value v;
        if (bmt_tp_expect(p, '=', "an attribute name") < 0 || bmt_tp_value(p, &v) < 0 ||
            bmt_tp_expect(p, ';', "an attribute value") < 0 || attr(p, &key, &v, t, &exp_dig) < 0)
            return -1;
    }
    if (t->kind == BMT_CTF_FLOAT) {
        if (!exp_dig || !t->mant_dig) {
            bmt_tp_fail(p, "a floating_point type without exp_dig or mant_dig");
            return -1;
        }
        t->size_bits = exp_dig + t->mant_dig;
    } else if (t->kind == BMT_CTF_INT && t->size_bits == 0) {
        bmt_tp_fail(p, "an integer type without a size");
        return -1;
    }
    return 0;
}

static int members(struct parser *p, struct bmt_ctf_type *t, const char *what);

/* A token that can name a struct, variant, enum or field. */
static int is_name(struct bmt_tok t)
{
    return t.kind == BMT_T_IDENT && !bmt_tok_is_keyword(&t);
}

static struct bmt_ctf_type *struct_spec(struct parser *p)
{
    struct bmt_tok name = {0};
    struct bmt_ctf_type *t = NULL;
    int body = 0;
    if (is_name(bmt_tp_peek(p)))
        name = bmt_tp_next(p);
    struct bmt_tok t2 = bmt_tp_peek(p);
    if (bmt_tok_punct(&t2, '{')) {
        bmt_tp_next(p);
        if (!(t = bmt_ctf_type_new(p->a, BMT_CTF_STRUCT))) {
            bmt_tp_oom(p);
            return NULL;
        }
        if (members(p, t, "struct") < 0)
            return NULL;
        body = 1;
    } else if (name.len) {
        char *n = bmt_tp_tok_dup(p, &name);
        struct named *d = n ? bmt_tp_find(p, N_STRUCT, n) : NULL;
        if (!d) {
            if (n)
                bmt_tp_fail(p, "unknown struct \"%s\"", n);
            return NULL;
        }
        t = d->type;
    } else {
        bmt_tp_fail(p, "struct without a name or a body");
        return NULL;
    }
    struct bmt_tok al = bmt_tp_peek(p);
    if (bmt_tok_is(&al, "align")) {
        bmt_tp_next(p);
        struct value v;
        uint32_t align;
        if (bmt_tp_expect(p, '(', "align") < 0 || bmt_tp_value(p, &v) < 0 ||
            bmt_tp_small_uint(p, &v, "align", 1u << 20, &align) < 0 || bmt_tp_expect(p, ')', "align(N") < 0)
            return NULL;
        if (!align || (align & (align - 1))) {
            bmt_tp_fail(p, "align(%u) is not a power of two", align);
            return NULL;
        }
        if (!body) {
            /* A reference with its own alignment must not change the named struct. */
            struct bmt_ctf_type *c = bmt_tp_alloc(p, sizeof *c);
            if (!c)
                return NULL;
            *c = *t;
            t = c;
        }
        t->align_bits = align;
        t->has_align = 1;
    }
    /* Declared after align(N): babeltrace2 registers "struct name {...} align(N)"
     * with its alignment, so later references to the name are aligned too. */
    if (body && name.len) {
        char *n = bmt_tp_tok_dup(p, &name);
        if (!n)
            return NULL;
        bmt_tp_declare(p, N_STRUCT, n, t);
    }
    return t;
}

static int enumerators(struct parser *p, struct bmt_ctf_type *t)
{
    uint64_t nextv = 0;
    uint32_t cap = 0;
    for (;;) {
        struct bmt_tok label = bmt_tp_next(p);
        if (bmt_tok_punct(&label, '}'))
            return 0;
        if (label.kind != BMT_T_IDENT && label.kind != BMT_T_STR) {
            bmt_tp_fail(p, "expected an enumeration label");
            return -1;
        }
        struct bmt_ctf_range r;
        r.label = label.kind == BMT_T_STR ? bmt_tp_str_value(p, &label) : bmt_tp_tok_dup(p, &label);
        if (!r.label)
            return -1;
        r.lo = r.hi = nextv;
        struct bmt_tok t2 = bmt_tp_next(p);
        if (bmt_tok_punct(&t2, '=')) {
            struct value v;
            if (bmt_tp_value(p, &v) < 0)
                return -1;
            if (v.kind != V_NUM) {
                bmt_tp_fail(p, "enumeration value of \"%s\" is not an integer", r.label);
                return -1;
            }
            r.lo = r.hi = v.num;
            t2 = bmt_tp_next(p);
            if (bmt_tok_punct(&t2, BMT_P_ELLIPSIS)) {
                if (bmt_tp_value(p, &v) < 0)
                    return -1;
                if (v.kind != V_NUM) {
                    bmt_tp_fail(p, "enumeration range of \"%s\" does not end in an integer", r.label);
                    return -1;
                }
                r.hi = v.num;
                t2 = bmt_tp_next(p);
            }
        }
        nextv = r.hi + 1;
        if (t->range_count == cap) {
            uint32_t ncap = cap ? cap * 2 : 8;
            struct bmt_ctf_range *nr = bmt_tp_alloc(p, ncap * sizeof *nr);
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
            bmt_tp_fail(p, "expected ',' or '}' after enumeration label \"%s\"", r.label);
            return -1;
        }
    }
}

static struct bmt_ctf_type *enum_spec(struct parser *p)
{
    struct bmt_tok name = {0};
    if (is_name(bmt_tp_peek(p)))
        name = bmt_tp_next(p);
    struct bmt_ctf_type *container = NULL;
    struct bmt_tok t2 = bmt_tp_peek(p);
    if (bmt_tok_punct(&t2, ':')) {
        bmt_tp_next(p);
        struct bmt_tok w = bmt_tp_peek(p);
        if (w.kind == BMT_T_IDENT && !bmt_tok_is(&w, "integer")) {
            struct bmt_tok words[MAX_WORDS];
            unsigned n = bmt_tp_read_words(p, words);
            container = n ? bmt_tp_alias_type(p, words, n) : NULL;
        } else {
            container = bmt_tp_type_spec(p);
        }
        if (!container)
            return NULL;
    }
    t2 = bmt_tp_peek(p);
    if (!bmt_tok_punct(&t2, '{')) {
        char *n = name.len ? bmt_tp_tok_dup(p, &name) : NULL;
        struct named *d = n ? bmt_tp_find(p, N_ENUM, n) : NULL;
        if (!d) {
            bmt_tp_fail(p, "enumeration \"%s\" is not declared", n ? n : "");
            return NULL;
        }
        return d->type;
    }
    bmt_tp_next(p);
    if (!container) {
        struct named *d = bmt_tp_find(p, N_ALIAS, "int");
        if (!d) {
            bmt_tp_fail(p, "enumeration without a container type, and no \"int\" typealias");
            return NULL;
        }
        container = d->type;
    }
    if (container->kind != BMT_CTF_INT) {
        bmt_tp_fail(p, "an enumeration's container must be an integer");
        return NULL;
    }
    struct bmt_ctf_type *t = bmt_tp_alloc(p, sizeof *t);
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
        char *n = bmt_tp_tok_dup(p, &name);
        if (!n)
            return NULL;
        bmt_tp_declare(p, N_ENUM, n, t);
    }
    return t;
}

/* '<' path '>' of a variant: identifiers joined by '.'. */
static const char *tag_path(struct parser *p)
{
    bmt_tp_next(p); /* '<' */
    char buf[512];
    size_t at = 0;
    for (;;) {
        struct bmt_tok t = bmt_tp_next(p);
        if (bmt_tok_punct(&t, '>'))
            break;
        if (t.kind != BMT_T_IDENT && !bmt_tok_punct(&t, '.')) {
            bmt_tp_fail(p, "expected a field path between '<' and '>'");
            return NULL;
        }
        if (at + t.len >= sizeof buf) {
            bmt_tp_fail(p, "a variant tag path is too long");
            return NULL;
        }
        memcpy(buf + at, t.s, t.len);
        at += t.len;
    }
    char *r = bmt_arena_strndup(p->a, buf, at);
    if (!r)
        bmt_tp_oom(p);
    return r;
}

static struct bmt_ctf_type *variant_spec(struct parser *p)
{
    struct bmt_tok name = {0};
    const char *tag = NULL;
    if (is_name(bmt_tp_peek(p)))
        name = bmt_tp_next(p);
    if (bmt_tok_punct((struct bmt_tok[]){bmt_tp_peek(p)}, '<') && !(tag = tag_path(p)))
        return NULL;
    struct bmt_ctf_type *t;
    if (bmt_tok_punct((struct bmt_tok[]){bmt_tp_peek(p)}, '{')) {
        bmt_tp_next(p);
        if (!(t = bmt_ctf_type_new(p->a, BMT_CTF_VARIANT))) {
            bmt_tp_oom(p);
            return NULL;
        }
        if (members(p, t, "variant") < 0)
            return NULL;
        if (name.len) {
            char *n = bmt_tp_tok_dup(p, &name);
            if (!n)
                return NULL;
            bmt_tp_declare(p, N_VARIANT, n, t);
        }
    } else {
        char *n = name.len ? bmt_tp_tok_dup(p, &name) : NULL;
        struct named *d = n ? bmt_tp_find(p, N_VARIANT, n) : NULL;
        if (!d) {
            bmt_tp_fail(p, "variant \"%s\" is not declared", n ? n : "");
            return NULL;
        }
        t = d->type;
    }
    if (tag) {
        struct bmt_ctf_type *c = bmt_tp_alloc(p, sizeof *c);
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
struct bmt_ctf_type *bmt_tp_type_spec(struct parser *p)
{
    if (p->depth++ > MAX_DEPTH) {
        bmt_tp_fail(p, "types nest more than %d levels deep", MAX_DEPTH);
        return NULL;
    }
    struct bmt_ctf_type *t = NULL;
    struct bmt_tok k = bmt_tp_next(p);
    if (bmt_tok_is(&k, "integer")) {
        if ((t = bmt_ctf_type_new(p->a, BMT_CTF_INT)) && attrs(p, t) < 0)
            t = NULL;
    } else if (bmt_tok_is(&k, "floating_point")) {
        if ((t = bmt_ctf_type_new(p->a, BMT_CTF_FLOAT)) && attrs(p, t) < 0)
            t = NULL;
    } else if (bmt_tok_is(&k, "string")) {
        t = bmt_ctf_type_new(p->a, BMT_CTF_STRING);
        if (t && bmt_tok_punct((struct bmt_tok[]){bmt_tp_peek(p)}, '{') && attrs(p, t) < 0)
            t = NULL;
    } else if (bmt_tok_is(&k, "struct")) {
        t = struct_spec(p);
    } else if (bmt_tok_is(&k, "enum")) {
        t = enum_spec(p);
    } else if (bmt_tok_is(&k, "variant")) {
        t = variant_spec(p);
    } else {
        bmt_tp_fail(p, "expected a type, found '%.*s'", (int)(k.len > 40 ? 40 : k.len), k.s);
    }
    if (!t && !p->failed)
        bmt_tp_oom(p);
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
    while (bmt_tok_punct((struct bmt_tok[]){bmt_tp_peek(p)}, '[')) {
        bmt_tp_next(p);
        if (n == MAX_DIMS) {
            bmt_tp_fail(p, "more than %d array dimensions", MAX_DIMS);
            return NULL;
        }
        struct value v;
        if (bmt_tp_value(p, &v) < 0 || bmt_tp_expect(p, ']', "an array length") < 0)
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
            bmt_tp_fail(p, "an array length must be a count or a field name");
            return NULL;
        }
        n++;
    }
    struct bmt_ctf_type *t = base;
    while (n--) {
        struct bmt_ctf_type *a = bmt_ctf_type_new(p->a, d[n].is_seq ? BMT_CTF_SEQUENCE : BMT_CTF_ARRAY);
        if (!a) {
            bmt_tp_oom(p);
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
            bmt_tp_fail(p, "two fields are named \"%s\"", name);
            return -1;
        }
    if (st->member_count == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 8;
        struct bmt_ctf_member *m = bmt_tp_alloc(p, ncap * sizeof *m);
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


/* Member declarations up to the closing '}' of a struct or variant. */
static int members(struct parser *p, struct bmt_ctf_type *st, const char *what)
{
    uint32_t cap = 0;
    for (;;) {
        struct bmt_tok t = bmt_tp_peek(p);
        if (bmt_tok_punct(&t, '}')) {
            bmt_tp_next(p);
            return 0;
        }
        if (t.kind == BMT_T_EOF || t.kind == BMT_T_BAD) {
            bmt_tp_next(p);
            bmt_tp_fail(p, "the metadata ends inside a %s", what);
            return -1;
        }
        if (bmt_tok_is(&t, "typealias")) {
            bmt_tp_next(p);
            if (bmt_tp_typealias_decl(p) < 0)
                return -1;
            continue;
        }
        if (bmt_tok_is(&t, "typedef")) {
            bmt_tp_next(p);
            if (bmt_tp_typedef_decl(p) < 0)
                return -1;
            continue;
        }
        struct bmt_ctf_type *base;
        struct bmt_tok name;
        if (is_type_keyword(&t)) {
            if (!(base = bmt_tp_type_spec(p)))
                return -1;
            name = bmt_tp_next(p);
        } else if (t.kind == BMT_T_IDENT) {
            struct bmt_tok words[MAX_WORDS];
            unsigned n = bmt_tp_read_words(p, words);
            if (p->failed)
                return -1;
            if (n < 2) {
                bmt_tp_fail(p, "field \"%.*s\" in a %s has no type", (int)words[0].len, words[0].s, what);
                return -1;
            }
            if (!(base = bmt_tp_alias_type(p, words, n - 1)))
                return -1;
            name = words[n - 1];
        } else {
            bmt_tp_next(p);
            bmt_tp_fail(p, "unexpected '%.*s' in a %s", (int)(t.len > 40 ? 40 : t.len), t.s, what);
            return -1;
        }
        for (;;) {
            if (!is_name(name)) {
                bmt_tp_fail(p, "expected a field name in a %s", what);
                return -1;
            }
            const char *fname = bmt_tp_field_name(p, &name);
            struct bmt_ctf_type *ft = fname ? dims(p, base) : NULL;
            if (!ft || add_member(p, st, &cap, fname, ft) < 0)
                return -1;
            struct bmt_tok sep = bmt_tp_next(p);
            if (bmt_tok_punct(&sep, ';'))
                break;
            if (!bmt_tok_punct(&sep, ',')) {
                bmt_tp_fail(p, "expected ';' after field \"%s\"", fname);
                return -1;
            }
            name = bmt_tp_next(p);
        }
    }
}

/* typealias TYPE := NAME WORDS; (after the keyword) */
int bmt_tp_typealias_decl(struct parser *p)
{
    struct bmt_ctf_type *t;
    struct bmt_tok first = bmt_tp_peek(p);
    if (is_type_keyword(&first)) {
        t = bmt_tp_type_spec(p);
    } else {
        struct bmt_tok words[MAX_WORDS];
        unsigned n = bmt_tp_read_words(p, words);
        t = n ? bmt_tp_alias_type(p, words, n) : NULL;
        if (!n && !p->failed)
            bmt_tp_fail(p, "typealias without a type");
    }
    if (!t || bmt_tp_expect(p, BMT_P_ASSIGN_TYPE, "a typealias's type") < 0)
        return -1;
    struct bmt_tok words[MAX_WORDS];
    unsigned n = bmt_tp_read_words(p, words);
    if (!n) {
        bmt_tp_fail(p, "typealias without a name");
        return -1;
    }
    char *name = bmt_tp_join(p, words, n);
    if (!name || bmt_tp_expect(p, ';', "a typealias") < 0)
        return -1;
    bmt_tp_declare(p, N_ALIAS, name, t);
    return p->failed ? -1 : 0;
}

/* typedef TYPE NAME; (after the keyword) */
int bmt_tp_typedef_decl(struct parser *p)
{
    struct bmt_ctf_type *t;
    struct bmt_tok words[MAX_WORDS];
    unsigned n;
    struct bmt_tok first = bmt_tp_peek(p);
    if (is_type_keyword(&first)) {
        t = bmt_tp_type_spec(p);
        n = bmt_tp_read_words(p, words);
        if (!n && !p->failed)
            bmt_tp_fail(p, "typedef without a name");
    } else {
        n = bmt_tp_read_words(p, words);
        if (n < 2 && !p->failed)
            bmt_tp_fail(p, "typedef without a type or a name");
        t = n >= 2 ? bmt_tp_alias_type(p, words, n - 1) : NULL;
        if (n >= 2) {
            words[0] = words[n - 1];
            n = 1;
        }
    }
    if (!t || p->failed)
        return -1;
    char *name = bmt_tp_join(p, words, n);
    if (!name)
        return -1;
    struct bmt_ctf_type *full = dims(p, t);
    if (!full || bmt_tp_expect(p, ';', "a typedef") < 0)
        return -1;
    bmt_tp_declare(p, N_ALIAS, name, full);
    return 0;
}

/* The type after ':=' in a block: a keyword type or an alias name. */
struct bmt_ctf_type *bmt_tp_block_type(struct parser *p)
{
    struct bmt_tok first = bmt_tp_peek(p);
    if (is_type_keyword(&first))
        return bmt_tp_type_spec(p);
    struct bmt_tok words[MAX_WORDS];
    unsigned n = bmt_tp_read_words(p, words);
    if (!n) {
        if (!p->failed)
            bmt_tp_fail(p, "expected a type after ':='");
        return NULL;
    }
    return bmt_tp_alias_type(p, words, n);
}
