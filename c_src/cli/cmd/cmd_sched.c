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
#include "model/analyses.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_sched_init(struct bmt_sched *s, struct bmt_an_scope *scope)
{
    memset(s, 0, sizeof *s);
    s->scope = scope;
    bmt_hist_init(&s->hist);
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need < *cap)
        return 0;
    uint32_t n = *cap ? *cap : 64;
    while (n <= need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (!p)
        return -ENOMEM;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *arr = p;
    *cap = n;
    return 0;
}

static int64_t pid_id(struct bmt_sched *s, const char *str, size_t len)
{
    int64_t id = bmt_names_pid(&s->scope->names, str, len);
    if (id >= 0 && grow((void **)&s->pending_ns, &s->pid_cap, (uint32_t)id, sizeof(uint64_t)) < 0)
        return -ENOMEM;
    return id;
}

int bmt_sched_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_sched *s = ctx;
    const struct bmt_an_scope *sc = s->scope;
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    int64_t pid;
    switch (rec->tp) {
    case BMT_TP_message_send: {
        if (!bmt_an_valid(sc, ts))
            return 0;
        const struct bmt_value *to = &v[F->send_to];
        int in_window = ts >= sc->window.begin_ns;
        s->send_count += in_window;
        if (bmt_names_is_pid(to->str, to->len)) {
            if (!bmt_an_keep(sc, to->str, to->len))
                return 0;
            if ((pid = pid_id(s, to->str, to->len)) < 0)
                return (int)pid;
        } else {
            if ((pid = bmt_names_holder(&sc->names, v[F->send_from].str, v[F->send_from].len,
                                        to->str, to->len)) < 0)
                return 0;
            if (grow((void **)&s->pending_ns, &s->pid_cap, (uint32_t)pid, sizeof(uint64_t)) < 0)
                return -ENOMEM;
            const struct bmt_strtab *pids = &sc->names.pids;
            if (!bmt_an_keep(sc, bmt_strtab_str(pids, (uint32_t)pid), bmt_strtab_len(pids, (uint32_t)pid)))
                return 0;
        }
        s->resolved_count += in_window;
        if (!s->pending_ns[pid] || s->from_last)
            s->pending_ns[pid] = ts + 1;
        return 0;
    }
    case BMT_TP_process_scheduled: {
        const struct bmt_value *type = &v[F->sched_type];
        if (type->len != 2 || memcmp(type->str, "in", 2) != 0)
            return 0;
        pid = bmt_strtab_find(&sc->names.pids, v[F->sched_pid].str, v[F->sched_pid].len);
        if (pid < 0 || (uint32_t)pid >= s->pid_cap || !s->pending_ns[pid])
            return 0;
        uint64_t sent = s->pending_ns[pid] - 1;
        s->pending_ns[pid] = 0;
        if (!bmt_an_inside(sc, sent, ts)) {
            s->cut_count++;
            return 0;
        }
        return bmt_hist_add(&s->hist, ts >= sent ? ts - sent : 0);
    }
    default:
        return 0;
    }
}

void bmt_sched_free(struct bmt_sched *s)
{
    free(s->pending_ns);
    bmt_hist_free(&s->hist);
}

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
    bmt_an_reads(&scope, &bmt_fields_sched);
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
            bmt_an_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf, ", \"from\": \"%s\", \"sends\": %llu, "
                     "\"sends_to_known_pid\": %llu, \"cut_by_window\": %llu, ", measure,
                     (unsigned long long)s.send_count, (unsigned long long)s.resolved_count,
                     (unsigned long long)s.cut_count);
            bmt_out_str(&o, buf);
            bmt_an_json_scope(&o, &r, &scope, &pass);
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
                bmt_an_duration_text(bmt_hist_quantile(h, 0.5), t[0]);
                bmt_an_duration_text(bmt_hist_quantile(h, 0.9), t[1]);
                bmt_an_duration_text(bmt_hist_quantile(h, 0.99), t[2]);
                bmt_an_duration_text(h->max, t[3]);
                bmt_an_duration_text(h->sum / h->count, t[4]);
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
