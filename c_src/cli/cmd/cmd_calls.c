/* `beamtrace calls`: per function (or per process and function) call
 * counts, inclusive and own time, latency percentiles, where the time went
 * (on CPU, runnable, waiting for a message, in GC: proc_state.h), the
 * slowest calls, and the calls slower than a threshold (seed 003's "Func
 * calls longer than 1 millisecond"), from stacks rebuilt by callstack.c.
 *
 * Percentiles come from log-linear histograms (histogram.h: within 1%), so
 * memory grows with the number of distinct functions (and processes, with
 * --by pid), not with the number of calls. Slow calls are printed as their
 * frames end, in end-time order, before the table. The OWN column is own
 * on-CPU time when the trace has scheduling events, own wall time when it
 * has none, and its header says which.
 */
#include "model/analyses.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags, const uint64_t kinds[BMT_K_COUNT]);

void bmt_calls_init(struct bmt_calls *c, struct bmt_an_scope *scope)
{
    memset(c, 0, sizeof *c);
    bmt_callstack_init(&c->cs, scope);
    bmt_u64map_init(&c->index);
    c->cs.on_leave = on_leave;
    c->cs.ctx = c;
    c->slowest_cap = 10;
}

static void process_label(const struct bmt_calls *c, uint32_t pid, char *buf, size_t size)
{
    bmt_callstack_label(&c->cs, pid, buf, size);
}

static void print_slow(struct bmt_calls *c, uint32_t pid, const struct bmt_frame *f,
                       uint64_t end_ns, uint64_t dur, unsigned flags)
{
    struct bmt_out *o = c->slow_out;
    char fn[600], ps[600];
    bmt_an_function(bmt_strtab_str(&c->cs.funcs, f->func), bmt_strtab_len(&c->cs.funcs, f->func),
                    fn, sizeof fn);
    process_label(c, pid, ps, sizeof ps);
    const char *how = flags & BMT_CS_UNFINISHED ? "unfinished"
                      : flags & BMT_CS_EXCEPTION ? "exception" : "return";
    if (c->json) {
        const struct bmt_names *n = &c->cs.scope->names;
        bmt_out_str(o, c->slow_count ? ",\n  {\"pid\": " : "\n  {\"pid\": ");
        bmt_an_json_string(o, bmt_strtab_str(&n->pids, pid), bmt_strtab_len(&n->pids, pid));
        char name[512];
        bmt_names_name(n, pid, name, sizeof name);
        bmt_out_str(o, ", \"process\": ");
        bmt_an_json_string(o, name, strlen(name));
        bmt_out_str(o, ", \"function\": ");
        bmt_an_json_string(o, fn, strlen(fn));
        char buf[200];
        snprintf(buf, sizeof buf, ", \"start_ns\": %llu, \"end_ns\": %llu, \"start_unix_ns\": %lld, "
                 "\"end_unix_ns\": %lld, \"duration_ns\": %llu, \"end\": \"%s\"}",
                 (unsigned long long)f->start_ns, (unsigned long long)end_ns,
                 (long long)bmt_reader_wall_ns(c->r, f->start_ns),
                 (long long)bmt_reader_wall_ns(c->r, end_ns), (unsigned long long)dur, how);
        bmt_out_str(o, buf);
    } else {
        char a[32], b[32], d[32], line[1024];
        if (c->slow_count == 0) {
            snprintf(line, sizeof line, "%-18s %-18s %12s  %-10s %-24s %s\n", "START", "END",
                     "DURATION", "END BY", "PROCESS", "FUNCTION");
            bmt_out_str(o, line);
        }
        bmt_an_clock_text(c->r, f->start_ns, a);
        bmt_an_clock_text(c->r, end_ns, b);
        bmt_an_duration_text(dur, d);
        snprintf(line, sizeof line, "%-18s %-18s %12s  %-10s %-24s ", a, b, d, how, ps);
        bmt_out_str(o, line);
        bmt_out_str(o, fn);
        bmt_out_char(o, '\n');
    }
    c->slow_count++;
}

