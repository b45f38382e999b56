/* `beamtrace record`: trace a running node from outside, with nothing of
 * beamtrace installed on it. cmd/record.c parses the command line into
 * struct bmt_record_opts; this folder does the rest:
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

#include <stdint.h>

#define BMT_RECORD_MAX_CALLS 64
#define BMT_RECORD_INTERRUPTED 130 /* exit status: Ctrl-C before recording */

struct bmt_record_opts {
    const char *node;
    const char *nodes;        /* --nodes a@h1,b@h2,...: a cluster */
    int cluster;              /* --cluster: --node and every node connected to it */
    int links;                /* --links: message events with what links them */
    const char *cookie_file;
    const char *calls[BMT_RECORD_MAX_CALLS];
    int call_count;
    const char *procs;        /* all | new | existing | NAME,NAME,... */
    const char *events;       /* procs,send,... */
    const char *duration;     /* as given, for messages */
    int64_t duration_ms;      /* -1: infinity */
    int64_t max_events;       /* 0: infinity */
    int64_t max_bytes;        /* 0: the recorder's default */
    int64_t max_rate;         /* events/s; 0: infinity */
    const char *out;
    int remote_dir;           /* leave the trace on the target */
    const char *remote_dir_path;
    const char *remote_tmp;
    const char *proto_dist;
    const char *ssl_dist_optfile;
    int keep;
    int return_to;
    struct bmt_record_sources sources; /* --samples, --system-monitor, ... */
};

/* A growable text buffer (the options term). `failed` once out of memory. */
struct bmt_text {
    char *buf;
    size_t len, cap;
    int failed;
};

/* Appends the event kinds of `list` (comma separated) to `t` as atoms.
 * Returns 0, or -1 naming the bad one in *bad (a copy the caller frees). */
int bmt_record_kinds(struct bmt_text *t, const char *list, char **bad);

/* Writes the options term the controller reads: `o` with the absolute
 * trace directory `out` ("" with --remote-dir), beamtrace's root (its
 * ebin/ and priv/), where the cookie came from, and whether stderr is a
 * terminal. Returns 0, or a usage-error exit status after printing the
 * line; t->failed when out of memory. */
int bmt_record_term(struct bmt_text *t, const struct bmt_record_opts *o, const char *root,
                    const char *out, const char *cookie_from, int tty);

/* Records as `o` says (checked by the caller): finds beamtrace's files and
 * the cookie, picks the trace directory, starts the controller and relays
 * its output until it exits. Returns the command's exit status. */
int bmt_record_run(const struct bmt_record_opts *o);

#endif
