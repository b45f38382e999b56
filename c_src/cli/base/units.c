/* Values with units (contract in units.h). */
#include "units.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_parse_duration_ns(const char *text, uint64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !(v >= 0))
        return -EINVAL;
    double mult;
    if (*end == '\0' || strcmp(end, "ns") == 0)
        mult = 1;
    else if (strcmp(end, "us") == 0 || strcmp(end, "\xc2\xb5s") == 0)
        mult = 1e3;
    else if (strcmp(end, "ms") == 0)
        mult = 1e6;
    else if (strcmp(end, "s") == 0)
        mult = 1e9;
    else
        return -EINVAL;
    v *= mult;
    if (v >= 1.8e19)
        return -EINVAL;
    *ns = (uint64_t)(v + 0.5);
    return 0;
}
