/* `calls --group-by` printed (model/groupby.h): per function and value,
 * the finished calls' count and latency percentiles, as a text table after
 * calls' own, or as the JSON member "groups" (times in ns).
 * Single-threaded. */
#ifndef BMT_CLI_GROUPBY_PRINT_H
#define BMT_CLI_GROUPBY_PRINT_H

#include "model/groupby.h"
#include "base/out.h"

/* Rows in `order` (bmt_groupby_sorted); `funcs` names the function ids. */
void bmt_groupby_text(struct bmt_out *o, const struct bmt_groupby *g, const struct bmt_strtab *funcs,
                      const uint32_t *order);
/* `, "group_by": ..., "groups": [...]` (inside calls' JSON object). */
void bmt_groupby_json(struct bmt_out *o, const struct bmt_groupby *g, const struct bmt_strtab *funcs,
                      const uint32_t *order);

#endif
