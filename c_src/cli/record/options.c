/* `beamtrace record`'s options, declared once (contract in record.h): the
 * rows cmd/record.c parses with, --help shows and term.c turns into the
 * controller's options map (a row's `term` is its key there, so each key
 * is spelled here only). The limits are beamtrace_sources:validate/1's and
 * the controller's, so a bad value is a usage error before anything
 * connects. */
#include "record.h"
#include "flight_opts.h"
#include "base/diag.h"
#include "recorder/relayd_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {"procs", "send", "receive", "running", "garbage_collection",
                                    "ports", "call", NULL};

/* --events: event kinds, one error line naming them. */
static int check_events(const char *list, char *err, size_t size)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", list);
    char *save = NULL;
    int n = 0;
    for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save), n++) {
        unsigned i = 0;
        while (kinds[i] && strcmp(kinds[i], k) != 0)
            i++;
        if (!kinds[i]) {
            snprintf(err, size, "--events: unknown event kind '%s' (procs, send, receive, "
                     "running, garbage_collection, ports, call)", k);
            return -1;
        }
    }
    if (!n) {
        snprintf(err, size, "--events: expected a comma-separated list of event kinds (procs, "
                 "send, receive, running, garbage_collection, ports, call)");
        return -1;
    }
    return 0;
}

/* --nodes: NAME,NAME,... without empty names. */
static int check_nodes(const char *s, char *err, size_t size)
{
    size_t n = strlen(s);
    if (!n || s[0] == ',' || strstr(s, ",,") || s[n - 1] == ',') {
        snprintf(err, size, "--nodes '%s': expected NAME,NAME,... (e.g. a@host1,b@host2)", s);
        return -1;
    }
    if (strcspn(s, ",") >= sizeof ((struct bmt_record_args *)0)->first_node) {
        snprintf(err, size, "--nodes: a node name is too long");
        return -1;
    }
    return 0;
}

/* --relayd: the URL as the nodes will parse it (the recorder's own parser,
 * pure C), so a bad one is a usage error before anything connects. */
static int check_relayd(const char *s, char *err, size_t size)
{
    struct bmt_relayd_url url;
    char why[400];
    if (bmt_relayd_url_parse(s, &url, why, sizeof why) == 0)
        return 0;
    snprintf(err, size, "--relayd: %s", why);
    return -1;
}

/* The session sources: checked as the term they make (sources.c). */
static int check_source(const struct bmt_record_sources *one, char *err, size_t size)
{
    char term[8192];
    return bmt_record_sources_term(one, term, sizeof term, err, size);
}

static int check_samples(const char *v, char *err, size_t size)
{
    struct bmt_record_sources s = {.samples = v};
    return check_source(&s, err, size);
}

static int check_monitor(const char *v, char *err, size_t size)
{
    struct bmt_record_sources s = {.system_monitor = v};
    return check_source(&s, err, size);
}

static int check_ets(const char *v, char *err, size_t size)
{
    struct bmt_record_sources s = {.ets = v};
    return check_source(&s, err, size);
}

static const char *const on_max_rate_values[] = {"stop", "sample", NULL};
static const char *const mode_values[] = {"discard", "overwrite", NULL};

/* --message-length: bytes of each message's text kept (the recorder's
 * 0..16384), or size_only; written into the term as typed (an integer or
 * an atom). */
static int check_message_length(const char *v, char *err, size_t size)
{
    char *end = NULL;
    if (strcmp(v, "size_only") == 0)
        return 0;
    unsigned long n = v[0] >= '0' && v[0] <= '9' ? strtoul(v, &end, 10) : 0;
    if (end && !*end && n <= 16384 && (v[0] != '0' || !v[1]))
        return 0;
    snprintf(err, size, "--message-length '%s': give 0 to 16384 (bytes of each message's text "
             "kept), or size_only", v);
    return -1;
}

