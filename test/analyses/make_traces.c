/* Writes synthetic traces with known answers for the analysis tests, and a
 * large realistic one for the benchmark, through the real ring and trace
 * directory writer (so they are exactly what the recorder produces).
 *
 *   make_traces edges OUTDIR    OUTDIR/{edges,return_to,both}: call-stack edge
 *                               cases (expected answers in run.sh)
 *   make_traces bench DIR N     N events over 4 streams: a state dump of 256
 *                               processes, then their nested call/return
 *                               pairs, sends, receives, scheduling and gc,
 *                               and a short-lived process every 1000 events
 *   make_traces bench DIR N PROCS DEPTH CHURN
 *                               the same with PROCS processes, stacks up to
 *                               DEPTH deep, short-lived processes if CHURN
 *                               is 1 (the memory tests: 64 2 0 keeps the
 *                               distinct stacks and processes fixed)
 *   make_traces scenarios OUTDIR  OUTDIR/{names,window,overwrite,span34,report,
 *                               stacks,phantom,dangling,dirty,own_cpu,saturated,
 *                               wakers,files_before}: traces with known answers for names
 *                               (state dump, spawn, registration, Elixir),
 *                               time windows, flight recorders, an absurd
 *                               time span, the report's layout and the call
 *                               tree's cap (answers in run.sh)
 * Deterministic (fixed uuid, clock offset, seeded PRNG). Aborts on error.
 */
#include "core/catalogue.h"
#include "core/ctf.h"
#include "core/event.h"
#include "core/ring.h"
#include "core/trace_dir.h"
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

static void gen_open_sched(struct gen *g, const char *path, unsigned streams,
                           uint32_t schedulers);

static void gen_open(struct gen *g, const char *path, unsigned streams)
{
    gen_open_sched(g, path, streams, 0);
}

static void gen_open_info(struct gen *g, const char *path, unsigned streams,
                          const struct bmt_ctf_trace_info *kinds);

/* As gen_open, the environment saying the node has `schedulers` normal
 * schedulers and no dirty ones (0: not said, as before). */
static void gen_open_sched(struct gen *g, const char *path, unsigned streams,
                           uint32_t schedulers)
{
    struct bmt_ctf_trace_info kinds;
    memset(&kinds, 0, sizeof kinds);
    kinds.schedulers_count = schedulers;
    gen_open_info(g, path, streams, &kinds);
}

/* As gen_open, the environment saying the schedulers of each kind and
 * which streams they write, as `kinds` has them. */
