/* One pass over a trace for the analyses: every event up to the window's
 * end, in time order, with the scope's names kept current, given to the
 * analysis's feed function.
 *
 * Every analysis reads the trace once, in time order (bmt_reader_next),
 * and keeps state per process, per function or per distinct stack, never
 * per event and never per unit of time. Single-threaded.
 */
#ifndef BMT_CLI_RUN_H
#define BMT_CLI_RUN_H

#include "acc.h"
#include "scope.h"
#include "ctf/reader.h"

#include <stdint.h>

/* Summary of one pass, filled by bmt_an_run. */
struct bmt_an_pass {
    uint64_t event_count;             /* events read (up to the window's end) */
    uint64_t first_ns, last_ns;       /* first and last event read; valid when event_count > 0 */
    uint64_t end_ns;                  /* where open intervals close: the last event, or the window's end */
    uint64_t discarded_count;         /* sum over streams, after the pass */
    uint64_t lost_packet_count;
};

/* At most this many accumulators in one pass. */
#define BMT_AN_MAX_SUBS 16

/* Opens the scope's traces into `r`, resolves `scope` and gives every
 * event up to the window's end, in time order, to each of the `n`
 * accumulators `subs` that declared it (acc.h), scope->names already
 * updated by the event; then calls their finish(). Stops at the first
 * negative return. Sets scope->want to what the pass reads. Prints on
 * stderr, once, the warnings about the trace (catalogue events it cannot
 * use, a flight recorder's incomplete start, a time span no real trace
 * has, discarded events). Returns 0; BMT_AN_USAGE with r->error set for a
 * bad --begin/--end; -EINVAL/-errno with r->error set for trace problems;
 * or an accumulator's negative value (r->error set to "out of memory" for
 * -ENOMEM). The caller closes r in every case. */
int bmt_an_run(struct bmt_reader *r, struct bmt_an_scope *scope, const struct bmt_an_sub *subs,
               unsigned n, struct bmt_an_pass *pass);

#endif