/* --exclude: pids (<0.1.2>) and registered names, none empty. */
static int check_exclude(const char *s, char *err, size_t size)
{
    size_t n = strlen(s);
    if (!n || s[0] == ',' || strstr(s, ",,") || s[n - 1] == ',') {
        snprintf(err, size, "--exclude '%s': expected PID,NAME,... (e.g. <0.85.0>,my_server)", s);
        return -1;
    }
    return 0;
}

#define AT(field, T) BMT_OPT_AT(struct bmt_record_args, field, T)

const struct bmt_opt bmt_record_options[] = {
    {.name = "node", .type = BMT_OPT_NODE, .arg = "NAME",
     .help = "the node: name@host, or name on this host", .term = "node",
     .offset = AT(node, const char *)},
    {.name = "nodes", .type = BMT_OPT_LIST, .arg = "NAME,NAME,...",
     .help = "several nodes: one trace each, brought back into -o DIR/NODE, aligned to this "
             "host's clock",
     .check = check_nodes, .term = "nodes", .offset = AT(nodes, const char *)},
    {.name = "cluster", .type = BMT_OPT_FLAG, .help = "--node and every node connected to it",
     .term = "cluster", .offset = AT(cluster, int)},
    {.name = "links", .type = BMT_OPT_FLAG,
     .help = "record what links each send to its receipt (with --events send,receive; "
             "docs/cluster.md)",
     .term = "links", .offset = AT(links, int)},
    {.name = "results", .type = BMT_OPT_FLAG,
     .help = "record the value each traced call returns (with --calls 'SPEC -> return'), "
             "for calls --group-by return",
     .term = "results", .offset = AT(results, int)},
    {.name = "args", .type = BMT_OPT_FLAG,
     .help = "record the arguments of each traced call (with --calls), for calls --group-by "
             "arg:N",
     .term = "args", .offset = AT(args, int)},
    {.name = "cookie-file", .type = BMT_OPT_FILE, .arg = "FILE",
     .help = "its cookie (default: $BEAMTRACE_COOKIE, then ~/.erlang.cookie; never on the "
             "command line)",
     .offset = AT(cookie_file, const char *)},
    {.name = "calls", .type = BMT_OPT_TEXT, .arg = "SPEC",
     .help = "calls to trace, redbug style (repeatable): 'm:f/3', 'm:f/3 -> return' (returns "
             "too), 'm:f', 'm'; or in Elixir's spelling, 'MyApp.Worker.run/1' (checked before "
             "anything is shipped)",
     .flags = BMT_OPT_REPEAT, .example = "lists:reverse/1 -> return", .term = "calls",
     .offset = AT(calls, struct bmt_strs)},
    {.name = "return-to", .type = BMT_OPT_FLAG,
     .help = "time calls by where they return to (keeps tail calls)", .needs = "calls",
     .term = "return_to", .offset = AT(return_to, int)},
    {.name = "procs", .type = BMT_OPT_TEXT, .arg = "WHICH",
     .help = "all, new, existing, or NAME,PID,...", .def = "all",
     .offset = AT(procs, const char *)},
    {.name = "exclude", .type = BMT_OPT_LIST, .arg = "PIDS|NAMES",
     .help = "processes never traced: pids (<0.85.0>) and registered names, comma-separated",
     .check = check_exclude, .example = "logger", .term = "exclude",
     .offset = AT(exclude, const char *)},
    {.name = "events", .type = BMT_OPT_LIST, .arg = "LIST",
     .help = "procs, send, receive, running, garbage_collection, ports (comma-separated)",
     .values = kinds, .check = check_events, .term = "events",
     .offset = AT(events, const char *)},
    {.name = "duration", .type = BMT_OPT_DURATION, .arg = "TIME",
     .help = "stop after TIME (e.g. 500ms, 2m, or infinity)", .def = "15s",
     .flags = BMT_OPT_INFINITY | BMT_OPT_NONZERO, .example = "500ms", .term = "duration",
     .offset = AT(duration_ns, uint64_t)},
    {.name = "max-events", .type = BMT_OPT_COUNT, .arg = "N",
     .help = "stop once the trace holds N events", .min = 1, .term = "max_events",
     .offset = AT(max_events, uint64_t)},
    {.name = "max-bytes", .type = BMT_OPT_SIZE, .arg = "SIZE",
     .help = "stop once the trace holds SIZE (e.g. 100M; the recorder's default is 1G)",
     .flags = BMT_OPT_NONZERO, .example = "100M", .term = "max_bytes",
     .offset = AT(max_bytes, uint64_t)},
    {.name = "max-rate", .type = BMT_OPT_COUNT, .arg = "N",
     .help = "past N events a second traced (over 100 ms; default 100000, or infinity), stop "
             "or sample (--on-max-rate)",
     .min = 1, .flags = BMT_OPT_INFINITY, .term = "max_rate", .offset = AT(max_rate, uint64_t)},
    {.name = "buffer-size", .type = BMT_OPT_SIZE, .arg = "SIZE",
     .help = "ring buffer per recording thread, 32K to 1G, split into 8 packets (default 4M)",
     .flags = BMT_OPT_NONZERO, .example = "1M", .term = "buffer_size",
     .offset = AT(buffer_size, uint64_t)},
    {.name = "message-length", .type = BMT_OPT_TEXT, .arg = "BYTES",
     .help = "bytes of each sent or received message's text kept (default 255), 0 for none, "
             "or size_only (its size in words)",
     .flags = BMT_OPT_AS_TERM, .check = check_message_length, .example = "size_only",
     .term = "message_length", .offset = AT(message_length, const char *)},
    {.name = "mode", .type = BMT_OPT_ENUM, .arg = "MODE",
     .help = "discard (default: a full ring drops the newest events) or overwrite (a flight "
             "recorder: keeps the newest; beamtrace snapshot copies what it holds now)",
     .values = mode_values, .def = "discard", .example = "overwrite", .term = "mode",
     .offset = AT(mode, int)},
    {.name = "sample", .type = BMT_OPT_TEXT, .arg = "1/N",
     .help = "keep one call, send, receive, scheduling and GC event in N, decided in the "
             "tracer (a call and its return together); or KIND=1/N,... per kind; the ratios in "
             "force are in the trace (sample_ratio events)",
     .check = bmt_record_sample_check, .example = "1/10", .offset = AT(sample, const char *)},
    {.name = "on-max-rate", .type = BMT_OPT_LIST, .arg = "WHAT",
     .help = "past --max-rate: stop (default), or sample: keep fewer events instead (default "
             "with --flight)",
     .values = on_max_rate_values, .check = bmt_record_on_max_rate_check,
     .offset = AT(on_max_rate, const char *)},
    {.name = "flight", .type = BMT_OPT_DURATION, .arg = "WINDOW",
     .help = "a flight recording: keep the last WINDOW of events in memory and write a capture "
             "(a trace of its own) around each --trigger (docs/flight-recorder.md)",
     .flags = BMT_OPT_NONZERO, .excludes = "duration", .example = "10s",
     .offset = AT(flight_ns, uint64_t)},
    {.name = "trigger", .type = BMT_OPT_TEXT, .arg = "SPEC",
     .help = "what writes a capture (repeatable): 'Mod:Fun/Arity>15ms', long_gc=50ms, "
             "long_schedule=50ms, large_heap=WORDS, busy_port, busy_dist_port, "
             "long_message_queue=D/E (OTP 27+), probe[=LABEL] (beamtrace:trigger/1), "
             "message_queue=N (sampled)",
     .flags = BMT_OPT_REPEAT, .needs = "flight", .check = bmt_record_trigger_check,
     .example = "probe", .offset = AT(triggers, struct bmt_strs)},
    {.name = "after", .type = BMT_OPT_DURATION, .arg = "TIME",
     .help = "how long a capture goes on after its trigger (default 1s)", .flags = BMT_OPT_NONZERO,
     .needs = "flight", .example = "500ms", .offset = AT(after_ns, uint64_t)},
    {.name = "max-captures", .type = BMT_OPT_TEXT, .arg = "N/h",
     .help = "captures an hour at most (default 6/h), or infinity; the triggers past it are "
             "counted",
     .needs = "flight", .check = bmt_record_max_captures_check, .example = "6/h",
     .offset = AT(max_captures, const char *)},
    {.name = "until", .type = BMT_OPT_DURATION, .arg = "TIME",
     .help = "the flight recording stops by itself after TIME (default 7d)",
     .flags = BMT_OPT_NONZERO, .needs = "flight", .example = "3s",
     .offset = AT(until_ns, uint64_t)},
    {.name = "detach", .type = BMT_OPT_FLAG,
     .help = "leave the flight recording running on the node when the command exits (see it "
             "with beamtrace flights, copy its captures with fetch, end it with stop)",
     .needs = "flight", .excludes = "output", .offset = AT(detach, int)},
    {.name = "samples", .type = BMT_OPT_LIST, .arg = "LIST",
     .help = "periodic counters: schedulers, run_queues, memory, message_queues; each "
             "=INTERVAL (default 1s), e.g. schedulers=100ms,message_queues=1s/10 (top 10)",
     .check = check_samples, .example = "memory=100ms",
     .offset = AT(sources.samples, const char *)},
    {.name = "system-monitor", .type = BMT_OPT_LIST, .arg = "LIST",
     .help = "long_gc=TIME, long_schedule=TIME, large_heap=WORDS, busy_port, busy_dist_port, "
             "long_message_queue=D/E (chained to the node's own monitor, which still receives "
             "its messages)",
     .check = check_monitor, .example = "long_gc=50ms",
     .offset = AT(sources.system_monitor, const char *)},
    {.name = "distribution", .type = BMT_OPT_FLAG, .help = "node up/down with reasons",
     .offset = AT(sources.distribution, int)},
    {.name = "file-io", .type = BMT_OPT_FLAG,
     .help = "every file operation, attributed to its caller",
     .offset = AT(sources.file_io, int)},
    {.name = "ets", .type = BMT_OPT_LIST, .arg = "TABLES",
     .help = "operations on the named tables, or all (costly)", .check = check_ets,
     .example = "all", .offset = AT(sources.ets, const char *)},
    {.name = "relayd", .type = BMT_OPT_TEXT, .arg = "URL",
     .help = "stream each node's trace straight to this lttng-relayd "
             "(net://HOST[:CONTROL_PORT[:DATA_PORT]]); nothing comes back unless --local",
     .check = check_relayd, .example = "net://127.0.0.1", .term = "relayd",
     .offset = AT(relayd, const char *)},
    {.name = "live", .type = BMT_OPT_FLAG,
     .help = "with --relayd: a live session, which viewers (babeltrace2's lttng-live "
             "input, Trace Compass) follow while it records",
     .needs = "relayd", .term = "live", .offset = AT(live, int)},
    {.name = "local", .type = BMT_OPT_FLAG,
     .help = "with --relayd: also keep a local copy and bring it back into -o DIR",
     .needs = "relayd", .term = "local", .offset = AT(local, int)},
    {.name = "output", .letter = 'o', .type = BMT_OPT_DIR, .arg = "DIR",
     .help = "where the trace is copied: a new or empty directory of yours, never a symlink, "
             "made private (default ./beamtrace-traces/NAME-YYYYMMDD-HHMMSS)",
     .excludes = "remote-dir", .offset = AT(out, const char *)},
    {.name = "remote-dir", .type = BMT_OPT_DIR, .arg = "DIR",
     .help = "leave the trace on the target (in DIR) instead", .flags = BMT_OPT_OPTIONAL_ARG,
     .offset = AT(remote_dir, const char *)},
    {.name = "remote-tmp", .type = BMT_OPT_DIR, .arg = "DIR",
     .help = "where on the target the private directory goes (default its $TMPDIR or /tmp; "
             "must allow executables)",
     .term = "remote_tmp", .offset = AT(remote_tmp, const char *)},
    {.name = "keep", .type = BMT_OPT_FLAG,
     .help = "leave the shipped modules and files loaded there", .term = "keep",
     .offset = AT(keep, int)},
    {.name = "proto-dist", .type = BMT_OPT_TEXT, .arg = "NAME",
     .help = "distribution protocol, e.g. inet_tls (default $BEAMTRACE_PROTO_DIST; ERL_FLAGS "
             "is honoured too)",
     .example = "inet_tcp", .offset = AT(proto_dist, const char *)},
    {.name = "ssl-dist-optfile", .type = BMT_OPT_FILE, .arg = "FILE",
     .help = "TLS distribution options (default $BEAMTRACE_SSL_DIST_OPTFILE)",
     .offset = AT(ssl_dist_optfile, const char *)},
    {0},
};