/* Keeps the slowest_cap longest calls, longest first. */
static void keep_slowest(struct bmt_calls *c, uint32_t pid, const struct bmt_frame *f,
                         uint64_t end_ns, const uint64_t kinds[BMT_K_COUNT])
{
    uint64_t dur = end_ns - f->start_ns;
    unsigned n = c->slowest_count;
    if (n == c->slowest_cap && dur <= c->slowest[n - 1].duration_ns)
        return;
    if (n == c->slowest_cap)
        n--;
    unsigned i = n;
    while (i > 0 && c->slowest[i - 1].duration_ns < dur) {
        c->slowest[i] = c->slowest[i - 1];
        i--;
    }
    struct bmt_slow_call *s = &c->slowest[i];
    s->pid = pid;
    s->func = f->func;
    s->start_ns = f->start_ns;
    s->duration_ns = dur;
    memcpy(s->kinds, kinds, sizeof s->kinds);
    c->slowest_count = n + 1;
}

static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags, const uint64_t kinds[BMT_K_COUNT])
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
        for (int k = 0; k < BMT_K_COUNT; k++)
            bmt_hist_init(&s->khist[k]);
    }
    struct bmt_fstat *s = &c->stats[*slot];
    for (int k = 0; k < BMT_K_COUNT; k++) {
        uint64_t own = kinds[k] - (f->child[k] < kinds[k] ? f->child[k] : kinds[k]);
        s->incl[k] += kinds[k];
        s->own[k] += own;
        s->total_ns += kinds[k];
    }
    if (flags & BMT_CS_EXCEPTION)
        s->exception_count++;
    /* A sample only when the whole call is inside the window. */
    if (flags & (BMT_CS_UNFINISHED | BMT_CS_CUT)) {
        s->unfinished_count++;
        return 0;
    }
    uint64_t dur = end_ns - f->start_ns;
    if (bmt_hist_add(&s->hist, dur) < 0)
        return -ENOMEM;
    if (c->breakdown)
        for (int k = 0; k < BMT_K_PREEMPTED; k++)
            if (bmt_hist_add(&s->khist[k], k == BMT_K_RUNNABLE ? bmt_kind_runnable(kinds)
                                                                : kinds[k]) < 0)
                return -ENOMEM;
    keep_slowest(c, pid, f, end_ns, kinds);
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
    int d = strcmp(bmt_strtab_str(&sort_calls->cs.funcs, x->func),
                   bmt_strtab_str(&sort_calls->cs.funcs, y->func));
    return d ? d : (x->pid < y->pid ? -1 : x->pid > y->pid);
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

int bmt_calls_own_is_cpu(const struct bmt_calls *c)
{
    return c->cs.scope->sched_count > 0;
}

uint64_t bmt_calls_own_ns(const struct bmt_calls *c, const struct bmt_fstat *s)
{
    (void)c;
    /* Own time not seen off CPU: on CPU and GC, plus what could not be
     * classified (a process without scheduling events: all its time). */
    return s->own[BMT_K_ON_CPU] + s->own[BMT_K_GC] + s->own[BMT_K_UNKNOWN];
}

void bmt_calls_free(struct bmt_calls *c)
{
    for (uint32_t i = 0; i < c->stat_count; i++) {
        bmt_hist_free(&c->stats[i].hist);
        for (int k = 0; k < BMT_K_COUNT; k++)
            bmt_hist_free(&c->stats[i].khist[k]);
    }
    free(c->stats);
    bmt_u64map_free(&c->index);
    bmt_callstack_free(&c->cs);
}

/* ---- the command ---- */

struct opts {
    uint64_t slower_ns;
    int by_pid, breakdown;
    uint64_t top, slowest;
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
    case 'B':
        o->breakdown = 1;
        return 0;
    case 'n':
    case 'S':
        errno = 0;
        uint64_t v = strtoull(arg, &end, 10);
        if (errno || *end || end == arg || arg[0] == '-' || (code == 'S' && (v == 0 || v > 1000)))
            return bmt_cli_usage_error("calls", "%s needs a number%s, not '%s'",
                                       code == 'n' ? "--top" : "--slowest",
                                       code == 'S' ? " from 1 to 1000" : "", arg);
        if (code == 'n')
            o->top = v;
        else
            o->slowest = v;
        return 0;
    default:
        return bmt_cli_usage_error("calls", "unknown option");
    }
}

