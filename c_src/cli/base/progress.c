/* Progress line (contract in progress.h). */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FIRST_AFTER_NS 1000000000LL
#define EVERY_NS 250000000LL

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void bmt_progress_start(struct bmt_progress *p, const char *what)
{
    const char *env = getenv("BEAMTRACE_PROGRESS");
    memset(p, 0, sizeof *p);
    p->enabled = env && *env ? strcmp(env, "0") != 0 : isatty(2);
    p->what = what;
    if (p->enabled) {
        p->start_ns = now_ns();
        /* "always": from the start (for tests). */
        p->next_ns = p->start_ns + (env && strcmp(env, "always") == 0 ? 0 : FIRST_AFTER_NS);
    }
}

void bmt_progress_update(struct bmt_progress *p, uint64_t done, uint64_t total)
{
    if (!p->enabled)
        return;
    int64_t t = now_ns();
    if (t < p->next_ns)
        return;
    p->next_ns = t + EVERY_NS;
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    fprintf(stderr, "\rbeamtrace: %s: %3.0f%% (%llu of %llu MB, %.0f s)\033[K", p->what, pct,
            (unsigned long long)(done >> 20), (unsigned long long)(total >> 20),
            (double)(t - p->start_ns) / 1e9);
    fflush(stderr);
    p->shown = 1;
}

void bmt_progress_clear(struct bmt_progress *p)
{
    if (!p->shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
}
