/* A log-linear latency histogram (HDR-style): its percentiles and DTrace's
 * `quantize` power-of-two buckets (out/hist_print.h prints them).
 *
 * Values below 128 are counted exactly; above, each power of two is split
 * into 128 equal sub-buckets, so a bucket is at most 1/128 of its lower
 * bound wide and a reported percentile (the bucket's midpoint, clamped to
 * the exact min and max) is within 0.4% of the recorded value it stands for. Memory: 1 KiB
 * per power of two actually used (allocated on first use), never more than
 * 58 KiB, whatever the number of values. Single-threaded.
 */
#ifndef BMT_CLI_HISTOGRAM_H
#define BMT_CLI_HISTOGRAM_H

#include <stdint.h>

#define BMT_HIST_SUB_BITS 7
#define BMT_HIST_SUB (1u << BMT_HIST_SUB_BITS)
#define BMT_HIST_BLOCKS (64 - BMT_HIST_SUB_BITS + 1)

struct bmt_hist {
    uint64_t count;
    uint64_t sum;      /* saturating: UINT64_MAX once it would wrap */
    uint64_t min, max; /* exact; valid when count > 0 */
    uint64_t *blocks[BMT_HIST_BLOCKS]; /* BMT_HIST_SUB counts each, or NULL */
};

void bmt_hist_init(struct bmt_hist *h);

/* Records value `v`. Returns 0 or -ENOMEM (nothing recorded). */
int bmt_hist_add(struct bmt_hist *h, uint64_t v);

/* The value at quantile `q` (0 < q <= 1): the smallest bucket holding the
 * ceil(q * count)-th value, as its midpoint clamped to [min, max]; 0 when
 * empty. */
uint64_t bmt_hist_quantile(const struct bmt_hist *h, double q);

/* Counts per power of two: pow2[0] holds value 0, pow2[k] (k >= 1) values in
 * [2^(k-1), 2^k). */
void bmt_hist_pow2(const struct bmt_hist *h, uint64_t pow2[65]);

void bmt_hist_free(struct bmt_hist *h);

#endif