/* Which kinds of time the trace can tell apart, and what it lacks. */
struct lacks {
    int sched, receive, gc;
};

static struct lacks lacking(const struct bmt_calls *c)
{
    const struct bmt_an_scope *s = c->cs.scope;
    struct lacks l = {s->sched_count == 0, s->receive_count == 0, s->gc_count == 0};
    return l;
}

static void row_text(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *s)
{
    char t[7][32], line[1024], fn[600];
    bmt_an_duration_text(s->total_ns, t[0]);
    bmt_an_duration_text(bmt_calls_own_ns(c, s), t[1]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.5), t[2]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.9), t[3]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.99), t[4]);
    bmt_an_duration_text(bmt_hist_quantile(&s->hist, 0.999), t[5]);
    bmt_an_duration_text(s->hist.max, t[6]);
    if (!s->hist.count)
        for (int i = 2; i < 7; i++)
            strcpy(t[i], "-");
    if (c->by_pid) {
        char label[600];
        process_label(c, s->pid, label, sizeof label);
        snprintf(line, sizeof line, "%-*s ", c->label_width, label);
        bmt_out_str(o, line);
    }
    snprintf(line, sizeof line, "%10llu %6llu %6llu %12s %12s %12s %12s %12s %12s %12s  ",
             (unsigned long long)s->hist.count, (unsigned long long)s->unfinished_count,
             (unsigned long long)s->exception_count, t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
    bmt_out_str(o, line);
    bmt_out_str(o, bmt_an_function(bmt_strtab_str(&c->cs.funcs, s->func),
                                   bmt_strtab_len(&c->cs.funcs, s->func), fn, sizeof fn));
    bmt_out_char(o, '\n');
}

/* The columns of the breakdown: ON-CPU, RUNNABLE, WAITING, GC, and UNKNOWN
 * when some time could not be classified. Without message_receive events
 * RUNNABLE and WAITING are one OFF-CPU column. */
static unsigned columns(const struct bmt_calls *c, int *kinds, const char **heads, int show_unknown)
{
    struct lacks l = lacking(c);
    unsigned n = 0;
    kinds[n] = BMT_K_ON_CPU, heads[n++] = "ON-CPU";
    if (l.receive) {
        kinds[n] = -1, heads[n++] = "OFF-CPU";
    } else {
        kinds[n] = BMT_K_RUNNABLE, heads[n++] = "RUNNABLE";
        kinds[n] = BMT_K_WAITING, heads[n++] = "WAITING";
    }
    kinds[n] = BMT_K_GC, heads[n++] = "GC";
    if (show_unknown)
        kinds[n] = BMT_K_UNKNOWN, heads[n++] = "UNKNOWN";
    return n;
}

static uint64_t kind_of(const uint64_t *v, int k)
{
    if (k == BMT_K_RUNNABLE)
        return bmt_kind_runnable(v);
    return k >= 0 ? v[k] : bmt_kind_runnable(v) + v[BMT_K_WAITING];
}

