/* The report's analyses (contract in report.h). */
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_report_init(struct bmt_report *r, struct bmt_an_scope *scope)
{
    memset(r, 0, sizeof *r);
    bmt_calls_init(&r->calls, scope);
    r->calls.cs.tree = 1;
    bmt_sched_init(&r->sched, scope);
    bmt_gc_init(&r->gc, scope);
    bmt_procs_init(&r->procs, scope);
    bmt_counters_init(&r->counters, scope);
    r->calls.slowest_cap = 1;
    r->calls.slowest = calloc(1, sizeof *r->calls.slowest);
    if (bmt_timeline_init(&r->timeline, scope) < 0 || !r->calls.slowest)
        return -ENOMEM;
    return 0;
}

int bmt_report_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_report *r = ctx;
    int rc;
    if (rec->tp < BMT_TP_COUNT)
        r->counts[rec->tp]++;
    if ((rc = bmt_calls_feed(&r->calls, rec)) < 0 || (rc = bmt_sched_feed(&r->sched, rec)) < 0 ||
        (rc = bmt_gc_feed(&r->gc, rec)) < 0 || (rc = bmt_procs_feed(&r->procs, rec)) < 0 ||
        (rc = bmt_timeline_feed(&r->timeline, rec)) < 0 ||
        (rc = bmt_counters_feed(&r->counters, rec)) < 0)
        return rc;
    return 0;
}

int bmt_report_finish(struct bmt_report *r, uint64_t end_ns)
{
    int rc = bmt_calls_finish(&r->calls, end_ns);
    if (rc < 0)
        return rc;
    bmt_timeline_finish(&r->timeline, end_ns);
    return 0;
}

void bmt_report_free(struct bmt_report *r)
{
    free(r->calls.slowest);
    bmt_calls_free(&r->calls);
    bmt_sched_free(&r->sched);
    bmt_gc_free(&r->gc);
    bmt_procs_free(&r->procs);
    bmt_timeline_free(&r->timeline);
    bmt_counters_free(&r->counters);
}