/* flights, fetch, stop, snapshot: the node and how to reach it, as record's rows
 * say (the controller reads the same keys). */
#define NODE_ROWS                                                                                  \
    {.name = "node", .type = BMT_OPT_NODE, .arg = "NAME",                                          \
     .help = "the node: name@host, or name on this host", .flags = BMT_OPT_REQUIRED,               \
     .offset = AT(node, const char *)},                                                            \
    {.name = "cookie-file", .type = BMT_OPT_FILE, .arg = "FILE",                                   \
     .help = "its cookie (default: $BEAMTRACE_COOKIE, then ~/.erlang.cookie; never on the "        \
             "command line)",                                                                      \
     .offset = AT(cookie_file, const char *)}
#define DIST_ROWS                                                                                  \
    {.name = "proto-dist", .type = BMT_OPT_TEXT, .arg = "NAME",                                    \
     .help = "distribution protocol, e.g. inet_tls (default $BEAMTRACE_PROTO_DIST)",               \
     .example = "inet_tcp", .offset = AT(proto_dist, const char *)},                               \
    {.name = "ssl-dist-optfile", .type = BMT_OPT_FILE, .arg = "FILE",                              \
     .help = "TLS distribution options (default $BEAMTRACE_SSL_DIST_OPTFILE)",                     \
     .offset = AT(ssl_dist_optfile, const char *)}
