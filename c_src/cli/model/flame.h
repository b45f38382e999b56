/* Flame graphs from the call tree callstack.c aggregates (cs->tree): how
 * wide each frame is in each mode, and the tree laid out for drawing
 * (children in creation order, inclusive widths, depth). out/flame.h draws
 * it, as folded stacks or an SVG. Single-threaded.
 */
#ifndef BMT_CLI_FLAME_H
#define BMT_CLI_FLAME_H

#include "callstack.h"

#include <stdint.h>

/* What a flame graph's widths are. */
enum bmt_flame_mode {
    BMT_FLAME_ALL,      /* on-CPU time per function, off-CPU and GC time as
                         * [runnable] [waiting] [gc] frames above it */
    BMT_FLAME_ON_CPU,   /* on-CPU time only (with [gc] frames) */
    BMT_FLAME_OFF_CPU,  /* off-CPU time only: [runnable] and [waiting] frames */
};

/* The off-CPU frames drawn on top of a stack's function, in order. */
enum { BMT_P_GC, BMT_P_RUNNABLE, BMT_P_WAITING, BMT_P_OFF, BMT_P_COUNT };

/* Their names: "[gc]", "[runnable]", "[waiting]", "[off-cpu]". */
extern const char *const bmt_flame_pseudo[BMT_P_COUNT];

/* The width of node `n`'s own frame in `mode`, and of its off-CPU frames
 * into pseudo[] (ns). Node 0 (the root) has none. */
uint64_t bmt_flame_weights(const struct bmt_callstack *cs, uint32_t n, enum bmt_flame_mode mode,
                           uint64_t pseudo[BMT_P_COUNT]);

struct bmt_flame_layout {
    uint32_t *first_child, *next_sibling;
    uint64_t *total;            /* per node: inclusive ns (proc and root summed) */
    unsigned max_depth;
};

/* Lays out `cs`'s tree in `mode` into `l`. Returns 0 or -ENOMEM (free `l`
 * with bmt_flame_layout_free in both cases). */
int bmt_flame_layout(const struct bmt_callstack *cs, struct bmt_flame_layout *l,
                     enum bmt_flame_mode mode);
void bmt_flame_layout_free(struct bmt_flame_layout *l);

#endif
