/* Flame graphs drawn (model/flame.h lays them out): Brendan Gregg's
 * folded stacks, or a self-contained interactive SVG (click to zoom,
 * <title> tooltips, one inline script, no external resources).
 * Single-threaded.
 */
#ifndef BMT_CLI_OUT_FLAME_H
#define BMT_CLI_OUT_FLAME_H

#include "model/flame.h"
#include "base/out.h"

/* Appends folded stacks (root;...;leaf COUNT) of the call tree in `cs`
 * (built with cs->tree = 1) in `mode`, divided by `unit_ns` (rounded;
 * zero-count lines dropped). Returns 0 or -ENOMEM. */
int bmt_flame_folded(struct bmt_out *o, const struct bmt_callstack *cs, uint64_t unit_ns,
                     enum bmt_flame_mode mode);

/* Appends an interactive flame graph <svg> (click to zoom, <title>
 * tooltips, inline script, no external resources) of `cs`'s call tree in
 * `mode`, `width` pixels wide. `standalone` adds the XML prolog. Returns 0
 * or -ENOMEM. */
int bmt_flame_svg(struct bmt_out *o, const struct bmt_callstack *cs, const char *title,
                  unsigned width, int standalone, enum bmt_flame_mode mode);

/* What a flame graph of `cs` in `mode` shows, for its title. */
void bmt_flame_subtitle(const struct bmt_callstack *cs, enum bmt_flame_mode mode, char *buf,
                        size_t size);

#endif
