/* `beamtrace report`: one self-contained HTML page (inline CSS and SVG,
 * one small inline script for the flame graph's zoom, nothing fetched)
 * with the trace summary, the latency histograms (send -> scheduled,
 * GC pauses, the top functions' call latency), the top functions, the
 * flame graph and a timeline of when the first processes ran.
 *
 * Everything comes from one pass that feeds every accumulator of
 * analyses.h. The timeline keeps at most LANE_CAP intervals for each of
 * the first LANES processes seen running; when a lane fills up, neighbouring
 * intervals are merged pairwise (the picture coarsens, memory stays fixed).
 */
#include "analyses.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LANES 24
#define LANE_CAP 2048
#define TOP_FUNCS 15
#define HIST_FUNCS 3

struct lane {
    uint64_t in_ns;      /* open interval start + 1, or 0 */
    uint32_t count;
    uint64_t iv[LANE_CAP][2];
};

struct report {
    uint64_t counts[BMT_TP_COUNT];
    struct bmt_calls calls;
    struct bmt_sched sched;
    struct bmt_gc gc;
    struct bmt_procs procs;
    struct bmt_strtab lane_pids;
    struct lane *lanes;  /* LANES */
};

static void lane_add(struct lane *l, uint64_t a, uint64_t b)
{
    if (l->count == LANE_CAP) {
        for (uint32_t i = 0; i < LANE_CAP / 2; i++) {
            l->iv[i][0] = l->iv[2 * i][0];
            l->iv[i][1] = l->iv[2 * i + 1][1];
        }
        l->count = LANE_CAP / 2;
    }
    l->iv[l->count][0] = a;
    l->iv[l->count][1] = b;
    l->count++;
}

static int feed(void *ctx, const struct bmt_record *rec)
{
    struct report *r = ctx;
    int rc;
    if (rec->tp < BMT_TP_COUNT)
        r->counts[rec->tp]++;
    if ((rc = bmt_calls_feed(&r->calls, rec)) < 0 || (rc = bmt_sched_feed(&r->sched, rec)) < 0 ||
        (rc = bmt_gc_feed(&r->gc, rec)) < 0 || (rc = bmt_procs_feed(&r->procs, rec)) < 0)
        return rc;
    if (rec->tp != BMT_TP_process_scheduled)
        return 0;
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *pid = &rec->values[F->sched_pid], *type = &rec->values[F->sched_type];
    int64_t id = bmt_strtab_find(&r->lane_pids, pid->str, pid->len);
    if (id < 0) {
        if (r->lane_pids.count == LANES)
            return 0;
        if ((id = bmt_strtab_intern(&r->lane_pids, pid->str, pid->len)) < 0)
            return (int)id;
    }
    struct lane *l = &r->lanes[id];
    if (type->len >= 2 && memcmp(type->str, "in", 2) == 0) {
        if (!l->in_ns)
            l->in_ns = rec->ts_ns + 1;
    } else if (l->in_ns) {
        lane_add(l, l->in_ns - 1, rec->ts_ns);
        l->in_ns = 0;
    }
    return 0;
}

