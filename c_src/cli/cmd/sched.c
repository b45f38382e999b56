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
 */
#include "args.h"
#include "model/sched.h"
#include "out/hist_print.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_opt(void *ctx, int code, const char *arg)
{
    int *from_last = ctx;
    if (code != 'f')
        return bmt_cli_usage_error("sched", "unknown option");
    if (strcmp(arg, "last") == 0)
        *from_last = 1;
    else if (strcmp(arg, "first") == 0)
        *from_last = 0;
    else
        return bmt_cli_usage_error("sched", "--from takes first or last, not '%s'", arg);
    return 0;
}

int bmt_cmd_sched(int argc, char **argv)
{
    static const struct option extra[] = {
        {"from", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, from_last = 0;
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("sched", argc, argv, extra, "", parse_opt, &from_last, &json,
                               &scope, &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_reader r;
    struct bmt_sched s;
    struct bmt_an_pass pass;
    bmt_sched_init(&s, &scope);
    s.from_last = from_last;
    int status = BMT_EXIT_FAIL;
    rc = bmt_an_run(&r, dir, &scope, bmt_sched_feed, &s, &pass);
    struct bmt_out o;
    const char *measure = from_last ? "last" : "first";
    if (rc < 0) {
        status = bmt_an_fail("sched", dir, &r, rc);
    } else if (bmt_an_out_open(&o, NULL) == 0) {
        const struct bmt_hist *h = &s.hist;
        char buf[512];
        if (json) {
            bmt_out_str(&o, "{\"trace\": ");
            bmt_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf, ", \"from\": \"%s\", \"sends\": %llu, "
                     "\"sends_to_known_pid\": %llu, \"cut_by_window\": %llu, ", measure,
                     (unsigned long long)s.send_count, (unsigned long long)s.resolved_count,
                     (unsigned long long)s.cut_count);
            bmt_out_str(&o, buf);
            bmt_json_window(&o, &r, &scope, &pass);
            bmt_out_str(&o, ", ");
            bmt_hist_print_json_stats(&o, h);
            bmt_out_str(&o, ", \"quantize_ns\": ");
            bmt_hist_print_json_quantize(&o, h);
            bmt_out_str(&o, "}\n");
        } else {
            snprintf(buf, sizeof buf,
                     "message_send -> receiver scheduled in latency, ns, from the %s send the "
                     "receiver has not run since%s: %llu latencies from %llu sends (%llu to a "
                     "known pid)\n\n", measure,
                     from_last ? " (as the D script)" : " (its oldest waiting message)",
                     (unsigned long long)h->count, (unsigned long long)s.send_count,
                     (unsigned long long)s.resolved_count);
            bmt_out_str(&o, buf);
            if (h->count == 0)
                bmt_out_str(&o, "(no send followed by the receiver being scheduled in: trace "
                                "with the send and running flags)\n");
            bmt_hist_print_quantize(&o, h);
            if (h->count) {
                char t[5][32];
                bmt_duration_text(bmt_hist_quantile(h, 0.5), t[0]);
                bmt_duration_text(bmt_hist_quantile(h, 0.9), t[1]);
                bmt_duration_text(bmt_hist_quantile(h, 0.99), t[2]);
                bmt_duration_text(h->max, t[3]);
                bmt_duration_text(h->sum / h->count, t[4]);
                snprintf(buf, sizeof buf, "\np50 %s  p90 %s  p99 %s  max %s  mean %s\n", t[0],
                         t[1], t[2], t[3], t[4]);
                bmt_out_str(&o, buf);
            }
        }
        status = bmt_an_out_close(&o, "sched");
    }
    bmt_sched_free(&s);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status;
}
