/* Times and durations as the command prints them: wall-clock times in the
 * local zone (as `view` and babeltrace2 print them) and human durations.
 * Callers convert reader time to wall time with bmt_reader_wall_ns. Pure
 * but for the time zone (tzset before use); reentrant. */
#ifndef BMT_CLI_TIMEFMT_H
#define BMT_CLI_TIMEFMT_H

#include <stdint.h>

/* Writes "HH:MM:SS.nnnnnnnnn" (local time) of `wall_ns` (ns since the
 * epoch) into out. */
void bmt_clock_text(int64_t wall_ns, char out[32]);

/* Writes "YYYY-MM-DD HH:MM:SS.nnnnnnnnn" (local time) of `wall_ns`. */
void bmt_date_text(int64_t wall_ns, char out[64]);

/* Writes a human duration ("1.234 ms", "12 ns") of `ns` into out. */
void bmt_duration_text(uint64_t ns, char out[32]);

#endif
