/* What the TSDL parser's three files share (tsdl_common.c: the parser's
 * state, values and declared names; tsdl_types.c: type specifiers and
 * declarations; tsdl_parse.c: blocks and the top level). Internal to them.
 */
#ifndef BMT_CLI_TSDL_PARSER_H
#define BMT_CLI_TSDL_PARSER_H

#include "tsdl.h"
#include "tsdl_lex.h"

#include <stddef.h>
#include <stdint.h>

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

/* A value after '=': number, string, or a dotted identifier path. */
struct value {
    enum { V_NUM, V_STR, V_IDENT } kind;
    struct bmt_tok tok;   /* first token */
    uint64_t num;
    int negative;
    char *text;           /* V_STR: decoded; V_IDENT: the dotted path */
};

/* The first failure is kept ("line N: <what>") and every later one ignored;
 * p->failed becomes 1, or -ENOMEM when memory ran out. */
void bmt_tp_fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bmt_tp_oom(struct parser *p);
void *bmt_tp_alloc(struct parser *p, size_t size);
/* Tokens: next (a T_BAD token fails the parse), peek, and an expected
 * punctuation (fails naming what it should follow). */
struct bmt_tok bmt_tp_next(struct parser *p);
struct bmt_tok bmt_tp_peek(struct parser *p);
int bmt_tp_expect(struct parser *p, char c, const char *after);
char *bmt_tp_tok_dup(struct parser *p, const struct bmt_tok *t);
char *bmt_tp_str_value(struct parser *p, const struct bmt_tok *t);
/* A field name, without the leading '_' every CTF reader strips. */
const char *bmt_tp_field_name(struct parser *p, const struct bmt_tok *t);
/* Declared names (aliases, named structs, enums, variants). */
struct named *bmt_tp_find(struct parser *p, enum named_kind kind, const char *name);
void bmt_tp_declare(struct parser *p, enum named_kind kind, const char *name, struct bmt_ctf_type *t);
char *bmt_tp_join(struct parser *p, struct bmt_tok *words, unsigned n);
unsigned bmt_tp_read_words(struct parser *p, struct bmt_tok *words);
struct bmt_ctf_type *bmt_tp_alias_type(struct parser *p, struct bmt_tok *words, unsigned n);
/* A value after '=' and its readings. */
int bmt_tp_value(struct parser *p, struct value *v);
int bmt_tp_ident_is(const struct value *v, const char *const *words);
int bmt_tp_bool_value(struct parser *p, const struct value *v, const char *what);
int bmt_tp_byte_order_value(struct parser *p, const struct value *v);
int bmt_tp_small_uint(struct parser *p, const struct value *v, const char *what, uint64_t max,
                      uint32_t *out);
/* Types (tsdl_types.c): a keyword type specifier; a typealias or typedef
 * after its keyword; the type after ':=' in a block. NULL or -1 on failure. */
struct bmt_ctf_type *bmt_tp_type_spec(struct parser *p);
int bmt_tp_typealias_decl(struct parser *p);
int bmt_tp_typedef_decl(struct parser *p);
struct bmt_ctf_type *bmt_tp_block_type(struct parser *p);

#endif
