/* `beamtrace stats`: one pass over a trace, counting events (and the bytes
 * they take, header included: what sizes a trace) per tracepoint,
 * drops and lost packets, and the time span.
 *
 * The counting is model/tally.c. A sampled trace (sample_ratio events, or
 * a capture's ratios) is read a second time, in time order, to give each
 * tracepoint's events scaled back by the ratio in force at each (a column
 * SCALED, and events_scaled in JSON, with which tracepoints were sampled);
 * EVENTS, percent and bytes stay what the trace holds.
 */
#include "options.h"
#include "model/run.h"
#include "model/tally.h"
#include "out/json.h"
#include "base/out.h"
#include "base/timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct bmt_tally *sort_stats;

static int by_count_desc(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    if (sort_stats->row_counts[x] != sort_stats->row_counts[y])
        return sort_stats->row_counts[x] > sort_stats->row_counts[y] ? -1 : 1;
    int c = bmt_catalogue_find(sort_stats->names[x]), d = bmt_catalogue_find(sort_stats->names[y]);
    if (c != d) /* catalogue order first, then by name */
        return (unsigned)c < (unsigned)d ? -1 : 1;
    return strcmp(sort_stats->names[x], sort_stats->names[y]);
}

/* What is printed: the counts, their rows in order, and the span. */
struct printing {
    const char *dir;
    const struct bmt_reader *r;
    const struct bmt_tally *st;
    const unsigned *order;
    unsigned n;
    uint64_t duration_ns;
    double rate;
};

static void json_tracepoints(struct bmt_out *o, const struct printing *p)
{
    char buf[128];
    bmt_out_str(o, ", \"tracepoints\": [");
    for (unsigned k = 0; k < p->n; k++) {
        unsigned i = p->order[k];
        bmt_out_str(o, k ? ",\n  {\"name\": " : "\n  {\"name\": ");
        bmt_json_cstr(o, p->st->names[i]);
        bmt_out_str(o, ", \"events\": ");
        bmt_out_u64(o, p->st->row_counts[i]);
        bmt_out_str(o, ", \"events_scaled\": ");
        bmt_out_u64(o, p->st->row_scaled ? p->st->row_scaled[i] : p->st->row_counts[i]);
        bmt_out_str(o, p->st->row_sampled && p->st->row_sampled[i] ? ", \"sampled\": true"
                                                                  : ", \"sampled\": false");
        snprintf(buf, sizeof buf, ", \"percent\": %.2f, \"bytes_per_event\": %.2f}",
                 100.0 * (double)p->st->row_counts[i] / (double)p->st->event_count,
                 (double)p->st->row_bits[i] / 8.0 / (double)p->st->row_counts[i]);
        bmt_out_str(o, buf);
    }
    bmt_out_str(o, p->n ? "\n]}\n" : "]}\n");
}

static void print_json(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_reader *r = p->r;
    const struct bmt_tally *st = p->st;
    char buf[300];
    bmt_out_str(o, "{\"trace\": ");
    bmt_json_cstr(o, p->dir);
    if (r->cluster) { /* the traced nodes, in trace order */
        bmt_out_str(o, ", \"nodes\": [");
        for (unsigned t = 0; t < r->trace_count; t++) {
            bmt_out_str(o, t ? ", " : "");
            bmt_json_cstr(o, bmt_strtab_str(&r->nodes.names, r->nodes.trace_node[t]));
        }
        bmt_out_char(o, ']');
    }
    snprintf(buf, sizeof buf, ", \"streams\": %u, \"packets\": %llu, \"events\": %llu, "
             "\"discarded_events\": %llu, \"lost_packets\": %llu", r->stream_count,
             (unsigned long long)st->packet_count, (unsigned long long)st->event_count,
             (unsigned long long)st->discarded_count, (unsigned long long)st->lost_packet_count);
    bmt_out_str(o, buf);
    if (st->event_count)
        snprintf(buf, sizeof buf, ", \"first_ns\": %llu, \"last_ns\": %llu, \"first_unix_ns\": "
                 "%lld, \"last_unix_ns\": %lld", (unsigned long long)st->first_ns,
                 (unsigned long long)st->last_ns, (long long)bmt_reader_wall_ns(r, st->first_ns),
                 (long long)bmt_reader_wall_ns(r, st->last_ns));
    else
        snprintf(buf, sizeof buf, ", \"first_ns\": null, \"last_ns\": null, \"first_unix_ns\": "
                 "null, \"last_unix_ns\": null");
    bmt_out_str(o, buf);
    snprintf(buf, sizeof buf, ", \"duration_ns\": %llu, \"events_per_second\": %.3f",
             (unsigned long long)p->duration_ns, p->rate);
    bmt_out_str(o, buf);
    const struct bmt_sampled *sd = &st->ratios;
    if (sd->ratio_max) {
        snprintf(buf, sizeof buf, ", \"sampling\": {\"ratio_max\": %u, \"scaled_back\": true, "
                 "\"kinds\": ", sd->ratio_max);
        bmt_out_str(o, buf);
        bmt_json_cstr(o, sd->kinds);
        bmt_out_char(o, '}');
    } else {
        bmt_out_str(o, ", \"sampling\": null");
    }
    json_tracepoints(o, p);
}

