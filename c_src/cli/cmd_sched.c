/* `beamtrace sched`: latency from a message_send to the receiver's next
 * process_scheduled(in), as DTrace's quantize draws it (seed 003's "Message
 * Send -> Proc Scheduled Latency", Dustin Sallings's script).
 *
 * Per receiver, the earliest send not yet consumed is remembered; the
 * receiver's next `in` records in - send and consumes it. Unlike the D
 * script (which keeps the latest send), the earliest send measures how long
 * the first waiting message waited. Sends to registered names are resolved
 * through process_register events seen so far; other destinations (ports,
 * {Name, Node}, unknown names) are skipped. Needs the send and running
 * flags on the processes involved. Memory: per process and name.
 */
#include "analyses.h"
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void bmt_sched_init(struct bmt_sched *s)
{
    memset(s, 0, sizeof *s);
    bmt_strtab_init(&s->pids);
    bmt_strtab_init(&s->names);
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
    int64_t id = bmt_strtab_intern(&s->pids, str, len);
    if (id >= 0 && grow((void **)&s->pending_ns, &s->pid_cap, (uint32_t)id, sizeof(uint64_t)) < 0)
        return -ENOMEM;
    return id;
}

int bmt_sched_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_sched *s = ctx;
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *v = rec->values;
    int64_t pid;
    switch (rec->tp) {
    case BMT_TP_message_send: {
        const struct bmt_value *to = &v[F->send_to];
        s->send_count++;
        if (to->len && to->str[0] == '<') {
            if ((pid = pid_id(s, to->str, to->len)) < 0)
                return (int)pid;
        } else {
            int64_t name = bmt_strtab_find(&s->names, to->str, to->len);
            if (name < 0 || !s->name_pid[name])
                return 0;
            pid = s->name_pid[name] - 1;
        }
        s->resolved_count++;
        if (!s->pending_ns[pid])
            s->pending_ns[pid] = rec->ts_ns + 1;
        return 0;
    }
    case BMT_TP_process_scheduled: {
        const struct bmt_value *type = &v[F->sched_type];
        if (type->len != 2 || memcmp(type->str, "in", 2) != 0)
            return 0;
        pid = bmt_strtab_find(&s->pids, v[F->sched_pid].str, v[F->sched_pid].len);
        if (pid < 0 || !s->pending_ns[pid])
            return 0;
        uint64_t sent = s->pending_ns[pid] - 1;
        s->pending_ns[pid] = 0;
        return bmt_hist_add(&s->hist, rec->ts_ns >= sent ? rec->ts_ns - sent : 0);
    }
    case BMT_TP_process_register: {
        const struct bmt_value *type = &v[F->reg_type];
        int reg = type->len == 8 && memcmp(type->str, "register", 8) == 0;
        int64_t name = bmt_strtab_intern(&s->names, v[F->reg_name].str, v[F->reg_name].len);
        if (name < 0 || grow((void **)&s->name_pid, &s->name_cap, (uint32_t)name,
                             sizeof(uint32_t)) < 0)
            return -ENOMEM;
        if ((pid = pid_id(s, v[F->reg_pid].str, v[F->reg_pid].len)) < 0)
            return (int)pid;
        s->name_pid[name] = reg ? (uint32_t)pid + 1 : 0;
        return 0;
    }
    default:
        return 0;
    }
}

void bmt_sched_free(struct bmt_sched *s)
{
    bmt_strtab_free(&s->pids);
    bmt_strtab_free(&s->names);
    free(s->pending_ns);
    free(s->name_pid);
    bmt_hist_free(&s->hist);
}

int bmt_cmd_sched(int argc, char **argv)
{
    int json = 0;
    const char *dir;
    int rc = bmt_an_parse_args("sched", argc, argv, NULL, "", NULL, NULL, &json, &dir);
    if (rc || !dir)
        return rc;
    struct bmt_reader r;
    struct bmt_sched s;
    struct bmt_an_pass pass;
    bmt_sched_init(&s);
    int status = BMT_EXIT_FAIL;
    rc = bmt_an_run(&r, dir, bmt_sched_feed, &s, &pass);
    struct bmt_out o;
    if (rc < 0) {
        bmt_an_fail(dir, &r);
    } else if (bmt_an_out_open(&o, NULL) == 0) {
        const struct bmt_hist *h = &s.hist;
        char buf[512];
        if (json) {
            bmt_out_str(&o, "{\"trace\": ");
            bmt_an_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf, ", \"sends\": %llu, \"sends_to_known_pid\": %llu, ",
                     (unsigned long long)s.send_count, (unsigned long long)s.resolved_count);
            bmt_out_str(&o, buf);
            bmt_hist_print_json_stats(&o, h);
            bmt_out_str(&o, ", \"quantize_ns\": ");
            bmt_hist_print_json_quantize(&o, h);
            bmt_out_str(&o, "}\n");
        } else {
            snprintf(buf, sizeof buf,
                     "message_send -> receiver scheduled in latency, ns: %llu latencies from "
                     "%llu sends (%llu to a known pid)\n\n",
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
    return status;
}
