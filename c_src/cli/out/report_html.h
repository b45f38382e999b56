/* The report: one self-contained HTML page (inline CSS and SVG, one small
 * inline script for the flame graph's zoom, nothing fetched) at the
 * window's width, leading with the slowest functions and where their time
 * went (slowest_html.h), then the timeline, the trace summary, the latency histograms (send -> scheduled, GC pauses, the
 * top functions' call latency), the top functions with where their time
 * went, the processes, the flame graph (on-CPU time with off-CPU frames),
 * a timeline of when the busiest processes ran and the counters of the
 * samples option as line charts. Processes appear as "<0.66.0> name".
 * Single-threaded.
 */
#ifndef BMT_CLI_REPORT_HTML_H
#define BMT_CLI_REPORT_HTML_H

#include "model/report.h"
#include "model/run.h"
#include "base/out.h"

/* Appends the page for the trace labelled `dir` read by `rd`, from the
 * analyses `r` after pass `p` under scope `s`. Returns 0 or -ENOMEM. */
int bmt_report_html(struct bmt_out *o, const char *dir, const struct bmt_reader *rd,
                    const struct bmt_report *r, const struct bmt_an_scope *s,
                    const struct bmt_an_pass *p);

#endif
