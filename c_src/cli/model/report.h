/* The report's analyses, composed from the accumulators (acc.h): the
 * events per tracepoint, calls with the call tree (for the flame graph),
 * sched, gc, procs, the timeline and the counters, fed in one pass under
 * one scope. out/report_html.h writes the page. Single-threaded.
 */
#ifndef BMT_CLI_REPORT_H
#define BMT_CLI_REPORT_H

#include "acc.h"
#include "calls.h"
#include "counters.h"
#include "gc.h"
#include "procs.h"
#include "sched.h"
#include "timeline.h"

#define BMT_REPORT_PARTS 7

struct bmt_report {
    const struct bmt_an_scope *scope;
    uint64_t counts[BMT_TP_COUNT];  /* events per tracepoint, scaled back in a sampled trace */
    uint64_t kept[BMT_TP_COUNT];    /* events per tracepoint read */
    struct bmt_calls calls;
    struct bmt_sched sched;
    struct bmt_gc gc;
    struct bmt_procs procs;
    struct bmt_timeline timeline;
    struct bmt_counters counters;
    struct bmt_an_sub subs[BMT_REPORT_PARTS]; /* what the pass feeds */
    unsigned sub_count;             /* the parts initialised */
};

/* Prepares every part for `scope`. Returns 0 or -ENOMEM (free `r` with
 * bmt_report_free in both cases). */
int bmt_report_init(struct bmt_report *r, struct bmt_an_scope *scope);
void bmt_report_free(struct bmt_report *r);

#endif
