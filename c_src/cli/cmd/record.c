/* `beamtrace record`: the command line (the live client is record/). */
#include "cli.h"
#include "record/record.h"
#include "base/units.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CMD "record"

/* ---- option values ---- */

/* "10s", "500ms", "2m", "1h", "1.5s" (base/units.h: the unit is
 * required), or "infinity". Returns 0 and *ms (-1 for infinity), or -1. */
static int parse_duration(const char *s, int64_t *ms)
{
    uint64_t ns;
    if (strcmp(s, "infinity") == 0) {
        *ms = -1;
        return 0;
    }
    if (bmt_parse_duration_ns(s, &ns) != 0 || ns < 1000000 || ns / 1000000 > 1000000000000000)
        return -1;
    *ms = (int64_t)(ns / 1000000);
    return 0;
}

/* "1000", "64K", "64KiB", "10M", "1G" (powers of 1024). */
static int parse_size(const char *s, int64_t *bytes)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0 || *s == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10, end++; break;
    case 'm': case 'M': shift = 20, end++; break;
    case 'g': case 'G': shift = 30, end++; break;
    default: return -1;
    }
    if (*end && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0)
        return -1;
    if (v > (UINT64_C(1) << 62) >> shift)
        return -1;
    *bytes = (int64_t)(v << shift);
    return 0;
}

static int parse_count(const char *s, int64_t *n)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v <= 0)
        return -1;
    *n = v;
    return 0;
}