static void breakdown_text(struct bmt_out *o, const struct bmt_calls *c, const uint32_t *order,
                           uint64_t n)
{
    struct lacks l = lacking(c);
    int kinds[6];
    const char *heads[6];
    uint64_t unknown = 0;
    for (uint64_t i = 0; i < n; i++)
        unknown += c->stats[order[i]].incl[BMT_K_UNKNOWN];
    unsigned nk = columns(c, kinds, heads, unknown > 0);
    char line[1024], d[32], fn[600];
    bmt_out_str(o, "\nwhere the time of traced calls went (inclusive of callees; the columns sum to "
                   "TOTAL)\n");
    if (l.sched)
        bmt_out_str(o, "  the trace has no process_scheduled events (the running flag): on-CPU and "
                       "off-CPU time cannot be told apart, so it is all UNKNOWN\n");
    else if (l.receive)
        bmt_out_str(o, "  the trace has no message_receive events (the 'receive' flag): off-CPU "
                       "time is not split into runnable and waiting\n");
    if (l.gc)
        bmt_out_str(o, "  the trace has no gc events (the garbage_collection flag): collections "
                       "count as on-CPU time\n");
    if (unknown && !l.sched)
        bmt_out_str(o, "  UNKNOWN: time before a process's first scheduling event, off CPU at the "
                       "end of the trace, or off CPU until a message whose send the trace lacks "
                       "(trace the senders with the send flag)\n");
    size_t at = (size_t)snprintf(line, sizeof line, "%10s %12s", "CALLS", "TOTAL");
    for (unsigned k = 0; k < nk; k++)
        at += (size_t)snprintf(line + at, sizeof line - at, " %18s", heads[k]);
    snprintf(line + at, sizeof line - at, "  FUNCTION\n");
    bmt_out_str(o, line);
    for (uint64_t i = 0; i < n; i++) {
        const struct bmt_fstat *s = &c->stats[order[i]];
        bmt_an_duration_text(s->total_ns, d);
        at = (size_t)snprintf(line, sizeof line, "%10llu %12s", (unsigned long long)s->hist.count, d);
        for (unsigned k = 0; k < nk; k++) {
            uint64_t v = kind_of(s->incl, kinds[k]);
            bmt_an_duration_text(v, d);
            char cell[48];
            snprintf(cell, sizeof cell, "%s %3.0f%%", d,
                     s->total_ns ? 100.0 * (double)v / (double)s->total_ns : 0.0);
            at += (size_t)snprintf(line + at, sizeof line - at, " %18s", cell);
        }
        snprintf(line + at, sizeof line - at, "  ");
        bmt_out_str(o, line);
        bmt_out_str(o, bmt_an_function(bmt_strtab_str(&c->cs.funcs, s->func),
                                       bmt_strtab_len(&c->cs.funcs, s->func), fn, sizeof fn));
        bmt_out_char(o, '\n');
    }
    bmt_out_str(o, "\nper call, p50 / p99 (calls inside the window)\n");
    at = (size_t)snprintf(line, sizeof line, "%10s", "CALLS");
    for (unsigned k = 0; k < nk; k++)
        if (kinds[k] >= 0)
            at += (size_t)snprintf(line + at, sizeof line - at, " %23s", heads[k]);
    snprintf(line + at, sizeof line - at, "  FUNCTION\n");
    bmt_out_str(o, line);
    for (uint64_t i = 0; i < n; i++) {
        const struct bmt_fstat *s = &c->stats[order[i]];
        if (!s->hist.count)
            continue;
        at = (size_t)snprintf(line, sizeof line, "%10llu", (unsigned long long)s->hist.count);
        for (unsigned k = 0; k < nk; k++) {
            if (kinds[k] < 0)
                continue;
            char a[32], b[32], cell[72];
            bmt_an_duration_text(bmt_hist_quantile(&s->khist[kinds[k]], 0.5), a);
            bmt_an_duration_text(bmt_hist_quantile(&s->khist[kinds[k]], 0.99), b);
            snprintf(cell, sizeof cell, "%s / %s", a, b);
            at += (size_t)snprintf(line + at, sizeof line - at, " %23s", cell);
        }
        snprintf(line + at, sizeof line - at, "  ");
        bmt_out_str(o, line);
        bmt_out_str(o, bmt_an_function(bmt_strtab_str(&c->cs.funcs, s->func),
                                       bmt_strtab_len(&c->cs.funcs, s->func), fn, sizeof fn));
        bmt_out_char(o, '\n');
    }
    snprintf(line, sizeof line, "\nthe %u slowest calls\n%12s", c->slowest_count, "DURATION");
    bmt_out_str(o, line);
    for (unsigned k = 0; k < nk; k++) {
        snprintf(line, sizeof line, " %12s", heads[k]);
        bmt_out_str(o, line);
    }
    snprintf(line, sizeof line, "  %-18s %-24s %s\n", "START", "PROCESS", "FUNCTION");
    bmt_out_str(o, line);
    for (unsigned i = 0; i < c->slowest_count; i++) {
        const struct bmt_slow_call *s = &c->slowest[i];
        bmt_an_duration_text(s->duration_ns, d);
        snprintf(line, sizeof line, "%12s", d);
        bmt_out_str(o, line);
        for (unsigned k = 0; k < nk; k++) {
            bmt_an_duration_text(kind_of(s->kinds, kinds[k]), d);
            snprintf(line, sizeof line, " %12s", d);
            bmt_out_str(o, line);
        }
        char t[32], label[600];
        bmt_an_clock_text(c->r, s->start_ns, t);
        process_label(c, s->pid, label, sizeof label);
        snprintf(line, sizeof line, "  %-18s %-24s ", t, label);
        bmt_out_str(o, line);
        bmt_out_str(o, bmt_an_function(bmt_strtab_str(&c->cs.funcs, s->func),
                                       bmt_strtab_len(&c->cs.funcs, s->func), fn, sizeof fn));
        bmt_out_char(o, '\n');
    }
}

