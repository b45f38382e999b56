/* `beamtrace stats`: one pass over a trace, counting events (and the bytes
 * they take, header included: what sizes a trace) per tracepoint,
 * drops and lost packets, and the time span.
 *
 * Why streams one after another rather than the time-ordered merge: counts
 * and the span do not depend on order, and walking each mapping
 * sequentially skips the heap and keeps the prefetcher busy. String fields
 * are only measured (memchr for the NUL), never printed or copied.
 */
#include "model/analysis.h"
#include "cli.h"
#include "base/out.h"
#include "ctf/reader.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct stats {
    uint64_t *counts;           /* per event class (global index) */
    uint64_t *bits;             /* per event class: bits its events take */
    const char **names;         /* rows: distinct event names with events */
    uint64_t *row_counts;
    uint64_t *row_bits;
    unsigned row_count;
    uint64_t event_count;
    uint64_t discarded_count;
    uint64_t lost_packet_count;
    uint64_t packet_count;
    uint64_t first_ns, last_ns; /* trace clock; valid when event_count > 0 */
};

static int collect(struct bmt_reader *r, struct stats *st)
{
    memset(st, 0, sizeof *st);
    st->first_ns = UINT64_MAX;
    unsigned n = r->event_class_count + 1;
    st->counts = calloc(n, sizeof *st->counts);
    st->names = calloc(n, sizeof *st->names);
    st->row_counts = calloc(n, sizeof *st->row_counts);
    st->bits = calloc(n, sizeof *st->bits);
    st->row_bits = calloc(n, sizeof *st->row_bits);
    if (!st->counts || !st->names || !st->row_counts || !st->bits || !st->row_bits) {
        snprintf(r->error, sizeof r->error, "out of memory; free some memory");
        return -ENOMEM;
    }
    for (unsigned s = 0; s < r->stream_count; s++) {
        const struct bmt_record *rec;
        uint64_t first = UINT64_MAX, last = 0;
        int rc;
        uint32_t base = r->streams[s].trace->event_base;
        while ((rc = bmt_reader_stream_next(r, s, &rec)) == 1) {
            st->counts[base + rec->ec->index]++;
            st->bits[base + rec->ec->index] += rec->bits;
            if (rec->ts_ns < first)
                first = rec->ts_ns;
            if (rec->ts_ns > last)
                last = rec->ts_ns;
        }
        if (rc < 0)
            return rc;
        if (first < st->first_ns)
            st->first_ns = first;
        if (first != UINT64_MAX && last > st->last_ns)
            st->last_ns = last;
        st->discarded_count += r->streams[s].discarded_count;
        st->lost_packet_count += r->streams[s].lost_packet_count;
        st->packet_count += r->streams[s].packet_count;
    }
    /* One row per event name (several traces may declare the same). */
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        for (unsigned e = 0; e < m->event_count; e++) {
            uint64_t c = st->counts[r->traces[t].event_base + e];
            if (!c)
                continue;
            unsigned row = 0;
            while (row < st->row_count && strcmp(st->names[row], m->events[e]->name) != 0)
                row++;
            if (row == st->row_count)
                st->names[st->row_count++] = m->events[e]->name;
            st->row_counts[row] += c;
            st->row_bits[row] += st->bits[r->traces[t].event_base + e];
            st->event_count += c;
        }
    }
    return 0;
}

static void free_stats(struct stats *st)
{
    free(st->counts);
    free(st->names);
    free(st->row_counts);
    free(st->bits);
    free(st->row_bits);
}

static const struct stats *sort_stats;

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

