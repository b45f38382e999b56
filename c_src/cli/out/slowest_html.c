/* The slowest functions section (contract in slowest_html.h). */
#include "slowest_html.h"
#include "html.h"
#include "model/calls_reading.h"
#include "model/elixir.h"
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>

const char bmt_slowest_css[] =
    "table.slowest{width:100%;font-size:13px}table.slowest td{vertical-align:top}"
    "td.where{width:60%;text-align:left}"
    /* div.bar: a bare .bar also sized the SVG histograms' rect.bar to 18 px. */
    "div.bar{display:flex;height:18px;background:#eee;overflow:hidden}"
    ".seg{flex:none;box-sizing:border-box;height:100%;overflow:hidden;color:#fff;"
    "font-size:11px;line-height:18px;text-align:center;white-space:nowrap}"
    ".seg.on-cpu{background:#2ca02c}.seg.runnable{background:#d62728}"
    ".seg.waiting{background:#1f77b4}.seg.off-cpu{background:#9467bd}"
    ".seg.gc{background:#ff7f0e}.seg.unknown{background:#aaa}"
    ".reading{font-weight:bold;margin:2px 0 4px}"
    ".key{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}";

/* The bar: one segment per share, its width the share of the total. */
static void bar(struct bmt_out *o, const struct bmt_share *s, unsigned n)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += s[i].ns;
    bmt_out_str(o, "<div class=\"bar\">");
    for (unsigned i = 0; i < n && total; i++) {
        double share = (double)s[i].ns / (double)total;
        char d[32], buf[320];
        bmt_duration_text(s[i].ns, d);
        snprintf(buf, sizeof buf,
                 "<span class=\"seg %s\" data-kind=\"%s\" data-share=\"%.6f\" "
                 "style=\"width:%.4f%%\" title=\"%s %.1f%% (%s)\">",
                 s[i].key, s[i].key, share, 100.0 * share, s[i].label, 100.0 * share, d);
        bmt_out_str(o, buf);
        if (share >= 0.06) {
            snprintf(buf, sizeof buf, "%.0f%%", 100.0 * share);
            bmt_out_str(o, buf);
        }
        bmt_out_str(o, "</span>");
    }
    bmt_out_str(o, "</div>");
}

static void cell_dur(struct bmt_out *o, const char *cls, uint64_t ns)
{
    char d[32];
    bmt_duration_text(ns, d);
    bmt_out_str(o, "<td class=\"");
    bmt_out_str(o, cls);
    bmt_out_str(o, "\">");
    bmt_out_str(o, d);
    bmt_out_str(o, "</td>");
}

/* One function's row: name, calls, p50, p99, the bar and its reading. */
static void row(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *f)
{
    char fn[600], line[1400];
    struct bmt_share s[BMT_SHARES_MAX];
    unsigned n = bmt_calls_shares(c, f, s);
    bmt_elixir_mfa(bmt_strtab_str(&c->cs.funcs, f->func), bmt_strtab_len(&c->cs.funcs, f->func),
                   fn, sizeof fn);
    bmt_out_str(o, "<tr class=\"func\"><td class=\"l name\">");
    bmt_html_cstr(o, fn);
    bmt_out_str(o, "</td><td>");
    bmt_out_u64(o, f->hist.count);
    bmt_out_str(o, "</td>");
    cell_dur(o, "p50", bmt_hist_quantile(&f->hist, 0.5));
    cell_dur(o, "p99", bmt_hist_quantile(&f->hist, 0.99));
    bmt_out_str(o, "<td class=\"where\">");
    bar(o, s, n);
    bmt_calls_reading(c, f, line, sizeof line);
    bmt_out_str(o, "<div class=\"reading\">");
    bmt_html_cstr(o, line);
    bmt_out_str(o, "</div></td></tr>");
}

/* The colour key, for the kinds the trace tells apart. */
static void key(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_fstat *f)
{
    struct bmt_share s[BMT_SHARES_MAX];
    unsigned n = bmt_calls_shares(c, f, s);
    bmt_out_str(o, "<p class=\"note\">Each bar is where a function's time went, its callees "
                   "included:");
    for (unsigned i = 0; i < n; i++) {
        bmt_out_str(o, "<span class=\"key seg ");
        bmt_out_str(o, s[i].key);
        bmt_out_str(o, "\"></span>");
        bmt_out_str(o, s[i].label);
    }
    bmt_out_str(o, ". Runnable: ready but not running; waiting: for a message or a "
                   "timeout.");
    struct bmt_calls_lacks l = bmt_calls_lacking(c);
    if (l.sched)
        bmt_out_str(o, " The trace has no process_scheduled events (the running flag): where "
                       "the time went is unknown.");
    else if (l.receive)
        bmt_out_str(o, " The trace has no message_receive events (the 'receive' flag): off-CPU "
                       "time is not split into runnable and waiting.");
    if (l.gc && !l.sched)
        bmt_out_str(o, " The trace has no gc events (the garbage_collection flag): collections "
                       "count as on CPU.");
    bmt_out_str(o, "</p>");
}

int bmt_slowest_html(struct bmt_out *o, const struct bmt_calls *c, unsigned max)
{
    uint32_t order[64];
    uint32_t n = bmt_calls_slowest_funcs(c, order, max < 64 ? max : 64);
    bmt_out_str(o, "<h2>Slowest functions (by p99 call latency)</h2>");
    if (!n) {
        bmt_out_str(o, "<p class=\"note\">No finished calls: trace with the call flag and "
                       "erlang:trace_pattern/3 (return_trace in the match spec).</p>\n");
        return 0;
    }
    uint32_t widest = order[0];  /* the row with the most kinds (unknown time) */
    struct bmt_share s[BMT_SHARES_MAX];
    for (uint32_t i = 1; i < n; i++)
        if (bmt_calls_shares(c, &c->stats[order[i]], s) > bmt_calls_shares(c, &c->stats[widest], s))
            widest = order[i];
    key(o, c, &c->stats[widest]);
    bmt_out_str(o, "<table class=\"slowest\"><tr><th class=\"l\">function</th><th>calls</th>"
                   "<th>p50</th><th>p99</th><th class=\"l\">where its time went</th></tr>");
    for (uint32_t i = 0; i < n; i++)
        row(o, c, &c->stats[order[i]]);
    bmt_out_str(o, "</table>\n");
    return 0;
}
