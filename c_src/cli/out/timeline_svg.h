/* The report's timeline (model/timeline.h) drawn: one lane per busy
 * process, each column a bar as high as the share of its time slice the
 * process ran, over a band spanning the process's life, its total share
 * beside its name. Inline SVG, no script. Single-threaded. */
#ifndef BMT_CLI_TIMELINE_SVG_H
#define BMT_CLI_TIMELINE_SVG_H

#include "model/timeline.h"
#include "base/out.h"

/* Appends the timeline section (a heading, a note and an inline <svg>) for
 * the time from the window's start to `end_ns`. */
void bmt_timeline_html(struct bmt_out *o, const struct bmt_timeline *t, const struct bmt_reader *r,
                       uint64_t end_ns);

#endif