int bmt_cmd_record(int argc, char **argv)
{
    enum { O_NODE = 256, O_NODES, O_CLUSTER, O_LINKS, O_COOKIE, O_CALLS, O_PROCS, O_EVENTS, O_DURATION, O_MAX_EVENTS,
           O_MAX_BYTES, O_MAX_RATE, O_REMOTE_DIR, O_REMOTE_TMP, O_KEEP, O_RETURN_TO,
           O_PROTO_DIST, O_SSL_OPTFILE, O_SAMPLES, O_SYSTEM_MONITOR, O_DISTRIBUTION, O_FILE_IO,
           O_ETS };
    static const struct option longopts[] = {
        {"node", required_argument, NULL, O_NODE},
        {"nodes", required_argument, NULL, O_NODES},
        {"cluster", no_argument, NULL, O_CLUSTER},
        {"links", no_argument, NULL, O_LINKS},
        {"cookie-file", required_argument, NULL, O_COOKIE},
        {"calls", required_argument, NULL, O_CALLS},
        {"procs", required_argument, NULL, O_PROCS},
        {"events", required_argument, NULL, O_EVENTS},
        {"duration", required_argument, NULL, O_DURATION},
        {"max-events", required_argument, NULL, O_MAX_EVENTS},
        {"max-bytes", required_argument, NULL, O_MAX_BYTES},
        {"max-rate", required_argument, NULL, O_MAX_RATE},
        {"output", required_argument, NULL, 'o'},
        {"remote-dir", optional_argument, NULL, O_REMOTE_DIR},
        {"remote-tmp", required_argument, NULL, O_REMOTE_TMP},
        {"keep", no_argument, NULL, O_KEEP},
        {"return-to", no_argument, NULL, O_RETURN_TO},
        {"proto-dist", required_argument, NULL, O_PROTO_DIST},
        {"ssl-dist-optfile", required_argument, NULL, O_SSL_OPTFILE},
        {"samples", required_argument, NULL, O_SAMPLES},
        {"system-monitor", required_argument, NULL, O_SYSTEM_MONITOR},
        {"distribution", no_argument, NULL, O_DISTRIBUTION},
        {"file-io", no_argument, NULL, O_FILE_IO},
        {"ets", required_argument, NULL, O_ETS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct bmt_record_opts o;
    char first_node[256];
    memset(&o, 0, sizeof o);
    o.duration_ms = 15000;
    o.proto_dist = getenv("BEAMTRACE_PROTO_DIST");
    o.ssl_dist_optfile = getenv("BEAMTRACE_SSL_DIST_OPTFILE");
    if (o.proto_dist && !*o.proto_dist)
        o.proto_dist = NULL;
    if (o.ssl_dist_optfile && !*o.ssl_dist_optfile)
        o.ssl_dist_optfile = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case O_NODE: o.node = optarg; break;
        case O_NODES: o.nodes = optarg; break;
        case O_CLUSTER: o.cluster = 1; break;
        case O_LINKS: o.links = 1; break;
        case O_COOKIE: o.cookie_file = optarg; break;
        case O_CALLS:
            if (o.call_count == BMT_RECORD_MAX_CALLS)
                return bmt_cli_usage_error(CMD, "at most %d --calls", BMT_RECORD_MAX_CALLS);
            o.calls[o.call_count++] = optarg;
            break;
        case O_PROCS: o.procs = optarg; break;
        case O_EVENTS: o.events = optarg; break;
        case O_DURATION:
            o.duration = optarg;
            if (parse_duration(optarg, &o.duration_ms) != 0)
                return bmt_cli_usage_error(CMD, "--duration '%s': expected a duration with its "
                                           "unit (e.g. 10s, 500ms, 2m) or infinity", optarg);
            break;
        case O_MAX_EVENTS:
            if (parse_count(optarg, &o.max_events) != 0)
                return bmt_cli_usage_error(CMD, "--max-events '%s': expected a positive integer",
                                           optarg);
            break;
        case O_MAX_BYTES:
            if (parse_size(optarg, &o.max_bytes) != 0)
                return bmt_cli_usage_error(CMD, "--max-bytes '%s': expected e.g. 100M, 1G or "
                                           "a number of bytes", optarg);
            break;
        case O_MAX_RATE:
            if (parse_count(optarg, &o.max_rate) != 0)
                return bmt_cli_usage_error(CMD, "--max-rate '%s': expected events per second, "
                                           "a positive integer", optarg);
            break;
        case 'o': o.out = optarg; break;
        case O_REMOTE_DIR:
            o.remote_dir = 1;
            o.remote_dir_path = optarg;
            break;
        case O_REMOTE_TMP: o.remote_tmp = optarg; break;
        case O_KEEP: o.keep = 1; break;
        case O_RETURN_TO: o.return_to = 1; break;
        case O_PROTO_DIST: o.proto_dist = optarg; break;
        case O_SSL_OPTFILE: o.ssl_dist_optfile = optarg; break;
        case O_SAMPLES: o.sources.samples = optarg; break;
        case O_SYSTEM_MONITOR: o.sources.system_monitor = optarg; break;
        case O_DISTRIBUTION: o.sources.distribution = 1; break;
        case O_FILE_IO: o.sources.file_io = 1; break;
        case O_ETS: o.sources.ets = optarg; break;
        case 'h':
            bmt_cli_print_usage(CMD);
            return BMT_EXIT_OK;
        case ':':
            return bmt_cli_usage_error(CMD, "option '%s' needs a value", argv[optind - 1]);
        default:
            return bmt_cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bmt_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o.nodes && (o.node || o.cluster))
        return bmt_cli_usage_error(CMD, "--nodes names every node: not with --node or --cluster "
                                   "(--cluster --node NAME records NAME and its nodes)");
    if (o.nodes) {
        if (!*o.nodes || o.nodes[0] == ',' || strstr(o.nodes, ",,") ||
            o.nodes[strlen(o.nodes) - 1] == ',')
            return bmt_cli_usage_error(CMD, "--nodes '%s': expected NAME,NAME,... (e.g. "
                                       "a@host1,b@host2)", o.nodes);
        /* The first one: the controller connects to it first. */
        size_t n = strcspn(o.nodes, ",");
        if (n >= sizeof first_node)
            return bmt_cli_usage_error(CMD, "--nodes: a node name is too long");
        memcpy(first_node, o.nodes, n);
        first_node[n] = '\0';
        o.node = first_node;
    }
    if (!o.node)
        return bmt_cli_usage_error(CMD, "--node NAME is required (e.g. --node myapp@host), or "
                                   "--nodes NAME,NAME,... for several");
    if ((o.nodes || o.cluster) && o.remote_dir)
        return bmt_cli_usage_error(CMD, "--remote-dir leaves one node's trace there: not with "
                                   "--nodes or --cluster");
    if ((o.nodes || o.cluster) && o.procs && strchr(o.procs, '<'))
        return bmt_cli_usage_error(CMD, "--procs: a pid names a process of one node; with "
                                   "--nodes or --cluster give registered names");
    if (o.links && (!o.events || (!strstr(o.events, "send") && !strstr(o.events, "receive"))))
        return bmt_cli_usage_error(CMD, "--links links sends to receipts: give --events with "
                                   "send and receive");
    const struct bmt_record_sources *src = &o.sources;
    int any_source = src->samples || src->system_monitor || src->distribution || src->file_io ||
                     src->ets;
    if (o.call_count == 0 && !o.events && !any_source)
        return bmt_cli_usage_error(CMD, "nothing to trace: give --calls SPEC (e.g. "
                                   "'my_mod:handle_call/3 -> return'), --events LIST or a "
                                   "source (--samples, --system-monitor, --file-io, ...)");
    {
        char scratch[8192], err[512];
        if (bmt_record_sources_term(src, scratch, sizeof scratch, err, sizeof err) != 0)
            return bmt_cli_usage_error(CMD, "%s", err);
    }
    if (o.remote_dir && o.out)
        return bmt_cli_usage_error(CMD, "-o and --remote-dir exclude each other: the trace is "
                                   "copied here or left on the target");
    if (o.return_to && o.call_count == 0)
        return bmt_cli_usage_error(CMD, "--return-to needs --calls");
    if (o.events) {
        struct bmt_text scratch = {NULL, 0, 0, 0};
        char *bad = NULL;
        int bad_kind = bmt_record_kinds(&scratch, o.events, &bad) != 0;
        free(scratch.buf);
        if (bad_kind) {
            int rc = bmt_cli_usage_error(CMD, "--events: unknown event kind '%s' (procs, send, "
                                         "receive, running, garbage_collection, ports, call)",
                                         bad ? bad : "?");
            free(bad);
            return rc;
        }
    }

    return bmt_record_run(&o);
}
