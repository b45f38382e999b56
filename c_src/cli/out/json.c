/* The JSON writer (contract in json.h). */
#include "json.h"
#include "base/utf8.h"

void bmt_json_string(struct bmt_out *o, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    static const char hex[] = "0123456789abcdef";
    bmt_out_char(o, '"');
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        while (run < len && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            bmt_out_mem(o, s + i, run - i);
            i = run;
            continue;
        }
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            bmt_out_mem(o, e, 2);
            i++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            bmt_out_mem(o, e, 6);
            i++;
        } else {
            size_t n = bmt_utf8_len(s + i, len - i);
            if (n) {
                bmt_out_mem(o, s + i, n);
                i += n;
            } else {
                bmt_out_str(o, "\\ufffd");
                i++;
            }
        }
    }
    bmt_out_char(o, '"');
}

void bmt_json_member(struct bmt_out *o, const char *key, const char *value)
{
    bmt_out_str(o, ", \"");
    bmt_out_str(o, key);
    bmt_out_str(o, "\": ");
    if (value)
        bmt_json_cstr(o, value);
    else
        bmt_out_str(o, "null");
}
