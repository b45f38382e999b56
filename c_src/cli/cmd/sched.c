/* `beamtrace sched`: latency from a message_send to the receiver's next
 * process_scheduled(in), as DTrace's quantize draws it (seed 003's "Message
 * Send -> Proc Scheduled Latency", Dustin Sallings's script).
 *
 * Two measures, chosen with --from:
 *  - first (default): per receiver, the earliest send it has not been
 *    scheduled in since; its next `in` records in - send. How long the
 *    oldest message waited before its receiver ran: a queue's delay.
 *  - last: the latest such send, as the D script (sent[receiver] =
 *    timestamp on every send) and scripts/send-to-sched.bt do. How soon a
 *    process runs after its last wake-up message: the scheduler's reaction.
 * On a busy receiver the two differ a lot (20x on one broker's trace): the
 * first counts the whole backlog, the last only the final hop.
 * Sends to registered names are resolved through the names known so far
 * (state dump and process_register); other destinations (ports, {Name,
 * Node}, unknown names) are skipped. A latency is counted when its send and
 * its `in` are inside the window (sends before it or `in`s after it: cut).
 * Needs the send and running flags on the processes involved. Memory: per
 * process and name.
 * In a sampled trace sends are scaled back by the send ratio in force at
 * each; the latencies pair the events kept and say so (model/sched.h).
 */
#include "analysis.h"
#include "model/sched.h"
#include "out/hist_print.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <stdio.h>

struct sched_opts {
    struct bmt_common common;
    int from;               /* index in from_values: 1 = last */
};

static const char *const from_values[] = {"first", "last", NULL};

static const struct bmt_opt options[] = {
    {.name = "from", .type = BMT_OPT_ENUM,
     .help = "first: from the oldest send the receiver has not run since (how long its oldest "
             "waiting message waited, backlog included); last: from the latest such send, as "
             "the D script and scripts/send-to-sched.bt (the last hop only)",
     .def = "first", .values = from_values,
     .offset = BMT_OPT_AT(struct sched_opts, from, int)},
    {0},
};

struct printing {
    const struct bmt_analysis *a;
    const struct bmt_sched *s;
    int json;
};

static void print_json(struct bmt_out *o, const struct printing *p, const char *measure)
{
    const struct bmt_sched *s = p->s;
    char buf[512];
    bmt_out_str(o, "{\"trace\": ");
    bmt_json_cstr(o, p->a->dir);
    snprintf(buf, sizeof buf, ", \"from\": \"%s\", \"sends\": %llu, "
             "\"sends_to_known_pid\": %llu, \"cut_by_window\": %llu, "
             "\"latencies_of_sampled_events\": %s, ", measure,
             (unsigned long long)s->send_count, (unsigned long long)s->resolved_count,
             (unsigned long long)s->cut_count, s->sampled_pairs ? "true" : "false");
    bmt_out_str(o, buf);
    bmt_json_window(o, &p->a->r, &p->a->scope, &p->a->pass);
    bmt_out_str(o, ", ");
    bmt_hist_print_json_stats(o, &s->hist);
    bmt_out_str(o, ", \"quantize_ns\": ");
    bmt_hist_print_json_quantize(o, &s->hist);
    bmt_out_str(o, "}\n");
}

static void print_text(struct bmt_out *o, const struct printing *p, const char *measure)
{
    const struct bmt_sched *s = p->s;
    const struct bmt_hist *h = &s->hist;
    char buf[512];
    snprintf(buf, sizeof buf,
             "message_send -> receiver scheduled in latency, ns, from the %s send the "
             "receiver has not run since%s: %llu latencies from %llu sends (%llu to a "
             "known pid)\n\n", measure,
             s->from_last ? " (as the D script)" : " (its oldest waiting message)",
             (unsigned long long)h->count, (unsigned long long)s->send_count,
             (unsigned long long)s->resolved_count);
    bmt_out_str(o, buf);
    if (s->sampled_pairs)
        bmt_out_str(o, "(sampled: the sends are scaled back by the ratio in force at each; the "
                       "latencies pair the sends and `in`s kept, a dropped `in` lengthening "
                       "one: of the events kept, neither scaled nor unbiased)\n\n");
    if (h->count == 0)
        bmt_out_str(o, "(no send followed by the receiver being scheduled in: trace "
                       "with the send and running flags)\n");
    bmt_hist_print_quantize(o, h);
    if (!h->count)
        return;
    struct bmt_hist_texts t;
    bmt_hist_texts(h, &t);
    snprintf(buf, sizeof buf, "\np50 %s  p90 %s  p99 %s  max %s  mean %s\n", t.p50, t.p90, t.p99,
             t.max, t.mean);
    bmt_out_str(o, buf);
}

static int print(struct bmt_out *o, const struct bmt_analysis *a, void *self, const void *opts)
{
    const struct printing p = {a, self, ((const struct bmt_common *)opts)->format == 1};
    const char *measure = p.s->from_last ? "last" : "first";
    if (p.json)
        print_json(o, &p, measure);
    else
        print_text(o, &p, measure);
    return 0;
}

static void configure(void *self, const void *opts, struct bmt_analysis *a)
{
    (void)a;
    ((struct bmt_sched *)self)->from_last = ((const struct sched_opts *)opts)->from == 1;
}

const struct bmt_command bmt_cmd_sched = {
    .name = "sched",
    .summary = "message send -> receiver scheduled-in latency histogram",
    .description =
        "For message_send events to a pid (or to a name registered in the trace), the\n"
        "time until the receiver is next scheduled in (process_scheduled in), as a\n"
        "DTrace quantize histogram in ns (power-of-two value, @-bar distribution,\n"
        "count) and p50/p90/p99/max. Record with the send and running flags.",
    .opts = options, .uses = BMT_USES_ANALYSIS, .size = sizeof(struct sched_opts),
    .acc = &bmt_sched_acc, .state_size = sizeof(struct bmt_sched),
    .configure = configure, .print = print,
};
