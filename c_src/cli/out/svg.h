/* Small inline SVG charts for `report`: no scripts, no external resources,
 * tooltips through <title>.
 *
 * Layout rules, checked in a browser by test/analyses/check_report.js:
 * every text stays inside the chart (the title is cut with an ellipsis to
 * the width it has, the full title in its tooltip; the left margin grows
 * with the largest count), the title and the statistics line never share a
 * line, and axis labels are horizontal, centred under their bar, written
 * with three significant digits ("524 µs", not "524.288 us") and spaced so
 * they do not overlap. Text widths are estimated from the font size with a
 * generous per-character width, so the estimates err on the side of room.
 * Single-threaded.
 */
#ifndef BMT_CLI_SVG_H
#define BMT_CLI_SVG_H

#include "model/histogram.h"
#include "base/out.h"

#include <stddef.h>
#include <stdint.h>

/* Estimated widths of one character, px: at 11px, and at 13px bold. Text
 * widths err on the side of room. */
#define CHAR_PX_11 7.0
#define CHAR_PX_13B 8.4

/* "524 µs", "1.05 ms", "12 ns": three significant digits. */
void bmt_svg_short_duration(uint64_t ns, char out[32]);

/* Characters of a UTF-8 string (for width estimates). */
size_t bmt_svg_chars(const char *s);

/* Appends `s` HTML-escaped, cut to `max_chars` characters (UTF-8 safe)
 * with an ellipsis. */
void bmt_svg_cut_text(struct bmt_out *o, const char *s, size_t max_chars);

/* Appends an inline <svg> bar chart of `h`'s power-of-two buckets (the
 * quantize rows), titled `title`, values in ns. */
void bmt_svg_quantize(struct bmt_out *o, const struct bmt_hist *h, const char *title);

#endif
