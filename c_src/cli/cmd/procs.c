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
#include "args.h"
#include "model/procs.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            bmt_json_string(o, s, len);
            bmt_names_name(names, l[i].pid, name, sizeof name);
            bmt_out_str(o, ", \"process\": ");
            bmt_json_string(o, name, strlen(name));
            bmt_out_str(o, ", \"lifetime_ns\": ");
            bmt_out_u64(o, l[i].lifetime_ns);
            bmt_out_char(o, '}');
        } else {
            char d[32];
            bmt_duration_text(l[i].lifetime_ns, d);
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
            bmt_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf,
                     ", \"spawns\": %llu, \"exits\": %llu, \"exits_without_spawn\": %llu, "
                     "\"alive_at_end\": %llu, ",
                     (unsigned long long)p.spawn_count, (unsigned long long)p.exit_count,
                     (unsigned long long)p.exit_unknown_count, (unsigned long long)alive);
            bmt_out_str(&o, buf);
            bmt_json_window(&o, &r, &scope, &pass);
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
                bmt_json_string(&o, bmt_strtab_str(&p.reasons, order[i]),
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
                bmt_clock_text(bmt_reader_wall_ns(&r, p.first_ns + sec->second * 1000000000u), t);
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
