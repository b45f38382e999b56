/* `beamtrace procs`: births and deaths (seed 003's "Births and Deaths?"):
 * spawns and exits per second, exit reasons, and the longest- and
 * shortest-lived processes (process_spawn -> process_exit of the same pid).
 *
 * Seconds count from the trace's first event. Processes whose spawn was not
 * traced (running before tracing started, or spawned by an untraced
 * process) exit without a lifetime and are counted apart. Needs the procs
 * flag (set_on_spawn for children of traced processes). Memory: per process,
 * per exit reason and per second of trace.
 */
#include "analyses.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_procs_init(struct bmt_procs *p)
{
    memset(p, 0, sizeof *p);
    bmt_strtab_init(&p->pids);
    bmt_strtab_init(&p->reasons);
}

static int grow_u64(uint64_t **arr, uint64_t *cap, uint64_t need)
{
    if (need < *cap)
        return 0;
    uint64_t n = *cap ? *cap : 64;
    while (n <= need)
        n *= 2;
    if (n > (1ull << 40))
        return -ENOMEM;
    uint64_t *q = realloc(*arr, n * sizeof *q);
    if (!q)
        return -ENOMEM;
    memset(q + *cap, 0, (n - *cap) * sizeof *q);
    *arr = q;
    *cap = n;
    return 0;
}

/* Keeps the BMT_PROCS_TOP largest (sign 1) or smallest (sign -1). */
static void top_insert(struct bmt_life *top, unsigned *count, struct bmt_life l, int sign)
{
    unsigned n = *count;
    if (n == BMT_PROCS_TOP) {
        uint64_t worst = top[n - 1].lifetime_ns;
        if (sign > 0 ? l.lifetime_ns <= worst : l.lifetime_ns >= worst)
            return;
        n--;
    }
    unsigned i = n;
    while (i > 0 && (sign > 0 ? top[i - 1].lifetime_ns < l.lifetime_ns
                              : top[i - 1].lifetime_ns > l.lifetime_ns)) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = l;
    *count = n + 1;
}

int bmt_procs_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_procs *p = ctx;
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *v = rec->values;
    if (!p->started) {
        p->started = 1;
        p->first_ns = rec->ts_ns;
    }
    if (rec->tp != BMT_TP_process_spawn && rec->tp != BMT_TP_process_exit)
        return 0;
    uint64_t sec = (rec->ts_ns - p->first_ns) / 1000000000u;
    uint64_t cap = p->second_cap;
    if (grow_u64(&p->spawns, &cap, sec) < 0)
        return -ENOMEM;
    cap = p->second_cap;
    if (grow_u64(&p->exits, &cap, sec) < 0)
        return -ENOMEM;
    p->second_cap = cap;
    if (sec + 1 > p->seconds)
        p->seconds = sec + 1;
    unsigned f = rec->tp == BMT_TP_process_spawn ? F->spawn_pid : F->exit_pid;
    int64_t pid = bmt_strtab_intern(&p->pids, v[f].str, v[f].len);
    if (pid < 0)
        return (int)pid;
    uint64_t pcap = p->pid_cap;
    if (grow_u64(&p->spawn_ns, &pcap, (uint64_t)pid) < 0)
        return -ENOMEM;
    p->pid_cap = (uint32_t)pcap;
    if (rec->tp == BMT_TP_process_spawn) {
        p->spawn_count++;
        p->spawns[sec]++;
        p->spawn_ns[pid] = rec->ts_ns + 1;
        return 0;
    }
    p->exit_count++;
    p->exits[sec]++;
    const struct bmt_value *reason = &v[F->exit_reason];
    int64_t rid = bmt_strtab_intern(&p->reasons, reason->str, reason->len);
    if (rid < 0)
        return (int)rid;
    uint64_t rcap = p->reason_cap;
    if (grow_u64(&p->reason_counts, &rcap, (uint64_t)rid) < 0)
        return -ENOMEM;
    p->reason_cap = (uint32_t)rcap;
    p->reason_counts[rid]++;
    if (!p->spawn_ns[pid]) {
        p->exit_unknown_count++;
        return 0;
    }
    struct bmt_life l = {(uint32_t)pid, rec->ts_ns - (p->spawn_ns[pid] - 1)};
    p->spawn_ns[pid] = 0;
    top_insert(p->longest, &p->longest_count, l, 1);
    top_insert(p->shortest, &p->shortest_count, l, -1);
    return 0;
}

void bmt_procs_free(struct bmt_procs *p)
{
    bmt_strtab_free(&p->pids);
    bmt_strtab_free(&p->reasons);
    free(p->spawn_ns);
    free(p->reason_counts);
    free(p->spawns);
    free(p->exits);
}

static const struct bmt_procs *sort_procs;

static int by_reason_desc(const void *a, const void *b)
{
    uint64_t x = sort_procs->reason_counts[*(const uint32_t *)a];
    uint64_t y = sort_procs->reason_counts[*(const uint32_t *)b];
    return x != y ? (x > y ? -1 : 1) : (int)(*(const uint32_t *)a - *(const uint32_t *)b);
}

