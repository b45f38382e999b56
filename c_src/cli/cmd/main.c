/* beamtrace: entry point and subcommand dispatch.
 *
 * The table below is the only list of subcommands; `beamtrace --help` and
 * the dispatcher both read it. Later subcommands (calls, sched, procs, gc,
 * flame, export, report) are one row here plus one cmd_<name>.c file.
 */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

/* The options every analysis and export takes (analysis.h: the scope). */
/* Every command that reads traces says this about its DIR arguments. */
#define INPUT_HELP \
     "DIR is a trace directory, or a directory above traces (a cluster directory of\n" \
     "`record --nodes`: one trace per node); several DIRs are read as one. Traces of\n" \
     "several nodes merge in time order on their common clock, and every process is\n" \
     "shown node-qualified: kv@h2/<0.312.0> (docs/cluster.md).\n" \
     "\n"

#define SCOPE_HELP \
     "      --begin TIME            count from TIME: HH:MM:SS[.nnn] or\n" \
     "                              YYYY-MM-DD HH:MM:SS[.nnn] (local, Z for UTC), or\n" \
     "                              +DURATION after the first event (+2s, +250ms)\n" \
     "      --end TIME              stop at TIME (same forms)\n" \
     "  -p, --pid PID|NAME          only this process: <0.66.0>, 0.66.0, kv@h2/<0.66.0>\n" \
     "                              (a cluster: <0.66.0> is that pid on every node), or\n" \
     "                              a registered name or label it ever had (repeatable)\n" \
     "      --name PATTERN          only processes whose name, label or initial call\n" \
     "                              matches PATTERN ('*' wildcards; OTP's or Elixir's\n" \
     "                              spelling, e.g. 'rabbit_channel*', 'MyApp.*')\n"

/* The vsn of src/beamtrace.app.src, passed by the Makefile (the one
 * version source); a build outside the Makefile (the sanitizer builds of
 * the tests) says so instead. */
#ifndef BMT_VERSION
#define BMT_VERSION "(version unknown: built outside the Makefile)"
#endif