static const char STYLE[] =
    "body{font-family:sans-serif;margin:20px;color:#222;max-width:1240px}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;text-align:right}"
    "th{background:#eef}td.l,th.l{text-align:left}tr:nth-child(even){background:#f7f7f7}"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.note{color:#666;font-size:12px}";

static void cell_dur(struct bmt_out *o, uint64_t ns)
{
    char d[32];
    bmt_an_duration_text(ns, d);
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

static void summary(struct bmt_out *o, const char *dir, const struct bmt_reader *rd,
                    const struct report *r, const struct bmt_an_pass *p)
{
    char a[32], b[32], d[32];
    bmt_out_str(o, "<h2>Summary</h2><table><tr><th class=\"l\">trace</th><td class=\"l\">");
    bmt_an_html_string(o, dir, strlen(dir));
    bmt_out_str(o, "</td></tr><tr><th class=\"l\">events</th>");
    cell_u64(o, p->event_count);
    bmt_out_str(o, "</tr><tr><th class=\"l\">discarded while recording</th>");
    cell_u64(o, p->discarded_count);
    bmt_out_str(o, "</tr><tr><th class=\"l\">lost packets</th>");
    cell_u64(o, p->lost_packet_count);
    if (p->event_count) {
        bmt_an_clock_text(rd, p->first_ns, a);
        bmt_an_clock_text(rd, p->last_ns, b);
        bmt_an_duration_text(p->last_ns - p->first_ns, d);
        bmt_out_str(o, "</tr><tr><th class=\"l\">from</th><td>");
        bmt_out_str(o, a);
        bmt_out_str(o, "</td></tr><tr><th class=\"l\">to</th><td>");
        bmt_out_str(o, b);
        bmt_out_str(o, "</td></tr><tr><th class=\"l\">duration</th><td>");
        bmt_out_str(o, d);
        bmt_out_str(o, "</td>");
    }
    bmt_out_str(o, "</tr></table><h3>Events per tracepoint</h3><table><tr><th class=\"l\">"
                   "tracepoint</th><th>events</th></tr>");
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        if (!r->counts[i])
            continue;
        bmt_out_str(o, "<tr><td class=\"l\">");
        bmt_out_str(o, bmt_catalogue[i].full_name);
        bmt_out_str(o, "</td>");
        cell_u64(o, r->counts[i]);
        bmt_out_str(o, "</tr>");
    }
    bmt_out_str(o, "</table>\n");
}

static void functions(struct bmt_out *o, const struct report *r, const uint32_t *order)
{
    const struct bmt_calls *c = &r->calls;
    uint32_t n = c->stat_count < TOP_FUNCS ? c->stat_count : TOP_FUNCS;
    bmt_out_str(o, "<h2>Top functions by total time</h2>");
    if (!n) {
        bmt_out_str(o, "<p class=\"note\">No function_call events: trace with the call flag and "
                       "erlang:trace_pattern/3 (return_trace in the match spec).</p>\n");
        return;
    }
    bmt_out_str(o, "<table><tr><th class=\"l\">function</th><th>calls</th><th>unfinished</th>"
                   "<th>total</th><th>own</th><th>p50</th><th>p90</th><th>p99</th>"
                   "<th>p99.9</th><th>max</th></tr>");
    for (uint32_t i = 0; i < n; i++) {
        const struct bmt_fstat *s = &c->stats[order[i]];
        const char *fn = bmt_strtab_str(&c->cs.funcs, s->func);
        bmt_out_str(o, "<tr><td class=\"l\">");
        bmt_an_html_string(o, fn, strlen(fn));
        bmt_out_str(o, "</td>");
        cell_u64(o, s->hist.count);
        cell_u64(o, s->unfinished_count);
        cell_dur(o, s->total_ns);
        cell_dur(o, s->own_ns);
        cell_dur(o, bmt_hist_quantile(&s->hist, 0.5));
        cell_dur(o, bmt_hist_quantile(&s->hist, 0.9));
        cell_dur(o, bmt_hist_quantile(&s->hist, 0.99));
        cell_dur(o, bmt_hist_quantile(&s->hist, 0.999));
        cell_dur(o, s->hist.max);
        bmt_out_str(o, "</tr>");
    }
    bmt_out_str(o, "</table>\n<div class=\"charts\">");
    for (uint32_t i = 0; i < n && i < HIST_FUNCS; i++) {
        const struct bmt_fstat *s = &c->stats[order[i]];
        char title[600];
        snprintf(title, sizeof title, "call latency: %s", bmt_strtab_str(&c->cs.funcs, s->func));
        bmt_svg_quantize(o, &s->hist, title);
    }
    bmt_out_str(o, "</div>\n");
}

static void procs_gc(struct bmt_out *o, const struct report *r)
{
    const struct bmt_procs *p = &r->procs;
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
        char d[32];
        bmt_an_duration_text(p->longest[0].lifetime_ns, d);
        bmt_out_str(o, "; longest-lived ");
        bmt_an_html_string(o, bmt_strtab_str(&p->pids, p->longest[0].pid),
                           bmt_strtab_len(&p->pids, p->longest[0].pid));
        bmt_out_str(o, " (");
        bmt_out_str(o, d);
        bmt_out_str(o, ")");
    }
    bmt_out_str(o, "</p>\n");
    if (p->reasons.count) {
        bmt_out_str(o, "<table><tr><th class=\"l\">exit reason</th><th>count</th></tr>");
        for (uint32_t i = 0; i < p->reasons.count && i < 20; i++) {
            bmt_out_str(o, "<tr><td class=\"l\">");
            bmt_an_html_string(o, bmt_strtab_str(&p->reasons, i), bmt_strtab_len(&p->reasons, i));
            bmt_out_str(o, "</td>");
            cell_u64(o, p->reason_counts[i]);
            bmt_out_str(o, "</tr>");
        }
        bmt_out_str(o, "</table>\n");
    }
}

