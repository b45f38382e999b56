/* The sampling ratios in force as a trace is read (beamtrace:start/1's
 * sample and on_max_rate options): each event a sampled session kept
 * stands for `ratio` events of its kind, the ratio in force at its time.
 * The trace says so with org_erlang_beamtrace:sample_ratio events (kind,
 * ratio; written by the session's consumer at start and at every change)
 * and, for a flight capture, with its metadata's beamtrace_sample_<kind>
 * (the ratios where its window begins). The pass (run.c) feeds both here
 * before each event reaches an analysis; analyses scale counts and totals
 * by weight[tp] (1 when nothing is sampled: they branch on it, so an
 * unsampled trace costs no multiply). Percentiles need no scaling: under
 * uniform sampling the events kept have the distribution of all of them.
 * The mapping from tracepoint to kind is the recorder's
 * (recorder/sampling.c: the catalogue's flags); a return, never decided
 * on its own, is dropped with its call and weighs as one.
 * Single-threaded.
 */
#ifndef BMT_CLI_SAMPLED_H
#define BMT_CLI_SAMPLED_H

#include "core/catalogue.h"

#include <stddef.h>
#include <stdint.h>

struct bmt_sampled {
    uint32_t weight[BMT_TP_COUNT]; /* each kept event of the tracepoint stands for this many; 1: all kept */
    uint32_t ratio_max;            /* the largest ratio in force at any time; 0: never sampled */
    char kinds[128];               /* the kinds ever sampled, comma-separated */
    uint64_t begin_ns;             /* sampled time counts from here (the window's begin) */
    uint64_t since_ns;             /* a ratio has been above 1 since; UINT64_MAX: none is */
    uint64_t sampled_ns;           /* time with a ratio above 1, of intervals closed */
    int scaled;                    /* set after the pass: every analysis of it scaled back */
};

/* Nothing sampled; sampled time counted from `begin_ns`. */
void bmt_sampled_reset(struct bmt_sampled *s, uint64_t begin_ns);

/* From `ts_ns` on, kind `kind`/`len` ("call", "send", ... as the
 * sample_ratio event spells it) is sampled 1 in `ratio` (0 or 1: all).
 * A kind the recorder does not sample is ignored. */
void bmt_sampled_set(struct bmt_sampled *s, const char *kind, size_t len, uint64_t ratio,
                     uint64_t ts_ns);

/* Time with some ratio above 1 between begin_ns and `end_ns`. */
uint64_t bmt_sampled_ns(const struct bmt_sampled *s, uint64_t end_ns);

#endif
