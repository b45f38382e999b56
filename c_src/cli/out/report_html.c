/* The report page (contract in report_html.h). */
#include "report_html.h"
#include "counters_svg.h"
#include "flame.h"
#include "html.h"
#include "slowest_html.h"
#include "svg.h"
#include "timeline_svg.h"
#include "model/elixir.h"
#include "base/timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP_FUNCS 15
#define HIST_FUNCS 3
#define SLOWEST_FUNCS 10

static const char STYLE[] =
    /* The page takes the window's width; the wide charts scale to it. */
    "body{font-family:sans-serif;margin:20px;color:#222}"
    "svg.timeline,#bmtflame{width:100%;height:auto}"
    "p.trigger{color:#d62728;font-weight:bold}"
    "h1{font-size:22px;overflow-wrap:anywhere}h2{font-size:17px;margin-top:28px;"
    "border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;text-align:right}"
    "th{background:#eef}td.l,th.l{text-align:left}tr:nth-child(even){background:#f7f7f7}"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.note{color:#666;font-size:12px}";

static void cell_dur(struct bmt_out *o, uint64_t ns)
{
    char d[32];
    bmt_duration_text(ns, d);
    bmt_out_str(o, "<td>");
    bmt_out_str(o, d);
    bmt_out_str(o, "</td>");
}

static void cell_u64(struct bmt_out *o, uint64_t v)
{
    bmt_out_str(o, "<td>");
    bmt_out_u64(o, v);
    bmt_out_str(o, "</td>");
}

static void cell_share(struct bmt_out *o, uint64_t part, uint64_t whole)
{
    char buf[64];
    snprintf(buf, sizeof buf, "<td>%.0f%%</td>", whole ? 100.0 * (double)part / (double)whole : 0.0);
    bmt_out_str(o, buf);
}

/* A sampled trace: what is scaled back on the page, and what is not. */
static void sampled_note(struct bmt_out *o, const struct bmt_an_scope *s,
                         const struct bmt_an_pass *p)
{
    const struct bmt_sampled *sd = &s->sampled;
    if (!sd->ratio_max)
        return;
    uint64_t span = p->end_ns > sd->begin_ns ? p->end_ns - sd->begin_ns : 0;
    double pct = span ? 100.0 * (double)bmt_sampled_ns(sd, p->end_ns) / (double)span : 0.0;
    char line[400];
    snprintf(line, sizeof line, "<p class=\"note\">Sampled 1/%u (at most) for %.0f%% of the "
             "window, of its ", sd->ratio_max, pct > 100.0 ? 100.0 : pct);
    bmt_out_str(o, line);
    bmt_html_string(o, sd->kinds, strlen(sd->kinds));
    bmt_out_str(o, " events: the counts and totals of the tables and the flame graph are scaled "
                   "back by the ratio in force at each event; percentiles are as measured; the "
                   "send -&gt; scheduled latencies and the timeline are of the events kept.</p>");
}

/* Events per tracepoint (scaled back, and kept, in a sampled trace). */
static void events_table(struct bmt_out *o, const struct bmt_report *r,
                         const struct bmt_an_scope *s, const struct bmt_an_pass *p)
{
    sampled_note(o, s, p);
    int sampled = s->sampled.ratio_max > 0;
    bmt_out_str(o, sampled ? "<h3>Events per tracepoint</h3><table><tr><th class=\"l\">"
                             "tracepoint</th><th>events (scaled back)</th><th>kept</th></tr>"
                           : "<h3>Events per tracepoint</h3><table><tr><th class=\"l\">"
                             "tracepoint</th><th>events</th></tr>");
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        if (!r->counts[i])
            continue;
        bmt_out_str(o, "<tr><td class=\"l\">");
        bmt_out_str(o, bmt_catalogue[i].full_name);
        bmt_out_str(o, "</td>");
        cell_u64(o, r->counts[i]);
        if (sampled)
            cell_u64(o, r->kept[i]);
        bmt_out_str(o, "</tr>");
    }
    bmt_out_str(o, "</table>\n");
}

