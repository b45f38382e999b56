/* The calls analysis printed (contract in calls_print.h). */
#include "calls_print.h"
#include "hist_print.h"
#include "json.h"
#include "window.h"
#include "model/elixir.h"
#include "model/calls_reading.h"
#include "groupby_print.h"
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>

#define MAX_LABEL_WIDTH 48

static void put_function(struct bmt_out *o, const struct bmt_calls *c, uint32_t func)
{
    char fn[600];
    bmt_out_str(o, bmt_elixir_mfa(bmt_strtab_str(&c->cs.funcs, func),
                                  bmt_strtab_len(&c->cs.funcs, func), fn, sizeof fn));
}

/* `"pid": "<0.66.0>", "process": "name", "function": "m:f/a"` */
static void json_who(struct bmt_out *o, const struct bmt_calls *c, uint32_t pid, uint32_t func)
{
    const struct bmt_names *n = &c->cs.scope->names;
    char name[512], fn[600];
    bmt_out_str(o, "\"pid\": ");
    bmt_json_string(o, bmt_strtab_str(&n->pids, pid), bmt_strtab_len(&n->pids, pid));
    bmt_names_name(n, pid, name, sizeof name);
    bmt_out_str(o, ", \"process\": ");
    bmt_json_cstr(o, name);
    bmt_elixir_mfa(bmt_strtab_str(&c->cs.funcs, func), bmt_strtab_len(&c->cs.funcs, func), fn,
                   sizeof fn);
    bmt_out_str(o, ", \"function\": ");
    bmt_json_cstr(o, fn);
}

static const char *end_by(unsigned flags)
{
    return flags & BMT_CS_UNFINISHED ? "unfinished" : flags & BMT_CS_EXCEPTION ? "exception"
                                                                             : "return";
}

void bmt_calls_slow_json(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_reader *r,
                         uint32_t pid, const struct bmt_frame *f, uint64_t end_ns, unsigned flags)
{
    char buf[200];
    bmt_out_str(o, c->slow_count ? ",\n  {" : "\n  {");
    json_who(o, c, pid, f->func);
    snprintf(buf, sizeof buf, ", \"start_ns\": %llu, \"end_ns\": %llu, \"start_unix_ns\": %lld, "
             "\"end_unix_ns\": %lld, \"duration_ns\": %llu, \"end\": \"%s\"}",
             (unsigned long long)f->start_ns, (unsigned long long)end_ns,
             (long long)bmt_reader_wall_ns(r, f->start_ns), (long long)bmt_reader_wall_ns(r, end_ns),
             (unsigned long long)(end_ns - f->start_ns), end_by(flags));
    bmt_out_str(o, buf);
}

void bmt_calls_slow_text(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_reader *r,
                         uint32_t pid, const struct bmt_frame *f, uint64_t end_ns, unsigned flags)
{
    char a[32], b[32], d[32], ps[600], line[1024];
    if (c->slow_count == 0) {
        snprintf(line, sizeof line, "%-18s %-18s %12s  %-10s %-24s %s\n", "START", "END",
                 "DURATION", "END BY", "PROCESS", "FUNCTION");
        bmt_out_str(o, line);
    }
    bmt_callstack_label(&c->cs, pid, ps, sizeof ps);
    bmt_clock_text(bmt_reader_wall_ns(r, f->start_ns), a);
    bmt_clock_text(bmt_reader_wall_ns(r, end_ns), b);
    bmt_duration_text(end_ns - f->start_ns, d);
    snprintf(line, sizeof line, "%-18s %-18s %12s  %-10s %-24s ", a, b, d, end_by(flags), ps);
    bmt_out_str(o, line);
    put_function(o, c, f->func);
    bmt_out_char(o, '\n');
}

/* ---- text ---- */

