/* The calls analysis (model/calls.h) printed: the table per function (or
 * process and function), the breakdown of where the time went, the
 * slowest calls and the calls slower than a threshold, as text for people
 * or JSON (times in ns) for programs. Single-threaded. */
#ifndef BMT_CLI_CALLS_PRINT_H
#define BMT_CLI_CALLS_PRINT_H

#include "model/calls.h"
#include "model/run.h"
#include "base/out.h"

/* What is printed: the rows, in the order given. */
struct bmt_calls_view {
    const struct bmt_calls *c;
    const struct bmt_reader *r;
    const struct bmt_an_pass *pass;
    const uint32_t *order;      /* stats indices, largest total first */
    uint64_t n;                 /* rows printed */
    uint64_t slower_ns;         /* --slower-than, or 0 */
    const uint32_t *group_order; /* --group-by: c->group's rows sorted, else NULL */
};

/* One call slower than the threshold, as its frame ends (the listing's
 * header before the first: `first`). */
void bmt_calls_slow_text(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_reader *r,
                         uint32_t pid, const struct bmt_frame *f, uint64_t end_ns, unsigned flags);
void bmt_calls_slow_json(struct bmt_out *o, const struct bmt_calls *c, const struct bmt_reader *r,
                         uint32_t pid, const struct bmt_frame *f, uint64_t end_ns, unsigned flags);

/* The table and notes (text), after the slow calls' listing. */
void bmt_calls_text(struct bmt_out *o, const struct bmt_calls_view *v);

/* The rest of the JSON object after the slow calls' array (or after
 * "trace"), closing it. */
void bmt_calls_json(struct bmt_out *o, const struct bmt_calls_view *v);

#endif
