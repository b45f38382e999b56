/* The values of `record --flight`'s options that need more than their
 * type's check (flight_opts.c), and --sample's items for the options term.
 * Pure; reentrant. */
#ifndef BMT_CLI_FLIGHT_OPTS_H
#define BMT_CLI_FLIGHT_OPTS_H

#include <stddef.h>

/* The largest N of --sample 1/N: the recorder's BMT_SAMPLE_MAX_RATIO
 * (c_src/recorder/sampling.h), which the node would clamp to. */
#define BMT_RECORD_SAMPLE_MAX (1ULL << 20)

/* Each checks one value of its option; 0, or -1 with the whole error line's
 * text (naming the option and what it takes) in err. */
int bmt_record_trigger_check(const char *spec, char *err, size_t size);
int bmt_record_max_captures_check(const char *v, char *err, size_t size);
int bmt_record_sample_check(const char *v, char *err, size_t size);
int bmt_record_on_max_rate_check(const char *v, char *err, size_t size);

/* Calls fn for each ratio of a --sample value: once with kind NULL for
 * "1/N", else once per KIND=1/N item (kind in the controller's spelling).
 * fn may be NULL (a check). Returns 0, or -1 if the value is malformed. */
int bmt_record_sample_each(const char *v,
                           void (*fn)(void *ctx, const char *kind, unsigned long long n),
                           void *ctx);

#endif
