/* TSDL tokenizer (contract in tsdl_lex.h). */
#include "tsdl_lex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void bmt_lex_init(struct bmt_lex *lx, const char *text, size_t len)
{
    lx->p = text;
    lx->end = text + len;
    lx->line = 1;
}

static int ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

/* Skips white space and comments from `p` (counting lines). Returns
 * where the next token starts, or NULL for an unterminated comment, whose
 * start is then in *comment. */
static const char *skip_blank(struct bmt_lex *lx, const char *p, const char **comment)
{
    const char *end = lx->end;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' ||
                           *p == '\v')) {
            if (*p == '\n')
                lx->line++;
            p++;
        }
        if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
            const char *q = p + 2;
            while (end - q >= 2 && !(q[0] == '*' && q[1] == '/')) {
                if (*q == '\n')
                    lx->line++;
                q++;
            }
            if (end - q < 2) {
                *comment = p;
                return NULL;
            }
            p = q + 2;
        } else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
        } else {
            return p;
        }
    }
}

/* The string literal at `p` (its opening quote) into `t`. */
static struct bmt_tok lex_string(struct bmt_lex *lx, const char *p, struct bmt_tok t)
{
    const char *q = p + 1, *end = lx->end;
    while (q < end && *q != '"' && *q) {
        if (*q == '\\' && q + 1 < end) {
            /* C escapes only (octal and \x digits start with a digit or x). */
            if (!strchr("abfnrtv\\'\"?x01234567", q[1])) {
                t.kind = BMT_T_BAD;
                lx->p = end;
                return t;
            }
            q++;
        }
        if (*q == '\n')
            lx->line++;
        q++;
    }
    if (q >= end || !*q) { /* unterminated, or a NUL byte (babeltrace2 refuses both) */
        t.kind = BMT_T_BAD;
        lx->p = end;
        return t;
    }
    t.kind = BMT_T_STR;
    t.s = p + 1;
    t.len = (size_t)(q - p - 1);
    lx->p = q + 1;
    return t;
}

struct bmt_tok bmt_lex_next(struct bmt_lex *lx)
{
    struct bmt_tok t = {BMT_T_EOF, lx->p, 0, 0};
    const char *comment = NULL, *end = lx->end;
    const char *p = skip_blank(lx, lx->p, &comment);
    if (!p) {
        t.kind = BMT_T_BAD;
        t.s = comment;
        lx->p = end;
        return t;
    }
    t.s = p;
    if (p >= end) {
        lx->p = end;
        return t;
    }
    if (ident_start(*p)) {
        const char *q = p;
        while (q < end && ident_char(*q))
            q++;
        t.kind = BMT_T_IDENT;
        t.len = (size_t)(q - p);
        lx->p = q;
    } else if ((*p >= '0' && *p <= '9') ||
               ((*p == '-' || *p == '+') && end - p >= 2 && p[1] >= '0' && p[1] <= '9')) {
        const char *q = p + 1;
        while (q < end && ident_char(*q))
            q++;
        t.kind = BMT_T_NUM;
        t.len = (size_t)(q - p);
        lx->p = q;
    } else if (*p == '"') {
        return lex_string(lx, p, t);
    } else if (*p == ':' && end - p >= 2 && p[1] == '=') {
        t.kind = BMT_T_PUNCT;
        t.punct = BMT_P_ASSIGN_TYPE;
        t.len = 2;
        lx->p = p + 2;
    } else if (*p == '.' && end - p >= 3 && p[1] == '.' && p[2] == '.') {
        t.kind = BMT_T_PUNCT;
        t.punct = BMT_P_ELLIPSIS;
        t.len = 3;
        lx->p = p + 3;
    } else {
        t.kind = BMT_T_PUNCT;
        t.punct = *p;
        t.len = 1;
        lx->p = p + 1;
    }
    return t;
}

struct bmt_tok bmt_lex_peek(const struct bmt_lex *lx)
{
    struct bmt_lex copy = *lx;
    return bmt_lex_next(&copy);
}

int bmt_tok_is(const struct bmt_tok *t, const char *word)
{
    size_t n = strlen(word);
    return t->kind == BMT_T_IDENT && t->len == n && memcmp(t->s, word, n) == 0;
}

int bmt_tok_is_keyword(const struct bmt_tok *t)
{
    /* babeltrace2's lexer (lexer.l) makes these tokens of their own, never
     * an IDENTIFIER: its grammar refuses them as names. */
    static const char *const words[] = {
        "align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
        "floating_point", "float", "integer", "int", "long", "short", "signed", "stream",
        "string", "struct", "trace", "typealias", "typedef", "unsigned", "variant", "void",
        "_Bool", "_Complex", "_Imaginary"};
    for (unsigned i = 0; i < sizeof words / sizeof words[0]; i++)
        if (bmt_tok_is(t, words[i]))
            return 1;
    return 0;
}

int bmt_tok_punct(const struct bmt_tok *t, char c)
{
    return t->kind == BMT_T_PUNCT && t->punct == c;
}

long bmt_tok_string(const struct bmt_tok *t, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->s[i];
        if (c == '\\' && i + 1 < t->len) {
            c = t->s[++i];
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'a': c = '\a'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'v': c = '\v'; break;
            case '0': c = '\0'; break;
            default: break; /* \" \\ \' and others: the character itself */
            }
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = c;
    }
    if (cap == 0)
        return -1;
    out[n] = '\0';
    return (long)n;
}

int bmt_tok_int(const struct bmt_tok *t, uint64_t *v, int *negative)
{
    char buf[40];
    if (t->kind != BMT_T_NUM || t->len >= sizeof buf)
        return -1;
    memcpy(buf, t->s, t->len);
    buf[t->len] = '\0';
    const char *s = buf;
    int neg = 0;
    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    /* Integer suffixes of C literals (u, l, ul, ull) are allowed. */
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == 'u' || s[n - 1] == 'U' || s[n - 1] == 'l' || s[n - 1] == 'L'))
        buf[(size_t)(s - buf) + --n] = '\0';
    char *endp;
    errno = 0;
    unsigned long long x = strtoull(s, &endp, 0);
    if (errno || *endp || endp == s)
        return -1;
    if (neg && x > (1ull << 63))
        return -1;
    *v = neg ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    *negative = neg;
    return 0;
}
