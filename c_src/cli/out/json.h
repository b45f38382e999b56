/* The one JSON writer: every JSON the command prints (the analyses'
 * --format json, `list`, `stats`, the Chrome export) escapes its strings
 * here, so each output is valid UTF-8 JSON whatever bytes the trace holds.
 * Single-threaded (one writer per bmt_out).
 */
#ifndef BMT_CLI_JSON_H
#define BMT_CLI_JSON_H

#include "base/out.h"

#include <stddef.h>

/* Appends `len` bytes as a JSON string literal (quotes included) that is
 * valid UTF-8 whatever the input: invalid sequences become U+FFFD, control
 * bytes are escaped as \u00XX, '"' and '\' with a backslash. */
void bmt_json_string(struct bmt_out *o, const char *s, size_t len);

/* The same for a NUL-terminated string. */
static inline void bmt_json_cstr(struct bmt_out *o, const char *s)
{
    bmt_json_string(o, s, strlen(s));
}

/* Appends `, "key": VALUE`: the string `value` escaped, or null for NULL. */
void bmt_json_member(struct bmt_out *o, const char *key, const char *value);

#endif