static void timeline(struct bmt_out *o, const struct report *r, const struct bmt_an_pass *p)
{
    const unsigned W = 1200, label_w = 220, lane_h = 16;
    bmt_out_str(o, "<h2>Timeline: when processes ran</h2>");
    if (!r->lane_pids.count || p->last_ns <= p->first_ns) {
        bmt_out_str(o, "<p class=\"note\">No process_scheduled events: trace with the running "
                       "flag.</p>\n");
        return;
    }
    char buf[512], label[600];
    unsigned H = r->lane_pids.count * lane_h + 24;
    double span = (double)(p->last_ns - p->first_ns), plot = W - label_w - 10;
    snprintf(buf, sizeof buf,
             "<p class=\"note\">Scheduled-in periods of the first %u processes seen running.</p>"
             "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
             "height=\"%u\" font-family=\"sans-serif\" font-size=\"11\">",
             LANES, W, H);
    bmt_out_str(o, buf);
    for (uint32_t i = 0; i < r->lane_pids.count; i++) {
        const struct lane *l = &r->lanes[i];
        const char *pid = bmt_strtab_str(&r->lane_pids, i);
        int64_t cid = bmt_strtab_find(&r->calls.cs.pids, pid, strlen(pid));
        if (cid >= 0)
            bmt_callstack_label(&r->calls.cs, (uint32_t)cid, label, sizeof label);
        else
            snprintf(label, sizeof label, "%s", pid);
        unsigned y = i * lane_h;
        snprintf(buf, sizeof buf, "<rect x=\"0\" y=\"%u\" width=\"%u\" height=\"%u\" fill=\"%s\"/>"
                 "<text x=\"4\" y=\"%u\">", y, W, lane_h, i % 2 ? "#fafafa" : "#f0f0f5",
                 y + lane_h - 4);
        bmt_out_str(o, buf);
        bmt_an_html_string(o, label, strlen(label) > 34 ? 34 : strlen(label));
        bmt_out_str(o, "</text>");
        for (uint32_t k = 0; k < l->count; k++) {
            double x = label_w + plot * (double)(l->iv[k][0] - p->first_ns) / span;
            double w = plot * (double)(l->iv[k][1] - l->iv[k][0]) / span;
            snprintf(buf, sizeof buf, "<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" "
                     "fill=\"#3a9a5b\"/>", x, y + 2, w < 0.5 ? 0.5 : w, lane_h - 4);
            bmt_out_str(o, buf);
        }
    }
    char d[32];
    bmt_an_duration_text(p->last_ns - p->first_ns, d);
    snprintf(buf, sizeof buf, "<text x=\"%u\" y=\"%u\">0</text><text x=\"%u\" y=\"%u\" "
             "text-anchor=\"end\">%s</text></svg>\n", label_w, H - 6, W - 10, H - 6, d);
    bmt_out_str(o, buf);
}

