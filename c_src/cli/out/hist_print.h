/* A latency histogram (model/histogram.h) as the commands print it:
 * DTrace's quantize table, and its statistics and buckets in JSON.
 * Single-threaded. */
#ifndef BMT_CLI_HIST_PRINT_H
#define BMT_CLI_HIST_PRINT_H

#include "model/histogram.h"
#include "base/out.h"

/* Appends DTrace's quantize table: "value  ---- Distribution ---- count"
 * rows from one power of two below the first non-empty bucket to one above
 * the last, 40 '@' for the whole population. Nothing when empty. */
void bmt_hist_print_quantize(struct bmt_out *o, const struct bmt_hist *h);

/* Appends `"count": N, "min_ns": .., "p50_ns": .., "p90_ns", "p99_ns",
 * "p999_ns", "max_ns", "mean_ns"` (no braces). */
void bmt_hist_print_json_stats(struct bmt_out *o, const struct bmt_hist *h);
/* The same without "count" (for a caller whose count is scaled back). */
void bmt_hist_print_json_quantiles(struct bmt_out *o, const struct bmt_hist *h);

/* Appends a JSON array of [power-of-two lower bound, count] pairs for the
 * non-empty quantize rows. */
void bmt_hist_print_json_quantize(struct bmt_out *o, const struct bmt_hist *h);

/* Its total, p50, p90, p99, max and mean as human durations ("1.234 ms"). */
struct bmt_hist_texts {
    char total[32], p50[32], p90[32], p99[32], max[32], mean[32];
};
void bmt_hist_texts(const struct bmt_hist *h, struct bmt_hist_texts *t);

#endif