static void gen_open_info(struct gen *g, const char *path, unsigned streams,
                          const struct bmt_ctf_trace_info *kinds)
{
    struct bmt_ctf_trace_info info;
    memset(&info, 0, sizeof info);
    for (int i = 0; i < BMT_CTF_UUID_BYTES; i++)
        info.uuid[i] = (uint8_t)(i * 31 + 7);
    strcpy(info.hostname, "analyses-host");
    info.clock_offset_s = 1700000000;
    info.vpid = 4242;
    strcpy(info.procname, "beam.smp");
    info.schedulers_count = kinds->schedulers_count;
    info.dirty_cpu_schedulers_count = kinds->dirty_cpu_schedulers_count;
    info.dirty_io_schedulers_count = kinds->dirty_io_schedulers_count;
    info.first_dirty_cpu_stream = kinds->first_dirty_cpu_stream;
    info.first_dirty_io_stream = kinds->first_dirty_io_stream;
    info.first_other_stream = kinds->first_other_stream;
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

/* A process_info (state dump) event: four strings. */
static void info(struct gen *g, uint64_t ts, const char *pid, const char *name, const char *entry,
                 const char *label)
{
    const char *strs[4] = {pid, name, entry, label};
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = BMT_TP_process_info;
    ev.ts_ns = ts;
    for (unsigned f = 0; f < 4; f++) {
        ev.values[f].str = strs[f];
        ev.values[f].len = (uint32_t)strlen(strs[f]);
    }
    if (bmt_test_gen_emit(&g->t, 0, &ev) != 1)
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

/* The bench trace's shape: `procs` long-lived processes (256 by default),
 * stacks up to `depth` deep (6) over 8 functions, and a short-lived process
 * every 1000 events unless `churn` is 0. Few processes and a small depth
 * bound the distinct stacks, processes and functions whatever N is: the
 * trace the memory tests grow in length only. */
struct bench_shape {
    unsigned procs, depth, churn;
};

#define MAX_DEPTH 16

static void bench(const char *path, unsigned long long n, struct bench_shape sh)
{
    static const char *const funcs[] = {
        "gen_server:handle_msg/6", "my_app_server:handle_call/3", "ets:lookup/2",
        "lists:foldl/3", "my_app_db:get/2", "maps:get/2", "my_app_codec:decode/1",
        "erlang:term_to_binary/1"};
    struct gen gg, *g = &gg;
    gen_open(g, path, STREAMS);
    char (*pids)[24] = calloc(sh.procs, sizeof *pids);
    unsigned *depth = calloc(sh.procs, sizeof *depth);
    unsigned (*stack)[MAX_DEPTH] = calloc(sh.procs, sizeof *stack);
    if (!pids || !depth || !stack)
        die("out of memory");
    for (unsigned i = 0; i < sh.procs; i++)
        snprintf(pids[i], sizeof pids[i], "<0.%u.0>", 100 + i);
    uint64_t ts = 5000000000000ull;
    /* The state dump: every process's names, as the recorder writes it. */
    for (unsigned i = 0; i < sh.procs; i++) {
        char name[32], entry[48];
        snprintf(name, sizeof name, i % 2 ? "" : "worker_%u", i);
        snprintf(entry, sizeof entry, "'Elixir.MyApp.Worker%u':init/1", i % 7);
        info(g, ts + i, pids[i], name, entry, i % 2 ? "{pool,1}" : "");
    }
    ts += sh.procs;
    for (unsigned long long i = 0; i < n; i++) {
        unsigned p = (unsigned)(rnd() % sh.procs), s = p % STREAMS;
        if (sh.churn && i % 1000 == 999) { /* churn: a short-lived process */
            char child[32];
            snprintf(child, sizeof child, "<0.%llu.0>", 100000 + i / 1000);
            put(g, s, BMT_TP_process_spawn, ++ts, child, pids[p], "my_app:job/1", 0, 0);
            put(g, s, BMT_TP_process_exit, ++ts, child, "normal", NULL, 0, 0);
        }
        unsigned r = (unsigned)(rnd() % 100);
        ts += 1 + rnd() % 200;
        if (r < 70) {
            if (depth[p] < sh.depth && (depth[p] == 0 || rnd() % 2)) {
                unsigned f = (unsigned)(rnd() % 8);
                stack[p][depth[p]++] = f;
                put(g, s, BMT_TP_function_call, ts, pids[p], funcs[f], NULL, 0, 0);
            } else {
                put(g, s, BMT_TP_function_return, ts, pids[p], funcs[stack[p][--depth[p]]], NULL,
                    0, 0);
            }
        } else if (r < 80) {
            put(g, s, BMT_TP_message_send, ts, pids[p], pids[(p + 1) % sh.procs], "{req,42}", 0,
                0);
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
    free(pids);
    free(depth);
    free(stack);
}

#define SCHED(ts, pid, type) put(g, 0, BMT_TP_process_scheduled, ts, pid, "m:loop/0", type, 0, 0)
#define MS 1000000ull
#define US 1000ull

/* Names: a state dump (registered name, proc_lib label, initial calls,
 * an Elixir module), a spawn with an Elixir initial call, a name
 * registered after the process's calls, Elixir function names. */
static void names(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 1000 * MS;
    const char *A = "<0.50.0>", *B = "<0.51.0>", *C = "<0.52.0>", *D = "<0.60.0>";
    /* Absent names and labels as the recorder writes them ("undefined"),
     * and as older traces did (""). */
    info(g, t, A, "my_server", "my_server:init/1", "undefined");
    info(g, t + 1, B, "undefined", "rabbit_amqqueue_process:init/1", "{queue,\"q1\"}");
    info(g, t + 2, C, "", "'Elixir.MyApp.Worker':init/1", "");
    info(g, t + 3, "<0.1.0>", "init", "otp_ring0:start/2", "");
    CALL(t + 1 * MS, A, "my_server:handle_call/3");
    RET(t + 2 * MS, A, "my_server:handle_call/3");
    CALL(t + 3 * MS, B, "rabbit_amqqueue_process:handle_cast/2");
    RET(t + 5 * MS, B, "rabbit_amqqueue_process:handle_cast/2");
    CALL(t + 6 * MS, C, "'Elixir.MyApp.Worker':handle_call/3");
    CALL(t + 7 * MS, C, "'Elixir.MyApp.Worker':'-handle_call/3-fun-0-'/1");
    put(g, 0, BMT_TP_gc_minor_start, t + 7 * MS + 100 * US, C, NULL, NULL, 10, 610);
    put(g, 0, BMT_TP_gc_minor_end, t + 7 * MS + 300 * US, C, NULL, NULL, 400, 610);
    RET(t + 8 * MS, C, "'Elixir.MyApp.Worker':'-handle_call/3-fun-0-'/1");
    RET(t + 9 * MS, C, "'Elixir.MyApp.Worker':handle_call/3");
    put(g, 0, BMT_TP_process_spawn, t + 10 * MS, D, A, "'Elixir.MyApp.Worker':init/1", 0, 0);
    CALL(t + 11 * MS, D, "'Elixir.MyApp.Worker':handle_call/3");
    RET(t + 15 * MS, D, "'Elixir.MyApp.Worker':handle_call/3");
    /* B sends to my_server (a name from the state dump), C to A's pid 40 us
     * later; A runs 100 us after the first send (sched --from first: 100 us,
     * --from last: 60 us). */
    put(g, 0, BMT_TP_message_send, t + 16 * MS, B, "my_server", "{req,1}", 0, 0);
    put(g, 0, BMT_TP_message_send, t + 16 * MS + 40 * US, C, A, "{req,2}", 0, 0);
    SCHED(t + 16 * MS + 100 * US, A, "in");
    SCHED(t + 16 * MS + 200 * US, A, "out");
    put(g, 0, BMT_TP_process_register, t + 17 * MS, D, "'Elixir.MyApp.Registry'", "register", 0, 0);
    put(g, 0, BMT_TP_process_exit, t + 18 * MS, D, "normal", NULL, 0, 0);
    gen_close(g);
}

/* Windows: P runs f [0, 10 ms], g [12, 14 ms], h [20, 30 ms]; a GC pause
 * [4, 6 ms] and a send -> in latency [4, 6.5 ms] straddle +5 ms; Q is
 * spawned at 1 ms and exits at 8 ms. Windows of [+5ms, +25ms] cut f and h
 * in half. */
static void window(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 2000 * MS;
    const char *P = "<0.70.0>", *Q = "<0.71.0>";
    CALL(t, P, "w:f/0");
    put(g, 0, BMT_TP_process_spawn, t + 1 * MS, Q, P, "w:q/0", 0, 0);
    put(g, 0, BMT_TP_gc_minor_start, t + 4 * MS, P, NULL, NULL, 10, 610);
    put(g, 0, BMT_TP_message_send, t + 4 * MS + 1, P, Q, "{go}", 0, 0);
    put(g, 0, BMT_TP_gc_minor_end, t + 6 * MS, P, NULL, NULL, 100, 610);
    SCHED(t + 6 * MS + 500 * US, Q, "in");
    put(g, 0, BMT_TP_process_exit, t + 8 * MS, Q, "normal", NULL, 0, 0);
    RET(t + 10 * MS, P, "w:f/0");
    CALL(t + 12 * MS, P, "w:g/0");
    RET(t + 14 * MS, P, "w:g/0");
    put(g, 0, BMT_TP_gc_minor_start, t + 15 * MS, P, NULL, NULL, 10, 610);
    put(g, 0, BMT_TP_gc_minor_end, t + 15 * MS + 200 * US, P, NULL, NULL, 100, 610);
    CALL(t + 20 * MS, P, "w:h/0");
    RET(t + 30 * MS, P, "w:h/0");
    put(g, 0, BMT_TP_process_exit, t + 31 * MS, "<0.99.0>", "normal", NULL, 0, 0);
    gen_close(g);
}

/* A flight recorder: stream 1 holds every call, stream 0 every return;
 * run.sh then cuts stream 0's first packets away (as an overwriting ring
 * does). The returns of the early calls go with them. */
static void overwrite(const char *path)
{
    struct gen gg, *g = &gg;
    struct bmt_ctf_trace_info info;
    memset(&info, 0, sizeof info);
    for (int i = 0; i < BMT_CTF_UUID_BYTES; i++)
        info.uuid[i] = (uint8_t)(i * 13 + 5);
    strcpy(info.hostname, "analyses-host");
    info.clock_offset_s = 1700000000;
    /* 256-byte packets, drained after every event: one or two per packet. */
    if (bmt_test_gen_open(&g->t, path, &info, 2, 256, 8, BMT_RING_DISCARD, 1) < 0)
        die("cannot create the trace");
    uint64_t t = 3000 * MS;
    for (unsigned i = 0; i < 40; i++) {
        const char *p = i % 2 ? "<0.80.0>" : "<0.81.0>";
        uint64_t at = t + i * 5 * MS;
        put(g, 1, BMT_TP_function_call, at, p, "fr:work/0", NULL, 0, 0);
        put(g, 0, BMT_TP_function_return, at + 3 * MS, p, "fr:work/0", NULL, 0, 0);
    }
    gen_close(g);
}

/* A 40 KB trace whose last events come 34 years after its first. */
static void span34(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 1000 * MS, later = t + 34ull * 365 * 86400 * 1000 * MS;
    for (unsigned i = 0; i < 300; i++) {
        char p[32];
        snprintf(p, sizeof p, "<0.%u.0>", 100 + i % 20);
        put(g, 0, BMT_TP_process_spawn, t + i * 1000, p, "<0.1.0>", "s:w/0", 0, 0);
        CALL(t + i * 1000 + 10, p, "s:f/0");
        SCHED(t + i * 1000 + 20, p, "in");
        RET(t + i * 1000 + 30, p, "s:f/0");
        SCHED(t + i * 1000 + 40, p, "out");
    }
    put(g, 0, BMT_TP_process_spawn, later - 10, "<0.500.0>", "<0.1.0>", "s:w/0", 0, 0);
    CALL(later, "<0.500.0>", "s:f/0");
    SCHED(later + 1, "<0.500.0>", "in");
    put(g, 0, BMT_TP_gc_minor_start, later + 2, "<0.500.0>", NULL, NULL, 10, 610);
    put(g, 0, BMT_TP_gc_minor_end, later + 3, "<0.500.0>", NULL, NULL, 10, 610);
    RET(later + 4, "<0.500.0>", "s:f/0");
    put(g, 0, BMT_TP_process_exit, later + 5, "<0.500.0>", "normal", NULL, 0, 0);
    gen_close(g);
}

/* Events collected out of order, then written in time order. */
struct later {
    uint64_t ts;
    int tp;
    const char *s[3];
    uint64_t n[2];
};
static struct later queued[4096];
static unsigned queued_count;

static void queue(uint64_t ts, int tp, const char *s0, const char *s1, const char *s2, uint64_t n0,
                  uint64_t n1)
{
    if (queued_count == sizeof queued / sizeof queued[0])
        die("too many queued events");
    queued[queued_count++] = (struct later){ts, tp, {s0, s1, s2}, {n0, n1}};
}

static int by_ts(const void *a, const void *b)
{
    const struct later *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void flush_queue(struct gen *g)
{
    qsort(queued, queued_count, sizeof queued[0], by_ts);
    for (unsigned i = 0; i < queued_count; i++) {
        const struct later *e = &queued[i];
        put(g, 0, e->tp, e->ts, e->s[0], e->s[1], e->s[2], e->n[0], e->n[1]);
    }
    queued_count = 0;
}

/* The report's layout cases over 100 ms: X exits 65 us after being
 * scheduled in (no out), Y runs 11 x 100 us (1.1 %), Z runs all the time
 * and sends to W, which runs 1 ns after 2^k ns (the latency histogram);
 * a call of exactly 524288 ns; a function with a very long name; counters. */
static void report(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
#undef SCHED
#undef CALL
#undef RET
#define SCHED(ts, pid, type) queue(ts, BMT_TP_process_scheduled, pid, "m:loop/0", type, 0, 0)
#define CALL(ts, pid, f) queue(ts, BMT_TP_function_call, pid, f, NULL, 0, 0)
#define RET(ts, pid, f) queue(ts, BMT_TP_function_return, pid, f, NULL, 0, 0)
#define put(g, s, tp, ts, a, b, c, n0, n1) queue(ts, tp, a, b, c, n0, n1)
    uint64_t t = 4000 * MS;
    const char *X = "<0.90.0>", *Y = "<0.91.0>", *Z = "<0.92.0>";
    const char *longf = "a_module_with_a_rather_long_name:and_a_function_whose_name_goes_on_and_on/3";
    info(g, t, Y, "mostly_idle", "idle:init/1", "");
    SCHED(t, Z, "in");
    SCHED(t + 10 * MS, X, "in");
    put(g, 0, BMT_TP_process_exit, t + 10 * MS + 65 * US, X, "normal", NULL, 0, 0);
    for (unsigned i = 0; i < 11; i++) {
        SCHED(t + (5 + i * 9) * MS, Y, "in");
        SCHED(t + (5 + i * 9) * MS + 100 * US, Y, "out");
    }
    for (unsigned i = 0; i < 5; i++) {
        CALL(t + (20 + i) * MS, Z, "r:exact/0");
        RET(t + (20 + i) * MS + 524288, Z, "r:exact/0");
        CALL(t + (30 + i) * MS, Z, longf);
        RET(t + (30 + i) * MS + (1 + i) * 3000, Z, longf);
    }
    for (unsigned i = 0; i < 200; i++) {
        put(g, 0, BMT_TP_message_send, t + (40 * MS) + i * 100 * US, Z, "<0.93.0>", "{x}", 0, 0);
        SCHED(t + (40 * MS) + i * 100 * US + (1u << (i % 16)), "<0.93.0>", "in");
        SCHED(t + (40 * MS) + i * 100 * US + (1u << (i % 16)) + 1, "<0.93.0>", "out");
    }
    SCHED(t + 100 * MS, Z, "out");
    /* Counters every 5 ms: memory rising to 120 MiB, a queue with a long
     * name peaking at 12345 messages, 12 run queues (more than a chart
     * draws) and scheduler utilisation. */
    static char rq_names[12][4];
    for (unsigned i = 0; i <= 20; i++) {
        uint64_t ts = t + i * 5 * MS;
        put(g, 0, BMT_TP_counter, ts, "memory", "total", "bytes", (60 + 3 * i) * (1ull << 20), 0);
        put(g, 0, BMT_TP_counter, ts, "memory", "processes", "bytes", (20 + i) * (1ull << 20), 0);
        put(g, 0, BMT_TP_counter, ts, "message_queue",
            "<0.93.0> a_registered_name_long_enough_to_be_cut_in_the_legend", "messages",
            i == 13 ? 12345 : 100 * i, 0);
        for (unsigned q = 0; q < 12; q++) {
            snprintf(rq_names[q], sizeof rq_names[q], "%u", q + 1);
            put(g, 0, BMT_TP_counter, ts, "run_queue", rq_names[q], "count", (i + q) % 7, 0);
        }
        put(g, 0, BMT_TP_counter, ts, "scheduler_utilization", "total", "ppm", 500000 + 1000 * i, 0);
        put(g, 0, BMT_TP_counter, ts, "scheduler_utilization", "1", "ppm", i % 2 ? 1000000 : 0, 0);
    }
#undef put
#undef SCHED
#undef CALL
#undef RET
#define CALL(ts, pid, f) put(g, 0, BMT_TP_function_call, ts, pid, f, NULL, 0, 0)
#define RET(ts, pid, f) put(g, 0, BMT_TP_function_return, ts, pid, f, NULL, 0, 0)
    flush_queue(g);
    gen_close(g);
}

/* Runs the trace does not end (issue 16 item 1), on a node with 2
 * schedulers, one stream (thread) each: A is scheduled in on stream 0,
 * calls once 1 ms later and is heard of no more (it died untraced); B runs
 * 3 ms on stream 1; C is scheduled in on stream 1 and heard of no more; D
 * runs 3 ms on stream 0; E is scheduled in on stream 1, calls 1 ms later,
 * and the trace ends 11 ms after without its out. An `in` on a stream ends
 * the run still open there (D's ends A's, E's ends C's) at its process's
 * last event; E's ends at its call. Shown running: A 1 ms, B 3 ms, C 0,
 * D 3 ms, E 1 ms; at most 2 at once; 3 runs ended so (run.sh). Before,
 * A, C and E ran to the trace's end, 4 at once. */
static void phantom(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open_sched(g, path, 2, 2);
    uint64_t t = 6000 * MS;
#define SCHED(st, ts, pid, type) put(g, st, BMT_TP_process_scheduled, ts, pid, "m:loop/0", type, 0, 0)
    const char *A = "<0.70.0>", *B = "<0.71.0>", *C = "<0.72.0>", *D = "<0.73.0>", *E = "<0.74.0>";
    SCHED(0, t, A, "in");
    put(g, 0, BMT_TP_function_call, t + 1 * MS, A, "m:work/0", NULL, 0, 0);
    SCHED(1, t + 2 * MS, B, "in");
    SCHED(1, t + 5 * MS, B, "out");
    SCHED(1, t + 6 * MS, C, "in");
    SCHED(0, t + 7 * MS, D, "in");
    SCHED(1, t + 8 * MS, E, "in");
    put(g, 1, BMT_TP_function_call, t + 9 * MS, E, "m:work/0", NULL, 0, 0);
    SCHED(0, t + 10 * MS, D, "out");
    put(g, 0, BMT_TP_process_spawn, t + 20 * MS, "<0.75.0>", "<0.75.0>", "m:late/0", 0, 0);
#undef SCHED
    gen_close(g);
}

/* Processes that die untraced while running, on a node with many more
 * scheduler threads (12, as 2 normal + 10 dirty I/O) than are busy (2
 * streams): on stream 0, X1..X4 are each scheduled in, call once 1 ms later
 * and are heard of no more; on stream 1, Y runs 10 ms. Each X's `in` ends
 * the previous X's run at its call: X1..X4 run 1 ms each, at most 2
 * processes at once, 4 runs ended so (run.sh). Before, only the bound of
 * 12 ended runs: 5 "running at once" (a user trial on RabbitMQ: 14). */
static void dangling(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open_sched(g, path, 2, 12);
    uint64_t t = 6500 * MS;
    const char *X[] = {"<0.90.0>", "<0.91.0>", "<0.92.0>", "<0.93.0>"}, *Y = "<0.95.0>";
    put(g, 1, BMT_TP_process_scheduled, t, Y, "m:loop/0", "in", 0, 0);
    for (unsigned i = 0; i < 4; i++) {
        put(g, 0, BMT_TP_process_scheduled, t + 2 * i * MS, X[i], "m:loop/0", "in", 0, 0);
        put(g, 0, BMT_TP_function_call, t + (2 * i + 1) * MS, X[i], "m:work/0", NULL, 0, 0);
    }
    put(g, 1, BMT_TP_process_scheduled, t + 10 * MS, Y, "m:loop/0", "out", 0, 0);
    gen_close(g);
}

/* Dirty schedulers counted apart (issue 16 item 1): a node with 2 normal,
 * 1 dirty CPU and 2 dirty I/O schedulers, whose streams are 0-1, 2 and
 * 3-4. A and B run 10 ms on the normal ones; C runs 6 ms on the dirty CPU
 * one from 2 ms, D and E 3 ms on the dirty I/O ones from 3 ms: at most 2
 * processes at once on normal schedulers and 3 on dirty ones, no run
 * ended early (run.sh). Before, the bound was the sum, 5, and the report
 * said 5 running at once on a node of 2 schedulers. */
static void dirty(const char *path)
{
    struct gen gg, *g = &gg;
    struct bmt_ctf_trace_info kinds;
    memset(&kinds, 0, sizeof kinds);
    kinds.schedulers_count = 2;
    kinds.dirty_cpu_schedulers_count = 1;
    kinds.dirty_io_schedulers_count = 2;
    kinds.first_dirty_cpu_stream = 2;
    kinds.first_dirty_io_stream = 3;
    kinds.first_other_stream = 5;
    gen_open_info(g, path, 5, &kinds);
    uint64_t t = 7500 * MS;
    static const struct {
        unsigned stream;
        const char *pid;
        uint64_t from_ms, to_ms;
    } runs[] = {{0, "<0.100.0>", 0, 10}, {1, "<0.101.0>", 0, 10}, {2, "<0.102.0>", 2, 8},
                {3, "<0.103.0>", 3, 6}, {4, "<0.104.0>", 3, 6}};
    for (unsigned i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        put(g, runs[i].stream, BMT_TP_process_scheduled, t + runs[i].from_ms * MS, runs[i].pid,
            "m:loop/0", "in", 0, 0);
        put(g, runs[i].stream, BMT_TP_process_scheduled, t + runs[i].to_ms * MS, runs[i].pid,
            "m:loop/0", "out", 0, 0);
    }
    gen_close(g);
}

/* OWN CPU against ON-CPU (issue 16 item 8): P calls f/0 while running
 * (1 ms on CPU), is scheduled out for 8 ms and back in to take a message
 * whose send is not in the trace (off CPU, why unknown), runs 1 ms more
 * and returns. f/0: total 10 ms, on CPU 2 ms, unknown 8 ms: OWN CPU 2 ms
 * (run.sh). Before, OWN CPU counted the unknown 8 ms: 10 ms. */
static void own_cpu(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 7000 * MS;
    const char *P = "<0.80.0>";
    put(g, 0, BMT_TP_process_scheduled, t, P, "m:loop/0", "in", 0, 0);
    CALL(t + 1 * MS, P, "m:f/0");
    put(g, 0, BMT_TP_process_scheduled, t + 2 * MS, P, "m:f/0", "out", 0, 0);
    put(g, 0, BMT_TP_process_scheduled, t + 10 * MS, P, "m:f/0", "in", 0, 0);
    put(g, 0, BMT_TP_message_receive, t + 10 * MS + 1, P, "{go}", NULL, 0, 0);
    RET(t + 11 * MS, P, "m:f/0");
    put(g, 0, BMT_TP_process_scheduled, t + 12 * MS, P, "m:loop/0", "out", 0, 0);
    gen_close(g);
}

/* The report's first section (issue 16): where three functions' time went,
 * on a node with 1 scheduler. broker:handle_cast/2 (P, 3 calls of 10 ms):
 * 2 ms on CPU, preempted 7 ms, 1 ms on CPU: 70% runnable, 30% on CPU;
 * m:wait_reply/0 (Q, 1 call of 10 ms): 1 ms on CPU, out until R sends to
 * it 7 ms later (waiting), in 1 ms after the send (runnable), takes it and
 * returns 1 ms later: 70% waiting; m:mixed/0 (M, 1 call of 10.5 ms): 4 ms
 * on CPU, preempted 3.5 ms, 0.5 ms on CPU, waiting 2.5 ms until R's send
 * and in at once: 43% on CPU, 33% runnable, 24% waiting (answers in
 * run.sh). */
static void saturated(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open_sched(g, path, 1, 1);
    uint64_t t = 8000 * MS;
    const char *P = "<0.100.0>", *Q = "<0.101.0>", *R = "<0.102.0>", *M = "<0.103.0>";
#define SCHED(ts, pid, type) put(g, 0, BMT_TP_process_scheduled, ts, pid, "m:loop/0", type, 0, 0)
    info(g, t, P, "a_broker", "broker:init/1", "");
    info(g, t, R, "replier", "r:init/1", "");
    for (unsigned i = 0; i < 3; i++) {
        uint64_t c = t + i * 20 * MS;
        SCHED(c, P, "in");
        CALL(c, P, "broker:handle_cast/2");
        SCHED(c + 2 * MS, P, "out");
        SCHED(c + 9 * MS, P, "in");
        RET(c + 10 * MS, P, "broker:handle_cast/2");
        SCHED(c + 10 * MS, P, "out");
    }
    uint64_t q = t + 100 * MS;
    SCHED(q, Q, "in");
    CALL(q, Q, "m:wait_reply/0");
    SCHED(q + 1 * MS, Q, "out");
    SCHED(q + 8 * MS, R, "in");
    put(g, 0, BMT_TP_message_send, q + 8 * MS, R, Q, "{reply}", 0, 0);
    SCHED(q + 8 * MS + 1, R, "out");
    SCHED(q + 9 * MS, Q, "in");
    put(g, 0, BMT_TP_message_receive, q + 9 * MS, Q, "{reply}", NULL, 0, 0);
    RET(q + 10 * MS, Q, "m:wait_reply/0");
    SCHED(q + 10 * MS, Q, "out");
    uint64_t u = t + 200 * MS;
    SCHED(u, M, "in");
    CALL(u, M, "m:mixed/0");
    SCHED(u + 4 * MS, M, "out");
    SCHED(u + 7500 * US, M, "in");
    put(g, 0, BMT_TP_function_call, u + 7600 * US, M, "m:inner/0", NULL, 0, 0);
    put(g, 0, BMT_TP_function_return, u + 7700 * US, M, "m:inner/0", NULL, 0, 0);
    SCHED(u + 8 * MS, M, "out");
    SCHED(u + 10500 * US, R, "in");
    put(g, 0, BMT_TP_message_send, u + 10500 * US, R, M, "{go}", 0, 0);
    SCHED(u + 10500 * US, R, "out");
    SCHED(u + 10500 * US, M, "in");
    put(g, 0, BMT_TP_message_receive, u + 10500 * US, M, "{go}", NULL, 0, 0);
    RET(u + 10500 * US, M, "m:mixed/0");
    SCHED(u + 11 * MS, M, "out");
#undef SCHED
    gen_close(g);
}

/* Who ended the waits (issue 16). m:gather/0 (G, 1 call of 14 ms, 4 ms
 * on CPU) waits 4 ms until a_one (A) replies to the call's alias (the
 * send names "#Ref<...>", the receive carries "[alias|#Ref<...>]"), 3 ms
 * until the unnamed B sends to it, 3 ms for a receive timeout: 10 ms
 * waiting, 40% ended by a_one, 30% by B, no sender over half. m:fanin/0
 * (G, 10 ms) waits 1 ms for each of five unnamed senders F1..F5 in turn:
 * the fifth folds into other (answers in run.sh). */
static void wakers(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open_sched(g, path, 1, 1);
    uint64_t t = 9000 * MS;
    const char *G = "<0.120.0>", *A = "<0.121.0>", *B = "<0.122.0>";
    const char *F[5] = {"<0.130.0>", "<0.131.0>", "<0.132.0>", "<0.133.0>", "<0.134.0>"};
#define SCHED(ts, pid, type) put(g, 0, BMT_TP_process_scheduled, ts, pid, "m:loop/0", type, 0, 0)
    info(g, t, A, "a_one", "a:init/1", "");
    SCHED(t, G, "in");
    CALL(t, G, "m:gather/0");
    SCHED(t + 1 * MS, G, "out");
    put(g, 0, BMT_TP_message_send, t + 5 * MS, A, "#Ref<0.1.2.3>", "{[alias|#Ref<0.1.2.3>],ok}",
        0, 0);
    SCHED(t + 5 * MS, G, "in");
    put(g, 0, BMT_TP_message_receive, t + 5 * MS, G, "{[alias|#Ref<0.1.2.3>],ok}", NULL, 0, 0);
    SCHED(t + 6 * MS, G, "out");
    put(g, 0, BMT_TP_message_send, t + 9 * MS, B, G, "b", 0, 0);
    SCHED(t + 9 * MS, G, "in");
    put(g, 0, BMT_TP_message_receive, t + 9 * MS, G, "b", NULL, 0, 0);
    SCHED(t + 10 * MS, G, "out");
    SCHED(t + 13 * MS, G, "in");
    put(g, 0, BMT_TP_message_receive, t + 13 * MS, G, "timeout", NULL, 0, 0);
    RET(t + 14 * MS, G, "m:gather/0");
    uint64_t u = t + 100 * MS;
    CALL(u, G, "m:fanin/0");
    for (unsigned i = 0; i < 5; i++) {
        uint64_t w = u + i * 2 * MS;
        SCHED(w, G, "out");
        put(g, 0, BMT_TP_message_send, w + 1 * MS, F[i], G, "f", 0, 0);
        SCHED(w + 1 * MS, G, "in");
        put(g, 0, BMT_TP_message_receive, w + 1 * MS, G, "f", NULL, 0, 0);
    }
    RET(u + 10 * MS, G, "m:fanin/0");
    SCHED(u + 10 * MS, G, "out");
#undef SCHED
    gen_close(g);
}

/* One event of `tp` with string fields by index (strs[i] for field i,
 * NULL: empty) and integer fields ints[i]. */
static void put_fields(struct gen *g, int tp, uint64_t ts, const char *const *strs,
                       const uint64_t *ints)
{
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = (uint16_t)tp;
    ev.ts_ns = ts;
    for (unsigned f = 0; f < bmt_catalogue[tp].field_count; f++) {
        if (bmt_catalogue[tp].fields[f].type == BMT_FIELD_STRING) {
            const char *s = strs[f] ? strs[f] : "";
            ev.values[f].str = s;
            ev.values[f].len = (uint32_t)strlen(s);
        } else {
            ev.values[f].integer = ints[f];
        }
    }
    if (bmt_test_gen_emit(&g->t, 0, &ev) != 1)
        die("an event was dropped or could not be written");
}

/* Files opened before the trace (issue 16): the state dump of open files
 * names two (file_info), three reads carry no path (their files were
 * opened before), one open and read carry theirs. `files` says "opened
 * before the trace: 3 operations" and names the two (run.sh). */
static void files_before(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 8000 * MS;
    const char *info1[BMT_MAX_FIELDS] = {"fd 17", "/var/lib/app/data.log", "os_fd"};
    const char *info2[BMT_MAX_FIELDS] = {"<0.90.0>", "/etc/app.conf", "io_server"};
    uint64_t none[BMT_MAX_FIELDS] = {0};
    put_fields(g, BMT_TP_file_info, t, info1, none);
    put_fields(g, BMT_TP_file_info, t, info2, none);
    for (unsigned i = 0; i < 5; i++) {
        const char *s[BMT_MAX_FIELDS] = {0};
        uint64_t n[BMT_MAX_FIELDS] = {0};
        s[BMT_F_file_op_pid] = "<0.91.0>";
        s[BMT_F_file_op_op] = i == 3 ? "open" : "read";
        s[BMT_F_file_op_path] = i >= 3 ? "/tmp/new.txt" : "";
        s[BMT_F_file_op_result] = "ok";
        n[BMT_F_file_op_bytes] = 10;
        n[BMT_F_file_op_latency_ns] = 1000;
        put_fields(g, BMT_TP_file_op, t + (i + 1) * MS, s, n);
    }
    gen_close(g);
}

/* Many distinct stacks (run.sh lowers the tree's cap to see the pruning):
 * 64 processes, each calling a chain of 6 of 16 functions, 4000 calls. */
static void stacks(const char *path)
{
    struct gen gg, *g = &gg;
    gen_open(g, path, 1);
    uint64_t t = 5000 * MS;
    for (unsigned i = 0; i < 4000; i++) {
        char p[32], f[6][16];
        snprintf(p, sizeof p, "<0.%u.0>", 200 + (unsigned)(rnd() % 64));
        for (unsigned d = 0; d < 6; d++)
            snprintf(f[d], sizeof f[d], "st:f%u/0", (unsigned)(rnd() % 16));
        for (unsigned d = 0; d < 6; d++)
            CALL(t += 1000, p, f[d]);
        for (unsigned d = 6; d-- > 0;)
            RET(t += 1000, p, f[d]);
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
    if (argc == 3 && strcmp(argv[1], "scenarios") == 0) {
        static const struct {
            const char *name;
            void (*make)(const char *);
        } all[] = {{"names", names}, {"window", window}, {"overwrite", overwrite},
                   {"span34", span34}, {"report", report}, {"stacks", stacks},
                   {"phantom", phantom}, {"dangling", dangling}, {"dirty", dirty}, {"own_cpu", own_cpu},
                   {"saturated", saturated},
                   {"wakers", wakers}, {"files_before", files_before}};
        mkdir(argv[2], 0755);
        for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", argv[2], all[i].name);
            all[i].make(path);
        }
        return 0;
    }
    if ((argc == 4 || argc == 7) && strcmp(argv[1], "bench") == 0) {
        struct bench_shape sh = {256, 6, 1};
        if (argc == 7) {
            sh.procs = (unsigned)strtoul(argv[4], NULL, 10);
            sh.depth = (unsigned)strtoul(argv[5], NULL, 10);
            sh.churn = (unsigned)strtoul(argv[6], NULL, 10);
            if (sh.procs < 2 || sh.procs > 1000000 || sh.depth < 1 || sh.depth > MAX_DEPTH)
                die("bench: PROCS in [2, 1000000], DEPTH in [1, 16]");
        }
        bench(argv[2], strtoull(argv[3], NULL, 10), sh);
        return 0;
    }
    fprintf(stderr, "usage: make_traces edges|scenarios OUTDIR | make_traces bench DIR N [PROCS DEPTH CHURN]\n");
    return 2;
}