static int write_report(struct bmt_out *o, const char *dir, const struct bmt_reader *rd,
                        const struct report *r, const struct bmt_an_pass *p)
{
    uint32_t *order = bmt_calls_sorted(&r->calls);
    if (!order)
        return -ENOMEM;
    bmt_out_str(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<title>beamtrace report</title><style>");
    bmt_out_str(o, STYLE);
    bmt_out_str(o, "</style></head><body>\n<h1>beamtrace report: ");
    bmt_an_html_string(o, dir, strlen(dir));
    bmt_out_str(o, "</h1>\n");
    summary(o, dir, rd, r, p);
    bmt_out_str(o, "<h2>Message send &rarr; receiver scheduled in</h2><div class=\"charts\">");
    bmt_svg_quantize(o, &r->sched.hist, "send -> scheduled in latency");
    bmt_out_str(o, "</div>\n");
    functions(o, r, order);
    procs_gc(o, r);
    bmt_out_str(o, "<h2>Flame graph</h2><p class=\"note\">Self time per call stack; click a frame "
                   "to zoom, hover for times.</p>\n");
    int rc = bmt_flame_svg(o, &r->calls.cs, "time per call stack", 1200, 0);
    timeline(o, r, p);
    bmt_out_str(o, "<p class=\"note\">Generated by beamtrace report.</p></body></html>\n");
    free(order);
    return rc;
}

static int parse_opt(void *ctx, int code, const char *arg)
{
    if (code != 'o')
        return bmt_cli_usage_error("report", "unknown option");
    *(const char **)ctx = arg;
    return 0;
}

int bmt_cmd_report(int argc, char **argv)
{
    static const struct option extra[] = {
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *dir;
    int rc = bmt_an_parse_args("report", argc, argv, extra, "o:", parse_opt, &out, NULL, &dir);
    if (rc || !dir)
        return rc;
    if (!out)
        return bmt_cli_usage_error("report", "no output file given (-o report.html)");
    struct report r;
    memset(&r, 0, sizeof r);
    bmt_calls_init(&r.calls);
    r.calls.cs.tree = 1;
    bmt_sched_init(&r.sched);
    bmt_gc_init(&r.gc);
    bmt_procs_init(&r.procs);
    bmt_strtab_init(&r.lane_pids);
    r.lanes = calloc(LANES, sizeof *r.lanes);
    struct bmt_reader rd;
    struct bmt_an_pass pass;
    int status = BMT_EXIT_FAIL;
    memset(&rd, 0, sizeof rd);
    if (!r.lanes) {
        bmt_cli_error("out of memory; free some memory");
        goto done;
    }
    rc = bmt_an_run(&rd, dir, feed, &r, &pass);
    if (rc == 0 && bmt_calls_finish(&r.calls, pass.last_ns) < 0) {
        rc = -ENOMEM;
        snprintf(rd.error, sizeof rd.error, "out of memory; free some memory");
    }
    if (rc < 0) {
        bmt_an_fail(dir, &rd);
        goto done;
    }
    for (uint32_t i = 0; i < r.lane_pids.count; i++)
        if (r.lanes[i].in_ns)
            lane_add(&r.lanes[i], r.lanes[i].in_ns - 1, pass.last_ns);
    struct bmt_out o;
    if (bmt_an_out_open(&o, out) != 0)
        goto done;
    rc = write_report(&o, dir, &rd, &r, &pass);
    if (rc < 0)
        bmt_cli_error("out of memory; free some memory");
    status = bmt_an_out_close(&o, out);
    if (rc < 0)
        status = BMT_EXIT_FAIL;
done:
    bmt_calls_free(&r.calls);
    bmt_sched_free(&r.sched);
    bmt_gc_free(&r.gc);
    bmt_procs_free(&r.procs);
    bmt_strtab_free(&r.lane_pids);
    free(r.lanes);
    bmt_reader_close(&rd);
    return status;
}
