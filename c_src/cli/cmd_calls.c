/* `beamtrace calls`: per function (or per process and function) call
 * counts, inclusive and exclusive time, latency percentiles, and the calls
 * slower than a threshold (seed 003's "Func calls longer than 1
 * millisecond"), from stacks rebuilt by callstack.c.
 *
 * Percentiles come from one log-linear histogram per row (histogram.h:
 * within 1%), so memory grows with the number of distinct functions (and
 * processes, with --by pid), not with the number of calls. Slow calls are
 * printed as their frames end, in end-time order, before the table.
 */
#include "analyses.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags);

void bmt_calls_init(struct bmt_calls *c)
{
    memset(c, 0, sizeof *c);
    bmt_callstack_init(&c->cs);
    bmt_u64map_init(&c->index);
    c->cs.on_leave = on_leave;
    c->cs.ctx = c;
}

static void print_slow(struct bmt_calls *c, uint32_t pid, const struct bmt_frame *f,
                       uint64_t end_ns, uint64_t dur, unsigned flags)
{
    struct bmt_out *o = c->slow_out;
    const char *fn = bmt_strtab_str(&c->cs.funcs, f->func);
    const char *ps = bmt_strtab_str(&c->cs.pids, pid);
    const char *how = flags & BMT_CS_UNFINISHED ? "unfinished"
                      : flags & BMT_CS_EXCEPTION ? "exception" : "return";
    if (c->json) {
        bmt_out_str(o, c->slow_count ? ",\n  {\"pid\": " : "\n  {\"pid\": ");
        bmt_an_json_string(o, ps, strlen(ps));
        bmt_out_str(o, ", \"function\": ");
        bmt_an_json_string(o, fn, strlen(fn));
        bmt_out_str(o, ", \"start_ns\": ");
        bmt_out_u64(o, f->start_ns);
        bmt_out_str(o, ", \"end_ns\": ");
        bmt_out_u64(o, end_ns);
        char buf[128];
        snprintf(buf, sizeof buf, ", \"start_unix_ns\": %lld, \"end_unix_ns\": %lld",
                 (long long)bmt_reader_wall_ns(c->r, f->start_ns),
                 (long long)bmt_reader_wall_ns(c->r, end_ns));
        bmt_out_str(o, buf);
        bmt_out_str(o, ", \"duration_ns\": ");
        bmt_out_u64(o, dur);
        bmt_out_str(o, ", \"end\": \"");
        bmt_out_str(o, how);
        bmt_out_str(o, "\"}");
    } else {
        char a[32], b[32], d[32], line[256];
        if (c->slow_count == 0) {
            snprintf(line, sizeof line, "%-18s %-18s %12s  %-10s %-14s %s\n", "START", "END",
                     "DURATION", "END BY", "PID", "FUNCTION");
            bmt_out_str(o, line);
        }
        bmt_an_clock_text(c->r, f->start_ns, a);
        bmt_an_clock_text(c->r, end_ns, b);
        bmt_an_duration_text(dur, d);
        snprintf(line, sizeof line, "%-18s %-18s %12s  %-10s %-14s ", a, b, d, how, ps);
        bmt_out_str(o, line);
        bmt_out_str(o, fn);
        bmt_out_char(o, '\n');
    }
    c->slow_count++;
}

static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags)
{
    struct bmt_calls *c = ctx;
    (void)cs;
    uint64_t key = c->by_pid ? ((uint64_t)(pid + 1) << 32) | f->func : f->func;
    int created;
    uint32_t *slot = bmt_u64map_get(&c->index, key, c->stat_count, &created);
    if (!slot)
        return -ENOMEM;
    if (created) {
        if (c->stat_count == c->stat_cap) {
            uint32_t cap = c->stat_cap ? c->stat_cap * 2 : 64;
            struct bmt_fstat *s = realloc(c->stats, cap * sizeof *s);
            if (!s)
                return -ENOMEM;
            c->stats = s;
            c->stat_cap = cap;
        }
        struct bmt_fstat *s = &c->stats[c->stat_count++];
        memset(s, 0, sizeof *s);
        s->func = f->func;
        s->pid = c->by_pid ? pid : BMT_CS_NONE;
        bmt_hist_init(&s->hist);
    }
    struct bmt_fstat *s = &c->stats[*slot];
    uint64_t dur = end_ns > f->start_ns ? end_ns - f->start_ns : 0;
    s->total_ns += dur;
    s->own_ns += dur - (f->child_ns < dur ? f->child_ns : dur);
    if (flags & BMT_CS_EXCEPTION)
        s->exception_count++;
    if (flags & BMT_CS_UNFINISHED)
        s->unfinished_count++;
    else if (bmt_hist_add(&s->hist, dur) < 0)
        return -ENOMEM;
    if (c->slower_ns && dur > c->slower_ns && c->slow_out)
        print_slow(c, pid, f, end_ns, dur, flags);
    return 0;
}