static const struct bmt_cli_command commands[] = {
    {"view", "print every event as babeltrace2 does",
     "usage: beamtrace view DIR... [options]\n"
     "\n"
     "Prints the events of the trace in DIR in time order, one line each, exactly\n"
     "as `babeltrace2 DIR` does: beamtrace's traces, LTTng's (DIR may be the session\n"
     "directory) and babeltrace2's CTF output alike. Discarded events are reported\n"
     "on stderr; a last packet cut short is skipped with one warning.\n"
     "\n"
     "  -t, --tracepoint PATTERN  only events whose domain:name matches PATTERN\n"
     "                            ('*' matches any run of characters; repeatable),\n"
     "                            e.g. 'org_erlang_dyntrace:process_*' or '*gc_*'\n"
     "  -p, --pid PID             only events with a pid or port field equal to PID\n"
     "                            (<0.66.0>, 0.66.0 or #Port<0.7>; repeatable); in a\n"
     "                            cluster also kv@h2/<0.66.0> (lines keep OTP's text)\n"
     "      --no-delta            do not print the time since the previous line\n"
     "      --gmt                 print times in UTC instead of local time\n"
     "  -h, --help                show this help\n",
     bmt_cmd_view},
    {"list", "list the tracepoints beamtrace knows",
     "usage: beamtrace list [--usdt] [--format text|json|markdown]\n"
     "\n"
     "Prints every tracepoint in the catalogue: domain:name, the erlang:trace/3\n"
     "flag that produces it, its fields (name:type, in order) and what it means.\n"
     "\n"
     "      --usdt           OTP's DTrace/SystemTap probes instead: which beamtrace\n"
     "                       provides as USDT probes, approximates, or cannot derive\n"
     "      --format FORMAT  text (default, aligned), json, or markdown (the docs table)\n"
     "  -h, --help           show this help\n",
     bmt_cmd_list},
    {"stats", "count events per tracepoint, drops and rates",
     "usage: beamtrace stats DIR... [--format text|json]\n"
     "\n"
     INPUT_HELP
     "Reads the trace in DIR in one pass and prints events per tracepoint\n"
     "(most frequent first, with percent and bytes per event, header included),\n"
     "the total, discarded events, lost packets, first and last timestamps,\n"
     "duration, event rate and stream count.\n"
     "\n"
     "      --format FORMAT  text (default) or json\n"
     "  -h, --help           show this help\n",
     bmt_cmd_stats},
    {"calls", "per function calls, latency percentiles, where the time went",
     "usage: beamtrace calls DIR... [options]\n"
     "\n"
     INPUT_HELP
     "Rebuilds each process's call stack from function_call, function_return and\n"
     "function_exception events and prints, per function (m:f/a, Elixir modules as\n"
     "Elixir writes them): finished calls, calls cut by the window or open at\n"
     "process exit or trace end (UNFIN), calls ended by an exception (EXC), total\n"
     "(inclusive) time, own time (OWN CPU: minus the time the process was seen off\n"
     "CPU; OWN WALL when the trace has no scheduling events), and latency\n"
     "p50/p90/p99/p99.9/max (within 1%), largest total first. Record with\n"
     "erlang:trace_pattern(MFA, [{'_',[],[{return_trace},{exception_trace}]}], [local]).\n"
     "\n"
     "      --breakdown             where each function's time went: on CPU, runnable\n"
     "                              (ready, not running), waiting for a message, GC;\n"
     "                              sums, per-call p50/p99, and the slowest calls with\n"
     "                              their process. Needs the running, 'receive' and\n"
     "                              garbage_collection flags on the callers and send\n"
     "                              on whoever messages them; says what is missing\n"
     "      --slowest N             how many slowest calls --breakdown lists (10)\n"
     "      --slower-than DURATION  first list every call longer than DURATION\n"
     "                              (e.g. 1ms, 250us, 2s, 800ns) with its process,\n"
     "                              start and end times, as it ends\n"
     "      --by pid                one row per process and function\n"
     "      --top N                 only the N largest rows\n"
     SCOPE_HELP
     "      --format FORMAT         text (default) or json (times in ns)\n"
     "  -h, --help                  show this help\n",
     bmt_cmd_calls},
    {"sched", "message send -> receiver scheduled-in latency histogram",
     "usage: beamtrace sched DIR... [options]\n"
     "\n"
     INPUT_HELP
     "For message_send events to a pid (or to a name registered in the trace), the\n"
     "time until the receiver is next scheduled in (process_scheduled in), as a\n"
     "DTrace quantize histogram in ns (power-of-two value, @-bar distribution,\n"
     "count) and p50/p90/p99/max. Record with the send and running flags.\n"
     "\n"
     "      --from first            (default) from the oldest send the receiver has\n"
     "                              not run since: how long its oldest waiting message\n"
     "                              waited, backlog included\n"
     "      --from last             from the latest such send, as the D script and\n"
     "                              scripts/send-to-sched.bt: the last hop only\n"
     SCOPE_HELP
     "      --format FORMAT         text (default) or json\n"
     "  -h, --help                  show this help\n",
     bmt_cmd_sched},
    {"procs", "spawns and exits per second, exit reasons, lifetimes",
     "usage: beamtrace procs DIR... [options]\n"
     "\n"
     INPUT_HELP
     "Births and deaths: process_spawn and process_exit counts per second (seconds\n"
     "with any), exit reasons by count, and the ten longest- and shortest-lived\n"
     "processes (spawn to exit) with their names. Record with the procs flag (and\n"
     "set_on_spawn).\n"
     "\n"
     SCOPE_HELP
     "      --format FORMAT         text (default) or json\n"
     "  -h, --help                  show this help\n",
     bmt_cmd_procs},
    {"gc", "garbage collection pauses, words reclaimed, top collectors",
     "usage: beamtrace gc DIR... [options]\n"
     "\n"
     INPUT_HELP
     "Pause of each collection (gc_minor_start -> gc_minor_end, gc_major_start ->\n"
     "gc_major_end of the same process) as quantize histograms in ns with\n"
     "percentiles, minor and major apart; words reclaimed; the ten processes with\n"
     "the largest total pause. Record with the garbage_collection flag.\n"
     "\n"
     SCOPE_HELP
     "      --format FORMAT         text (default) or json\n"
     "  -h, --help                  show this help\n",
     bmt_cmd_gc},
    {"files", "file I/O: latency percentiles per operation and path, errors",
     "usage: beamtrace files DIR [options]\n"
     "\n"
     "Reads org_erlang_beamtrace:file_op events (recorded with the session option\n"
     "file_io): count, errors, bytes and latency (total, p50, p90, p99, max) per\n"
     "operation and for the paths with the most total time, and the count of each\n"
     "error reason (enoent, eacces, ...). Latency is the caller's, call to return.\n"
     "\n"
     SCOPE_HELP
     "  -n, --top N                 paths listed (default 10)\n"
     "      --format FORMAT         text (default) or json (times in ns)\n"
     "  -h, --help                  show this help\n",
     bmt_cmd_files},
    {"flame", "flame graph: on-CPU time per call stack, off-CPU as frames",
     "usage: beamtrace flame DIR... [options]\n"
     "\n"
     INPUT_HELP
     "Rebuilds call stacks as `calls` does. A function's frame is as wide as the\n"
     "time its process ran on a CPU in it; time off CPU is drawn as distinct\n"
     "[runnable] and [waiting] frames above it, collections as [gc] (without\n"
     "process_scheduled events all time is wall time, charged to the function).\n"
     "The counts sum to the time spent in root-level traced calls. The root frame\n"
     "is the process (\"<0.66.0> name\"). Default output: a self-contained\n"
     "interactive SVG (click a frame to zoom, hover for times).\n"
     "\n"
     "      --on-cpu                on-CPU time only (no off-CPU frames)\n"
     "      --off-cpu               off-CPU time only ([runnable], [waiting] frames)\n"
     "      --folded                print folded stacks instead (root;...;leaf COUNT),\n"
     "                              for flamegraph.pl, speedscope or grep\n"
     "      --unit us|ns            unit of folded counts (default us, rounded)\n"
     "      --merge-processes       no process root frame: merge all processes\n"
     "  -o, --output FILE           write to FILE instead of stdout\n"
     "      --title TEXT            SVG title\n"
     "      --width PIXELS          SVG width (default 1200)\n"
     SCOPE_HELP
     "  -h, --help                  show this help\n",
     bmt_cmd_flame},
    {"export", "Chrome Trace Event JSON for Perfetto and chrome://tracing",
     "usage: beamtrace export --format chrome DIR... [-o FILE] [options]\n"
     "\n"
     INPUT_HELP
     "Writes the trace as Chrome Trace Event JSON (open it in ui.perfetto.dev or\n"
     "chrome://tracing). Group \"BEAM calls and events\" (pid 1) has one track per\n"
     "Erlang process, named \"<0.66.0> name\", with nested function call slices\n"
     "(stacks rebuilt as `calls` does), instants for spawn, exit, register and GC,\n"
     "1 ns slices for sends and receives, and flow arrows from each send to its\n"
     "receive (same receiver and message, first in first out; with links recorded,\n"
     "each link `beamtrace messages` makes, across nodes too). Group \"BEAM\n"
     "scheduling\" (pid 2) has the scheduled-in periods of the same processes. A\n"
     "cluster gets both groups per node (\"NODE: BEAM calls and events\", ...).\n"
     "Times are microseconds since the window's start. Use --begin/--end to keep a\n"
     "busy node's export small enough for a browser.\n"
     "\n"
     "      --format chrome         the output format (the only one, and the default)\n"
     "  -o, --output FILE           write to FILE instead of stdout\n"
     SCOPE_HELP
     "  -h, --help                  show this help\n",
     bmt_cmd_export},
    {"messages", "send -> receipt links: latency per node and process pair, in flight",
     "usage: beamtrace messages DIR... [options]\n"
     "\n"
     INPUT_HELP
     "Matches every traced send to its receipt, on one node or across nodes, by the\n"
     "rule of docs/cluster.md (per sender and receiver, in order, by the message's\n"
     "fingerprint; never guessed). Prints what each send and receipt became\n"
     "(linked, uncertain around discarded events, not received, in flight at the\n"
     "end, to a receiver not traced, dead, external, unresolved; receipts\n"
     "unmatched or ambiguous), link coverage, send -> receipt latency p50/p90/p99/max\n"
     "per node pair and for the top process pairs (negative when a receipt is\n"
     "stamped before its send), and the oldest sends still in flight. Record with\n"
     "`beamtrace record --links --events send,receive` (message_*_link events).\n"
     "\n"
     "With --pid or --name, the tables hold only sends from or to those processes;\n"
     "the counts cover every send and receipt of the trace (in the window).\n"
     "\n"
     "      --top N                 process pairs and in-flight sends listed (10)\n"
     SCOPE_HELP
     "      --format FORMAT         text (default) or json (times in ns)\n"
     "  -h, --help                  show this help\n",
     bmt_cmd_messages},
    {"report", "one self-contained HTML page: summary, histograms, flame graph",
     "usage: beamtrace report DIR... -o FILE [options]\n"
     "\n"
     "Reads the trace once and writes one HTML page (no network needed): the\n"
     "summary and events per tracepoint, the send -> scheduled-in latency, GC pause\n"
     "and top functions' call latency histograms (inline SVG), the top functions\n"
     "with where their time went, processes and exit reasons, the flame graph\n"
     "(click to zoom) and a timeline of when the busiest processes ran (bars:\n"
     "the share of each time slice they ran; lives end at exit).\n"
     "\n"
     "  -o, --output FILE           the HTML file to write (required)\n"
     SCOPE_HELP
     "  -h, --help                  show this help\n",
     bmt_cmd_report},
    {"record", "trace a running node from outside, with nothing installed on it",
     "usage: beamtrace record --node NAME [options]\n"
     "       beamtrace record --nodes NAME,NAME,... | --cluster --node NAME [options]\n"
     "\n"
     "Connects to a running node as a hidden node (through a controller `erl` it\n"
     "starts), checks its OTP release, CPU and C library, ships beamtrace's modules\n"
     "and NIF library into a private 0700 directory there (unless the same build is\n"
     "loaded), records with the guard rails, copies the trace back into -o DIR and\n"
     "removes everything it shipped (modules purged, files deleted; no trace flag or\n"
     "pattern left). Ctrl-C stops early and still brings the trace back.\n"
     "\n"
     "  --node NAME               the node: name@host, or name on this host\n"
     "  --nodes NAME,NAME,...     several nodes: one trace each, brought back into\n"
     "                            -o DIR/NODE, aligned to this host's clock\n"
     "  --cluster                 --node and every node connected to it\n"
     "  --links                   record what links each send to its receipt\n"
     "                            (with --events send,receive; docs/cluster.md)\n"
     "  --cookie-file FILE        its cookie (default: $BEAMTRACE_COOKIE, then\n"
     "                            ~/.erlang.cookie; never on the command line)\n"
     "  --calls SPEC              calls to trace, redbug style (repeatable):\n"
     "                            'm:f/3', 'm:f/3 -> return' (returns too), 'm:f', 'm'\n"
     "  --return-to               time calls by where they return to (keeps tail calls)\n"
     "  --procs WHICH             all (default), new, existing, or NAME,PID,...\n"
     "  --events LIST             procs,send,receive,running,garbage_collection,ports\n"
     "  --duration TIME           stop after TIME (default 15s; 500ms, 2m, infinity)\n"
     "  --max-events N            stop once the trace holds N events\n"
     "  --max-bytes SIZE          stop once the trace holds SIZE (default 1G)\n"
     "  --max-rate N              stop if more than N events a second are traced\n"
     "  --samples LIST            periodic counters: schedulers, run_queues, memory,\n"
     "                            message_queues; each =INTERVAL (default 1s), e.g.\n"
     "                            schedulers=100ms,message_queues=1s/10 (top 10)\n"
     "  --system-monitor LIST     long_gc=TIME, long_schedule=TIME, large_heap=WORDS,\n"
     "                            busy_port, busy_dist_port, long_message_queue=D/E\n"
     "                            (chained to the node's own monitor, which still\n"
     "                            receives its messages)\n"
     "  --distribution            node up/down with reasons\n"
     "  --file-io                 every file operation, attributed to its caller\n"
     "  --ets TABLES              operations on the named tables, or all (costly)\n"
     "  -o, --output DIR          where the trace is copied (default\n"
     "                            ./beamtrace-traces/NAME-YYYYMMDD-HHMMSS)\n"
     "  --remote-dir[=DIR]        leave the trace on the target (in DIR) instead\n"
     "  --remote-tmp DIR          where on the target the private directory goes\n"
     "                            (default its $TMPDIR or /tmp; must allow executables)\n"
     "  --keep                    leave the shipped modules and files loaded there\n"
     "  --proto-dist NAME         distribution protocol, e.g. inet_tls (default\n"
     "                            $BEAMTRACE_PROTO_DIST; ERL_FLAGS is honoured too)\n"
     "  --ssl-dist-optfile FILE   TLS distribution options (default\n"
     "                            $BEAMTRACE_SSL_DIST_OPTFILE)\n"
     "  -h, --help                show this help\n"
     "\n"
     "Exit status: 0 recorded, 1 failed (one line says why), 2 bad options,\n"
     "130 interrupted before recording.\n",
     bmt_cmd_record},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

int bmt_cli_parse_format(const char *cmd, const char *value, int *json)
{
    if (strcmp(value, "json") == 0)
        *json = 1;
    else if (strcmp(value, "text") == 0)
        *json = 0;
    else
        return bmt_cli_usage_error(cmd, "unknown format '%s' (expected text or json)", value);
    return 0;
}

void bmt_cli_print_usage(const char *name)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0)
            fputs(commands[i].usage, stdout);
}

static void print_help(FILE *f)
{
    fputs("usage: beamtrace <command> [options]\n"
          "\n"
          "Reads traces recorded by beamtrace or LTTng (CTF 1.8 directories of\n"
          "org_erlang_dyntrace events), and babeltrace2's CTF output of them.\n"
          "\n"
          "commands:\n", f);
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\nRun 'beamtrace <command> --help' for a command's options;\n"
          "'beamtrace --version' prints the version.\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        bmt_cli_error("no command given; run 'beamtrace --help' for the list of commands");
        return BMT_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_help(stdout);
        return BMT_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        puts("beamtrace " BMT_VERSION);
        return BMT_EXIT_OK;
    }
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    if (name[0] == '-')
        bmt_cli_error("unknown option '%s'; run 'beamtrace --help' for usage", name);
    else
        bmt_cli_error("unknown command '%s'; run 'beamtrace --help' for the list of commands",
                      name);
    return BMT_EXIT_USAGE;
}
