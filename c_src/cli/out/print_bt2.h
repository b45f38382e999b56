/* Prints any event's fields exactly as babeltrace2's sink.text.pretty does
 * with its default options, from the decoded values the reader keeps:
 *   { cpu_id = 0 }, { vpid = 12, ... }, { pid = "<0.1.0>", ... }
 * (packet context, stream event context, event context, payload; a scope
 * with nothing babeltrace2 shows is left out). Integers in their declared
 * base, enumerations as ( "label" : container = N ), arrays and sequences
 * as [ [0] = v, ... ] (text ones as strings), variants as { v }.
 * Used by `view`; single-threaded.
 */
#ifndef BMT_CLI_PRINT_BT2_H
#define BMT_CLI_PRINT_BT2_H

#include "base/out.h"
#include "ctf/reader.h"

/* Appends the scopes of `rec` (no trailing newline). */
void bmt_print_bt2_fields(struct bmt_out *o, const struct bmt_reader *r,
                          const struct bmt_record *rec);

/* The same in two parts, so a caller can keep the packet part, which
 * changes only with the packet: the packet context of stream `stream`'s
 * current packet (returns 1 when something was printed), then the event's
 * scopes (`printed`: whether something precedes them on the line). */
int bmt_print_bt2_packet(struct bmt_out *o, const struct bmt_reader *r, unsigned stream);
void bmt_print_bt2_event(struct bmt_out *o, const struct bmt_reader *r,
                         const struct bmt_record *rec, int printed);

/* Appends the integer `v` of type `t` (an integer or enumeration's
 * container) in babeltrace2's rendering of its base. */
void bmt_print_bt2_int(struct bmt_out *o, const struct bmt_ctf_type *t, uint64_t v);

#endif