static void summary(struct bmt_out *o, const char *dir, const struct bmt_reader *rd,
                    const struct bmt_report *r, const struct bmt_an_scope *s,
                    const struct bmt_an_pass *p)
{
    char a[32], b[32], d[32];
    bmt_out_str(o, "<h2>Summary</h2><table><tr><th class=\"l\">trace</th><td class=\"l\">");
    bmt_html_string(o, dir, strlen(dir));
    bmt_out_str(o, "</td></tr><tr><th class=\"l\">events read</th>");
    cell_u64(o, p->event_count);
    bmt_out_str(o, "</tr><tr><th class=\"l\">discarded while recording</th>");
    cell_u64(o, p->discarded_count);
    bmt_out_str(o, "</tr><tr><th class=\"l\">lost packets</th>");
    cell_u64(o, p->lost_packet_count);
    if (p->event_count) {
        uint64_t from = s->window.begin_ns > p->first_ns ? s->window.begin_ns : p->first_ns;
        bmt_clock_text(bmt_reader_wall_ns(rd, from), a);
        bmt_clock_text(bmt_reader_wall_ns(rd, p->end_ns), b);
        bmt_duration_text(p->end_ns > from ? p->end_ns - from : 0, d);
        bmt_out_str(o, "</tr><tr><th class=\"l\">from</th><td>");
        bmt_out_str(o, a);
        bmt_out_str(o, "</td></tr><tr><th class=\"l\">to</th><td>");
        bmt_out_str(o, b);
        bmt_out_str(o, "</td></tr><tr><th class=\"l\">duration</th><td>");
        bmt_out_str(o, d);
        bmt_out_str(o, "</td>");
    }
    if (s->filtering) {
        bmt_out_str(o, "</tr><tr><th class=\"l\">processes</th><td class=\"l\">");
        for (uint32_t i = 0; i < s->kept.count && i < 20; i++) {
            char label[700];
            bmt_names_label(&s->names, bmt_strtab_str(&s->kept, i), bmt_strtab_len(&s->kept, i),
                            label, sizeof label);
            if (i)
                bmt_out_str(o, ", ");
            bmt_html_string(o, label, strlen(label));
        }
        bmt_out_str(o, s->kept.count > 20 ? ", ...</td>" : "</td>");
    }
    /* Runs the trace does not end (runs.h): how many, and the bound. */
    bmt_out_str(o, "</tr><tr><th class=\"l\">runs ended at the process's last event</th>");
    cell_u64(o, s->runs.closed_count);
    bmt_out_str(o, "</tr><tr><th class=\"l\">most processes running at once</th>");
    cell_u64(o, s->runs.max_running);
    /* Dirty schedulers are counted apart when the trace says which streams
     * are theirs (runs.h): a normal scheduler's count never includes them. */
    if (s->runs.dirty_known) {
        bmt_out_str(o, "</tr><tr><th class=\"l\">most on dirty schedulers at once</th>");
        cell_u64(o, s->runs.max_dirty_running);
    }
    bmt_out_str(o, "</tr></table>");
    if (s->runs.closed_count) {
        char line[400];
        snprintf(line, sizeof line,
                 "<p class=\"note\">%llu run%s had no end in the trace (the process died "
                 "untraced, its flags were removed while it ran, its scheduled-out event was "
                 "lost, or the trace stopped first): each ends at the process's last event, "
                 "and the time after it is unknown, not running%s.</p>",
                 (unsigned long long)s->runs.closed_count, s->runs.closed_count == 1 ? "" : "s",
                 s->runs.capped_count ? "; some ended when more processes than the node has "
                                        "schedulers would have run at once" : "");
        bmt_out_str(o, line);
    }
    if (s->valid_from_ns) {
        bmt_clock_text(bmt_reader_wall_ns(rd, s->valid_from_ns), a);
        bmt_out_str(o, "<p class=\"note\">A flight-recorder trace: its streams lost their oldest "
                       "packets, so calls and intervals are counted from ");
        bmt_out_str(o, a);
        bmt_out_str(o, ", where every stream has data.</p>");
    }
    events_table(o, r, s, p);
}