int bmt_calls_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_calls *c = ctx;
    return bmt_callstack_feed(&c->cs, rec);
}

int bmt_calls_finish(struct bmt_calls *c, uint64_t end_ns)
{
    return bmt_callstack_finish(&c->cs, end_ns);
}

static const struct bmt_calls *sort_calls;

static int by_total_desc(const void *a, const void *b)
{
    const struct bmt_fstat *x = &sort_calls->stats[*(const uint32_t *)a];
    const struct bmt_fstat *y = &sort_calls->stats[*(const uint32_t *)b];
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    if (x->hist.count != y->hist.count)
        return x->hist.count > y->hist.count ? -1 : 1;
    return strcmp(bmt_strtab_str(&sort_calls->cs.funcs, x->func),
                  bmt_strtab_str(&sort_calls->cs.funcs, y->func));
}

uint32_t *bmt_calls_sorted(const struct bmt_calls *c)
{
    uint32_t *order = malloc((c->stat_count + 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t i = 0; i < c->stat_count; i++)
        order[i] = i;
    sort_calls = c;
    qsort(order, c->stat_count, sizeof *order, by_total_desc);
    return order;
}

void bmt_calls_free(struct bmt_calls *c)
{
    for (uint32_t i = 0; i < c->stat_count; i++)
        bmt_hist_free(&c->stats[i].hist);
    free(c->stats);
    bmt_u64map_free(&c->index);
    bmt_callstack_free(&c->cs);
}

/* ---- the command ---- */

struct opts {
    uint64_t slower_ns;
    int by_pid;
    uint64_t top;
};

static int parse_opt(void *ctx, int code, const char *arg)
{
    struct opts *o = ctx;
    char *end;
    switch (code) {
    case 's':
        if (bmt_an_parse_duration(arg, &o->slower_ns) < 0 || o->slower_ns == 0)
            return bmt_cli_usage_error("calls", "bad duration '%s' for --slower-than "
                                       "(expected e.g. 1ms, 250us, 2s, 800ns)", arg);
        return 0;
    case 'b':
        if (strcmp(arg, "pid") != 0)
            return bmt_cli_usage_error("calls", "--by takes 'pid', not '%s'", arg);
        o->by_pid = 1;
        return 0;
    case 'n':
        errno = 0;
        o->top = strtoull(arg, &end, 10);
        if (errno || *end || end == arg || arg[0] == '-')
            return bmt_cli_usage_error("calls", "--top needs a number, not '%s'", arg);
        return 0;
    default:
        return bmt_cli_usage_error("calls", "unknown option");
    }
}

static void row_text(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *s)
{
    char t[7][32], line[512];
    bmt_an_duration_text(s->total_ns, t[0]);
    bmt_an_duration_text(s->own_ns, t[1]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.5), t[2]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.9), t[3]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.99), t[4]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.999), t[5]);
    bmt_an_duration_text(s->hist.max, t[6]);
    if (!s->hist.count)
        for (int i = 2; i < 7; i++)
            strcpy(t[i], "-");
    if (c->by_pid) {
        snprintf(line, sizeof line, "%-14s ", bmt_strtab_str(&c->cs.pids, s->pid));
        bmt_out_str(o, line);
    }
    snprintf(line, sizeof line, "%10llu %6llu %6llu %12s %12s %12s %12s %12s %12s %12s  ",
             (unsigned long long)s->hist.count, (unsigned long long)s->unfinished_count,
             (unsigned long long)s->exception_count, t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
    bmt_out_str(o, line);
    bmt_out_str(o, bmt_strtab_str(&c->cs.funcs, s->func));
    bmt_out_char(o, '\n');
}

static void row_json(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *s)
{
    const char *fn = bmt_strtab_str(&c->cs.funcs, s->func);
    bmt_out_str(o, "{\"function\": ");
    bmt_an_json_string(o, fn, strlen(fn));
    if (c->by_pid) {
        const char *p = bmt_strtab_str(&c->cs.pids, s->pid);
        bmt_out_str(o, ", \"pid\": ");
        bmt_an_json_string(o, p, strlen(p));
    }
    bmt_out_str(o, ", ");
    bmt_hist_print_json_stats(o, &s->hist);
    char buf[200];
    snprintf(buf, sizeof buf,
             ", \"unfinished\": %llu, \"exceptions\": %llu, \"total_ns\": %llu, \"own_ns\": %llu}",
             (unsigned long long)s->unfinished_count, (unsigned long long)s->exception_count,
             (unsigned long long)s->total_ns, (unsigned long long)s->own_ns);
    bmt_out_str(o, buf);
}