/* `"on_cpu_ns": N, "runnable_ns": N|null, ...` for sums `v`. */
static void kinds_json(struct bmt_out *o, const struct bmt_calls *c, const uint64_t *v,
                       const char *suffix)
{
    struct lacks l = lacking(c);
    char buf[400];
    char runnable[32], waiting[32], gc[32];
    snprintf(runnable, sizeof runnable, "%llu", (unsigned long long)bmt_kind_runnable(v));
    snprintf(waiting, sizeof waiting, "%llu", (unsigned long long)v[BMT_K_WAITING]);
    snprintf(gc, sizeof gc, "%llu", (unsigned long long)v[BMT_K_GC]);
    snprintf(buf, sizeof buf, "\"on_cpu%s\": %llu, \"runnable%s\": %s, \"waiting%s\": %s, "
             "\"off_cpu%s\": %llu, \"gc%s\": %s, \"unknown%s\": %llu",
             suffix, (unsigned long long)v[BMT_K_ON_CPU], suffix, l.receive ? "null" : runnable,
             suffix, l.receive ? "null" : waiting, suffix,
             (unsigned long long)(bmt_kind_runnable(v) + v[BMT_K_WAITING]), suffix,
             l.gc ? "null" : gc, suffix, (unsigned long long)v[BMT_K_UNKNOWN]);
    bmt_out_str(o, buf);
}

static void row_json(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *s)
{
    char fn[600];
    bmt_an_function(bmt_strtab_str(&c->cs.funcs, s->func), bmt_strtab_len(&c->cs.funcs, s->func),
                    fn, sizeof fn);
    bmt_out_str(o, "{\"function\": ");
    bmt_an_json_string(o, fn, strlen(fn));
    if (c->by_pid) {
        const struct bmt_names *n = &c->cs.scope->names;
        char name[512];
        bmt_out_str(o, ", \"pid\": ");
        bmt_an_json_string(o, bmt_strtab_str(&n->pids, s->pid), bmt_strtab_len(&n->pids, s->pid));
        bmt_names_name(n, s->pid, name, sizeof name);
        bmt_out_str(o, ", \"process\": ");
        bmt_an_json_string(o, name, strlen(name));
    }
    bmt_out_str(o, ", ");
    bmt_hist_print_json_stats(o, &s->hist);
    uint64_t own_wall = 0;
    for (int k = 0; k < BMT_K_COUNT; k++)
        own_wall += s->own[k];
    char buf[300];
    snprintf(buf, sizeof buf,
             ", \"unfinished\": %llu, \"exceptions\": %llu, \"total_ns\": %llu, \"own_ns\": %llu, "
             "\"own_time\": \"%s\", \"own_wall_ns\": %llu, ",
             (unsigned long long)s->unfinished_count, (unsigned long long)s->exception_count,
             (unsigned long long)s->total_ns, (unsigned long long)bmt_calls_own_ns(c, s),
             bmt_calls_own_is_cpu(c) ? "on_cpu" : "wall", (unsigned long long)own_wall);
    bmt_out_str(o, buf);
    kinds_json(o, c, s->incl, "_ns");
    if (c->breakdown) {
        for (int k = 0; k < BMT_K_PREEMPTED; k++) {
            snprintf(buf, sizeof buf, ", \"%s_p50_ns\": %llu, \"%s_p99_ns\": %llu",
                     bmt_kind_names[k], (unsigned long long)bmt_hist_quantile(&s->khist[k], 0.5),
                     bmt_kind_names[k], (unsigned long long)bmt_hist_quantile(&s->khist[k], 0.99));
            bmt_out_str(o, buf);
        }
    }
    bmt_out_char(o, '}');
}

