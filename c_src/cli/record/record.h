/* `beamtrace record`: trace a running node from outside, with nothing of
 * beamtrace installed on it. options.c declares its options (cmd/record.c
 * parses the command line with them into struct bmt_record_args); this
 * folder does the rest:
 *  - term.c turns the options into the Erlang term the controller reads;
 *  - controller.c finds the cookie and beamtrace's own files, starts the
 *    hidden `erl` controller node running beamtrace_record
 *    (src/beamtrace_record.erl), speaks its line protocol, draws progress
 *    and relays Ctrl-C;
 *  - sources.c checks and writes the session source options.
 *
 * The protocol, both halves: the cookie is the first line written to the
 * controller's stdin (never on a command line: ps would show it),
 * followed by the options as one Erlang term and, later, `stop` on Ctrl-C.
 * The controller answers on its stdout, one line each: `progress
 * ELAPSED_MS EVENTS DISCARDED BYTES` (drawn as one line on a TTY), `note
 * TEXT` (stderr), `error TEXT` (stderr, "beamtrace: record:", or the
 * command's name), `result TEXT` (stdout), `line TEXT` (stdout: a
 * listing's line, `flights`); anything else (the VM's own messages) goes
 * to stderr as is. Its exit status is the command's. The same controller
 * runs `flights`, `fetch` and `stop` on detached flight recordings (the
 * term's `action`; src/beamtrace_flight_remote.erl). Single-threaded.
 */
#ifndef BMT_CLI_RECORD_H
#define BMT_CLI_RECORD_H

#include "sources.h"
#include "base/opt.h"

#include <stdint.h>

#define BMT_RECORD_INTERRUPTED 130 /* exit status: Ctrl-C before recording */

/* The command line, as record/options.c declares it (base/opt.h types). */
struct bmt_record_args {
    struct bmt_common common;
    const char *node;
    const char *nodes;        /* --nodes a@h1,b@h2,...: a cluster */
    int cluster;              /* --cluster: --node and every node connected to it */
    int links;                /* --links: message events with what links them */
    int results;              /* --results: returns with the value returned */
    int args;                 /* --args: calls with their arguments */
    const char *cookie_file;
    struct bmt_strs calls;
    int return_to;
    const char *procs;        /* all | new | existing | NAME,NAME,... */
    const char *events;       /* procs,send,... */
    const char *exclude;      /* --exclude PID,NAME,...: never traced */
    uint64_t buffer_size;     /* --buffer-size bytes per recording thread; 0: the recorder's */
    const char *message_length; /* --message-length: bytes (0..16384) or size_only; NULL: 255 */
    int mode;                 /* --mode: 0 discard, 1 overwrite (mode_values in options.c) */
    uint64_t duration_ns;     /* UINT64_MAX: infinity */
    uint64_t max_events;      /* 0: none */
    uint64_t max_bytes;       /* 0: the recorder's default */
    uint64_t max_rate;        /* events/s; 0: none */
    struct bmt_record_sources sources; /* --samples, --system-monitor, ... */
    const char *relayd;       /* --relayd URL: the nodes stream there */
    int live;                 /* --live: a live relayd session */
    int local;                /* --local: a local copy too, brought back */
    const char *out;          /* -o DIR */
    const char *remote_dir;   /* NULL, "" (its default place) or DIR */
    const char *remote_tmp;
    int keep;
    const char *proto_dist;
    const char *ssl_dist_optfile;
    char first_node[256];     /* of --nodes: the node connected to first */
    /* A flight recording (docs/flight-recorder.md): the controller's
     * `flight` map. */
    uint64_t flight_ns;       /* --flight WINDOW; 0: a plain recording */
    struct bmt_strs triggers; /* --trigger SPEC, as given (checked: flight_opts.h) */
    uint64_t after_ns;        /* --after; 0: the controller's (1 s) */
    const char *max_captures; /* --max-captures N/h or infinity; NULL: the controller's (6/h) */
    uint64_t until_ns;        /* --until; 0: the controller's (7 days) */
    int detach;               /* --detach: leave it running on the node */
    const char *sample;       /* --sample 1/N or KIND=1/N,...; NULL: every event */
    const char *on_max_rate;  /* --on-max-rate stop|sample; NULL: stop (sample for --flight) */
};

/* The commands on detached flight recordings (flights, fetch, stop) and
 * on a running record (snapshot): the controller's `action`. */
enum bmt_record_action { BMT_ACTION_FLIGHTS, BMT_ACTION_FETCH, BMT_ACTION_STOP, BMT_ACTION_SNAPSHOT };

/* Its options (record/options.c): one row each, naming its key in the
 * controller's options map where it has one. */
extern const struct bmt_opt bmt_record_options[];

/* The options of `flights` (the node and how to reach it) and of `fetch`
 * and `stop` (those and -o DIR), into struct bmt_record_args. */
extern const struct bmt_opt bmt_flights_options[];
extern const struct bmt_opt bmt_fetch_options[];

/* The options of `snapshot`: the node, how to reach it, -o DIR. */
extern const struct bmt_opt bmt_snapshot_options[];


/* Checks what the options cannot say alone (--nodes with --node, --links
 * without send or receive, nothing to trace, ...) and completes `a`
 * (--node from --nodes, --proto-dist and --ssl-dist-optfile from the
 * environment). Returns 0, or BMT_EXIT_USAGE after one error line. */
int bmt_record_check(struct bmt_record_args *a);

/* Completes --proto-dist and --ssl-dist-optfile from the environment
 * ($BEAMTRACE_PROTO_DIST, $BEAMTRACE_SSL_DIST_OPTFILE) when not given
 * (bmt_record_check does it for record; flights, fetch and stop call it). */
void bmt_record_reach_defaults(struct bmt_record_args *a);

/* A growable text buffer (the options term). `failed` once out of memory. */
struct bmt_text {
    char *buf;
    size_t len, cap;
    int failed;
};

/* Writes the options term the controller reads: `a` with the absolute
 * trace directory `out` ("" with --remote-dir), beamtrace's root (its
 * ebin/ and priv/), where the cookie came from, and whether stderr is a
 * terminal. Returns 0, or a usage-error exit status after printing the
 * line; t->failed when out of memory. */
int bmt_record_term(struct bmt_text *t, const struct bmt_record_args *a, const char *root,
                    const char *out, const char *cookie_from, int tty);

/* Writes the options term of `action` on the node `a` names (flights,
 * fetch, stop): the node, -o DIR made absolute in `out` ("" for the
 * controller's default, ./beamtrace-flights-NODE), --remote-tmp, where the
 * cookie came from. Same returns as bmt_record_term. */
int bmt_record_action_term(struct bmt_text *t, const struct bmt_record_args *a,
                           enum bmt_record_action action, const char *out,
                           const char *cookie_from, int tty);

/* Records as `a` says (checked by bmt_record_check): finds beamtrace's files and
 * the cookie, picks the trace directory, starts the controller and relays
 * its output until it exits. Returns the command's exit status. */
int bmt_record_run(const struct bmt_record_args *a);

/* Runs `action` (flights, fetch, stop) on the node `a` names through the
 * controller, as bmt_record_run does: one listing line per `line` the
 * controller sends, on stdout. Returns the command's exit status. */
int bmt_record_run_action(const struct bmt_record_args *a, enum bmt_record_action action);

#endif