int bmt_cmd_calls(int argc, char **argv)
{
    static const struct option extra[] = {
        {"slower-than", required_argument, NULL, 's'},
        {"by", required_argument, NULL, 'b'},
        {"top", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    struct opts opts = {0, 0, 0};
    int json = 0;
    const char *dir;
    int rc = bmt_an_parse_args("calls", argc, argv, extra, "s:b:n:", parse_opt, &opts, &json, &dir);
    if (rc || !dir)
        return rc;

    struct bmt_out o;
    if (bmt_an_out_open(&o, NULL) != 0)
        return BMT_EXIT_FAIL;
    struct bmt_reader r;
    struct bmt_calls c;
    struct bmt_an_pass pass;
    bmt_calls_init(&c);
    c.by_pid = opts.by_pid;
    c.slower_ns = opts.slower_ns;
    c.slow_out = &o;
    c.json = json;
    c.r = &r;
    if (json) {
        bmt_out_str(&o, "{\"trace\": ");
        bmt_an_json_string(&o, dir, strlen(dir));
        if (opts.slower_ns) {
            bmt_out_str(&o, ", \"slower_than_ns\": ");
            bmt_out_u64(&o, opts.slower_ns);
            bmt_out_str(&o, ", \"slow_calls\": [");
        }
    }
    int status = BMT_EXIT_FAIL;
    rc = bmt_an_run(&r, dir, bmt_calls_feed, &c, &pass);
    if (rc == 0 && (rc = bmt_calls_finish(&c, pass.last_ns)) < 0)
        snprintf(r.error, sizeof r.error, "out of memory; free some memory");
    uint32_t *order = rc == 0 ? bmt_calls_sorted(&c) : NULL;
    if (rc < 0) {
        bmt_out_flush(&o);
        bmt_an_fail(dir, &r);
    } else if (!order) {
        bmt_cli_error("out of memory; free some memory");
    } else {
        uint64_t n = opts.top && opts.top < c.stat_count ? opts.top : c.stat_count;
        if (json) {
            if (opts.slower_ns)
                bmt_out_str(&o, c.slow_count ? "\n]" : "]");
            char buf[256];
            snprintf(buf, sizeof buf,
                     ", \"events\": %llu, \"discarded_events\": %llu, \"ignored_returns\": %llu, "
                     "\"return_to_seen\": %s, \"stack_overflows\": %llu, \"functions\": [",
                     (unsigned long long)pass.event_count,
                     (unsigned long long)pass.discarded_count,
                     (unsigned long long)c.cs.ignored_returns,
                     c.cs.return_to_seen ? "true" : "false",
                     (unsigned long long)c.cs.overflow_count);
            bmt_out_str(&o, buf);
            for (uint64_t i = 0; i < n; i++) {
                bmt_out_str(&o, i ? ",\n  " : "\n  ");
                row_json(&o, &c, &c.stats[order[i]]);
            }
            bmt_out_str(&o, n ? "\n]}\n" : "]}\n");
        } else {
            if (opts.slower_ns) {
                char d[32];
                bmt_an_duration_text(opts.slower_ns, d);
                char line[128];
                snprintf(line, sizeof line, "%llu calls slower than %s\n\n",
                         (unsigned long long)c.slow_count, d);
                bmt_out_str(&o, line);
            }
            char line[512];
            if (c.by_pid)
                bmt_out_str(&o, "PID            ");
            snprintf(line, sizeof line, "%10s %6s %6s %12s %12s %12s %12s %12s %12s %12s  %s\n",
                     "CALLS", "UNFIN", "EXC", "TOTAL", "OWN", "P50", "P90", "P99", "P99.9",
                     "MAX", "FUNCTION");
            bmt_out_str(&o, line);
            for (uint64_t i = 0; i < n; i++)
                row_text(&o, &c, &c.stats[order[i]]);
            if (c.stat_count == 0)
                bmt_out_str(&o, "(no function_call events: trace with the call flag and "
                                "erlang:trace_pattern/3, return_trace in the match spec)\n");
            if (pass.discarded_count)
                bmt_cli_error("warning: %s: %llu events were discarded while recording; "
                              "stacks and times may be wrong", dir,
                              (unsigned long long)pass.discarded_count);
        }
        status = BMT_EXIT_OK;
    }
    free(order);
    bmt_calls_free(&c);
    bmt_reader_close(&r);
    int out_status = bmt_an_out_close(&o, "calls");
    return status == BMT_EXIT_OK ? out_status : status;
}