#define REACH_ROWS                                                                                 \
    NODE_ROWS,                                                                                     \
    {.name = "remote-tmp", .type = BMT_OPT_DIR, .arg = "DIR",                                      \
     .help = "where on the node `record --remote-tmp` put the private directories (default "       \
             "its $TMPDIR or /tmp)",                                                               \
     .offset = AT(remote_tmp, const char *)},                                                      \
    DIST_ROWS

const struct bmt_opt bmt_flights_options[] = {
    REACH_ROWS,
    {0},
};

const struct bmt_opt bmt_fetch_options[] = {
    REACH_ROWS,
    {.name = "output", .letter = 'o', .type = BMT_OPT_DIR, .arg = "DIR",
     .help = "where the captures are copied, each as DIR/capture-N-TIME: a directory of yours, "
             "never a symlink, made private (default ./beamtrace-flights-NODE)",
     .offset = AT(out, const char *)},
    {0},
};

/* snapshot: the node's running record finds its own directory. */
const struct bmt_opt bmt_snapshot_options[] = {
    NODE_ROWS,
    DIST_ROWS,
    {.name = "output", .letter = 'o', .type = BMT_OPT_DIR, .arg = "DIR",
     .help = "where the snapshot is copied: a new or empty directory of yours, never a "
             "symlink, made private (default ./beamtrace-snapshot-NODE-N)",
     .offset = AT(out, const char *)},
    {0},
};

