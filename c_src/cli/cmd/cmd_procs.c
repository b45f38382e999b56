/* `beamtrace procs`: births and deaths (seed 003's "Births and Deaths?"):
 * spawns and exits per second, exit reasons, and the longest- and
 * shortest-lived processes (process_spawn -> process_exit of the same pid),
 * with their names.
 *
 * Seconds count from the window's start (the trace's first event without
 * one); only seconds that had a spawn or an exit are kept and listed, so
 * memory follows the events, never the time the trace spans. Processes
 * whose spawn was not traced (running before tracing started, or spawned by
 * an untraced process) exit without a lifetime and are counted apart; a
 * lifetime is shown for an exit inside the window whatever the time of the
 * spawn. Needs the procs flag (set_on_spawn for children of traced
 * processes). Memory: per process, per exit reason and per active second.
 */
#include "model/analyses.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_procs_init(struct bmt_procs *p, struct bmt_an_scope *scope)
{
    memset(p, 0, sizeof *p);
    p->scope = scope;
    bmt_strtab_init(&p->reasons);
}

static int grow_u64(uint64_t **arr, uint64_t *cap, uint64_t need)
{
    if (need < *cap)
        return 0;
    uint64_t n = *cap ? *cap : 64;
    while (n <= need)
        n *= 2;
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

/* The row of the second holding `ts`, appended if new (input is in time
 * order, so only the last row can be it). */
static struct bmt_second *second_of(struct bmt_procs *p, uint64_t ts)
{
    uint64_t sec = (ts - p->first_ns) / 1000000000u;
    if (p->second_count && p->seconds[p->second_count - 1].second == sec)
        return &p->seconds[p->second_count - 1];
    if (p->second_count == p->second_cap) {
        uint64_t cap = p->second_cap ? p->second_cap * 2 : 64;
        struct bmt_second *s = realloc(p->seconds, cap * sizeof *s);
        if (!s)
            return NULL;
        p->seconds = s;
        p->second_cap = cap;
    }
    struct bmt_second *s = &p->seconds[p->second_count++];
    s->second = sec;
    s->spawns = s->exits = 0;
    return s;
}

int bmt_procs_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_procs *p = ctx;
    const struct bmt_an_scope *sc = p->scope;
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    if (rec->tp != BMT_TP_process_spawn && rec->tp != BMT_TP_process_exit)
        return 0;
    if (!bmt_an_valid(sc, ts))
        return 0;
    unsigned f = rec->tp == BMT_TP_process_spawn ? F->spawn_pid : F->exit_pid;
    if (!bmt_an_keep(sc, v[f].str, v[f].len))
        return 0;
    int64_t pid = bmt_names_pid(&p->scope->names, v[f].str, v[f].len);
    if (pid < 0)
        return (int)pid;
    uint64_t pcap = p->pid_cap;
    if (grow_u64(&p->spawn_ns, &pcap, (uint64_t)pid) < 0)
        return -ENOMEM;
    p->pid_cap = (uint32_t)pcap;
    if (rec->tp == BMT_TP_process_spawn)
        p->spawn_ns[pid] = ts + 1;
    if (ts < sc->window.begin_ns)
        return 0; /* before the window: only the spawn time is kept */
    if (!p->started) {
        p->started = 1;
        p->first_ns = sc->windowed && sc->window.begin_ns ? sc->window.begin_ns : sc->first_ns;
        if (p->first_ns > ts)
            p->first_ns = ts;
    }
    struct bmt_second *second = second_of(p, ts);
    if (!second)
        return -ENOMEM;
    if (rec->tp == BMT_TP_process_spawn) {
        p->spawn_count++;
        second->spawns++;
        return 0;
    }
    p->exit_count++;
    second->exits++;
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
    struct bmt_life l = {(uint32_t)pid, ts - (p->spawn_ns[pid] - 1)};
    p->spawn_ns[pid] = 0;
    top_insert(p->longest, &p->longest_count, l, 1);
    top_insert(p->shortest, &p->shortest_count, l, -1);
    return 0;
}

