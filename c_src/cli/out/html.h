/* Text inside HTML and SVG (the report, the flame graph): escaped and
 * valid UTF-8 whatever bytes the trace holds. Single-threaded. */
#ifndef BMT_CLI_HTML_H
#define BMT_CLI_HTML_H

#include "base/out.h"

#include <stddef.h>

/* Appends `len` bytes escaped for HTML/SVG text content and attribute
 * values (&<>"'); control bytes become spaces, invalid UTF-8 U+FFFD. */
void bmt_html_string(struct bmt_out *o, const char *s, size_t len);

static inline void bmt_html_cstr(struct bmt_out *o, const char *s)
{
    bmt_html_string(o, s, strlen(s));
}

#endif