/* The option from the environment when the command line has none. */
static const char *env_default(const char *given, const char *var)
{
    const char *v = given ? given : getenv(var);
    return v && *v ? v : NULL;
}

/* Which nodes: --node, or --nodes (the first connected to first). */
static int check_nodes_given(struct bmt_record_args *a)
{
    if (a->nodes && (a->node || a->cluster))
        return bmt_cli_usage_error("record", "--nodes names every node: not with --node or "
                                   "--cluster (--cluster --node NAME records NAME and its nodes)");
    if (a->nodes) {
        size_t n = strcspn(a->nodes, ",");
        memcpy(a->first_node, a->nodes, n);
        a->first_node[n] = '\0';
        a->node = a->first_node;
    }
    if (!a->node)
        return bmt_cli_usage_error("record", "--node NAME is required (e.g. --node myapp@host), "
                                   "or --nodes NAME,NAME,... for several");
    if ((a->nodes || a->cluster) && a->remote_dir)
        return bmt_cli_usage_error("record", "--remote-dir leaves one node's trace there: not "
                                   "with --nodes or --cluster");
    if ((a->nodes || a->cluster) && strchr(a->procs, '<'))
        return bmt_cli_usage_error("record", "--procs: a pid names a process of one node; with "
                                   "--nodes or --cluster give registered names");
    return 0;
}

