/* The tracks (model/tracks.h) as Chrome Trace Event JSON, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open: a sink for bmt_tracks.
 *
 * Layout: pid 1 ("BEAM calls and events") holds one thread per Erlang
 * process (tid = its pid id + 1, thread_name "<0.66.0> name") with its
 * calls as complete ("X") slices, instants for spawn, exit, register and
 * file and ETS operations, collections, and a 1 ns slice for each send and
 * receive (an arrow's end must bind to a slice). pid 2 ("BEAM scheduling")
 * has the same threads with one slice per scheduled-in period: those
 * cannot share a track with calls, since a call spans many schedulings and
 * Perfetto requires slices on one track to nest. Arrows are flow events
 * (ph s -> f, bp "e"). A cluster (node-qualified pids: ctf/nodes.h) gets
 * both groups per node, "NODE: BEAM calls and events" and "NODE: BEAM
 * scheduling": pids 1 and 2 for the first node, then 5 and 6, 7 and 8,
 * ...; counters go to pid 3 ("BEAM counters"), one track per counter and
 * unit ("NODE: ..." in a cluster), one series per instance. Times are
 * microseconds (3 decimals: nanoseconds kept) since the tracks' origin.
 * In a sampled trace an event kept 1 in N has args.stands_for N, and each
 * group's process_labels says so. Events are written as they come; the
 * names at the end. Single-threaded.
 */
#ifndef BMT_CLI_CHROME_H
#define BMT_CLI_CHROME_H

#include "model/tracks.h"
#include "base/out.h"
#include "base/strtab.h"

struct bmt_chrome {
    struct bmt_out *o;
    const struct bmt_tracks *t;
    const struct bmt_reader *r;
    uint8_t *used;                  /* per pid id: has a track */
    uint32_t *node_of;              /* per pid id: index in nodes + 1, or 0: not known yet */
    uint32_t cap;
    struct bmt_strtab nodes;        /* node prefixes of pid texts ("" for none) */
    uint64_t event_count;           /* JSON events written */
    uint64_t flow_id;
    int counters;                   /* a counter was written: pid 3 is named */
    uint32_t weight_max;            /* the largest stands_for written; 0: none */
};

/* The sink's functions (ctx: a struct bmt_chrome). */
extern const struct bmt_tracks_sink bmt_chrome_sink;

/* Starts the JSON on `o` for the tracks `t` of the trace labelled `label`
 * (read by `r`). */
void bmt_chrome_begin(struct bmt_chrome *c, struct bmt_out *o, const struct bmt_tracks *t,
                      const struct bmt_reader *r, const char *label);

/* The process and thread names, and the end. Returns 0 or -ENOMEM. */
int bmt_chrome_end(struct bmt_chrome *c);

void bmt_chrome_free(struct bmt_chrome *c);

#endif
