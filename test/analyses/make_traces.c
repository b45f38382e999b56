/* Writes synthetic traces with known answers for the analysis tests, and a
 * large realistic one for the benchmark, through the real ring and trace
 * directory writer (so they are exactly what the recorder produces).
 *
 *   make_traces edges OUTDIR    OUTDIR/{edges,return_to,both}: call-stack edge
 *                               cases (expected answers in run.sh)
 *   make_traces bench DIR N     N events over 4 streams: nested call/return
 *                               pairs of 256 processes, sends, receives,
 *                               scheduling and gc
 * Deterministic (fixed uuid, clock offset, seeded PRNG). Aborts on error.
 */
#include "catalogue.h"
#include "ctf.h"
#include "event.h"
#include "ring.h"
#include "trace_dir.h"
#include "trace_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STREAMS 4
#define SUBBUF (1u << 16)
#define SUBBUFS 8

struct gen {
    struct bmt_test_gen t;
};

static void die(const char *what)
{
    fprintf(stderr, "make_traces: %s\n", what);
    exit(1);
}

static void gen_open(struct gen *g, const char *path, unsigned streams)
{
    struct bmt_ctf_trace_info info;
    memset(&info, 0, sizeof info);
    for (int i = 0; i < BMT_CTF_UUID_BYTES; i++)
        info.uuid[i] = (uint8_t)(i * 31 + 7);
    strcpy(info.hostname, "analyses-host");
    info.clock_offset_s = 1700000000;
    info.vpid = 4242;
    strcpy(info.procname, "beam.smp");
    /* Drained every 64 events into 8 x 64 KiB packets: never full. */
    if (bmt_test_gen_open(&g->t, path, &info, streams, SUBBUF, SUBBUFS, BMT_RING_DISCARD, 64) < 0)
        die("cannot create the trace");
}

/* Emits tracepoint `tp` at `ts`: string fields take s[0], s[1], s[2] in
 * order, integer fields n[0], n[1], ... */
static void put(struct gen *g, unsigned stream, int tp, uint64_t ts, const char *s0,
                const char *s1, const char *s2, uint64_t n0, uint64_t n1)
{
    const char *strs[3] = {s0, s1, s2};
    uint64_t ints[3] = {n0, n1, 0};
    unsigned si = 0, ni = 0;
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = (uint16_t)tp;
    ev.ts_ns = ts;
    for (unsigned f = 0; f < bmt_catalogue[tp].field_count; f++) {
        if (bmt_catalogue[tp].fields[f].type == BMT_FIELD_STRING) {
            const char *s = si < 3 && strs[si] ? strs[si] : "";
            si++;
            ev.values[f].str = s;
            ev.values[f].len = (uint32_t)strlen(s);
        } else {
            ev.values[f].integer = ni < 3 ? ints[ni++] : 0;
        }
    }
    if (bmt_test_gen_emit(&g->t, stream, &ev) != 1)
        die("an event was dropped or could not be written");
}

static void gen_close(struct gen *g)
{
    if (bmt_test_gen_close(&g->t) < 0)
        die("close failed");
}

#define CALL(ts, pid, f) put(g, 0, BMT_TP_function_call, ts, pid, f, NULL, 0, 0)
#define RET(ts, pid, f) put(g, 0, BMT_TP_function_return, ts, pid, f, NULL, 0, 0)
#define EXC(ts, pid, f) put(g, 0, BMT_TP_function_exception, ts, pid, f, "error", 0, 0)

/* return_trace + exception_trace traces (exact stacks) plus exits and the
 * trace ending mid-call. Times in ns from 1 s. */
static void edges(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 1000000000;
    /* <0.1.0>: exception through two frames; a caught exception. */
    CALL(t + 1000, "<0.1.0>", "m:a/0");
    CALL(t + 2000, "<0.1.0>", "m:b/0");
    EXC(t + 5000, "<0.1.0>", "m:b/0");
    EXC(t + 6000, "<0.1.0>", "m:a/0");
    CALL(t + 7000, "<0.1.0>", "m:c/0");
    CALL(t + 8000, "<0.1.0>", "m:d/0");
    EXC(t + 9000, "<0.1.0>", "m:d/0");
    RET(t + 10000, "<0.1.0>", "m:c/0");
    /* <0.3.0>: dies inside two calls. */
    CALL(t + 11000, "<0.3.0>", "m:e/0");
    CALL(t + 12000, "<0.3.0>", "m:f/0");
    put(g, 0, BMT_TP_process_exit, t + 14000, "<0.3.0>", "killed", NULL, 0, 0);
    /* <0.5.0>: a return from a call made before tracing started. */
    CALL(t + 15000, "<0.5.0>", "m:h/0");
    RET(t + 16000, "<0.5.0>", "m:h/0");
    RET(t + 17000, "<0.5.0>", "m:x/0");
    /* <0.4.0>: still inside g/0 when the trace ends at t + 40000. */
    CALL(t + 20000, "<0.4.0>", "m:g/0");
    /* Tail recursion under return_trace: every call returns. */
    CALL(t + 21000, "<0.6.0>", "m:loop/1");
    CALL(t + 22000, "<0.6.0>", "m:loop/1");
    CALL(t + 23000, "<0.6.0>", "m:loop/1");
    RET(t + 24000, "<0.6.0>", "m:loop/1");
    RET(t + 25000, "<0.6.0>", "m:loop/1");
    RET(t + 26000, "<0.6.0>", "m:loop/1");
    put(g, 0, BMT_TP_process_scheduled, t + 40000, "<0.9.0>", "m:z/0", "in", 0, 0);
    gen_close(g);
}

