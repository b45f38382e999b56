/* UTF-8 validation for the writers that must emit valid text (JSON, HTML,
 * SVG) from trace strings that may hold any bytes. Pure; reentrant. */
#ifndef BMT_CLI_UTF8_H
#define BMT_CLI_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at `s` (`n` > 0 bytes available): 1
 * for ASCII, 2 to 4 for a well-formed sequence (no overlong forms, no
 * surrogates, nothing above U+10FFFF), 0 when the bytes are not one. */
size_t bmt_utf8_len(const unsigned char *s, size_t n);

#endif
