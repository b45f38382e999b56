/* The report's first section: the slowest functions by p99, each with its
 * p50 and p99, a stacked bar of where its time went (on CPU, runnable,
 * waiting, GC: the calls accumulator's breakdown, calls_reading.h) and one
 * plain line reading it. HTML only (a bar is a row of <span>s whose widths
 * are the shares), so it spans the page's width. Single-threaded.
 */
#ifndef BMT_CLI_SLOWEST_HTML_H
#define BMT_CLI_SLOWEST_HTML_H

#include "model/calls.h"
#include "base/out.h"

/* The CSS the section needs (for the page's <style>). */
extern const char bmt_slowest_css[];

/* Appends the section for the finished calls `c`: up to `max` functions.
 * Returns 0. */
int bmt_slowest_html(struct bmt_out *o, const struct bmt_calls *c, unsigned max);

#endif
