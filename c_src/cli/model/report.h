/* The report's analyses, composed: calls (with the call tree for the flame
 * graph), sched, gc, procs, the timeline, the counters and the events per
 * tracepoint, fed in one pass under one scope. out/report_html.h writes
 * the page. Single-threaded.
 */
#ifndef BMT_CLI_REPORT_H
#define BMT_CLI_REPORT_H

#include "calls.h"
#include "counters.h"
#include "gc.h"
#include "procs.h"
#include "sched.h"
#include "timeline.h"

struct bmt_report {
    uint64_t counts[BMT_TP_COUNT];
    struct bmt_calls calls;
    struct bmt_sched sched;
    struct bmt_gc gc;
    struct bmt_procs procs;
    struct bmt_timeline timeline;
    struct bmt_counters counters;
};

/* Prepares every analysis for `scope`. Returns 0 or -ENOMEM (free `r` with
 * bmt_report_free in both cases). */
int bmt_report_init(struct bmt_report *r, struct bmt_an_scope *scope);
/* Feeds one event to every analysis. Returns 0 or -ENOMEM. */
int bmt_report_feed(void *ctx, const struct bmt_record *rec);
/* Closes open calls and running intervals at `end_ns`. Returns 0 or -ENOMEM. */
int bmt_report_finish(struct bmt_report *r, uint64_t end_ns);
void bmt_report_free(struct bmt_report *r);

#endif
