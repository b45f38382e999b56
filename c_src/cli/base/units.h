/* Values with units as users type them on the command line: durations
 * ("250us", "1.5s"). A duration always carries its unit: a bare number
 * would mean nanoseconds to one reader and seconds to another. Pure;
 * reentrant. */
#ifndef BMT_CLI_UNITS_H
#define BMT_CLI_UNITS_H

#include <stdint.h>

/* The units a duration takes, for error messages. */
#define BMT_DURATION_UNITS "ns, us, ms, s, m or h"

/* Parses a duration: a non-negative decimal number followed by its unit,
 * ns, us (or µs), ms, s, m (or min) or h, such as "800ns", "250us",
 * "1.5ms", "2s", "3m", "1h", into *ns. Returns 0, or -EINVAL for anything
 * else (no unit, another unit, a negative number, more than 2^64 ns). */
int bmt_parse_duration_ns(const char *text, uint64_t *ns);

#endif
