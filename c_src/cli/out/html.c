/* HTML text (contract in html.h). */
#include "html.h"
#include "base/utf8.h"

void bmt_html_string(struct bmt_out *o, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        if (c == '&')
            bmt_out_str(o, "&amp;");
        else if (c == '<')
            bmt_out_str(o, "&lt;");
        else if (c == '>')
            bmt_out_str(o, "&gt;");
        else if (c == '"')
            bmt_out_str(o, "&quot;");
        else if (c == '\'')
            bmt_out_str(o, "&#39;");
        else if (c < 0x20)
            bmt_out_char(o, ' ');
        else if (c >= 0x80) {
            size_t n = bmt_utf8_len(s + i, len - i);
            if (n) {
                bmt_out_mem(o, s + i, n);
                i += n;
                continue;
            }
            bmt_out_str(o, "\xef\xbf\xbd");
        } else
            bmt_out_char(o, (char)c);
        i++;
    }
}
