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
 * TEXT` (stderr), `error TEXT` (stderr, "beamtrace: record:"), `result
 * TEXT` (stdout); anything else (the VM's own messages) goes to stderr as
 * is. Its exit status is the command's. Single-threaded.
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
    const char *cookie_file;
    struct bmt_strs calls;
    int return_to;
    const char *procs;        /* all | new | existing | NAME,NAME,... */
    const char *events;       /* procs,send,... */
    uint64_t duration_ns;     /* UINT64_MAX: infinity */
    uint64_t max_events;      /* 0: none */
    uint64_t max_bytes;       /* 0: the recorder's default */
    uint64_t max_rate;        /* events/s; 0: none */
    struct bmt_record_sources sources; /* --samples, --system-monitor, ... */
    const char *out;          /* -o DIR */
    const char *remote_dir;   /* NULL, "" (its default place) or DIR */
    const char *remote_tmp;
    int keep;
    const char *proto_dist;
    const char *ssl_dist_optfile;
    char first_node[256];     /* of --nodes: the node connected to first */
};

/* Its options (record/options.c): one row each, naming its key in the
 * controller's options map where it has one. */
extern const struct bmt_opt bmt_record_options[];

/* Checks what the options cannot say alone (--nodes with --node, --links
 * without send or receive, nothing to trace, ...) and completes `a`
 * (--node from --nodes, --proto-dist and --ssl-dist-optfile from the
 * environment). Returns 0, or BMT_EXIT_USAGE after one error line. */
int bmt_record_check(struct bmt_record_args *a);

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

/* Records as `a` says (checked by bmt_record_check): finds beamtrace's files and
 * the cookie, picks the trace directory, starts the controller and relays
 * its output until it exits. Returns the command's exit status. */
int bmt_record_run(const struct bmt_record_args *a);

#endif