static int report(struct bmt_out *o, const char *dir, const struct bmt_reader *r,
                   const struct stats *st, int json)
{
    unsigned *order = malloc((st->row_count + 1) * sizeof *order), n = 0;
    if (!order)
        return -ENOMEM;
    for (unsigned i = 0; i < st->row_count; i++)
        order[n++] = i;
    sort_stats = st;
    qsort(order, n, sizeof order[0], by_count_desc);

    uint64_t duration_ns = st->event_count ? st->last_ns - st->first_ns : 0;
    double rate = duration_ns ? (double)st->event_count * 1e9 / (double)duration_ns : 0.0;
    char buf[128], first[64] = "-", last[64] = "-";
    if (st->event_count) {
        bmt_an_date_text(r, st->first_ns, first);
        bmt_an_date_text(r, st->last_ns, last);
    }

    if (json) {
        bmt_out_str(o, "{\"trace\": ");
        bmt_out_json_string(o, dir, strlen(dir));
        if (r->cluster) { /* the traced nodes, in trace order */
            bmt_out_str(o, ", \"nodes\": [");
            for (unsigned t = 0; t < r->trace_count; t++) {
                const char *node = bmt_strtab_str(&r->nodes.names, r->nodes.trace_node[t]);
                bmt_out_str(o, t ? ", " : "");
                bmt_out_json_string(o, node, strlen(node));
            }
            bmt_out_char(o, ']');
        }
        bmt_out_str(o, ", \"streams\": ");
        bmt_out_u64(o, r->stream_count);
        bmt_out_str(o, ", \"packets\": ");
        bmt_out_u64(o, st->packet_count);
        bmt_out_str(o, ", \"events\": ");
        bmt_out_u64(o, st->event_count);
        bmt_out_str(o, ", \"discarded_events\": ");
        bmt_out_u64(o, st->discarded_count);
        bmt_out_str(o, ", \"lost_packets\": ");
        bmt_out_u64(o, st->lost_packet_count);
        if (st->event_count) {
            bmt_out_str(o, ", \"first_ns\": ");
            bmt_out_u64(o, st->first_ns);
            bmt_out_str(o, ", \"last_ns\": ");
            bmt_out_u64(o, st->last_ns);
            snprintf(buf, sizeof buf, ", \"first_unix_ns\": %lld, \"last_unix_ns\": %lld",
                     (long long)bmt_reader_wall_ns(r, st->first_ns),
                     (long long)bmt_reader_wall_ns(r, st->last_ns));
            bmt_out_str(o, buf);
        } else {
            bmt_out_str(o, ", \"first_ns\": null, \"last_ns\": null, \"first_unix_ns\": null, "
                           "\"last_unix_ns\": null");
        }
        bmt_out_str(o, ", \"duration_ns\": ");
        bmt_out_u64(o, duration_ns);
        snprintf(buf, sizeof buf, ", \"events_per_second\": %.3f", rate);
        bmt_out_str(o, buf);
        bmt_out_str(o, ", \"tracepoints\": [");
        for (unsigned k = 0; k < n; k++) {
            unsigned i = order[k];
            bmt_out_str(o, k ? ",\n  {\"name\": " : "\n  {\"name\": ");
            bmt_out_json_string(o, st->names[i], strlen(st->names[i]));
            bmt_out_str(o, ", \"events\": ");
            bmt_out_u64(o, st->row_counts[i]);
            snprintf(buf, sizeof buf, ", \"percent\": %.2f, \"bytes_per_event\": %.2f}",
                     100.0 * (double)st->row_counts[i] / (double)st->event_count,
                     (double)st->row_bits[i] / 8.0 / (double)st->row_counts[i]);
            bmt_out_str(o, buf);
        }
        bmt_out_str(o, n ? "\n]}\n" : "]}\n");
        free(order);
        return 0;
    }

    snprintf(buf, sizeof buf, "%-14s", "trace");
    bmt_out_str(o, buf);
    bmt_out_str(o, dir);
#define LINE(label, fmt, ...)                                                         \
    do {                                                                              \
        snprintf(buf, sizeof buf, "\n%-14s" fmt, label, __VA_ARGS__);                 \
        bmt_out_str(o, buf);                                                          \
    } while (0)
    for (unsigned t = 0; r->cluster && t < r->trace_count; t++) {
        snprintf(buf, sizeof buf, "\n%-14s", t ? "" : "nodes");
        bmt_out_str(o, buf);
        bmt_out_str(o, bmt_strtab_str(&r->nodes.names, r->nodes.trace_node[t]));
    }
    LINE("streams", "%u", r->stream_count);
    LINE("packets", "%llu", (unsigned long long)st->packet_count);
    LINE("events", "%llu", (unsigned long long)st->event_count);
    LINE("discarded", "%llu", (unsigned long long)st->discarded_count);
    LINE("lost packets", "%llu", (unsigned long long)st->lost_packet_count);
    LINE("first", "%s", first);
    LINE("last", "%s", last);
    LINE("duration", "%llu.%09llu s", (unsigned long long)(duration_ns / 1000000000),
         (unsigned long long)(duration_ns % 1000000000));
    LINE("rate", "%.1f events/s", rate);
#undef LINE
    bmt_out_str(o, "\n\n");
    size_t w = strlen("TRACEPOINT");
    for (unsigned k = 0; k < n; k++) {
        size_t l = strlen(st->names[order[k]]);
        w = l > w ? l : w;
    }
    snprintf(buf, sizeof buf, "%-*s %14s %7s %9s\n", (int)w, "TRACEPOINT", "EVENTS", "%", "BYTES/EV");
    bmt_out_str(o, buf);
    for (unsigned k = 0; k < n; k++) {
        unsigned i = order[k];
        snprintf(buf, sizeof buf, "%-*s %14llu %7.2f %9.1f\n", (int)w, st->names[i],
                 (unsigned long long)st->row_counts[i],
                 100.0 * (double)st->row_counts[i] / (double)st->event_count,
                 (double)st->row_bits[i] / 8.0 / (double)st->row_counts[i]);
        bmt_out_str(o, buf);
    }
    free(order);
    return 0;
}

