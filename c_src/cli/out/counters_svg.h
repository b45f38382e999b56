/* The report's counter charts (model/counters.h) drawn: one line chart per
 * node, counter and unit, a line per instance drawn, a legend with each
 * line's peak. Inline SVG, no script. Single-threaded. */
#ifndef BMT_CLI_COUNTERS_SVG_H
#define BMT_CLI_COUNTERS_SVG_H

#include "model/counters.h"
#include "base/out.h"

/* Appends the counters section (a heading, a note, one inline <svg> per
 * chart) for the time from the window's start to `end_ns`; charts of a
 * cluster's traces are titled with their node (from `r`). */
void bmt_counters_html(struct bmt_out *o, const struct bmt_counters *c, const struct bmt_reader *r,
                       uint64_t end_ns);

#endif
