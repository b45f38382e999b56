/* The report's analyses (contract in report.h). */
#include "report.h"

#include <errno.h>
#include <string.h>

/* Events per tracepoint: every event, no field; in a sampled trace each
 * stands for the ratio in force for its kind (sampled.h). */
static int count_feed(void *self, const struct bmt_record *rec)
{
    struct bmt_report *r = self;
    if (rec->tp < BMT_TP_COUNT) {
        r->counts[rec->tp] += r->scope->sampled.weight[rec->tp];
        r->kept[rec->tp]++;
    }
    return 0;
}

static const struct bmt_needs count_needs = {{0}, 1};
static const struct bmt_acc count_acc = {"events", NULL, count_feed, NULL, NULL, NULL,
                                         &count_needs, 1};

int bmt_report_init(struct bmt_report *r, struct bmt_an_scope *scope)
{
    memset(r, 0, sizeof *r);
    r->scope = scope;
    const struct bmt_an_sub parts[BMT_REPORT_PARTS] = {
        {&count_acc, r},       {&bmt_calls_acc, &r->calls},
        {&bmt_sched_acc, &r->sched},   {&bmt_gc_acc, &r->gc},
        {&bmt_procs_acc, &r->procs},   {&bmt_timeline_acc, &r->timeline},
        {&bmt_counters_acc, &r->counters},
    };
    for (unsigned i = 0; i < BMT_REPORT_PARTS; i++) {
        r->subs[r->sub_count++] = parts[i];
        if (parts[i].acc->init && parts[i].acc->init(parts[i].self, scope) < 0)
            return -ENOMEM;
    }
    r->calls.cs.tree = 1;      /* the flame graph */
    r->calls.slowest_cap = 1;  /* the page lists none */
    return 0;
}

void bmt_report_free(struct bmt_report *r)
{
    for (unsigned i = 0; i < r->sub_count; i++)
        if (r->subs[i].acc->free)
            r->subs[i].acc->free(r->subs[i].self);
    r->sub_count = 0;
}