void bmt_procs_free(struct bmt_procs *p)
{
    bmt_strtab_free(&p->reasons);
    free(p->spawn_ns);
    free(p->reason_counts);
    free(p->seconds);
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
    const struct bmt_names *names = &p->scope->names;
    char buf[700], label[600], name[512];
    for (unsigned i = 0; i < n; i++) {
        const char *s = bmt_strtab_str(&names->pids, l[i].pid);
        size_t len = bmt_strtab_len(&names->pids, l[i].pid);
        if (json) {
            bmt_out_str(o, i ? ", {\"pid\": " : "{\"pid\": ");
            bmt_an_json_string(o, s, len);
            bmt_names_name(names, l[i].pid, name, sizeof name);
            bmt_out_str(o, ", \"process\": ");
            bmt_an_json_string(o, name, strlen(name));
            bmt_out_str(o, ", \"lifetime_ns\": ");
            bmt_out_u64(o, l[i].lifetime_ns);
            bmt_out_char(o, '}');
        } else {
            char d[32];
            bmt_an_duration_text(l[i].lifetime_ns, d);
            bmt_names_label(names, s, len, label, sizeof label);
            snprintf(buf, sizeof buf, "  %14s  %s\n", d, label);
            bmt_out_str(o, buf);
        }
    }
}

int bmt_cmd_procs(int argc, char **argv)
{
    int json = 0;
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("procs", argc, argv, NULL, "", NULL, NULL, &json, &scope, &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_reader r;
    struct bmt_procs p;
    struct bmt_an_pass pass;
    bmt_procs_init(&p, &scope);
    int status = BMT_EXIT_FAIL;
    bmt_an_reads(&scope, &bmt_fields_procs);
    rc = bmt_an_run(&r, dir, &scope, bmt_procs_feed, &p, &pass);
    uint32_t *order = rc == 0 ? malloc((p.reasons.count + 1) * sizeof *order) : NULL;
    struct bmt_out o;
    if (rc < 0) {
        status = bmt_an_fail("procs", dir, &r, rc);
    } else if (!order) {
        bmt_cli_error("out of memory; free some memory");
    } else if (bmt_an_out_open(&o, NULL) == 0) {
        for (uint32_t i = 0; i < p.reasons.count; i++)
            order[i] = i;
        sort_procs = &p;
        qsort(order, p.reasons.count, sizeof *order, by_reason_desc);
        uint64_t alive = 0;
        for (uint32_t i = 0; i < p.pid_cap; i++)
            alive += p.spawn_ns[i] != 0;
        char buf[256];
        if (json) {
            bmt_out_str(&o, "{\"trace\": ");
            bmt_an_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf,
                     ", \"spawns\": %llu, \"exits\": %llu, \"exits_without_spawn\": %llu, "
                     "\"alive_at_end\": %llu, ",
                     (unsigned long long)p.spawn_count, (unsigned long long)p.exit_count,
                     (unsigned long long)p.exit_unknown_count, (unsigned long long)alive);
            bmt_out_str(&o, buf);
            bmt_an_json_scope(&o, &r, &scope, &pass);
            bmt_out_str(&o, ", \"per_second\": [");
            for (uint64_t s = 0; s < p.second_count; s++) {
                snprintf(buf, sizeof buf, "%s{\"second\": %llu, \"spawns\": %llu, \"exits\": %llu}",
                         s ? ", " : "", (unsigned long long)p.seconds[s].second,
                         (unsigned long long)p.seconds[s].spawns,
                         (unsigned long long)p.seconds[s].exits);
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
            for (uint64_t s = 0; s < p.second_count; s++) {
                char t[32];
                const struct bmt_second *sec = &p.seconds[s];
                if (s && sec->second > p.seconds[s - 1].second + 1)
                    bmt_out_str(&o, "       .\n"); /* seconds without spawns or exits */
                bmt_an_clock_text(&r, p.first_ns + sec->second * 1000000000u, t);
                snprintf(buf, sizeof buf, "%8llu %-18s %10llu %10llu\n",
                         (unsigned long long)sec->second, t, (unsigned long long)sec->spawns,
                         (unsigned long long)sec->exits);
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
    bmt_an_scope_free(&scope);
    return status;
}
