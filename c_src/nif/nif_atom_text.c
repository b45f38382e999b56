/* An atom's text (contract in nif_atom_text.h). */
#include "nif_atom_text.h"

static inline int latin1_lower(unsigned c)
{
    return (c >= 'a' && c <= 'z') || (c >= 223 && c <= 255 && c != 247);
}

static inline int latin1_alnum(unsigned c)
{
    return (c >= '0' && c <= '9') || latin1_lower(c)
        || (c >= 'A' && c <= 'Z') || (c >= 192 && c <= 222 && c != 215);
}

/* OTP 25's enif_get_atom() yields Latin-1 only (UTF-8 came in OTP 26), so
 * atoms are rendered from Latin-1 here and atoms with characters above 255
 * go to the VM's printer. The VM judges quoting on the UTF-8 bytes with a
 * partial decode that, for Latin-1 text, amounts to judging each character
 * (a 2-byte sequence decodes to the character, its continuation byte is
 * accepted as a letter). */
static int atom_needs_quotes(const unsigned char *s, size_t n)
{
    size_t i;

    if (!latin1_lower(s[0]))
        return 1;
    for (i = 1; i < n; i++)
        if (!latin1_alnum(s[i]) && s[i] != '_')
            return 1;
    return 0;
}

static char *put_octal3(char *d, unsigned c)
{
    *d++ = '\\';
    *d++ = (char)('0' + ((c >> 6) & 7));
    *d++ = (char)('0' + ((c >> 3) & 7));
    *d++ = (char)('0' + (c & 7));
    return d;
}

size_t bmt_atom_render(const unsigned char *s, size_t n, char *d0)
{
    char *d = d0;
    int quote;
    size_t i;

    if (n == 0) {
        d[0] = d[1] = '\'';
        return 2;
    }
    quote = atom_needs_quotes(s, n);
    if (quote)
        *d++ = '\'';
    for (i = 0; i < n; i++) {
        unsigned c = s[i];
        switch (c) {
        case '\'': *d++ = '\\'; *d++ = '\''; break;
        case '\\': *d++ = '\\'; *d++ = '\\'; break;
        case '\n': *d++ = '\\'; *d++ = 'n'; break;
        case '\f': *d++ = '\\'; *d++ = 'f'; break;
        case '\t': *d++ = '\\'; *d++ = 't'; break;
        case '\r': *d++ = '\\'; *d++ = 'r'; break;
        case '\b': *d++ = '\\'; *d++ = 'b'; break;
        case '\v': *d++ = '\\'; *d++ = 'v'; break;
        default:
            if (c < ' ' || (c >= 0x80 && c < 0xA0)) {
                /* C0 and the Latin-1 control block as octal escapes. */
                d = put_octal3(d, c);
            } else if (c >= 0x80) {
                /* The VM prints the UTF-8 it stores. */
                *d++ = (char)(0xC0 | (c >> 6));
                *d++ = (char)(0x80 | (c & 0x3F));
            } else {
                *d++ = (char)c;
            }
            break;
        }
    }
    if (quote)
        *d++ = '\'';
    return (size_t)(d - d0);
}
