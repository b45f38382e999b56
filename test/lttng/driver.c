/* Standalone driver for the LTTng-UST provider library, without a VM.
 *
 *   driver PRIVDIR [SECONDS]
 *
 * Loads PRIVDIR/beamtrace_lttng.so through the NIF's own loader
 * (c_src/sinks/lttng.c), prints how long loading took, then every 100 ms for
 * SECONDS (once when 0 or absent) emits one event of every tracepoint with
 * fixed field values (strings "<name>.<field>", integers 1000*id+k, signed
 * ones negative) so that `lttng view` output can be checked field by field;
 * finally unloads. Output lines:
 *   load_ms=<ms> loaded=<0|1> why=<reason>
 *   enabled=<names enabled at the end, comma-separated>
 *   emitted=<events emitted while enabled>
 * Exit 0 when loaded (or BEAMTRACE_LTTNG disabled it), 1 otherwise.
 */
#include "sinks/sinks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Fills ev for tracepoint id with the fixed values; strings in buf. */
static void fill(struct bmt_event *ev, unsigned id, char (*buf)[64])
{
    const struct bmt_tracepoint *tp = &bmt_catalogue[id];
    memset(ev, 0, sizeof *ev);
    ev->id = (uint16_t)id;
    for (unsigned k = 0; k < tp->field_count; k++) {
        const struct bmt_field *f = &tp->fields[k];
        if (f->type == BMT_FIELD_STRING) {
            snprintf(buf[k], sizeof buf[k], "%s.%s", tp->name, f->name);
            ev->values[k].str = buf[k];
            ev->values[k].len = (uint32_t)strlen(buf[k]);
        } else if (f->type == BMT_FIELD_S64) {
            ev->values[k].integer = (uint64_t)-(int64_t)(1000 * id + k);
        } else {
            ev->values[k].integer = 1000 * id + k;
        }
    }
}

int main(int argc, char **argv)
{
    char why[256] = "";
    char buf[BMT_MAX_FIELDS][64];
    struct bmt_event ev;
    unsigned long emitted = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: driver PRIVDIR [SECONDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) * 10 : 1;
    if (rounds < 1)
        rounds = 1;

    double t0 = now_ms();
    const struct bmt_lttng_provider *p = bmt_lttng_load(argv[1], why, sizeof why);
    printf("load_ms=%.1f loaded=%d why=%s\n", now_ms() - t0, p != NULL, why);
    fflush(stdout);
    if (!p)
        return getenv("BEAMTRACE_LTTNG") ? 0 : 1;

    for (int r = 0; r < rounds; r++) {
        for (unsigned id = 0; id < BMT_TP_COUNT; id++) {
            if (!bmt_lttng_wants(p, id))
                continue;
            fill(&ev, id, buf);
            p->emit(&ev);
            emitted++;
        }
        if (r + 1 < rounds)
            nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    /* emit() on a disabled tracepoint must be a no-op: call it for all. */
    for (unsigned id = 0; id < BMT_TP_COUNT; id++)
        if (!bmt_lttng_wants(p, id)) {
            fill(&ev, id, buf);
            p->emit(&ev);
        }

    printf("enabled=");
    for (unsigned id = 0, first = 1; id < BMT_TP_COUNT; id++)
        if (bmt_lttng_wants(p, id)) {
            printf("%s%s", first ? "" : ",", bmt_catalogue[id].name);
            first = 0;
        }
    printf("\nemitted=%lu\n", emitted);
    bmt_lttng_unload(p);
    return 0;
}
