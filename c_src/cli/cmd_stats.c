/* `beamtrace stats`: one pass over a trace, counting events per tracepoint,
 * drops and lost packets, and the time span.
 *
 * Why streams one after another rather than the time-ordered merge: counts
 * and the span do not depend on order, and walking each mapping
 * sequentially skips the heap and keeps the prefetcher busy. String fields
 * are only measured (memchr for the NUL), never printed or copied.
 */
#include "cli.h"
#include "out.h"
#include "reader.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct stats {
    uint64_t counts[BMT_TP_COUNT];
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
    for (unsigned s = 0; s < r->stream_count; s++) {
        const struct bmt_record *rec;
        uint64_t first = UINT64_MAX, last = 0;
        int rc;
        while ((rc = bmt_reader_stream_next(r, s, &rec)) == 1) {
            st->counts[rec->tp]++;
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
    for (int i = 0; i < BMT_TP_COUNT; i++)
        st->event_count += st->counts[i];
    return 0;
}

static void wall_text(const struct bmt_reader *r, uint64_t ts_ns, char out[64])
{
    int64_t s, ns;
    bmt_wall_split(bmt_reader_wall_ns(r, ts_ns), &s, &ns);
    struct tm tm;
    time_t t = (time_t)s;
    char date[40];
    if (!localtime_r(&t, &tm) || strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        strcpy(date, "?");
    snprintf(out, 64, "%s.%09lld", date, (long long)ns);
}

static const struct stats *sort_stats;

static int by_count_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (sort_stats->counts[x] != sort_stats->counts[y])
        return sort_stats->counts[x] > sort_stats->counts[y] ? -1 : 1;
    return x - y;
}

static void report(struct bmt_out *o, const char *dir, const struct bmt_reader *r,
                   const struct stats *st, int json)
{
    int order[BMT_TP_COUNT], n = 0;
    for (int i = 0; i < BMT_TP_COUNT; i++)
        if (st->counts[i])
            order[n++] = i;
    sort_stats = st;
    qsort(order, (size_t)n, sizeof order[0], by_count_desc);

    uint64_t duration_ns = st->event_count ? st->last_ns - st->first_ns : 0;
    double rate = duration_ns ? (double)st->event_count * 1e9 / (double)duration_ns : 0.0;
    char buf[128], first[64] = "-", last[64] = "-";
    if (st->event_count) {
        wall_text(r, st->first_ns, first);
        wall_text(r, st->last_ns, last);
    }

    if (json) {
        bmt_out_str(o, "{\"trace\": ");
        bmt_out_json_string(o, dir, strlen(dir));
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
        for (int k = 0; k < n; k++) {
            int i = order[k];
            bmt_out_str(o, k ? ",\n  {\"name\": " : "\n  {\"name\": ");
            bmt_out_json_string(o, bmt_catalogue[i].full_name, strlen(bmt_catalogue[i].full_name));
            bmt_out_str(o, ", \"events\": ");
            bmt_out_u64(o, st->counts[i]);
            snprintf(buf, sizeof buf, ", \"percent\": %.2f}",
                     100.0 * (double)st->counts[i] / (double)st->event_count);
            bmt_out_str(o, buf);
        }
        bmt_out_str(o, n ? "\n]}\n" : "]}\n");
        return;
    }

    snprintf(buf, sizeof buf, "%-14s", "trace");
    bmt_out_str(o, buf);
    bmt_out_str(o, dir);
#define LINE(label, fmt, ...)                                                         \
    do {                                                                              \
        snprintf(buf, sizeof buf, "\n%-14s" fmt, label, __VA_ARGS__);                 \
        bmt_out_str(o, buf);                                                          \
    } while (0)
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
    for (int k = 0; k < n; k++) {
        size_t l = strlen(bmt_catalogue[order[k]].full_name);
        w = l > w ? l : w;
    }
    snprintf(buf, sizeof buf, "%-*s %14s %7s\n", (int)w, "TRACEPOINT", "EVENTS", "%");
    bmt_out_str(o, buf);
    for (int k = 0; k < n; k++) {
        int i = order[k];
        snprintf(buf, sizeof buf, "%-*s %14llu %7.2f\n", (int)w, bmt_catalogue[i].full_name,
                 (unsigned long long)st->counts[i],
                 100.0 * (double)st->counts[i] / (double)st->event_count);
        bmt_out_str(o, buf);
    }
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
    if (optind != argc - 1)
        return bmt_cli_usage_error("stats", optind == argc ? "no trace directory given"
                                                           : "expected one trace directory, got %d",
                                   argc - optind);
    const char *dir = argv[optind];
    tzset();
    struct bmt_reader r;
    struct stats st;
    int status = BMT_EXIT_FAIL;
    int rc = bmt_reader_open(&r, dir);
    if (rc == 0)
        rc = collect(&r, &st);
    if (rc < 0) {
        bmt_cli_error("%s: %s", dir, r.error);
    } else {
        struct bmt_out o;
        if (bmt_out_open(&o, 1, 1 << 16) < 0) {
            bmt_cli_error("%s: out of memory; free some memory", dir);
        } else {
            report(&o, dir, &r, &st, json);
            if (bmt_out_close(&o) < 0)
                bmt_cli_error("%s: cannot write the output; check the disk or pipe", dir);
            else
                status = BMT_EXIT_OK;
        }
    }
    bmt_reader_close(&r);
    return status;
}