#define DAY_NS (24ULL * 3600 * 1000000000)

/* --flight: what a flight recording needs, and what it cannot take. */
static int check_flight(const struct bmt_record_args *a)
{
    if (!a->flight_ns)
        return 0;
    if (!a->triggers.n)
        return bmt_cli_usage_error("record", "--flight needs at least one --trigger SPEC, what "
                                   "writes a capture (e.g. --trigger 'kv:get/2>15ms' or "
                                   "--trigger long_gc=50ms)");
    /* beamtrace_flight's limits: a window and a tail of at most a day. */
    if (a->flight_ns > DAY_NS || a->after_ns > DAY_NS)
        return bmt_cli_usage_error("record", "--%s: at most 24h (the rings hold seconds to "
                                   "minutes of events; --until sets how long it runs)",
                                   a->flight_ns > DAY_NS ? "flight" : "after");
    if (a->nodes || a->cluster)
        return bmt_cli_usage_error("record", "--flight records one node: not with --nodes or "
                                   "--cluster (start one flight recording per node)");
    if (a->remote_dir)
        return bmt_cli_usage_error("record", "--flight writes its captures on the node already: "
                                   "not with --remote-dir (with --detach they stay there)");
    if (a->detach && a->keep)
        return bmt_cli_usage_error("record", "--detach leaves everything running until beamtrace "
                                   "stop --node %s removes it: not with --keep", a->node);
    return 0;
}

void bmt_record_reach_defaults(struct bmt_record_args *a)
{
    a->proto_dist = env_default(a->proto_dist, "BEAMTRACE_PROTO_DIST");
    a->ssl_dist_optfile = env_default(a->ssl_dist_optfile, "BEAMTRACE_SSL_DIST_OPTFILE");
}

int bmt_record_check(struct bmt_record_args *a)
{
    int rc = check_nodes_given(a);
    if (rc)
        return rc;
    if (a->links && (!a->events || (!strstr(a->events, "send") && !strstr(a->events, "receive"))))
        return bmt_cli_usage_error("record", "--links links sends to receipts: give --events with "
                                   "send and receive");
    if ((a->results || a->args) && !a->calls.n)
        return bmt_cli_usage_error("record", "--%s records calls' values: give --calls SPEC "
                                   "(e.g. 'my_mod:get/1 -> return')",
                                   a->results ? "results" : "args");
    const struct bmt_record_sources *s = &a->sources;
    if (!a->calls.n && !a->events && !s->samples && !s->system_monitor && !s->distribution &&
        !s->file_io && !s->ets)
        return bmt_cli_usage_error("record", "nothing to trace: give --calls SPEC (e.g. "
                                   "'my_mod:handle_call/3 -> return'), --events LIST or a "
                                   "source (--samples, --system-monitor, --file-io, ...)");
    /* The recorder's limits (beamtrace_record:check_options/1 says the same). */
    if (a->buffer_size && (a->buffer_size < 32768 || a->buffer_size > (1ULL << 30)))
        return bmt_cli_usage_error("record", "--buffer-size: give 32K to 1G (bytes per recording "
                                   "thread, split into 8 packets)");
    if ((a->nodes || a->cluster) && a->exclude && strchr(a->exclude, '<'))
        return bmt_cli_usage_error("record", "--exclude: a pid names a process of one node; with "
                                   "--nodes or --cluster give registered names");
    if ((rc = check_flight(a)) != 0)
        return rc;
    bmt_record_reach_defaults(a);
    return 0;
}
