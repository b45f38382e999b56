/* Tokenizer for TSDL (CTF 1.8 metadata text).
 *
 * Comments (block and line), strings with C escapes, identifiers, numbers
 * (decimal, 0x hex, 0 octal, signed) and punctuation, with ":=" and "..."
 * as single tokens. Every read is bounded by the text's end; an
 * unterminated string or comment is a T_BAD token, never an over-read.
 * Pure; no allocation.
 */
#ifndef BMT_CLI_TSDL_LEX_H
#define BMT_CLI_TSDL_LEX_H

#include <stddef.h>
#include <stdint.h>

enum bmt_tok_kind { BMT_T_EOF, BMT_T_IDENT, BMT_T_NUM, BMT_T_STR, BMT_T_PUNCT, BMT_T_BAD };

/* Punctuation codes for the two multi-character tokens. */
#define BMT_P_ASSIGN_TYPE 'A' /* ":=" */
#define BMT_P_ELLIPSIS 'E'    /* "..." */

struct bmt_tok {
    enum bmt_tok_kind kind;
    const char *s;  /* first byte (strings: after the opening quote) */
    size_t len;     /* bytes (strings: raw, escapes not decoded) */
    char punct;     /* BMT_T_PUNCT: the character, or a BMT_P_* code */
};

struct bmt_lex {
    const char *p, *end;
    unsigned line;  /* 1-based line of p, for messages */
};

void bmt_lex_init(struct bmt_lex *lx, const char *text, size_t len);

/* The next token (advances). */
struct bmt_tok bmt_lex_next(struct bmt_lex *lx);

/* The next token without advancing. */
struct bmt_tok bmt_lex_peek(const struct bmt_lex *lx);

/* 1 when `t` is the identifier `word`. */
int bmt_tok_is(const struct bmt_tok *t, const char *word);

/* 1 when `t` is a TSDL keyword (struct, event, integer...), which cannot
 * name a type or a field. */
int bmt_tok_is_keyword(const struct bmt_tok *t);

/* 1 when `t` is the punctuation `c` (or a BMT_P_* code). */
int bmt_tok_punct(const struct bmt_tok *t, char c);

/* Decodes a string token's escapes into `out` (`cap` bytes, NUL added).
 * Returns the decoded length, or -1 when it does not fit. */
long bmt_tok_string(const struct bmt_tok *t, char *out, size_t cap);

/* Parses a number token into *v (unsigned magnitude in two's complement
 * for negative values; *negative set). Returns 0, or -1 when the token is
 * not a number or overflows 64 bits. */
int bmt_tok_int(const struct bmt_tok *t, uint64_t *v, int *negative);

#endif