static void print_lives(struct bmt_out *o, const struct bmt_procs *p, const struct bmt_life *l,
                        unsigned n, int json)
{
    char buf[128];
    for (unsigned i = 0; i < n; i++) {
        const char *s = bmt_strtab_str(&p->pids, l[i].pid);
        if (json) {
            bmt_out_str(o, i ? ", {\"pid\": " : "{\"pid\": ");
            bmt_an_json_string(o, s, strlen(s));
            bmt_out_str(o, ", \"lifetime_ns\": ");
            bmt_out_u64(o, l[i].lifetime_ns);
            bmt_out_char(o, '}');
        } else {
            char d[32];
            bmt_an_duration_text(l[i].lifetime_ns, d);
            snprintf(buf, sizeof buf, "  %-20s %14s\n", s, d);
            bmt_out_str(o, buf);
        }
    }
}

int bmt_cmd_procs(int argc, char **argv)
{
    int json = 0;
    const char *dir;
    int rc = bmt_an_parse_args("procs", argc, argv, NULL, "", NULL, NULL, &json, &dir);
    if (rc || !dir)
        return rc;
    struct bmt_reader r;
    struct bmt_procs p;
    struct bmt_an_pass pass;
    bmt_procs_init(&p);
    int status = BMT_EXIT_FAIL;
    rc = bmt_an_run(&r, dir, bmt_procs_feed, &p, &pass);
    uint32_t *order = rc == 0 ? malloc((p.reasons.count + 1) * sizeof *order) : NULL;
    struct bmt_out o;
    if (rc < 0) {
        bmt_an_fail(dir, &r);
    } else if (!order) {
        bmt_cli_error("out of memory; free some memory");
    } else if (bmt_an_out_open(&o, NULL) == 0) {
        for (uint32_t i = 0; i < p.reasons.count; i++)
            order[i] = i;
        sort_procs = &p;
        qsort(order, p.reasons.count, sizeof *order, by_reason_desc);
        uint64_t alive = 0;
        for (uint32_t i = 0; i < p.pids.count; i++)
            alive += p.spawn_ns[i] != 0;
        char buf[256];
        if (json) {
            bmt_out_str(&o, "{\"trace\": ");
            bmt_an_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf,
                     ", \"spawns\": %llu, \"exits\": %llu, \"exits_without_spawn\": %llu, "
                     "\"alive_at_end\": %llu, \"per_second\": [",
                     (unsigned long long)p.spawn_count, (unsigned long long)p.exit_count,
                     (unsigned long long)p.exit_unknown_count, (unsigned long long)alive);
            bmt_out_str(&o, buf);
            for (uint64_t s = 0; s < p.seconds; s++) {
                snprintf(buf, sizeof buf, "%s{\"second\": %llu, \"spawns\": %llu, \"exits\": %llu}",
                         s ? ", " : "", (unsigned long long)s, (unsigned long long)p.spawns[s],
                         (unsigned long long)p.exits[s]);
                bmt_out_str(&o, buf);
            }
            bmt_out_str(&o, "], \"exit_reasons\": [");
            for (uint32_t i = 0; i < p.reasons.count; i++) {
                bmt_out_str(&o, i ? ", {\"reason\": " : "{\"reason\": ");
                bmt_an_json_string(&o, bmt_strtab_str(&p.reasons, order[i]),
                                   bmt_strtab_len(&p.reasons, order[i]));
                bmt_out_str(&o, ", \"count\": ");
                bmt_out_u64(&o, p.reason_counts[order[i]]);
                bmt_out_char(&o, '}');
            }
            bmt_out_str(&o, "], \"longest_lived\": [");
            print_lives(&o, &p, p.longest, p.longest_count, 1);
            bmt_out_str(&o, "], \"shortest_lived\": [");
            print_lives(&o, &p, p.shortest, p.shortest_count, 1);
            bmt_out_str(&o, "]}\n");
        } else {
            snprintf(buf, sizeof buf,
                     "spawns %llu  exits %llu  (exits of processes spawned before or outside "
                     "tracing: %llu; alive at the end: %llu)\n\n%8s %-18s %10s %10s\n",
                     (unsigned long long)p.spawn_count, (unsigned long long)p.exit_count,
                     (unsigned long long)p.exit_unknown_count, (unsigned long long)alive,
                     "SECOND", "FROM", "SPAWNS", "EXITS");
            bmt_out_str(&o, buf);
            for (uint64_t s = 0; s < p.seconds; s++) {
                char t[32];
                bmt_an_clock_text(&r, p.first_ns + s * 1000000000u, t);
                snprintf(buf, sizeof buf, "%8llu %-18s %10llu %10llu\n", (unsigned long long)s, t,
                         (unsigned long long)p.spawns[s], (unsigned long long)p.exits[s]);
                bmt_out_str(&o, buf);
            }
            bmt_out_str(&o, "\nEXITS      REASON\n");
            for (uint32_t i = 0; i < p.reasons.count; i++) {
                snprintf(buf, sizeof buf, "%10llu ", (unsigned long long)p.reason_counts[order[i]]);
                bmt_out_str(&o, buf);
                bmt_out_str(&o, bmt_strtab_str(&p.reasons, order[i]));
                bmt_out_char(&o, '\n');
            }
            bmt_out_str(&o, "\nlongest-lived (spawn -> exit)\n");
            print_lives(&o, &p, p.longest, p.longest_count, 0);
            bmt_out_str(&o, "\nshortest-lived (spawn -> exit)\n");
            print_lives(&o, &p, p.shortest, p.shortest_count, 0);
            if (p.spawn_count + p.exit_count == 0)
                bmt_out_str(&o, "\n(no process_spawn or process_exit events: trace with the "
                                "procs flag)\n");
        }
        status = bmt_an_out_close(&o, "procs");
    }
    free(order);
    bmt_procs_free(&p);
    bmt_reader_close(&r);
    return status;
}