static void functions(struct bmt_out *o, const struct bmt_report *r, const uint32_t *order)
{
    const struct bmt_calls *c = &r->calls;
    const struct bmt_an_scope *s = c->cs.scope;
    uint32_t n = c->stat_count < TOP_FUNCS ? c->stat_count : TOP_FUNCS;
    int cpu = bmt_calls_own_is_cpu(c), split = s->receive_count > 0;
    char fn[600];
    bmt_out_str(o, "<h2>Top functions by total time</h2>");
    if (!n) {
        bmt_out_str(o, "<p class=\"note\">No function_call events: trace with the call flag and "
                       "erlang:trace_pattern/3 (return_trace in the match spec).</p>\n");
        return;
    }
    bmt_out_str(o, cpu ? "<p class=\"note\">Where each function's time went (its callees "
                         "included): on a CPU, runnable (ready but not running), waiting for a "
                         "message, collecting garbage. Own: on-CPU time in the function itself.</p>"
                       : "<p class=\"note\">The trace has no process_scheduled events (the running "
                         "flag): times are wall times, off-CPU time included.</p>");
    bmt_out_str(o, "<table><tr><th class=\"l\">function</th><th>calls</th><th>unfinished</th>"
                   "<th>total</th>");
    bmt_out_str(o, cpu ? "<th>own CPU</th><th>on CPU</th>" : "<th>own</th>");
    if (cpu)
        bmt_out_str(o, split ? "<th>runnable</th><th>waiting</th>" : "<th>off CPU</th>");
    if (cpu && s->gc_count)
        bmt_out_str(o, "<th>GC</th>");
    bmt_out_str(o, "<th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>");
    for (uint32_t i = 0; i < n; i++) {
        const struct bmt_fstat *f = &c->stats[order[i]];
        bmt_elixir_mfa(bmt_strtab_str(&c->cs.funcs, f->func), bmt_strtab_len(&c->cs.funcs, f->func),
                        fn, sizeof fn);
        bmt_out_str(o, "<tr><td class=\"l\">");
        bmt_html_string(o, fn, strlen(fn));
        bmt_out_str(o, "</td>");
        cell_u64(o, bmt_fstat_count(f));
        cell_u64(o, f->unfinished_count);
        cell_dur(o, f->total_ns);
        cell_dur(o, bmt_calls_own_ns(c, f));
        if (cpu) {
            cell_share(o, f->incl[BMT_K_ON_CPU], f->total_ns);
            if (split) {
                cell_share(o, bmt_kind_runnable(f->incl), f->total_ns);
                cell_share(o, f->incl[BMT_K_WAITING], f->total_ns);
            } else {
                cell_share(o, bmt_kind_runnable(f->incl) + f->incl[BMT_K_WAITING], f->total_ns);
            }
            if (s->gc_count)
                cell_share(o, f->incl[BMT_K_GC], f->total_ns);
        }
        cell_dur(o, bmt_hist_quantile(&f->hist, 0.5));
        cell_dur(o, bmt_hist_quantile(&f->hist, 0.9));
        cell_dur(o, bmt_hist_quantile(&f->hist, 0.99));
        cell_dur(o, bmt_hist_quantile(&f->hist, 0.999));
        cell_dur(o, f->hist.max);
        bmt_out_str(o, "</tr>");
    }
    bmt_out_str(o, "</table>\n<div class=\"charts\">");
    for (uint32_t i = 0; i < n && i < HIST_FUNCS; i++) {
        const struct bmt_fstat *f = &c->stats[order[i]];
        char title[700];
        bmt_elixir_mfa(bmt_strtab_str(&c->cs.funcs, f->func), bmt_strtab_len(&c->cs.funcs, f->func),
                        fn, sizeof fn);
        snprintf(title, sizeof title, "call latency: %s", fn);
        bmt_svg_quantize(o, &f->hist, title);
    }
    bmt_out_str(o, "</div>\n");
}