static void row_text(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *s,
                     int label_width)
{
    char t[7][32], line[1024];
    bmt_duration_text(s->total_ns, t[0]);
    bmt_duration_text(bmt_calls_own_ns(c, s), t[1]);
    bmt_duration_text(bmt_hist_quantile(&s->hist, 0.5), t[2]);
    bmt_duration_text(bmt_hist_quantile(&s->hist, 0.9), t[3]);
    bmt_duration_text(bmt_hist_quantile(&s->hist, 0.99), t[4]);
    bmt_duration_text(bmt_hist_quantile(&s->hist, 0.999), t[5]);
    bmt_duration_text(s->hist.max, t[6]);
    if (!s->hist.count)
        for (int i = 2; i < 7; i++)
            strcpy(t[i], "-");
    if (c->by_pid) {
        char label[600];
        bmt_callstack_label(&c->cs, s->pid, label, sizeof label);
        snprintf(line, sizeof line, "%-*s ", label_width, label);
        bmt_out_str(o, line);
    }
    snprintf(line, sizeof line, "%10llu %6llu %6llu %12s %12s %12s %12s %12s %12s %12s  ",
             (unsigned long long)bmt_fstat_count(s), (unsigned long long)s->unfinished_count,
             (unsigned long long)s->exception_count, t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
    bmt_out_str(o, line);
    put_function(o, c, s->func);
    bmt_out_char(o, '\n');
}

/* The breakdown's columns: ON-CPU, RUNNABLE, WAITING, GC, and UNKNOWN when
 * some time could not be classified. Without message_receive events
 * RUNNABLE and WAITING are one OFF-CPU column (kind -1). */
struct columns {
    int kinds[6];
    const char *heads[6];
    unsigned n;
};

static void columns(const struct bmt_calls *c, int show_unknown, struct columns *k)
{
    struct bmt_calls_lacks l = bmt_calls_lacking(c);
    k->n = 0;
    k->kinds[k->n] = BMT_K_ON_CPU, k->heads[k->n++] = "ON-CPU";
    if (l.receive) {
        k->kinds[k->n] = -1, k->heads[k->n++] = "OFF-CPU";
    } else {
        k->kinds[k->n] = BMT_K_RUNNABLE, k->heads[k->n++] = "RUNNABLE";
        k->kinds[k->n] = BMT_K_WAITING, k->heads[k->n++] = "WAITING";
    }
    k->kinds[k->n] = BMT_K_GC, k->heads[k->n++] = "GC";
    if (show_unknown)
        k->kinds[k->n] = BMT_K_UNKNOWN, k->heads[k->n++] = "UNKNOWN";
}

static uint64_t kind_of(const uint64_t *v, int k)
{
    if (k == BMT_K_RUNNABLE)
        return bmt_kind_runnable(v);
    if (k == BMT_K_UNKNOWN)
        return bmt_kind_unknown(v);
    return k >= 0 ? v[k] : bmt_kind_runnable(v) + v[BMT_K_WAITING];
}

/* What the trace lacks to tell the kinds apart, before the breakdown. */
static void breakdown_notes(struct bmt_out *o, const struct bmt_calls *c, uint64_t unknown)
{
    struct bmt_calls_lacks l = bmt_calls_lacking(c);
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
}

/* Sums by kind, each with its share of the total. */
static void breakdown_sums(struct bmt_out *o, const struct bmt_calls_view *v,
                           const struct columns *k)
{
    char line[1024], d[32];
    size_t at = (size_t)snprintf(line, sizeof line, "%10s %12s", "CALLS", "TOTAL");
    for (unsigned j = 0; j < k->n; j++)
        at += (size_t)snprintf(line + at, sizeof line - at, " %18s", k->heads[j]);
    snprintf(line + at, sizeof line - at, "  FUNCTION\n");
    bmt_out_str(o, line);
    for (uint64_t i = 0; i < v->n; i++) {
        const struct bmt_fstat *s = &v->c->stats[v->order[i]];
        bmt_duration_text(s->total_ns, d);
        at = (size_t)snprintf(line, sizeof line, "%10llu %12s", (unsigned long long)bmt_fstat_count(s), d);
        for (unsigned j = 0; j < k->n; j++) {
            uint64_t x = kind_of(s->incl, k->kinds[j]);
            char cell[48];
            bmt_duration_text(x, d);
            snprintf(cell, sizeof cell, "%s %3.0f%%", d,
                     s->total_ns ? 100.0 * (double)x / (double)s->total_ns : 0.0);
            at += (size_t)snprintf(line + at, sizeof line - at, " %18s", cell);
        }
        snprintf(line + at, sizeof line - at, "  ");
        bmt_out_str(o, line);
        put_function(o, v->c, s->func);
        bmt_out_char(o, '\n');
    }
}

/* Who ended each function's waits (wakers.h), for the functions whose
 * tally names anyone: the senders' shares of its waiting time, most
 * first. Nothing when no wait's sender is known. */
static void breakdown_wakers(struct bmt_out *o, const struct bmt_calls_view *v)
{
    char line[800], d[32], who[600];
    int head = 0;
    for (uint64_t i = 0; i < v->n; i++) {
        const struct bmt_fstat *s = &v->c->stats[v->order[i]];
        uint64_t wait = s->incl[BMT_K_WAITING];
        unsigned order[BMT_WAKERS_MAX];
        unsigned n = bmt_wakers_order(&s->wakers, order);
        if (bmt_wakers_empty(&s->wakers) || !wait)
            continue;
        if (!head++)
            bmt_out_str(o, "\nwho ended the waits (the senders of the messages that woke each "
                           "function; timeouts and unseen sends in none)\n     WAITING  "
                           "FUNCTION\n");
        bmt_duration_text(wait, d);
        snprintf(line, sizeof line, "%12s  ", d);
        bmt_out_str(o, line);
        put_function(o, v->c, s->func);
        for (unsigned j = 0; j <= n; j++) {
            uint64_t ns = j < n ? s->wakers.ns[order[j]] : s->wakers.other_ns;
            if (j == n && !ns)
                break;
            if (j < n)
                bmt_calls_waker_label(v->c, s->wakers.pid[order[j]], who, sizeof who);
            snprintf(line, sizeof line, "%s%.0f%% from %s", j ? ", " : "  ",
                     100.0 * (double)(ns < wait ? ns : wait) / (double)wait,
                     j < n ? who : "others");
            bmt_out_str(o, line);
        }
        bmt_out_char(o, '\n');
    }
}

/* p50 / p99 per call of each kind (calls inside the window). */
static void breakdown_per_call(struct bmt_out *o, const struct bmt_calls_view *v,
                               const struct columns *k)
{
    char line[1024];
    bmt_out_str(o, "\nper call, p50 / p99 (calls inside the window)\n");
    size_t at = (size_t)snprintf(line, sizeof line, "%10s", "CALLS");
    for (unsigned j = 0; j < k->n; j++)
        if (k->kinds[j] >= 0)
            at += (size_t)snprintf(line + at, sizeof line - at, " %23s", k->heads[j]);
    snprintf(line + at, sizeof line - at, "  FUNCTION\n");
    bmt_out_str(o, line);
    for (uint64_t i = 0; i < v->n; i++) {
        const struct bmt_fstat *s = &v->c->stats[v->order[i]];
        if (!s->hist.count)
            continue;
        at = (size_t)snprintf(line, sizeof line, "%10llu", (unsigned long long)bmt_fstat_count(s));
        for (unsigned j = 0; j < k->n; j++) {
            if (k->kinds[j] < 0)
                continue;
            char a[32], b[32], cell[72];
            bmt_duration_text(bmt_hist_quantile(&s->khist[k->kinds[j]], 0.5), a);
            bmt_duration_text(bmt_hist_quantile(&s->khist[k->kinds[j]], 0.99), b);
            snprintf(cell, sizeof cell, "%s / %s", a, b);
            at += (size_t)snprintf(line + at, sizeof line - at, " %23s", cell);
        }
        snprintf(line + at, sizeof line - at, "  ");
        bmt_out_str(o, line);
        put_function(o, v->c, s->func);
        bmt_out_char(o, '\n');
    }
}

/* One slowest call: its time by kind, start, process, function; marked
 * when it is the capture's trigger. */
static void slow_row(struct bmt_out *o, const struct bmt_calls_view *v, const struct columns *k,
                     const struct bmt_slow_call *s)
{
    const struct bmt_calls *c = v->c;
    char line[1024], d[32];
    bmt_duration_text(s->duration_ns, d);
    snprintf(line, sizeof line, "%12s", d);
    bmt_out_str(o, line);
    for (unsigned j = 0; j < k->n; j++) {
        bmt_duration_text(kind_of(s->kinds, k->kinds[j]), d);
        snprintf(line, sizeof line, " %12s", d);
        bmt_out_str(o, line);
    }
    char t[32], label[600];
    bmt_clock_text(bmt_reader_wall_ns(v->r, s->start_ns), t);
    bmt_callstack_label(&c->cs, s->pid, label, sizeof label);
    snprintf(line, sizeof line, "  %-18s %-24s ", t, label);
    bmt_out_str(o, line);
    put_function(o, c, s->func);
    if (bmt_calls_is_trigger(c, s))
        bmt_out_str(o, "  <- the capture's trigger");
    bmt_out_char(o, '\n');
}

/* The slowest calls, each with its time by kind; a capture's triggering
 * call after them when it ranks lower. */
static void breakdown_slowest(struct bmt_out *o, const struct bmt_calls_view *v,
                              const struct columns *k)
{
    const struct bmt_calls *c = v->c;
    char line[1024];
    snprintf(line, sizeof line, "\nthe %u slowest calls\n%12s", c->slowest_count, "DURATION");
    bmt_out_str(o, line);
    for (unsigned j = 0; j < k->n; j++) {
        snprintf(line, sizeof line, " %12s", k->heads[j]);
        bmt_out_str(o, line);
    }
    snprintf(line, sizeof line, "  %-18s %-24s %s\n", "START", "PROCESS", "FUNCTION");
    bmt_out_str(o, line);
    int listed = 0;
    for (unsigned i = 0; i < c->slowest_count; i++) {
        slow_row(o, v, k, &c->slowest[i]);
        listed |= bmt_calls_is_trigger(c, &c->slowest[i]);
    }
    if (c->trigger_found && !listed) {
        bmt_out_str(o, "and the capture's trigger, not among them:\n");
        slow_row(o, v, k, &c->trigger_call);
    }
}

static void breakdown_text(struct bmt_out *o, const struct bmt_calls_view *v)
{
    uint64_t unknown = 0;
    for (uint64_t i = 0; i < v->n; i++)
        unknown += bmt_kind_unknown(v->c->stats[v->order[i]].incl);
    struct columns k;
    columns(v->c, unknown > 0, &k);
    breakdown_notes(o, v->c, unknown);
    breakdown_sums(o, v, &k);
    breakdown_wakers(o, v);
    breakdown_per_call(o, v, &k);
    breakdown_slowest(o, v, &k);
}

/* The table's header; the process column as wide as its widest label. */
static int header_text(struct bmt_out *o, const struct bmt_calls_view *v)
{
    const struct bmt_calls *c = v->c;
    char line[512];
    int width = 7;
    if (c->by_pid) {
        for (uint64_t i = 0; i < v->n; i++) {
            char label[600];
            bmt_callstack_label(&c->cs, c->stats[v->order[i]].pid, label, sizeof label);
            int w = (int)strlen(label);
            if (w > width)
                width = w > MAX_LABEL_WIDTH ? MAX_LABEL_WIDTH : w;
        }
        snprintf(line, sizeof line, "%-*s ", width, "PROCESS");
        bmt_out_str(o, line);
    }
    snprintf(line, sizeof line, "%10s %6s %6s %12s %12s %12s %12s %12s %12s %12s  %s\n", "CALLS",
             "UNFIN", "EXC", "TOTAL", bmt_calls_own_is_cpu(c) ? "OWN CPU" : "OWN WALL", "P50",
             "P90", "P99", "P99.9", "MAX", "FUNCTION");
    bmt_out_str(o, line);
    return width;
}

void bmt_calls_text(struct bmt_out *o, const struct bmt_calls_view *v)
{
    const struct bmt_calls *c = v->c;
    if (v->slower_ns) {
        char d[32], line[128];
        bmt_duration_text(v->slower_ns, d);
        snprintf(line, sizeof line, "%llu calls slower than %s\n\n",
                 (unsigned long long)c->slow_count, d);
        bmt_out_str(o, line);
    }
    int width = header_text(o, v);
    for (uint64_t i = 0; i < v->n; i++)
        row_text(o, c, &c->stats[v->order[i]], width);
    const struct bmt_an_scope *s = c->cs.scope;
    if (c->stat_count == 0 && s->filtering && s->call_count) {
        /* The trace has calls: saying it has none sends the user off to
         * trace again. */
        char line[160];
        snprintf(line, sizeof line, "(no function_call events of the chosen processes: the "
                 "--pid/--name filter removed the %llu function_call events)\n",
                 (unsigned long long)s->call_count);
        bmt_out_str(o, line);
    } else if (c->stat_count == 0)
        bmt_out_str(o, "(no function_call events: trace with the call flag and "
                       "erlang:trace_pattern/3, return_trace in the match spec)\n");
    else if (!bmt_calls_own_is_cpu(c))
        bmt_out_str(o, "(OWN WALL: time in the function itself, off-CPU time included: "
                       "the trace has no process_scheduled events; record with the "
                       "running flag for on-CPU time)\n");
    else
        bmt_out_str(o, "(OWN CPU: time in the function itself seen on CPU or in GC, "
                       "never time seen off CPU whatever the reason; wall time for "
                       "processes without process_scheduled events)\n");
    if (c->breakdown && c->stat_count)
        breakdown_text(o, v);
    if (v->group_order)
        bmt_groupby_text(o, c->group, &c->cs.funcs, v->group_order);
    if (c->cs.pruned_calls)
        bmt_out_str(o, "(the call tree is full: calls in new stacks were charged to "
                       "their callers)\n");
}

/* ---- JSON ---- */

/* `"on_cpu_ns": N, "runnable_ns": N|null, ...` for sums `v`. */
static void kinds_json(struct bmt_out *o, const struct bmt_calls *c, const uint64_t *v)
{
    struct bmt_calls_lacks l = bmt_calls_lacking(c);
    char buf[400], runnable[32], waiting[32], gc[32];
    snprintf(runnable, sizeof runnable, "%llu", (unsigned long long)bmt_kind_runnable(v));
    snprintf(waiting, sizeof waiting, "%llu", (unsigned long long)v[BMT_K_WAITING]);
    snprintf(gc, sizeof gc, "%llu", (unsigned long long)v[BMT_K_GC]);
    snprintf(buf, sizeof buf, "\"on_cpu_ns\": %llu, \"runnable_ns\": %s, \"waiting_ns\": %s, "
             "\"off_cpu_ns\": %llu, \"gc_ns\": %s, \"unknown_ns\": %llu",
             (unsigned long long)v[BMT_K_ON_CPU], l.receive ? "null" : runnable,
             l.receive ? "null" : waiting,
             (unsigned long long)(bmt_kind_runnable(v) + v[BMT_K_WAITING]), l.gc ? "null" : gc,
             (unsigned long long)bmt_kind_unknown(v));
    bmt_out_str(o, buf);
}

/* `, "waiting_from": [{"pid": P, "process": NAME, "waiting_ns": N}, ...],
 * "waiting_from_other_ns": N`: who ended the row's waits (wakers.h), most
 * first; nothing when no wait's sender is known. */
static void wakers_json(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *s)
{
    const struct bmt_names *n = &c->cs.scope->names;
    unsigned order[BMT_WAKERS_MAX];
    unsigned count = bmt_wakers_order(&s->wakers, order);
    char buf[80], name[512];
    if (bmt_wakers_empty(&s->wakers))
        return;
    bmt_out_str(o, ", \"waiting_from\": [");
    for (unsigned i = 0; i < count; i++) {
        uint32_t pid = s->wakers.pid[order[i]];
        bmt_out_str(o, i ? ", {\"pid\": " : "{\"pid\": ");
        bmt_json_string(o, bmt_strtab_str(&n->pids, pid), bmt_strtab_len(&n->pids, pid));
        bmt_names_name(n, pid, name, sizeof name);
        bmt_out_str(o, ", \"process\": ");
        bmt_json_cstr(o, name);
        snprintf(buf, sizeof buf, ", \"waiting_ns\": %llu}",
                 (unsigned long long)s->wakers.ns[order[i]]);
        bmt_out_str(o, buf);
    }
    snprintf(buf, sizeof buf, "], \"waiting_from_other_ns\": %llu",
             (unsigned long long)s->wakers.other_ns);
    bmt_out_str(o, buf);
}

static void row_json(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *s)
{
    char fn[600], buf[300];
    bmt_elixir_mfa(bmt_strtab_str(&c->cs.funcs, s->func), bmt_strtab_len(&c->cs.funcs, s->func),
                   fn, sizeof fn);
    bmt_out_str(o, "{\"function\": ");
    bmt_json_cstr(o, fn);
    if (c->by_pid) {
        const struct bmt_names *n = &c->cs.scope->names;
        char name[512];
        bmt_out_str(o, ", \"pid\": ");
        bmt_json_string(o, bmt_strtab_str(&n->pids, s->pid), bmt_strtab_len(&n->pids, s->pid));
        bmt_names_name(n, s->pid, name, sizeof name);
        bmt_out_str(o, ", \"process\": ");
        bmt_json_cstr(o, name);
    }
    /* count: scaled back in a sampled trace; kept_count: the calls kept,
     * of which the percentiles are. */
    snprintf(buf, sizeof buf, ", \"count\": %llu, \"kept_count\": %llu, ",
             (unsigned long long)bmt_fstat_count(s), (unsigned long long)s->hist.count);
    bmt_out_str(o, buf);
    bmt_hist_print_json_quantiles(o, &s->hist);
    uint64_t own_wall = 0;
    for (int k = 0; k < BMT_K_COUNT; k++)
        own_wall += s->own[k];
    snprintf(buf, sizeof buf,
             ", \"unfinished\": %llu, \"exceptions\": %llu, \"total_ns\": %llu, \"own_ns\": %llu, "
             "\"own_time\": \"%s\", \"own_wall_ns\": %llu, ",
             (unsigned long long)s->unfinished_count, (unsigned long long)s->exception_count,
             (unsigned long long)s->total_ns, (unsigned long long)bmt_calls_own_ns(c, s),
             bmt_calls_own_is_cpu(c) ? "on_cpu" : "wall", (unsigned long long)own_wall);
    bmt_out_str(o, buf);
    kinds_json(o, c, s->incl);
    wakers_json(o, c, s);
    for (int k = 0; c->breakdown && k < BMT_K_PREEMPTED; k++) {
        snprintf(buf, sizeof buf, ", \"%s_p50_ns\": %llu, \"%s_p99_ns\": %llu", bmt_kind_names[k],
                 (unsigned long long)bmt_hist_quantile(&s->khist[k], 0.5), bmt_kind_names[k],
                 (unsigned long long)bmt_hist_quantile(&s->khist[k], 0.99));
        bmt_out_str(o, buf);
    }
    bmt_out_char(o, '}');
}

static void slowest_json(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_reader *r)
{
    bmt_out_str(o, ", \"slowest_calls\": [");
    for (unsigned i = 0; i < c->slowest_count; i++) {
        const struct bmt_slow_call *s = &c->slowest[i];
        char buf[160];
        bmt_out_str(o, i ? ",\n  {" : "\n  {");
        json_who(o, c, s->pid, s->func);
        snprintf(buf, sizeof buf, ", \"start_unix_ns\": %lld, \"duration_ns\": %llu, ",
                 (long long)bmt_reader_wall_ns(r, s->start_ns), (unsigned long long)s->duration_ns);
        bmt_out_str(o, buf);
        kinds_json(o, c, s->kinds);
        if (bmt_calls_is_trigger(c, s))
            bmt_out_str(o, ", \"trigger\": true");
        bmt_out_char(o, '}');
    }
    bmt_out_str(o, c->slowest_count ? "\n]" : "]");
    if (c->trigger_found) {
        const struct bmt_slow_call *s = &c->trigger_call;
        char buf[160];
        bmt_out_str(o, ", \"trigger_call\": {");
        json_who(o, c, s->pid, s->func);
        snprintf(buf, sizeof buf, ", \"start_unix_ns\": %lld, \"duration_ns\": %llu, ",
                 (long long)bmt_reader_wall_ns(r, s->start_ns), (unsigned long long)s->duration_ns);
        bmt_out_str(o, buf);
        kinds_json(o, c, s->kinds);
        bmt_out_char(o, '}');
    }
}

void bmt_calls_json(struct bmt_out *o, const struct bmt_calls_view *v)
{
    const struct bmt_calls *c = v->c;
    struct bmt_calls_lacks l = bmt_calls_lacking(c);
    char buf[512];
    if (v->slower_ns)
        bmt_out_str(o, c->slow_count ? "\n]" : "]");
    snprintf(buf, sizeof buf,
             ", \"events\": %llu, \"discarded_events\": %llu, \"ignored_returns\": %llu, "
             "\"return_to_seen\": %s, \"stack_overflows\": %llu, \"own_time\": \"%s\", "
             "\"lacks\": [%s%s%s%s%s], ",
             (unsigned long long)v->pass->event_count,
             (unsigned long long)v->pass->discarded_count,
             (unsigned long long)c->cs.ignored_returns, c->cs.return_to_seen ? "true" : "false",
             (unsigned long long)c->cs.overflow_count, bmt_calls_own_is_cpu(c) ? "on_cpu" : "wall",
             l.sched ? "\"running\"" : "", l.sched && (l.receive || l.gc) ? ", " : "",
             l.receive ? "\"receive\"" : "", l.receive && l.gc ? ", " : "",
             l.gc ? "\"garbage_collection\"" : "");
    bmt_out_str(o, buf);
    bmt_json_window(o, v->r, c->cs.scope, v->pass);
    if (c->breakdown)
        slowest_json(o, c, v->r);
    bmt_out_str(o, ", \"functions\": [");
    for (uint64_t i = 0; i < v->n; i++) {
        bmt_out_str(o, i ? ",\n  " : "\n  ");
        row_json(o, c, &c->stats[v->order[i]]);
    }
    bmt_out_str(o, v->n ? "\n]" : "]");
    if (v->group_order)
        bmt_groupby_json(o, c->group, &c->cs.funcs, v->group_order);
    bmt_out_str(o, "}\n");
}
