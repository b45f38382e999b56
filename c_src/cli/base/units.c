/* Values with units (contract in units.h). */
#include "units.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_parse_duration_ns(const char *text, uint64_t *ns)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"ms", 1e6}, {"s", 1e9},
                 {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !(v >= 0) || text[0] == '+' || text[0] == '-')
        return -EINVAL;
    for (unsigned i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) != 0)
            continue;
        v *= units[i].ns;
        if (v >= 1.8e19)
            return -EINVAL;
        *ns = (uint64_t)(v + 0.5);
        return 0;
    }
    return -EINVAL;
}