/* "label         value" lines. */
static void line(struct bmt_out *o, const char *label, const char *value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "\n%-14s", label);
    bmt_out_str(o, buf);
    bmt_out_str(o, value);
}

static void text_summary(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_reader *r = p->r;
    const struct bmt_tally *st = p->st;
    char buf[128], v[96], first[64] = "-", last[64] = "-";
    if (st->event_count) {
        bmt_date_text(bmt_reader_wall_ns(r, st->first_ns), first);
        bmt_date_text(bmt_reader_wall_ns(r, st->last_ns), last);
    }
    snprintf(buf, sizeof buf, "%-14s", "trace");
    bmt_out_str(o, buf);
    bmt_out_str(o, p->dir);
    for (unsigned t = 0; r->cluster && t < r->trace_count; t++)
        line(o, t ? "" : "nodes", bmt_strtab_str(&r->nodes.names, r->nodes.trace_node[t]));
    snprintf(v, sizeof v, "%u", r->stream_count), line(o, "streams", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)st->packet_count), line(o, "packets", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)st->event_count), line(o, "events", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)st->discarded_count), line(o, "discarded", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)st->lost_packet_count);
    line(o, "lost packets", v);
    line(o, "first", first);
    line(o, "last", last);
    snprintf(v, sizeof v, "%llu.%09llu s", (unsigned long long)(p->duration_ns / 1000000000),
             (unsigned long long)(p->duration_ns % 1000000000));
    line(o, "duration", v);
    snprintf(v, sizeof v, "%.1f events/s", p->rate), line(o, "rate", v);
    if (st->ratios.ratio_max) {
        snprintf(v, sizeof v, "1/%u at most, of %.60s events", st->ratios.ratio_max,
                 st->ratios.kinds);
        line(o, "sampled", v);
        line(o, "", "SCALED: the events scaled back by the ratio in force at each (* sampled)");
    }
    bmt_out_str(o, "\n\n");
}

static void print_text(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_tally *st = p->st;
    char buf[600];
    text_summary(o, p);
    size_t w = strlen("TRACEPOINT");
    for (unsigned k = 0; k < p->n; k++) {
        size_t l = strlen(st->names[p->order[k]]);
        w = l > w ? l : w;
    }
    int scaled = st->ratios.ratio_max > 0;
    snprintf(buf, sizeof buf, "%-*s %14s %7s %9s%s\n", (int)w, "TRACEPOINT", "EVENTS", "%",
             "BYTES/EV", scaled ? "         SCALED" : "");
    bmt_out_str(o, buf);
    for (unsigned k = 0; k < p->n; k++) {
        unsigned i = p->order[k];
        snprintf(buf, sizeof buf, "%-*s %14llu %7.2f %9.1f", (int)w, st->names[i],
                 (unsigned long long)st->row_counts[i],
                 100.0 * (double)st->row_counts[i] / (double)st->event_count,
                 (double)st->row_bits[i] / 8.0 / (double)st->row_counts[i]);
        bmt_out_str(o, buf);
        if (scaled) {
            snprintf(buf, sizeof buf, " %14llu%s", (unsigned long long)st->row_scaled[i],
                     st->row_sampled[i] ? "*" : "");
            bmt_out_str(o, buf);
        }
        bmt_out_char(o, '\n');
    }
}

