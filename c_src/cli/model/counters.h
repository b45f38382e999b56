/* The report's counter charts: the periodic samples of beamtrace:start/1's
 * `samples` option (org_erlang_beamtrace:counter events: scheduler
 * utilisation, run-queue lengths, memory, the longest message queues) as
 * line charts, one per node, counter and unit, one line per instance.
 *
 * Samples fall into COUNTER_COLS columns of equal width from the window's
 * start; the width starts at 1 us and doubles (neighbouring columns merge:
 * sums, counts and maxima stay exact) whenever the trace outgrows the
 * columns, as the timeline does (timeline.h), so memory is fixed whatever
 * the trace's time span. A line joins its non-empty columns: the mean of
 * the samples in a column for utilisation and memory, their maximum for
 * queue lengths (units count and messages: a peak between two samples is
 * what a latency hunt looks for).
 *
 * Bounds: COUNTER_CHARTS charts, COUNTER_SERIES instances per chart (the
 * samples of further instances are counted and said under the chart), and
 * COUNTER_LINES lines drawn per chart: the highest peaks, plus "total" when
 * the counter has one. Counters are node-wide, so the process filter does
 * not apply to them; the window does. Memory: at most COUNTER_CHARTS *
 * COUNTER_SERIES * COUNTER_COLS * 24 bytes (4.5 MiB), allocated as
 * instances appear. Single-threaded.
 */
#ifndef BMT_CLI_COUNTERS_H
#define BMT_CLI_COUNTERS_H

#include "acc.h"
#include "scope.h"
#include "base/strtab.h"

#include <stdint.h>

#define COUNTER_COLS 256
#define COUNTER_CHARTS 24
#define COUNTER_SERIES 32
#define COUNTER_LINES 8

struct bmt_counter_col {
    double sum;                 /* of the samples in the column */
    int64_t max;
    uint32_t n;                 /* samples; 0: empty */
};

struct bmt_counter_series {
    uint32_t name;              /* id in the chart's instances */
    int64_t peak;
    double sum;                 /* of every sample, for the mean */
    uint64_t n;
    struct bmt_counter_col cols[COUNTER_COLS];
};

struct bmt_counter_chart {
    unsigned trace;             /* the node's trace (bmt_record.trace) */
    char counter[BMT_TERM_MAX_BYTES + 1], unit[BMT_WORD_MAX_BYTES + 1];
    int peak_mode;              /* 1: columns show maxima; 0: means */
    struct bmt_strtab instances;
    struct bmt_counter_series *series[COUNTER_SERIES];
    uint32_t series_count;
    uint64_t unkept_samples;    /* of instances beyond COUNTER_SERIES */
};

struct bmt_counters {
    struct bmt_an_scope *scope;
    uint64_t t0_ns;             /* column 0 starts here */
    uint64_t col_ns;            /* column width, a power of two, ns */
    int started;
    struct bmt_strtab keys;     /* "trace counter unit" -> chart */
    struct bmt_counter_chart *charts[COUNTER_CHARTS];
    uint32_t chart_count;
    uint64_t sample_count;      /* inside the window */
    uint64_t unkept_samples;    /* of charts beyond COUNTER_CHARTS */
};

/* Prepares `c` for `scope`. */
int bmt_counters_init(void *self, struct bmt_an_scope *scope);

/* Takes counter events (others are ignored). Returns 0 or -ENOMEM. */
int bmt_counters_feed(void *self, const struct bmt_record *rec);

/* What a column of chart `ch` shows: the maximum of its samples, or their
 * mean. */
static inline double bmt_counters_col_value(const struct bmt_counter_chart *ch,
                                            const struct bmt_counter_col *col)
{
    return ch->peak_mode ? (double)col->max : col->sum / col->n;
}

/* The series drawn, in legend order: "total" first, then the highest
 * peaks. Fills out[] with series indices and returns how many. */
uint32_t bmt_counters_drawn(const struct bmt_counter_chart *ch, uint32_t out[COUNTER_LINES]);

void bmt_counters_free(void *self);

/* As an accumulator (acc.h). */
extern const struct bmt_acc bmt_counters_acc;

#endif