/* return_to only: tail-calling callers never return; returns name the
 * function returned to. */
static void return_to(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 1000000000;
    CALL(t + 0, "<0.7.0>", "m:run/0");
    CALL(t + 1000, "<0.7.0>", "m:a/0"); /* a tail-calls b */
    CALL(t + 2000, "<0.7.0>", "m:b/0");
    CALL(t + 3000, "<0.7.0>", "m:c/0");
    RET(t + 4000, "<0.7.0>", "m:b/0");   /* c returned to b */
    RET(t + 6000, "<0.7.0>", "m:run/0"); /* b returned to run: a, b end */
    RET(t + 8000, "<0.7.0>", "undefined");
    put(g, 0, BMT_TP_process_scheduled, t + 10000, "<0.9.0>", "m:z/0", "in", 0, 0);
    gen_close(g);
}

/* return_trace and return_to together: the sequence OTP 25 emits for
 * run() -> a() (tail-calls b), b() -> c(); d() -> e() raising, caught. */
static void both(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 1000000000;
    const char *p = "<0.8.0>";
    CALL(t + 0, p, "m:run/0");
    CALL(t + 10, p, "m:a/0");
    CALL(t + 20, p, "m:b/0");
    CALL(t + 30, p, "m:c/0");
    RET(t + 40, p, "m:c/0");
    RET(t + 50, p, "m:b/0");
    RET(t + 60, p, "m:b/0");
    RET(t + 70, p, "m:a/0");
    RET(t + 80, p, "m:run/0");
    CALL(t + 90, p, "m:d/0");
    CALL(t + 100, p, "m:e/0");
    EXC(t + 110, p, "m:e/0");
    RET(t + 120, p, "m:d/0");
    RET(t + 130, p, "m:d/0");
    RET(t + 140, p, "m:run/0");
    RET(t + 150, p, "m:run/0");
    RET(t + 160, p, "undefined");
    gen_close(g);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define PROCS 256
#define DEPTH 6

static void bench(const char *path, unsigned long long n)
{
    static const char *const funcs[] = {
        "gen_server:handle_msg/6", "my_app_server:handle_call/3", "ets:lookup/2",
        "lists:foldl/3", "my_app_db:get/2", "maps:get/2", "my_app_codec:decode/1",
        "erlang:term_to_binary/1"};
    struct gen gg, *g = &gg;
    gen_open(g, path, STREAMS);
    char pids[PROCS][24];
    unsigned depth[PROCS] = {0}, stack[PROCS][DEPTH];
    for (unsigned i = 0; i < PROCS; i++)
        snprintf(pids[i], sizeof pids[i], "<0.%u.0>", 100 + i);
    uint64_t ts = 5000000000000ull;
    for (unsigned long long i = 0; i < n; i++) {
        unsigned p = (unsigned)(rnd() % PROCS), s = p % STREAMS;
        unsigned r = (unsigned)(rnd() % 100);
        ts += 1 + rnd() % 200;
        if (r < 70) {
            if (depth[p] < DEPTH && (depth[p] == 0 || rnd() % 2)) {
                unsigned f = (unsigned)(rnd() % 8);
                stack[p][depth[p]++] = f;
                put(g, s, BMT_TP_function_call, ts, pids[p], funcs[f], NULL, 0, 0);
            } else {
                put(g, s, BMT_TP_function_return, ts, pids[p], funcs[stack[p][--depth[p]]], NULL,
                    0, 0);
            }
        } else if (r < 80) {
            put(g, s, BMT_TP_message_send, ts, pids[p], pids[(p + 1) % PROCS], "{req,42}", 0, 0);
        } else if (r < 88) {
            put(g, s, BMT_TP_message_receive, ts, pids[p], "{req,42}", NULL, 0, 0);
        } else if (r < 96) {
            put(g, s, BMT_TP_process_scheduled, ts, pids[p], funcs[0], r & 1 ? "in" : "out", 0, 0);
        } else {
            put(g, s, r & 1 ? BMT_TP_gc_minor_end : BMT_TP_gc_minor_start, ts, pids[p], NULL,
                NULL, 100, 610);
        }
    }
    gen_close(g);
}

int main(int argc, char **argv)
{
    char path[4096];
    if (argc == 3 && strcmp(argv[1], "edges") == 0) {
        mkdir(argv[2], 0755);
        snprintf(path, sizeof path, "%s/edges", argv[2]);
        edges(path);
        snprintf(path, sizeof path, "%s/return_to", argv[2]);
        return_to(path);
        snprintf(path, sizeof path, "%s/both", argv[2]);
        both(path);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "bench") == 0) {
        bench(argv[2], strtoull(argv[3], NULL, 10));
        return 0;
    }
    fprintf(stderr, "usage: make_traces edges OUTDIR | make_traces bench DIR N\n");
    return 2;
}
