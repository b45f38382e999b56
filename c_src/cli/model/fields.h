/* The catalogue fields each accumulator of model/ reads (ctf/field_set.h):
 * a command asks the reader for the union of the sets of the accumulators
 * it feeds (bmt_an_reads), and the reader decodes those fields and skips
 * the others (bmt_reader_select).
 *
 * Each set must name every field its accumulator's feed function (and
 * what that calls) reads: a field left out holds a stale value. The test
 * builds poison the fields not selected (-DBMT_READER_POISON), and
 * test/analyses compares every analysis's output with and without
 * selection (BEAMTRACE_READER=generic), so a missing bit fails a test.
 */
#ifndef BMT_CLI_FIELDS_H
#define BMT_CLI_FIELDS_H

#include "ctf/field_set.h"

/* names.c: process_info, process_spawn and process_register (every
 * analysis's scope feeds its names; bmt_an_run adds this set). */
extern const struct bmt_field_set bmt_fields_names;
/* callstack.c: calls, flame, the report's calls, export's stacks. */
extern const struct bmt_field_set bmt_fields_callstack;
/* cmd_sched.c: send -> scheduled-in. */
extern const struct bmt_field_set bmt_fields_sched;
/* cmd_gc.c: GC pauses. */
extern const struct bmt_field_set bmt_fields_gc;
/* cmd_procs.c: spawns, exits and their reasons. */
extern const struct bmt_field_set bmt_fields_procs;
/* timeline.c: the report's lanes. */
extern const struct bmt_field_set bmt_fields_timeline;
/* counters.c: the samples' charts. */
extern const struct bmt_field_set bmt_fields_counters;
/* links.c: message links (messages, export). */
extern const struct bmt_field_set bmt_fields_links;
/* cmd_files.c: file operations. */
extern const struct bmt_field_set bmt_fields_files;
/* cmd_export.c's own slices and instants (besides callstack and links). */
extern const struct bmt_field_set bmt_fields_export;

#endif
