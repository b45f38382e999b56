/* A binary's text (contract in nif_binary_text.h). */
#include "nif_binary_text.h"

#include <stdint.h>
#include <string.h>

/* Decimal text of every byte value, for <<1,2,3>>. */
static const char byte_dec[256][4] = {
#define D1(n) { (char)('0' + (n)), 0, 0, 0 }
#define D2(n) { (char)('0' + (n) / 10), (char)('0' + (n) % 10), 0, 0 }
#define D3(n) { (char)('0' + (n) / 100), (char)('0' + (n) / 10 % 10), \
                (char)('0' + (n) % 10), 0 }
#define R10(M, b) M(b), M(b + 1), M(b + 2), M(b + 3), M(b + 4), M(b + 5), \
                  M(b + 6), M(b + 7), M(b + 8), M(b + 9)
    R10(D1, 0),
    R10(D2, 10), R10(D2, 20), R10(D2, 30), R10(D2, 40), R10(D2, 50),
    R10(D2, 60), R10(D2, 70), R10(D2, 80), R10(D2, 90),
    R10(D3, 100), R10(D3, 110), R10(D3, 120), R10(D3, 130), R10(D3, 140),
    R10(D3, 150), R10(D3, 160), R10(D3, 170), R10(D3, 180), R10(D3, 190),
    R10(D3, 200), R10(D3, 210), R10(D3, 220), R10(D3, 230), R10(D3, 240),
    D3(250), D3(251), D3(252), D3(253), D3(254), D3(255),
#undef R10
#undef D3
#undef D2
#undef D1
};

static inline size_t byte_dec_len(unsigned b)
{
    return b < 10 ? 1 : b < 100 ? 2 : 3;
}

/* 1 if some byte of w is below 32 or above 126 (word-at-a-time tests,
 * exact for these bounds: the "below n" trick holds for n <= 128, the
 * "above n" one for n <= 127). */
static inline int word_has_unprintable(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t below = (w - ones * 32) & ~w & highs;
    uint64_t above = ((w + ones * (127 - 126)) | w) & highs;
    return (below | above) != 0;
}


static int bytes_printable(const unsigned char *b, size_t n, long *budget)
{
    size_t i = 0;
    uint64_t w;

    if (n == 0)
        return 0;
    if (*budget <= 0)
        return 1;
    if ((long)n > *budget)
        n = (size_t)*budget;
    *budget -= (long)n;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, b + i, 8);
        if (word_has_unprintable(w))
            return 0;
    }
    /* Unsigned wrap folds both bounds into one compare. */
    for (; i < n; i++)
        if ((unsigned char)(b[i] - 32) > 126 - 32)
            return 0;
    return 1;
}

void bmt_put_binary(struct bmt_text_out *o, const unsigned char *b, size_t n, long *budget)
{
    size_t i;

    if (bytes_printable(b, n, budget)) {
        bmt_out_s(o, "<<\"", 3);
        for (i = 0; i < n && !bmt_out_full(o); ) {
            /* Copy the run up to the next '"', then escape it. */
            const unsigned char *q = memchr(b + i, '"', n - i);
            size_t run = q ? (size_t)(q - (b + i)) : n - i;
            bmt_out_s(o, (const char *)b + i, run);
            i += run;
            if (q) {
                bmt_out_c(o, '\\');
                bmt_out_c(o, '"');
                i++;
            }
        }
        bmt_out_s(o, "\">>", 3);
        return;
    }
    bmt_out_s(o, "<<", 2);
    for (i = 0; i < n; i++) {
        size_t room = (size_t)(o->end - o->p);
        unsigned v = b[i];
        if (room >= 4) {
            /* Unchecked fast path: ',' plus up to 3 digits. */
            if (i)
                *o->p++ = ',';
            memcpy(o->p, byte_dec[v], 4);
            o->p += byte_dec_len(v);
        } else {
            if (i)
                bmt_out_c(o, ',');
            bmt_out_s(o, byte_dec[v], byte_dec_len(v));
            if (bmt_out_full(o))
                return;
        }
    }
    bmt_out_s(o, ">>", 2);
}
