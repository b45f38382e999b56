/* Values with units as users type them on the command line: durations
 * ("250us", "1.5s"). Pure; reentrant. */
#ifndef BMT_CLI_UNITS_H
#define BMT_CLI_UNITS_H

#include <stdint.h>

/* Parses a duration such as "1ms", "250us", "1.5s", "800ns" or "800"
 * (nanoseconds) into *ns. Returns 0 or -EINVAL. */
int bmt_parse_duration_ns(const char *text, uint64_t *ns);

#endif
