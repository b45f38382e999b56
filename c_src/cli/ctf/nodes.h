/* Which node a pid is: the node tables of a cluster's traces, and the
 * node-qualified text every analysis sees for a pid, port or reference of
 * a cluster trace (docs/cluster.md, "The node table").
 *
 * A cluster input is several beamtrace traces, each naming its node
 * (environment `beamtrace_node`). OTP prints another node's pid as
 * <N.x.y> with N a number of the *printing* node, so a pid text means
 * nothing across traces; each trace's node_info events map its N to a node
 * name. The reader (reader.c) passes every event of a cluster input through
 * bmt_nodes_qualify, which learns node_info events and rewrites the
 * fields that hold a process (catalogue kind ID, and the destination of a
 * send) to one form:
 *
 *     NODE/<0.x.y>        e.g. kv@h2/<0.312.0>; ports NODE/#Port<0.7>,
 *                         process aliases NODE/#Ref<0.a.b.c>
 *     ?NODE/<N.x.y>       unresolved: trace NODE has no node_info for N
 *                         (yet: the table is learned as the trace is read)
 *
 * Names, `undefined` and {Name,Node} are left as OTP printed them. A
 * single trace is never rewritten (its text stays OTP's). Memory: per node
 * and per (trace, N) pair. Single-threaded.
 */
#ifndef BMT_CLI_NODES_H
#define BMT_CLI_NODES_H

#include "core/event.h"
#include "base/strtab.h"

#include <stddef.h>
#include <stdint.h>

/* Room for one rewritten field: a node name (an atom, <= 255 bytes), '/',
 * '?', and a pid, port or reference text. */
#define BMT_NODES_TEXT_BYTES (256 + 2 + 64)

struct bmt_nodes {
    struct bmt_strtab names;        /* node names; id = node id; traced nodes first */
    struct bmt_u64map index;        /* (trace << 32 | N) -> node id, from node_info */
    uint32_t *trace_node;           /* trace -> its node id */
    unsigned trace_count;
    uint64_t unresolved_count;      /* texts written as ?NODE/... */
    struct bmt_value vals[BMT_MAX_FIELDS];                 /* the rewritten record's values */
    char text[BMT_MAX_FIELDS][BMT_NODES_TEXT_BYTES];      /* and their text */
};

/* Prepares `n` for `trace_count` traces whose node names are `node[i]`
 * (NUL-terminated; distinct). Returns 0 or -ENOMEM (free with
 * bmt_nodes_free in both cases). */
int bmt_nodes_init(struct bmt_nodes *n, const char *const *node, unsigned trace_count);

/* Learns the node_info event of trace `trace` (values in catalogue order;
 * other events are ignored), then rewrites the process fields of event
 * `tp` with `values` that `fields` holds (bit i: field i was decoded) into
 * n->vals (valid until the next call). Returns the values to use: n->vals,
 * or `values` itself when nothing changed; NULL on out of memory. */
const struct bmt_value *bmt_nodes_qualify(struct bmt_nodes *n, unsigned trace, uint16_t tp,
                                          const struct bmt_value *values, uint32_t fields);

/* The node id of the traced node `name`/`len`, or -1 when no trace is of
 * that node. */
int64_t bmt_nodes_traced(const struct bmt_nodes *n, const char *name, size_t len);

/* Length of the node prefix of a qualified text ("kv@h2" of
 * "kv@h2/<0.1.0>"), or 0 when `s` is not qualified (or unresolved). */
size_t bmt_nodes_prefix(const char *s, size_t len);

void bmt_nodes_free(struct bmt_nodes *n);

#endif
