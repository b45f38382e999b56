/* The trace as a timeline viewer draws it (Chrome/Perfetto: out/chrome.h):
 * per process, its function calls as nested slices (stacks rebuilt by
 * callstack.c, so they nest), its scheduled-in periods, its spawns, exits,
 * registrations, collections, sends, receives and file and ETS
 * operations; arrows from each send to its receive (the links of
 * record --links when the trace has them, across nodes too: links.h; else
 * same receiver and message, first in first out: flows.h); and the
 * counters of the samples option.
 *
 * An accumulator (acc.h) that hands each item to a sink as soon as it is
 * known (a timeline is as long as the trace, so it is never kept), in the
 * order the old export wrote them: a call when its frame ends, a
 * scheduled-in period when it ends, a collection at its end. Scope
 * (scope.h): only processes the filter keeps get tracks (an arrow needs
 * both ends kept); with a window, only items inside it are given, and
 * slices cut by its edges are clipped to it and say so. In a sampled
 * trace each item carries the events it stands for (its weight), so a
 * viewer's sums scale back as the analyses' do. Memory: per process, plus
 * the sends waiting for their receive (flows.h). Single-threaded.
 */
#ifndef BMT_CLI_TRACKS_H
#define BMT_CLI_TRACKS_H

#include "acc.h"
#include "callstack.h"
#include "flows.h"
#include "links.h"

#include <stdint.h>

enum bmt_track_item {
    BMT_TRACK_CALL,     /* a function call: a slice on the process's track */
    BMT_TRACK_RUNNING,  /* a scheduled-in period: a slice on its scheduling track */
    BMT_TRACK_SPAWN,    /* instants on the process's track (v: the event) */
    BMT_TRACK_EXIT,
    BMT_TRACK_REGISTER,
    BMT_TRACK_SEND,     /* messages: where arrows bind (v: the event, as OTP's) */
    BMT_TRACK_RECEIVE,
    BMT_TRACK_GC,       /* a collection from ts for dur_ns (v: its end event) */
    BMT_TRACK_IO,       /* a file_op or ets_op (tp says which) */
    BMT_TRACK_COUNTER,  /* a counter sample: no process (trace: the node's) */
};

struct bmt_track_event {
    enum bmt_track_item item;
    uint16_t tp;                /* the trace event it comes from */
    uint32_t pid;               /* pid id (scope names) of the process's track */
    uint64_t ts_ns, dur_ns;     /* start, and length (CALL, RUNNING, GC) */
    uint32_t func;              /* CALL, RUNNING: function id (tracks.cs.funcs) */
    const char *end;            /* CALL, RUNNING: "cut", "unfinished", "exception", or NULL */
    const struct bmt_value *v;  /* the event's fields */
    unsigned trace;             /* COUNTER: its node's trace */
    uint32_t weight;            /* events it stands for: the ratio in force for its kind
                                 * in a sampled trace (sampled.h; a call's at its start),
                                 * else 1 */
    const char *scheduler;      /* RUNNING: "dirty_cpu" or "dirty_io" for a run on a
                                 * dirty scheduler, else NULL */
};

/* What receives the items. Each returns 0 or -ENOMEM. */
struct bmt_tracks_sink {
    int (*event)(void *ctx, const struct bmt_track_event *ev);
    /* An arrow from process `from` at from_ns to process `to` at to_ns. */
    int (*flow)(void *ctx, uint32_t from, uint64_t from_ns, uint32_t to, uint64_t to_ns);
};

struct bmt_tracks {
    struct bmt_an_scope *scope;
    struct bmt_callstack cs;        /* stacks; its pid ids are the tracks' */
    const struct bmt_reader *r;     /* set before the pass: links need it */
    const struct bmt_tracks_sink *sink;
    void *sink_ctx;
    uint64_t t0_ns;                 /* the timeline's origin: the first event, or the window's start */
    int started;
    uint64_t *in_ns;                /* per pid: scheduled-in time + 1, or 0 */
    uint32_t *in_entry;             /* per pid: function id when scheduled in */
    uint8_t *in_kind;               /* per pid: the kind of scheduler it is on (runs.h pools) */
    uint64_t (*gc_ns)[2];           /* per pid: open gc start + 1, minor and major */
    uint64_t gc_open;               /* entries of gc_ns not 0 */
    uint32_t cap;
    struct bmt_flows flows;         /* sends waiting for their receive (no links) */
    struct bmt_links links;         /* the links of record --links */
    int links_ready;
    uint64_t uncertain_links;       /* not drawn */
    int error;                      /* -ENOMEM from a callback */
};

/* Prepares `t` for `scope`; then set r, sink and sink_ctx. */
int bmt_tracks_init(void *self, struct bmt_an_scope *scope);
void bmt_tracks_free(void *self);

/* As an accumulator (acc.h): every event (links keep time by them). */
extern const struct bmt_acc bmt_tracks_acc;

#endif
