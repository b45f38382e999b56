/* The LTTng-UST sink's floor on this machine, without a VM: loads
 * priv/beamtrace_lttng.so through the NIF's own loader (c_src/sinks/lttng.c)
 * and times the enabled state + emit() of function_call and message_send events
 * with the field values the call and send workloads produce. What this
 * costs per event is LTTng's own share of the "LTTng sink - null" figure
 * (ring buffer reserve/commit, clock, string copies, TLS, RCU), which
 * beamtrace cannot remove; the rest is beamtrace's decoding and glue.
 * Benchmark-only (bench/run.sh, session bmt-floor).
 *
 *   lttng_floor PRIVDIR N
 * Waits up to 5 s for function_call and message_send to be enabled, then
 * prints one line per tracepoint:
 *   FLOOR <name> <N> events <ns per event>
 */
#include "sinks/sinks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void set_str(struct bmt_event *ev, unsigned k, const char *s)
{
    ev->values[k].str = s;
    ev->values[k].len = (uint32_t)strlen(s);
}

static double run(const struct bmt_lttng_provider *p, const struct bmt_event *ev, long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (bmt_lttng_wants(p, ev->id))
            p->emit(ev);
    return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    char why[256] = "";
    if (argc < 3) {
        fprintf(stderr, "usage: lttng_floor PRIVDIR N\n");
        return 2;
    }
    long n = atol(argv[2]);
    const struct bmt_lttng_provider *p = bmt_lttng_load(argv[1], why, sizeof why);
    if (!p) {
        printf("FLOOR unavailable: %s\n", why);
        return 1;
    }
    for (int i = 0; i < 500 && !(bmt_lttng_wants(p, BMT_TP_function_call) && bmt_lttng_wants(p, BMT_TP_message_send)); i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    if (!(bmt_lttng_wants(p, BMT_TP_function_call) && bmt_lttng_wants(p, BMT_TP_message_send))) {
        printf("FLOOR unavailable: function_call/message_send not enabled after 5 s\n");
        return 1;
    }
    /* As the workloads: bench_mod:f/1 called by a pid; {Pid, ping, 42} to self. */
    struct bmt_event call, send;
    memset(&call, 0, sizeof call);
    call.id = BMT_TP_function_call;
    set_str(&call, 0, "<0.123.0>");
    set_str(&call, 1, "bench_mod:f/1");
    call.values[2].integer = 0;
    memset(&send, 0, sizeof send);
    send.id = BMT_TP_message_send;
    set_str(&send, 0, "<0.123.0>");
    set_str(&send, 1, "<0.123.0>");
    set_str(&send, 2, "{<0.123.0>,ping,42}");
    run(p, &call, n / 10);
    printf("FLOOR function_call %ld events %.1f\n", n, run(p, &call, n));
    run(p, &send, n / 10);
    printf("FLOOR message_send %ld events %.1f\n", n, run(p, &send, n));
    bmt_lttng_unload(p);
    return 0;
}
