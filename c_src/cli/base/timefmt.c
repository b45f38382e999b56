/* Times and durations as text (contract in timefmt.h). */
#include "timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Whole seconds (floored) and 0..999999999 ns, so times before 1970 print
 * as babeltrace2 prints them (ctf/reader.h has the reader's own copy). */
static void split(int64_t wall_ns, time_t *s, long long *ns)
{
    int64_t sec = wall_ns / 1000000000, rem = wall_ns % 1000000000;
    if (rem < 0) {
        rem += 1000000000;
        sec--;
    }
    *s = (time_t)sec;
    *ns = (long long)rem;
}

void bmt_date_text(int64_t wall_ns, char out[64])
{
    time_t t;
    long long ns;
    split(wall_ns, &t, &ns);
    struct tm tm;
    char date[40];
    if (!localtime_r(&t, &tm) || strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        strcpy(date, "?");
    snprintf(out, 64, "%s.%09lld", date, ns);
}

void bmt_clock_text(int64_t wall_ns, char out[32])
{
    time_t t;
    long long ns;
    split(wall_ns, &t, &ns);
    struct tm tm;
    if (!localtime_r(&t, &tm))
        memset(&tm, 0, sizeof tm);
    snprintf(out, 32, "%02d:%02d:%02d.%09lld", tm.tm_hour, tm.tm_min, tm.tm_sec, ns);
}

void bmt_duration_text(uint64_t ns, char out[32])
{
    if (ns < 1000)
        snprintf(out, 32, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(out, 32, "%.3f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(out, 32, "%.3f ms", (double)ns / 1e6);
    else
        snprintf(out, 32, "%.3f s", (double)ns / 1e9);
}