static void slowest_json(struct bmt_out *o, const struct bmt_calls *c)
{
    const struct bmt_names *n = &c->cs.scope->names;
    bmt_out_str(o, ", \"slowest_calls\": [");
    for (unsigned i = 0; i < c->slowest_count; i++) {
        const struct bmt_slow_call *s = &c->slowest[i];
        char fn[600], name[512], buf[160];
        bmt_out_str(o, i ? ",\n  {\"pid\": " : "\n  {\"pid\": ");
        bmt_an_json_string(o, bmt_strtab_str(&n->pids, s->pid), bmt_strtab_len(&n->pids, s->pid));
        bmt_names_name(n, s->pid, name, sizeof name);
        bmt_out_str(o, ", \"process\": ");
        bmt_an_json_string(o, name, strlen(name));
        bmt_an_function(bmt_strtab_str(&c->cs.funcs, s->func),
                        bmt_strtab_len(&c->cs.funcs, s->func), fn, sizeof fn);
        bmt_out_str(o, ", \"function\": ");
        bmt_an_json_string(o, fn, strlen(fn));
        snprintf(buf, sizeof buf, ", \"start_unix_ns\": %lld, \"duration_ns\": %llu, ",
                 (long long)bmt_reader_wall_ns(c->r, s->start_ns),
                 (unsigned long long)s->duration_ns);
        bmt_out_str(o, buf);
        kinds_json(o, c, s->kinds, "_ns");
        bmt_out_char(o, '}');
    }
    bmt_out_str(o, c->slowest_count ? "\n]" : "]");
}