static int report(struct bmt_out *o, const char *dir, const struct bmt_reader *r,
                  const struct bmt_tally *st, int json)
{
    unsigned *order = malloc((st->row_count + 1) * sizeof *order);
    if (!order)
        return -ENOMEM;
    for (unsigned i = 0; i < st->row_count; i++)
        order[i] = i;
    sort_stats = st;
    qsort(order, st->row_count, sizeof order[0], by_count_desc);
    uint64_t duration_ns = st->event_count ? st->last_ns - st->first_ns : 0;
    struct printing p = {dir, r, st, order, st->row_count, duration_ns,
                         duration_ns ? (double)st->event_count * 1e9 / (double)duration_ns : 0.0};
    if (json)
        print_json(o, &p);
    else
        print_text(o, &p);
    free(order);
    return 0;
}

/* The same line as the analyses give (model/run.c): more than 30 days. */
static void warn_span(struct bmt_reader *r, const char *dir, const struct bmt_tally *st)
{
    if (!st->event_count || st->last_ns - st->first_ns <= 30ull * 86400 * 1000000000)
        return;
    char a[64], b[64];
    bmt_date_text(bmt_reader_wall_ns(r, st->first_ns), a);
    bmt_date_text(bmt_reader_wall_ns(r, st->last_ns), b);
    bmt_reader_warn(r, "%s: the events span %.1f days (%s to %s): a corrupt or unusual trace",
                    dir, (double)(st->last_ns - st->first_ns) / 86400e9, a, b);
}

static int run(void *opts)
{
    const struct bmt_common *c = opts;
    const char *dir = c->label;
    struct bmt_reader r;
    struct bmt_tally st;
    memset(&st, 0, sizeof st);
    int status = BMT_EXIT_FAIL;
    /* Counts and sizes only: no field is decoded. */
    static const struct bmt_field_set no_fields;
    int rc = bmt_reader_open(&r, c->dirs.v, c->dirs.n);
    if (rc == 0)
        rc = bmt_reader_select(&r, &no_fields);
    if (rc == 0)
        bmt_an_warn_incomplete(&r, dir);
    if (rc == 0 && (rc = bmt_tally_collect(&r, &st)) == 0)
        warn_span(&r, dir, &st);
    if (rc == 0 && bmt_tally_is_sampled(&r, &st)) { /* a second pass, in time order */
        struct bmt_reader again;
        if ((rc = bmt_tally_scale(&again, c->dirs.v, c->dirs.n, &st)) < 0)
            snprintf(r.error, sizeof r.error, "%s", again.error);
        bmt_reader_close(&again);
    }
    struct bmt_out o;
    if (rc < 0) {
        bmt_cli_error("%s: %s", dir, r.error);
    } else if (bmt_out_open(&o, 1, 1 << 16) < 0) {
        bmt_cli_error("%s: out of memory; free some memory", dir);
    } else if (report(&o, dir, &r, &st, c->format == 1) < 0) {
        bmt_out_close(&o);
        bmt_cli_error("%s: out of memory; free some memory", dir);
    } else if (bmt_out_close(&o) < 0) {
        bmt_cli_error("%s: cannot write the output; check the disk or pipe", dir);
    } else {
        status = BMT_EXIT_OK;
    }
    bmt_tally_free(&st);
    bmt_reader_close(&r);
    return status;
}

const struct bmt_command bmt_cmd_stats = {
    .name = "stats",
    .summary = "count events per tracepoint, drops and rates",
    .description =
        "Reads the trace in DIR in one pass and prints events per tracepoint\n"
        "(most frequent first, with percent and bytes per event, header included),\n"
        "the total, discarded events, lost packets, first and last timestamps,\n"
        "duration, event rate and stream count.",
    .uses = BMT_USES_FORMAT | BMT_USES_DIRS,
    .size = sizeof(struct bmt_common),
    .run = run,
};
