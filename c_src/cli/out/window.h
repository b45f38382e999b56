/* The scope of an analysis as its JSON output states it: the window
 * counted, where a flight recorder's data is complete, and the processes
 * kept, and the sampling ratios it was recorded with. Single-threaded. */
#ifndef BMT_CLI_WINDOW_H
#define BMT_CLI_WINDOW_H

#include "model/run.h"
#include "base/out.h"

/* Appends `"window": {...}, "sampling": {...}|null` describing scope `s`
 * after pass `p` of reader `r` (no braces around). */
void bmt_json_window(struct bmt_out *o, const struct bmt_reader *r, const struct bmt_an_scope *s,
                     const struct bmt_an_pass *p);

#endif
