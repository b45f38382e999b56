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
 * In a sampled trace (the procs kind) spawns and exits, per second and per
 * reason, are scaled back by the ratio in force at each (the pass says
 * so; JSON also gives the kept ones); lifetimes are of the pairs kept.
 */
#include "analysis.h"
#include "model/procs.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

struct printing {
    const struct bmt_analysis *a;
    const struct bmt_procs *p;
    const uint32_t *reasons;    /* reason ids, most frequent first */
    int json;
};

static void print_json(struct bmt_out *o, const struct printing *pr)
{
    const struct bmt_procs *p = pr->p;
    char buf[256];
    bmt_out_str(o, "{\"trace\": ");
    bmt_json_cstr(o, pr->a->dir);
    snprintf(buf, sizeof buf,
             ", \"spawns\": %llu, \"exits\": %llu, \"spawns_kept\": %llu, \"exits_kept\": %llu, "
             "\"exits_without_spawn\": %llu, \"alive_at_end\": %llu, ",
             (unsigned long long)p->spawn_count, (unsigned long long)p->exit_count,
             (unsigned long long)p->spawn_kept_count, (unsigned long long)p->exit_kept_count,
             (unsigned long long)p->exit_unknown_count, (unsigned long long)bmt_procs_alive(p));
    bmt_out_str(o, buf);
    bmt_json_window(o, &pr->a->r, &pr->a->scope, &pr->a->pass);
    bmt_out_str(o, ", \"per_second\": [");
    for (uint64_t s = 0; s < p->second_count; s++) {
        snprintf(buf, sizeof buf, "%s{\"second\": %llu, \"spawns\": %llu, \"exits\": %llu}",
                 s ? ", " : "", (unsigned long long)p->seconds[s].second,
                 (unsigned long long)p->seconds[s].spawns, (unsigned long long)p->seconds[s].exits);
        bmt_out_str(o, buf);
    }
    bmt_out_str(o, "], \"exit_reasons\": [");
    for (uint32_t i = 0; i < p->reasons.count; i++) {
        bmt_out_str(o, i ? ", {\"reason\": " : "{\"reason\": ");
        bmt_json_string(o, bmt_strtab_str(&p->reasons, pr->reasons[i]),
                        bmt_strtab_len(&p->reasons, pr->reasons[i]));
        bmt_out_str(o, ", \"count\": ");
        bmt_out_u64(o, p->reason_counts[pr->reasons[i]]);
        bmt_out_char(o, '}');
    }
    bmt_out_str(o, "], \"longest_lived\": [");
    print_lives(o, p, p->longest, p->longest_count, 1);
    bmt_out_str(o, "], \"shortest_lived\": [");
    print_lives(o, p, p->shortest, p->shortest_count, 1);
    bmt_out_str(o, "]}\n");
}

/* Spawns and exits per second that had some ("." for a gap). */
static void seconds_text(struct bmt_out *o, const struct printing *pr)
{
    const struct bmt_procs *p = pr->p;
    char buf[256], t[32];
    for (uint64_t s = 0; s < p->second_count; s++) {
        const struct bmt_second *sec = &p->seconds[s];
        if (s && sec->second > p->seconds[s - 1].second + 1)
            bmt_out_str(o, "       .\n"); /* seconds without spawns or exits */
        bmt_clock_text(bmt_reader_wall_ns(&pr->a->r, p->first_ns + sec->second * 1000000000u), t);
        snprintf(buf, sizeof buf, "%8llu %-18s %10llu %10llu\n", (unsigned long long)sec->second,
                 t, (unsigned long long)sec->spawns, (unsigned long long)sec->exits);
        bmt_out_str(o, buf);
    }
}

static void print_text(struct bmt_out *o, const struct printing *pr)
{
    const struct bmt_procs *p = pr->p;
    char buf[256];
    snprintf(buf, sizeof buf,
             "spawns %llu  exits %llu  (exits of processes spawned before or outside "
             "tracing: %llu; alive at the end: %llu)\n\n%8s %-18s %10s %10s\n",
             (unsigned long long)p->spawn_count, (unsigned long long)p->exit_count,
             (unsigned long long)p->exit_unknown_count, (unsigned long long)bmt_procs_alive(p),
             "SECOND", "FROM", "SPAWNS", "EXITS");
    bmt_out_str(o, buf);
    seconds_text(o, pr);
    bmt_out_str(o, "\nEXITS      REASON\n");
    for (uint32_t i = 0; i < p->reasons.count; i++) {
        snprintf(buf, sizeof buf, "%10llu ", (unsigned long long)p->reason_counts[pr->reasons[i]]);
        bmt_out_str(o, buf);
        bmt_out_str(o, bmt_strtab_str(&p->reasons, pr->reasons[i]));
        bmt_out_char(o, '\n');
    }
    bmt_out_str(o, "\nlongest-lived (spawn -> exit)\n");
    print_lives(o, p, p->longest, p->longest_count, 0);
    bmt_out_str(o, "\nshortest-lived (spawn -> exit)\n");
    print_lives(o, p, p->shortest, p->shortest_count, 0);
    if (p->spawn_count + p->exit_count == 0)
        bmt_out_str(o, "\n(no process_spawn or process_exit events: trace with the "
                       "procs flag)\n");
}

static int print(struct bmt_out *o, const struct bmt_analysis *a, void *self, const void *opts)
{
    struct printing pr = {a, self, NULL, ((const struct bmt_common *)opts)->format == 1};
    uint32_t *reasons = bmt_procs_reasons(pr.p);
    if (!reasons)
        return -ENOMEM;
    pr.reasons = reasons;
    if (pr.json)
        print_json(o, &pr);
    else
        print_text(o, &pr);
    free(reasons);
    return 0;
}

const struct bmt_command bmt_cmd_procs = {
    .name = "procs",
    .summary = "spawns and exits per second, exit reasons, lifetimes",
    .description =
        "Births and deaths: process_spawn and process_exit counts per second (seconds\n"
        "with any), exit reasons by count, and the ten longest- and shortest-lived\n"
        "processes (spawn to exit) with their names. Record with the procs flag (and\n"
        "set_on_spawn).",
    .uses = BMT_USES_ANALYSIS, .size = sizeof(struct bmt_common),
    .acc = &bmt_procs_acc, .state_size = sizeof(struct bmt_procs),
    .print = print,
};