int bmt_cmd_calls(int argc, char **argv)
{
    static const struct option extra[] = {
        {"slower-than", required_argument, NULL, 's'},
        {"by", required_argument, NULL, 'b'},
        {"top", required_argument, NULL, 'n'},
        {"breakdown", no_argument, NULL, 'B'},
        {"slowest", required_argument, NULL, 'S'},
        {NULL, 0, NULL, 0},
    };
    struct opts opts = {0, 0, 0, 0, 0};
    int json = 0;
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("calls", argc, argv, extra, "s:b:n:", parse_opt, &opts, &json,
                               &scope, &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_out o;
    if (bmt_an_out_open(&o, NULL) != 0) {
        bmt_an_scope_free(&scope);
        return BMT_EXIT_FAIL;
    }
    struct bmt_reader r;
    struct bmt_calls c;
    struct bmt_an_pass pass;
    bmt_calls_init(&c, &scope);
    c.by_pid = opts.by_pid;
    c.breakdown = opts.breakdown;
    if (opts.slowest)
        c.slowest_cap = (unsigned)opts.slowest;
    c.slowest = calloc(c.slowest_cap, sizeof *c.slowest);
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
    memset(&r, 0, sizeof r);
    bmt_an_reads(&scope, &bmt_fields_callstack);
    rc = c.slowest ? bmt_an_run(&r, dir, &scope, bmt_calls_feed, &c, &pass) : -ENOMEM;
    if (rc == -ENOMEM)
        snprintf(r.error, sizeof r.error, "out of memory; free some memory");
    if (rc == 0 && (rc = bmt_calls_finish(&c, pass.end_ns)) < 0)
        snprintf(r.error, sizeof r.error, "out of memory; free some memory");
    uint32_t *order = rc == 0 ? bmt_calls_sorted(&c) : NULL;
    if (rc < 0) {
        o.len = 0; /* nothing half-written on stdout */
        status = bmt_an_fail("calls", dir, &r, rc);
    } else if (!order) {
        bmt_cli_error("out of memory; free some memory");
    } else {
        uint64_t n = opts.top && opts.top < c.stat_count ? opts.top : c.stat_count;
        struct lacks l = lacking(&c);
        if (json) {
            if (opts.slower_ns)
                bmt_out_str(&o, c.slow_count ? "\n]" : "]");
            char buf[512];
            snprintf(buf, sizeof buf,
                     ", \"events\": %llu, \"discarded_events\": %llu, \"ignored_returns\": %llu, "
                     "\"return_to_seen\": %s, \"stack_overflows\": %llu, \"own_time\": \"%s\", "
                     "\"lacks\": [%s%s%s%s%s], ",
                     (unsigned long long)pass.event_count, (unsigned long long)pass.discarded_count,
                     (unsigned long long)c.cs.ignored_returns,
                     c.cs.return_to_seen ? "true" : "false",
                     (unsigned long long)c.cs.overflow_count,
                     bmt_calls_own_is_cpu(&c) ? "on_cpu" : "wall",
                     l.sched ? "\"running\"" : "", l.sched && (l.receive || l.gc) ? ", " : "",
                     l.receive ? "\"receive\"" : "", l.receive && l.gc ? ", " : "",
                     l.gc ? "\"garbage_collection\"" : "");
            bmt_out_str(&o, buf);
            bmt_an_json_scope(&o, &r, &scope, &pass);
            if (c.breakdown)
                slowest_json(&o, &c);
            bmt_out_str(&o, ", \"functions\": [");
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
            if (c.by_pid) {
                /* The process column as wide as its widest label (at most 48). */
                c.label_width = 7;
                for (uint64_t i = 0; i < n; i++) {
                    char label[600];
                    process_label(&c, c.stats[order[i]].pid, label, sizeof label);
                    int w = (int)strlen(label);
                    if (w > c.label_width)
                        c.label_width = w > 48 ? 48 : w;
                }
                snprintf(line, sizeof line, "%-*s ", c.label_width, "PROCESS");
                bmt_out_str(&o, line);
            }
            snprintf(line, sizeof line, "%10s %6s %6s %12s %12s %12s %12s %12s %12s %12s  %s\n",
                     "CALLS", "UNFIN", "EXC", "TOTAL",
                     bmt_calls_own_is_cpu(&c) ? "OWN CPU" : "OWN WALL", "P50", "P90", "P99",
                     "P99.9", "MAX", "FUNCTION");
            bmt_out_str(&o, line);
            for (uint64_t i = 0; i < n; i++)
                row_text(&o, &c, &c.stats[order[i]]);
            if (c.stat_count == 0)
                bmt_out_str(&o, "(no function_call events: trace with the call flag and "
                                "erlang:trace_pattern/3, return_trace in the match spec)\n");
            else if (!bmt_calls_own_is_cpu(&c))
                bmt_out_str(&o, "(OWN WALL: time in the function itself, off-CPU time included: "
                                "the trace has no process_scheduled events; record with the "
                                "running flag for on-CPU time)\n");
            else
                bmt_out_str(&o, "(OWN CPU: time in the function itself minus the time its "
                                "process was seen off CPU; wall time for processes without "
                                "process_scheduled events)\n");
            if (c.breakdown && c.stat_count)
                breakdown_text(&o, &c, order, n);
            if (c.cs.pruned_calls)
                bmt_out_str(&o, "(the call tree is full: calls in new stacks were charged to "
                                "their callers)\n");
        }
        status = BMT_EXIT_OK;
    }
    free(order);
    free(c.slowest);
    bmt_calls_free(&c);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    int out_status = bmt_an_out_close(&o, "calls");
    return status == BMT_EXIT_OK ? out_status : status;
}