static void procs_gc(struct bmt_out *o, const struct bmt_report *r)
{
    const struct bmt_procs *p = &r->procs;
    const struct bmt_names *names = &p->scope->names;
    char buf[256];
    bmt_out_str(o, "<h2>Garbage collection</h2><div class=\"charts\">");
    bmt_svg_quantize(o, &r->gc.hist[0], "minor GC pause");
    bmt_svg_quantize(o, &r->gc.hist[1], "major GC pause");
    snprintf(buf, sizeof buf, "</div><p>words reclaimed: minor %llu, major %llu</p>\n",
             (unsigned long long)r->gc.reclaimed_words[0],
             (unsigned long long)r->gc.reclaimed_words[1]);
    bmt_out_str(o, buf);
    snprintf(buf, sizeof buf, "<h2>Processes</h2><p>%llu spawns, %llu exits",
             (unsigned long long)p->spawn_count, (unsigned long long)p->exit_count);
    bmt_out_str(o, buf);
    if (p->longest_count) {
        char d[32], label[700];
        uint32_t id = p->longest[0].pid;
        bmt_duration_text(p->longest[0].lifetime_ns, d);
        bmt_names_label(names, bmt_strtab_str(&names->pids, id), bmt_strtab_len(&names->pids, id),
                        label, sizeof label);
        bmt_out_str(o, "; longest-lived ");
        bmt_html_string(o, label, strlen(label));
        bmt_out_str(o, " (");
        bmt_out_str(o, d);
        bmt_out_str(o, ")");
    }
    bmt_out_str(o, "</p>\n");
    if (p->reasons.count) {
        bmt_out_str(o, "<table><tr><th class=\"l\">exit reason</th><th>count</th></tr>");
        for (uint32_t i = 0; i < p->reasons.count && i < 20; i++) {
            bmt_out_str(o, "<tr><td class=\"l\">");
            bmt_html_string(o, bmt_strtab_str(&p->reasons, i), bmt_strtab_len(&p->reasons, i));
            bmt_out_str(o, "</td>");
            cell_u64(o, p->reason_counts[i]);
            bmt_out_str(o, "</tr>");
        }
        bmt_out_str(o, "</table>\n");
    }
}

int bmt_report_html(struct bmt_out *o, const char *dir, const struct bmt_reader *rd,
                        const struct bmt_report *r, const struct bmt_an_scope *s,
                        const struct bmt_an_pass *p)
{
    uint32_t *order = bmt_calls_sorted(&r->calls);
    if (!order)
        return -ENOMEM;
    bmt_out_str(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<title>beamtrace report</title><style>");
    bmt_out_str(o, STYLE);
    bmt_out_str(o, bmt_slowest_css);
    bmt_out_str(o, "</style></head><body>\n<h1>beamtrace report: ");
    bmt_html_string(o, dir, strlen(dir));
    bmt_out_str(o, "</h1>\n");
    struct bmt_capture_info cap;
    int capture = bmt_capture_info_find(rd, &cap);
    if (capture) {
        /* A flight capture: what fired it, first; the timeline marks when. */
        char text[600];
        bmt_capture_info_text(&cap, text, sizeof text);
        bmt_out_str(o, "<p class=\"trigger\">Flight recorder ");
        bmt_html_string(o, text, strlen(text));
        bmt_out_str(o, " (marked on the timeline).</p>\n");
    }
    /* The answer first: the slowest functions and where their time went,
     * then when processes ran; the counts after. */
    bmt_slowest_html(o, &r->calls, SLOWEST_FUNCS);
    bmt_timeline_html(o, &r->timeline, rd, p->end_ns, capture ? &cap : NULL);
    summary(o, dir, rd, r, s, p);
    bmt_out_str(o, "<h2>Message send &rarr; receiver scheduled in</h2><p class=\"note\">From the "
                   "oldest message the receiver has not run since (sched --from first).</p>"
                   "<div class=\"charts\">");
    bmt_svg_quantize(o, &r->sched.hist, "send -> scheduled in latency");
    bmt_out_str(o, "</div>\n");
    functions(o, r, order);
    procs_gc(o, r);
    char sub[200];
    bmt_flame_subtitle(&r->calls.cs, BMT_FLAME_ALL, sub, sizeof sub);
    bmt_out_str(o, "<h2>Flame graph</h2><p class=\"note\">");
    bmt_html_string(o, sub, strlen(sub));
    bmt_out_str(o, " per call stack; click a frame to zoom, hover for times.</p>\n");
    int rc = bmt_flame_svg(o, &r->calls.cs, "time per call stack", 1200, 0, BMT_FLAME_ALL);
    bmt_counters_html(o, &r->counters, rd, p->end_ns);
    bmt_out_str(o, "<p class=\"note\">Generated by beamtrace report.</p></body></html>\n");
    free(order);
    return rc;
}