int bmt_cmd_stats(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f':
            if (bmt_cli_parse_format("stats", optarg, &json) != 0)
                return BMT_EXIT_USAGE;
            break;
        case 'h':
            bmt_cli_print_usage("stats");
            return BMT_EXIT_OK;
        case ':':
            return bmt_cli_usage_error("stats", "option '%s' needs a value", argv[optind - 1]);
        default:
            return bmt_cli_usage_error("stats", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind == argc)
        return bmt_cli_usage_error("stats", "no trace directory given");
    char dir[512];
    bmt_reader_label((const char *const *)argv + optind, (unsigned)(argc - optind), dir, sizeof dir);
    tzset();
    struct bmt_reader r;
    struct stats st;
    memset(&st, 0, sizeof st);
    int status = BMT_EXIT_FAIL;
    int rc = bmt_reader_open(&r, (const char *const *)argv + optind, (unsigned)(argc - optind));
    /* Counts and sizes only: no field is read. */
    static const struct bmt_field_set no_fields;
    if (rc == 0)
        rc = bmt_reader_select(&r, &no_fields);
    if (rc == 0)
        rc = collect(&r, &st);
    /* The same line as the analyses give (analysis.c): more than 30 days. */
    if (rc == 0 && st.event_count && st.last_ns - st.first_ns > 30ull * 86400 * 1000000000) {
        char a[64], b[64];
        bmt_an_date_text(&r, st.first_ns, a);
        bmt_an_date_text(&r, st.last_ns, b);
        bmt_reader_warn(&r, "%s: the events span %.1f days (%s to %s): a corrupt or unusual trace",
                        dir, (double)(st.last_ns - st.first_ns) / 86400e9, a, b);
    }
    if (rc < 0) {
        bmt_cli_error("%s: %s", dir, r.error);
    } else {
        struct bmt_out o;
        if (bmt_out_open(&o, 1, 1 << 16) < 0) {
            bmt_cli_error("%s: out of memory; free some memory", dir);
        } else {
            int rrc = report(&o, dir, &r, &st, json);
            if (rrc < 0) {
                bmt_out_close(&o);
                bmt_cli_error("%s: out of memory; free some memory", dir);
            } else if (bmt_out_close(&o) < 0)
                bmt_cli_error("%s: cannot write the output; check the disk or pipe", dir);
            else
                status = BMT_EXIT_OK;
        }
    }
    free_stats(&st);
    bmt_reader_close(&r);
    return status;
}
