/* Writes the CLI test corpus: good traces (recorded through the real ring and
 * trace directory writer, so they are exactly what the NIF produces) and
 * malformed ones (good traces mutated on disk).
 *
 *   make_corpus OUTDIR          good/ and bad/ traces under OUTDIR
 *   make_corpus --big DIR N     one large trace of N events, for benchmarks
 *
 * Next to each good trace DIR it writes DIR.expect: "events N" and
 * "discarded N", what the generator recorded and dropped. Everything is
 * deterministic (fixed uuid, clock offset, seeded PRNG), so failures
 * reproduce. Single-threaded test tool; aborts on any I/O error.
 */
#include "core/catalogue.h"
#include "core/ctf.h"
#include "core/event.h"
#include "core/ring.h"
#include "core/trace_dir.h"
#include "trace_gen.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gen {
    struct bmt_test_gen t;
    struct bmt_ctf_trace_info info;
};

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("make_corpus: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void fixed_info(struct bmt_ctf_trace_info *info, uint8_t uuid_seed)
{
    memset(info, 0, sizeof *info);
    for (int i = 0; i < BMT_CTF_UUID_BYTES; i++)
        info->uuid[i] = (uint8_t)(uuid_seed * 17 + i * 29 + 3);
    strcpy(info->hostname, "corpus-host");
    /* Just under a second boundary, so wall-time carries are exercised. */
    info->clock_offset_s = 1700000000;
    info->clock_offset_ns = 999999000;
    info->vpid = 4242;
    strcpy(info->procname, "beam.smp");
}

static void gen_open(struct gen *g, const char *path, unsigned streams, size_t subbuf_bytes,
                     uint32_t subbuf_count, enum bmt_ring_mode mode, unsigned drain_every)
{
    fixed_info(&g->info, 1);
    int rc = bmt_test_gen_open(&g->t, path, &g->info, streams, subbuf_bytes, subbuf_count, mode,
                               drain_every);
    if (rc < 0)
        die("%s: cannot create trace: %s", path, strerror(-rc));
}

static void emit(struct gen *g, unsigned s, const struct bmt_event *ev)
{
    if (bmt_test_gen_emit(&g->t, s, ev) < 0)
        die("%s: write failed", g->t.path);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        die("%s: cannot write", path);
}

/* Closes the trace and writes DIR.expect: events kept and discarded. */
static void gen_close(struct gen *g)
{
    uint64_t written = 0, discarded = 0;
    if (bmt_test_gen_close(&g->t) < 0)
        die("%s: close failed", g->t.path);
    for (unsigned s = 0; s < g->t.stream_count; s++) {
        const struct bmt_ring *r = &g->t.rings[s];
        if (r->reported_discarded != r->discarded_count)
            die("%s: stream %u: drop count not published", g->t.path, s);
        /* Overwritten events were written, then lost with their packet. */
        written += r->written_count - r->overwritten_count;
        discarded += r->discarded_count;
    }
    char file[4200], text[128];
    snprintf(file, sizeof file, "%s.expect", g->t.path);
    snprintf(text, sizeof text, "events %llu\ndiscarded %llu\n", (unsigned long long)written,
             (unsigned long long)discarded);
    write_text(file, text);
}

/* Value pools. Tricky strings exercise the viewer's escaping. */
static const char *const ids[] = {"<0.66.0>", "<0.172.0>", "<0.1.0>", "#Port<0.7>",
                                  "<12345.65535.4294967295>", "<0.0.0>"};
static const char *const mfas[] = {"gen_server:loop/7", "undefined", "erlang:apply/2",
                                   "'weird mod':'f\\\"n'/0", "command", "0"};
static const char *const words[] = {"in", "out", "link", "unlink", "register", "out_exited"};
static const char *const terms[] = {
    "normal", "{shutdown,\"quote\\\" and back\\\\slash\"}", "line1\nline2\ttab\r",
    "caf\xc3\xa9 \xe2\x82\xac", "\x01\x02\x1b[31m\x7f\xff\xfe", "[1,2,3|4]",
    "\a\b\f\v", "{'$gen_call',{<0.66.0>,#Ref<0.1.2.3>},stop}",
};

#define POOL(a) (a)[rnd() % (sizeof(a) / sizeof((a)[0]))]

/* Percent of string fields left empty. Off by default: babeltrace2 2.0
 * prints a stale value for an empty string in a recycled event, so only the
 * empty_strings trace (compared with that defect allowed for) has them. */
static unsigned empty_percent;

static void fill_event(struct bmt_event *ev, int tp, uint64_t ts_ns)
{
    memset(ev, 0, sizeof *ev);
    ev->id = (uint16_t)tp;
    ev->ts_ns = ts_ns;
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    for (unsigned f = 0; f < t->field_count; f++) {
        const struct bmt_field *fd = &t->fields[f];
        struct bmt_value *v = &ev->values[f];
        const char *s = NULL;
        switch (fd->kind) {
        case BMT_KIND_ID: s = POOL(ids); break;
        case BMT_KIND_MFA: s = POOL(mfas); break;
        case BMT_KIND_WORD: s = POOL(words); break;
        case BMT_KIND_INT: break;
        default: s = POOL(terms); break; /* TERM, MSG and kinds added later */
        }
        if (s && rnd() % 100 < empty_percent)
            s = "";
        if (s) {
            v->str = s;
            v->len = (uint32_t)strlen(s);
        } else {
            static const uint64_t ints[] = {0, 1, 610, 4294967295u, 18446744073709551615ull,
                                            1234567890123ull};
            v->integer = ints[rnd() % 6];
            if (fd->type == BMT_FIELD_U32)
                v->integer &= 0xffffffffu;
        }
    }
}

/* Every tracepoint several times, random streams, strictly increasing time. */
static void make_basic(const char *path, unsigned streams, unsigned rounds)
{
    struct gen g;
    gen_open(&g, path, streams, 4096, 8, BMT_RING_DISCARD, 1);
    uint64_t ts = 5000000000000ull;
    for (unsigned r = 0; r < rounds; r++) {
        for (int tp = 0; tp < BMT_TP_COUNT; tp++) {
            struct bmt_event ev;
            ts += 1 + rnd() % 700000000ull;
            fill_event(&ev, tp, ts);
            emit(&g, (unsigned)(rnd() % streams), &ev);
        }
    }
    /* One process with a plain registered name whatever the random
     * strings drew (test/cli/options.py passes it to --pid and --name). */
    struct bmt_event ev;
    fill_event(&ev, BMT_TP_process_register, ts + 1);
    ev.values[BMT_F_process_register_pid].str = "<0.200.0>";
    ev.values[BMT_F_process_register_pid].len = 9;
    ev.values[BMT_F_process_register_name].str = "bmt_named";
    ev.values[BMT_F_process_register_name].len = 9;
    ev.values[BMT_F_process_register_type].str = "register";
    ev.values[BMT_F_process_register_type].len = 8;
    emit(&g, 0, &ev);
    gen_close(&g);
}

/* Every byte value 1..255 in a string field, and an empty one. */
static void make_bytes(const char *path)
{
    struct gen g;
    gen_open(&g, path, 1, 4096, 4, BMT_RING_DISCARD, 1);
    static char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    for (int tp = 0; tp < BMT_TP_COUNT; tp++) {
        struct bmt_event ev;
        fill_event(&ev, tp, 7000000000000ull + (uint64_t)tp * 1000);
        for (unsigned f = 0; f < bmt_catalogue[tp].field_count; f++) {
            if (bmt_catalogue[tp].fields[f].type != BMT_FIELD_STRING)
                continue;
            ev.values[f].str = (f % 2) ? "" : all;
            ev.values[f].len = (f % 2) ? 0 : 255;
        }
        emit(&g, 0, &ev);
    }
    gen_close(&g);
}

/* One call event (function_call or function_return) of `pid` to `mfa`. */
static void call_event(struct bmt_event *ev, int tp, uint64_t ts, const char *pid, const char *mfa)
{
    fill_event(ev, tp, ts);
    ev->values[BMT_F_function_call_pid].str = pid;
    ev->values[BMT_F_function_call_pid].len = (uint32_t)strlen(pid);
    ev->values[BMT_F_function_call_entry].str = mfa;
    ev->values[BMT_F_function_call_entry].len = (uint32_t)strlen(mfa);
    ev->values[BMT_F_function_call_depth].integer = 0;
}

/* A flight recorder's capture as the recorder writes one (recorder/
 * capture.c): calls of kv:get/2 by two processes over 3 s, one call of
 * <0.86.0> taking `slow_ms` and ending at the trigger, 2 s in; the trigger
 * (kind call, value, bound, pid, function, time) in the metadata's env.
 * `slower_ms` > 0 adds a slower call of <0.87.0> before it, so the trigger
 * is not the slowest. */
static void make_capture(const char *path, uint64_t seq, uint64_t slow_ms, uint64_t slower_ms)
{
    struct gen g;
    fixed_info(&g.info, (uint8_t)(10 + seq));
    uint64_t t0 = 6000000000000ull + seq * 10000000000ull, trigger = t0 + 2000000000ull;
    (void)bmt_ctf_env_add_int(&g.info, "beamtrace_capture", (int64_t)seq);
    (void)bmt_ctf_env_add_text(&g.info, "beamtrace_trigger_kind", "call");
    (void)bmt_ctf_env_add_int(&g.info, "beamtrace_trigger_value", (int64_t)(slow_ms * 1000000));
    (void)bmt_ctf_env_add_int(&g.info, "beamtrace_trigger_bound", 10000000);
    (void)bmt_ctf_env_add_text(&g.info, "beamtrace_trigger_unit", "ns");
    (void)bmt_ctf_env_add_text(&g.info, "beamtrace_trigger_pid", "<0.86.0>");
    (void)bmt_ctf_env_add_text(&g.info, "beamtrace_trigger_function", "kv:get/2");
    (void)bmt_ctf_env_add_int(&g.info, "beamtrace_trigger_ts", (int64_t)trigger);
    (void)bmt_ctf_env_add_int(&g.info, "beamtrace_capture_window_ns", 2000000000);
    (void)bmt_ctf_env_add_int(&g.info, "beamtrace_capture_after_ns", 1000000000);
    int rc = bmt_test_gen_open(&g.t, path, &g.info, 2, 4096, 64, BMT_RING_DISCARD, 1);
    if (rc < 0)
        die("%s: cannot create trace: %s", path, strerror(-rc));
    struct bmt_event ev;
    /* Fast calls every 10 ms on both processes. */
    for (uint64_t ts = t0; ts < t0 + 3000000000ull; ts += 10000000ull) {
        uint64_t slow_start = trigger - slow_ms * 1000000;
        int slow = ts <= slow_start && ts + 10000000ull > slow_start;
        const char *pid = (ts / 10000000ull) % 2 ? "<0.87.0>" : "<0.86.0>";
        if (slow) {
            call_event(&ev, BMT_TP_function_call, slow_start, "<0.86.0>", "kv:get/2");
            emit(&g, 0, &ev);
            call_event(&ev, BMT_TP_function_return, trigger, "<0.86.0>", "kv:get/2");
            emit(&g, 0, &ev);
            ts = trigger; /* the other process waits meanwhile: time moves on in both streams */
            continue;
        }
        if (slower_ms && ts == t0 + 500000000ull) {
            call_event(&ev, BMT_TP_function_call, ts, "<0.87.0>", "kv:get/2");
            emit(&g, 1, &ev);
            call_event(&ev, BMT_TP_function_return, ts + slower_ms * 1000000, "<0.87.0>",
                       "kv:get/2");
            emit(&g, 1, &ev);
            ts += slower_ms * 1000000;
            continue;
        }
        call_event(&ev, BMT_TP_function_call, ts, pid, "kv:get/2");
        emit(&g, pid[3] == '6' ? 0 : 1, &ev);
        call_event(&ev, BMT_TP_function_return, ts + 50000, pid, "kv:get/2");
        emit(&g, pid[3] == '6' ? 0 : 1, &ev);
    }
    gen_close(&g);
}

/* One sample_ratio event: from `ts` on, kind `kind` is kept 1 in `ratio`. */
static void ratio_event(struct bmt_event *ev, uint64_t ts, const char *kind, uint32_t ratio,
                        const char *reason)
{
    fill_event(ev, BMT_TP_sample_ratio, ts);
    ev->values[BMT_F_sample_ratio_kind].str = kind;
    ev->values[BMT_F_sample_ratio_kind].len = (uint32_t)strlen(kind);
    ev->values[BMT_F_sample_ratio_ratio].integer = ratio;
    ev->values[BMT_F_sample_ratio_reason].str = reason;
    ev->values[BMT_F_sample_ratio_reason].len = (uint32_t)strlen(reason);
}

/* A sampled trace as a session with on_max_rate sample writes one: its
 * consumer's stream (1) says the call ratio, the tracer's (0) holds the
 * calls kept. 10 calls of kv:get/2 of 1 ms while 1 in 4 is kept, then 5
 * after it fell back to 1 (calmer), over 2 s: `calls` scales back to 45
 * calls and 45 ms, with 15 kept; 1/4 for 1 s of the 2 s. And 3 minor
 * collections of 1 ms (100 words) of <0.90.0> kept 1 in 2 from 1.2 s:
 * `gc` scales back to 6, 6 ms, 600 words. */
static void make_sampled(const char *path)
{
    struct gen g;
    gen_open(&g, path, 2, 4096, 8, BMT_RING_DISCARD, 1);
    uint64_t t0 = 13000000000000ull;
    struct bmt_event ev;
    ratio_event(&ev, t0, "call", 4, "max_rate");
    emit(&g, 1, &ev);
    for (unsigned i = 0; i < 15; i++) {
        uint64_t ts = t0 + (i < 10 ? i * 100000000ull : 1000000000ull + (i - 10) * 150000000ull);
        if (i == 10) {
            ratio_event(&ev, t0 + 1000000000ull, "call", 1, "calmer");
            emit(&g, 1, &ev);
        }
        call_event(&ev, BMT_TP_function_call, ts + 1, "<0.86.0>", "kv:get/2");
        emit(&g, 0, &ev);
        call_event(&ev, BMT_TP_function_return, ts + 1000001, "<0.86.0>", "kv:get/2");
        emit(&g, 0, &ev);
    }
    /* 3 minor collections of 1 ms (100 words each) kept 1 in 2. */
    ratio_event(&ev, t0 + 1200000000ull, "garbage_collection", 2, "start");
    emit(&g, 1, &ev);
    for (unsigned i = 0; i < 3; i++) {
        uint64_t ts = t0 + 1700000000ull + i * 100000000ull;
        fill_event(&ev, BMT_TP_gc_minor_start, ts);
        ev.values[BMT_F_gc_minor_start_pid].str = "<0.90.0>";
        ev.values[BMT_F_gc_minor_start_pid].len = 8;
        emit(&g, 0, &ev);
        fill_event(&ev, BMT_TP_gc_minor_end, ts + 1000000);
        ev.values[BMT_F_gc_minor_end_pid].str = "<0.90.0>";
        ev.values[BMT_F_gc_minor_end_pid].len = 8;
        ev.values[BMT_F_gc_minor_end_reclaimed].integer = 100;
        emit(&g, 0, &ev);
    }
    call_event(&ev, BMT_TP_function_call, t0 + 2000000000ull, "<0.86.0>", "kv:put/3");
    emit(&g, 0, &ev);
    call_event(&ev, BMT_TP_function_return, t0 + 2000000000ull, "<0.86.0>", "kv:put/3");
    emit(&g, 0, &ev);
    gen_close(&g);
}

/* Small rings drained rarely: the discard mode drops, counted per stream. */
static void make_drops(const char *path, enum bmt_ring_mode mode)
{
    struct gen g;
    gen_open(&g, path, 3, 512, 4, mode, 40);
    uint64_t ts = 9000000000000ull;
    for (unsigned i = 0; i < 3000; i++) {
        struct bmt_event ev;
        ts += 1 + rnd() % 3000;
        fill_event(&ev, (int)(rnd() % BMT_TP_COUNT), ts);
        emit(&g, (unsigned)(rnd() % 3), &ev);
    }
    gen_close(&g);
}

/* Many small packets over several streams. */
static void make_many(const char *path, unsigned events)
{
    struct gen g;
    gen_open(&g, path, 4, 256, 4, BMT_RING_DISCARD, 1);
    uint64_t ts = 11000000000000ull;
    for (unsigned i = 0; i < events; i++) {
        struct bmt_event ev;
        ts += 1 + rnd() % 100000;
        fill_event(&ev, (int)(rnd() % BMT_TP_COUNT), ts);
        emit(&g, i % 4, &ev);
    }
    gen_close(&g);
}

/* Equal timestamps across and within streams: the merge's tie order. */
static void make_ties(const char *path)
{
    struct gen g;
    gen_open(&g, path, 3, 1024, 8, BMT_RING_DISCARD, 1);
    uint64_t ts = 15000000000000ull;
    for (unsigned i = 0; i < 600; i++) {
        struct bmt_event ev;
        if (i % 4 == 0)
            ts += 1 + rnd() % 3;
        fill_event(&ev, (int)(rnd() % BMT_TP_COUNT), ts);
        emit(&g, 2 - (unsigned)(rnd() % 3), &ev);
    }
    gen_close(&g);
}

/* Large trace for throughput measurements: realistic small strings. */
static void make_big(const char *path, unsigned long long events)
{
    struct gen g;
    gen_open(&g, path, 4, 1 << 16, 8, BMT_RING_DISCARD, 1);
    uint64_t ts = 13000000000000ull;
    for (unsigned long long i = 0; i < events; i++) {
        struct bmt_event ev;
        ts += 1 + rnd() % 2000;
        int tp = (int)(rnd() % BMT_TP_COUNT);
        fill_event(&ev, tp, ts);
        for (unsigned f = 0; f < bmt_catalogue[tp].field_count; f++) {
            if (bmt_catalogue[tp].fields[f].kind != BMT_KIND_ID &&
                bmt_catalogue[tp].fields[f].type == BMT_FIELD_STRING &&
                bmt_catalogue[tp].fields[f].kind != BMT_KIND_MFA &&
                bmt_catalogue[tp].fields[f].kind != BMT_KIND_WORD) {
                ev.values[f].str = "{ok,[1,2,3]}";
                ev.values[f].len = 12;
            }
        }
        emit(&g, (unsigned)(i % 4), &ev);
    }
    gen_close(&g);
}

/* ---- Mutations for the malformed corpus. ---- */

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        die("%s: read failed", path);
    fclose(f);
    buf[n] = 0;
    *size = (size_t)n;
    return buf;
}

static void spit(const char *path, const uint8_t *buf, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, size, f) != size || fclose(f) != 0)
        die("%s: write failed", path);
}

static void file_in(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

/* A one-stream trace with `events` process_exit events in a single packet. */
/* A small trace's event: 6 header (event.h) + "<0.1.0>\0" (8) + "normal\0"
 * (7) bytes. */
#define SMALL_EV_BYTES (BMT_EVENT_HEADER_BYTES + 8 + 7)

/* `backwards_at`: that event (if < events) is stamped 1 ns before the
 * first, as a corrupted timestamp would be (the writer then gives it the
 * extended header: 8 more bytes). */
static void make_small_at(const char *path, unsigned events, unsigned backwards_at)
{
    struct gen g;
    /* 8 events per packet: more events make more packets. The ring
     * reserves room for the largest header, 8 bytes more than it writes. */
    gen_open(&g, path, 1,
             BMT_PKT_HEADER_BYTES + 8 * SMALL_EV_BYTES + BMT_EVENT_HEADER_MAX_BYTES -
                 BMT_EVENT_HEADER_BYTES,
             4, BMT_RING_DISCARD, 1000000);
    for (unsigned i = 0; i < events; i++) {
        struct bmt_event ev;
        memset(&ev, 0, sizeof ev);
        ev.id = BMT_TP_process_exit;
        ev.ts_ns = i == backwards_at ? 1000000000ull - 1 : 1000000000ull + i;
        ev.values[0].str = "<0.1.0>";
        ev.values[0].len = 7;
        ev.values[1].str = "normal";
        ev.values[1].len = 6;
        emit(&g, 0, &ev);
    }
    gen_close(&g);
    char file[4200];
    snprintf(file, sizeof file, "%s.expect", path);
    unlink(file);
}

static void make_small(const char *path, unsigned events)
{
    make_small_at(path, events, UINT_MAX);
}

static void patch_stream(const char *dir, size_t off, const void *bytes, size_t n)
{
    char file[4200];
    size_t size;
    file_in(file, sizeof file, dir, "channel0_0");
    uint8_t *buf = slurp(file, &size);
    if (off + n > size)
        die("%s: patch beyond end", file);
    memcpy(buf + off, bytes, n);
    spit(file, buf, size);
    free(buf);
}

static void truncate_stream(const char *dir, size_t size)
{
    char file[4200];
    file_in(file, sizeof file, dir, "channel0_0");
    if (truncate(file, (off_t)size) != 0)
        die("%s: truncate: %s", file, strerror(errno));
}

static void edit_metadata(const char *dir, const char *from, const char *to)
{
    char file[4200];
    size_t size;
    file_in(file, sizeof file, dir, "metadata");
    uint8_t *buf = slurp(file, &size);
    char *at = strstr((char *)buf, from);
    if (!at)
        die("%s: '%s' not found", file, from);
    size_t pre = (size_t)(at - (char *)buf), fl = strlen(from), tl = strlen(to);
    uint8_t *out = malloc(size - fl + tl);
    memcpy(out, buf, pre);
    memcpy(out + pre, to, tl);
    memcpy(out + pre + tl, buf + pre + fl, size - pre - fl);
    spit(file, out, size - fl + tl);
    free(out);
    free(buf);
}

static void put64(const char *dir, size_t off, uint64_t v)
{
    uint8_t b[8];
    bmt_put_u64(b, v);
    patch_stream(dir, off, b, 8);
}

static void make_bad(const char *root)
{
    char d[4200];
    const size_t ev_bytes = SMALL_EV_BYTES, one_pkt = BMT_PKT_HEADER_BYTES + 3 * ev_bytes;

#define BAD(name) snprintf(d, sizeof d, "%s/bad/%s", root, name)
    /* An event running past its packet's content end in a packet that is
     * not the file's last: corruption, not a cut-short recording. */
    BAD("event_past_content");
    make_small(d, 6);
    put64(d, BMT_PKT_CONTENT_SIZE, (BMT_PKT_HEADER_BYTES + ev_bytes + 12) * 8);

    BAD("bad_magic");
    make_small(d, 3);
    patch_stream(d, BMT_PKT_MAGIC, "\xde\xad\xbe\xef", 4);

    BAD("wrong_uuid");
    make_small(d, 3);
    patch_stream(d, BMT_PKT_UUID + 5, "\x00\x01", 2);

    BAD("content_size_beyond_file");
    make_small(d, 3);
    put64(d, BMT_PKT_CONTENT_SIZE, 1u << 30);
    put64(d, BMT_PKT_PACKET_SIZE, 1u << 30);

    BAD("content_size_odd_bits");
    make_small(d, 3);
    put64(d, BMT_PKT_CONTENT_SIZE, one_pkt * 8 - 3);

    BAD("content_size_below_header");
    make_small(d, 3);
    put64(d, BMT_PKT_CONTENT_SIZE, 8 * 8);

    BAD("huge_sizes");
    make_small(d, 3);
    put64(d, BMT_PKT_CONTENT_SIZE, UINT64_MAX - 7);
    put64(d, BMT_PKT_PACKET_SIZE, UINT64_MAX - 7);

    /* The last byte of the first packet is its last string's NUL; a second
     * packet follows. */
    BAD("string_without_nul");
    make_small(d, 3 + 8);
    patch_stream(d, BMT_PKT_HEADER_BYTES + 8 * ev_bytes - 1, "x", 1);

    BAD("unknown_event_id");
    make_small(d, 3);
    patch_stream(d, BMT_PKT_HEADER_BYTES + ev_bytes, "\xe7\x03", 2);

    BAD("missing_metadata");
    make_small(d, 3);
    {
        char m[4300];
        snprintf(m, sizeof m, "%s/metadata", d);
        unlink(m);
    }

    BAD("no_ctf_header");
    make_small(d, 3);
    edit_metadata(d, "/* CTF 1.8 */", "/* not a trace */");

    BAD("empty_metadata");
    make_small(d, 3);
    {
        char m[4300];
        snprintf(m, sizeof m, "%s/metadata", d);
        write_text(m, "");
    }

    BAD("unterminated_metadata");
    make_small(d, 3);
    edit_metadata(d, "event {", "event { name = \"");

    /* The second event 1 ns before the first (a corrupted timestamp):
     * babeltrace2 refuses the trace; so must view, instead of printing a
     * huge positive gap. */
    BAD("time_backwards");
    make_small_at(d, 3, 1);

    /* Big-endian metadata over little-endian packets. */
    BAD("wrong_byte_order");
    make_small(d, 3);
    edit_metadata(d, "byte_order = le", "byte_order = be");

    BAD("empty_dir");
    if (mkdir(d, 0755) != 0 && errno != EEXIST)
        die("%s: mkdir: %s", d, strerror(errno));
#undef BAD
}

/* ---- Traces read with a warning: a last packet cut short. ---- */

static void copy_file(const char *from, const char *to)
{
    size_t size;
    uint8_t *buf = slurp(from, &size);
    spit(to, buf, size);
    free(buf);
}

/* Offsets of the packets of a stream file (at most `cap`); returns how many. */
static unsigned packet_offsets(const char *file, size_t *offs, unsigned cap, size_t *file_size)
{
    size_t size, off = 0;
    unsigned n = 0;
    uint8_t *buf = slurp(file, &size);
    while (off + BMT_PKT_HEADER_BYTES <= size && n < cap) {
        offs[n++] = off;
        off += bmt_get_u64(buf + off + BMT_PKT_PACKET_SIZE) / 8;
    }
    free(buf);
    *file_size = size;
    return n;
}

/* A basic trace whose channel0_0 is cut `into` bytes after the start of
 * its last packet; DIR.whole is the same trace cut at that packet's start
 * (what a reader that skips the cut packet must show). */
static void make_cut(const char *root, const char *name, size_t into)
{
    char d[4200], whole[4300], file[4400], cut[4500];
    snprintf(d, sizeof d, "%s/truncated/%s", root, name);
    snprintf(whole, sizeof whole, "%s.whole", d);
    struct gen g;
    gen_open(&g, d, 2, 1024, 8, BMT_RING_DISCARD, 1);
    uint64_t ts = 21000000000000ull;
    for (unsigned i = 0; i < 120; i++) {
        struct bmt_event ev;
        ts += 1 + rnd() % 5000000;
        fill_event(&ev, (int)(i % BMT_TP_COUNT), ts);
        emit(&g, i % 2, &ev);
    }
    gen_close(&g);
    size_t offs[256], size;
    snprintf(file, sizeof file, "%s/channel0_0", d);
    unsigned n = packet_offsets(file, offs, 256, &size);
    if (n < 3 || offs[n - 1] + into >= size)
        die("%s: too few packets (%u) to cut", d, n);
    if (mkdir(whole, 0755) != 0 && errno != EEXIST)
        die("%s: %s", whole, strerror(errno));
    static const char *const files[] = {"metadata", "channel0_0", "channel0_1"};
    for (unsigned i = 0; i < 3; i++) {
        snprintf(file, sizeof file, "%s/%s", d, files[i]);
        snprintf(cut, sizeof cut, "%s/%s", whole, files[i]);
        copy_file(file, cut);
    }
    snprintf(cut, sizeof cut, "%s/channel0_0", whole);
    if (truncate(cut, (off_t)offs[n - 1]) != 0)
        die("%s: truncate: %s", cut, strerror(errno));
    truncate_stream(d, offs[n - 1] + into);
    snprintf(file, sizeof file, "%s.expect", d);
    unlink(file);
}

/* A one-packet trace whose file ends inside its third event, with the
 * packet's sizes saying it ends there too (a writer that recorded sizes as
 * it went, then stopped); DIR.whole has the two complete events. */
static void make_cut_event(const char *root)
{
    char d[4200], whole[4300];
    const size_t size = BMT_PKT_HEADER_BYTES + 2 * SMALL_EV_BYTES + 12;
    snprintf(d, sizeof d, "%s/truncated/cut_mid_event", root);
    snprintf(whole, sizeof whole, "%s.whole", d);
    make_small(whole, 2);
    make_small(d, 3);
    truncate_stream(d, size);
    put64(d, BMT_PKT_CONTENT_SIZE, size * 8);
    put64(d, BMT_PKT_PACKET_SIZE, size * 8);
}

static void make_truncated(const char *root)
{
    char d[4200];
    snprintf(d, sizeof d, "%s/truncated", root);
    if (mkdir(d, 0755) != 0 && errno != EEXIST)
        die("%s: %s", d, strerror(errno));
    make_cut(root, "cut_mid_packet", BMT_PKT_HEADER_BYTES + 40);
    make_cut(root, "cut_in_header", 30);
    make_cut(root, "cut_after_magic", 4);
    make_cut_event(root);
}

/* ---- Traces babeltrace2 reads that the analyses only warn about. ---- */

static void make_odd(const char *root)
{
    char d[4200];
    snprintf(d, sizeof d, "%s/odd", root);
    if (mkdir(d, 0755) != 0 && errno != EEXIST)
        die("%s: %s", d, strerror(errno));
    /* An event named in beamtrace's domain that the catalogue lacks. */
    snprintf(d, sizeof d, "%s/odd/unknown_event_name", root);
    make_basic(d, 2, 3);
    edit_metadata(d, ":process_spawn\"", ":process_spawned\"");
    /* A catalogue event whose fields differ from the catalogue's. */
    snprintf(d, sizeof d, "%s/odd/field_mismatch", root);
    make_basic(d, 2, 3);
    edit_metadata(d, "_parent;", "_parant;");
}


/* ---- a cluster: two nodes' traces (the matching rule's cases) ---- */

/* One event of tracepoint `tp` at `ts_ns` on stream `s`, its fields from
 * `ap` (strings, or integers for numeric fields, in catalogue order). */
static void emit_fields(struct gen *g, unsigned s, int tp, uint64_t ts_ns, va_list ap)
{
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = (uint16_t)tp;
    ev.ts_ns = ts_ns;
    for (unsigned f = 0; f < bmt_catalogue[tp].field_count; f++) {
        if (bmt_catalogue[tp].fields[f].type == BMT_FIELD_STRING) {
            ev.values[f].str = va_arg(ap, const char *);
            ev.values[f].len = (uint32_t)strlen(ev.values[f].str);
        } else {
            ev.values[f].integer = va_arg(ap, uint64_t);
        }
    }
    emit(g, s, &ev);
}

/* One event of tracepoint `tp` at `ts` us with the given fields (strings,
 * or integers for numeric fields, in catalogue order). */
static void cl_emit(struct gen *g, int tp, uint64_t ts, ...)
{
    va_list ap;
    va_start(ap, ts);
    emit_fields(g, 0, tp, 5000000000000ull + ts * 1000, ap);
    va_end(ap);
}

static void cl_open(struct gen *g, const char *root, const char *node, uint8_t seed,
                    size_t subbuf_bytes, unsigned drain_every)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", root, node);
    fixed_info(&g->info, seed);
    snprintf(g->info.node, sizeof g->info.node, "%s", node);
    int rc = bmt_test_gen_open(&g->t, path, &g->info, 1, subbuf_bytes, 4, BMT_RING_DISCARD,
                               drain_every);
    if (rc < 0)
        die("%s: cannot create trace: %s", path, strerror(-rc));
}

/* A fingerprint: equal for equal texts (FNV-1a), as the recorder's is for
 * equal messages. */
static uint64_t FP(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

#define SEND(ts, from, to, m) cl_emit(&g, BMT_TP_message_send_link, ts, from, to, m, "send", FP(m))
#define RECV(ts, to, m, from, fnode) \
    cl_emit(&g, BMT_TP_message_receive_link, ts, to, m, from, fnode, FP(m))

/* The cases of bmt_cluster_SUITE:matcher_rule_test: a@h sends to b@h's
 * <0.9.0> (`srv`), which a@h prints as <7.9.0>. b@h's small ring, drained
 * only every 100 events, drops part of a burst at 42-43 us: the loss that
 * makes the link of the first of two equal ticks uncertain. */
static void make_cluster(const char *root)
{
    struct gen g;
    if (mkdir(root, 0755) != 0 && errno != EEXIST)
        die("%s: %s", root, strerror(errno));
    cl_open(&g, root, "a@h", 31, 1 << 16, 1);
    cl_emit(&g, BMT_TP_node_info, 0, (uint64_t)0, "a@h", "this", "start");
    cl_emit(&g, BMT_TP_node_info, 0, (uint64_t)7, "b@h", "visible", "start");
    SEND(10, "<0.5.0>", "<7.9.0>", "m1");
    SEND(11, "<0.6.0>", "{srv,b@h}", "m2");
    SEND(12, "<0.5.0>", "<7.9.0>", "m3");   /* its receipt is lost: not received */
    SEND(13, "<0.5.0>", "<7.9.0>", "m4");
    SEND(20, "<0.5.0>", "<7.9.0>", "same");
    SEND(21, "<0.6.0>", "<7.9.0>", "same"); /* ambiguous receipts */
    cl_emit(&g, BMT_TP_message_send_link, 22, "<0.5.0>", "<0.99.0>", "x",
            "send_to_non_existing_process", (uint64_t)1);
    SEND(30, "<0.5.0>", "<7.9.0>", "late");
    SEND(40, "<0.7.0>", "<7.9.0>", "tick");
    SEND(41, "<0.7.0>", "<7.9.0>", "tick");
    SEND(42, "<0.5.0>", "<7.50.0>", "nobody"); /* a receiver without receipts */
    SEND(43, "<0.5.0>", "<8.1.0>", "lost");    /* N 8: no node_info, unresolved */
    gen_close(&g);
    cl_open(&g, root, "b@h", 32, 512, 100);
    cl_emit(&g, BMT_TP_node_info, 0, (uint64_t)0, "b@h", "this", "start");
    cl_emit(&g, BMT_TP_node_info, 0, (uint64_t)3, "a@h", "visible", "start");
    cl_emit(&g, BMT_TP_process_info, 0, "<0.9.0>", "srv", "undefined", "undefined");
    RECV(14, "<0.9.0>", "m2", "undefined", "a@h");
    RECV(15, "<0.9.0>", "m1", "undefined", "a@h");
    RECV(16, "<0.9.0>", "m4", "undefined", "a@h");
    RECV(23, "<0.9.0>", "same", "undefined", "a@h");
    RECV(24, "<0.9.0>", "same", "undefined", "a@h");
    RECV(25, "<0.9.0>", "hello", "undefined", "ctl@h"); /* from outside the cluster */
    for (unsigned i = 0; i < 92; i++)
        cl_emit(&g, BMT_TP_process_info, 42 + i / 46, "<0.77.0>", "undefined", "undefined",
                "undefined");
    RECV(45, "<0.9.0>", "tick", "undefined", "a@h");
    gen_close(&g);
}

/* A big cluster for timing and memory: three nodes, MESSAGES messages,
 * each a send on node k % 3 to a process of node (k + 1) % 3 and its
 * receipt 50 us later (sends on stream 0, receipts on stream 1 of each
 * trace), all linked. */
static void make_big_cluster(const char *root, unsigned long long messages)
{
    static const char *const nodes[3] = {"n0@h", "n1@h", "n2@h"};
    struct gen g[3];
    if (mkdir(root, 0755) != 0 && errno != EEXIST)
        die("%s: %s", root, strerror(errno));
    for (unsigned n = 0; n < 3; n++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", root, nodes[n]);
        fixed_info(&g[n].info, (uint8_t)(40 + n));
        snprintf(g[n].info.node, sizeof g[n].info.node, "%s", nodes[n]);
        if (bmt_test_gen_open(&g[n].t, path, &g[n].info, 2, 1 << 16, 8, BMT_RING_DISCARD, 1) < 0)
            die("%s: cannot create trace", path);
        /* Node m prints as index m + 1 everywhere (0: itself). */
        for (unsigned m = 0; m < 3; m++) {
            struct bmt_event ev;
            memset(&ev, 0, sizeof ev);
            ev.id = BMT_TP_node_info;
            ev.ts_ns = 14000000000000ull;
            ev.values[0].integer = m == n ? 0 : m + 1;
            ev.values[1].str = nodes[m];
            ev.values[1].len = (uint32_t)strlen(nodes[m]);
            ev.values[2].str = m == n ? "this" : "visible";
            ev.values[2].len = (uint32_t)strlen(ev.values[2].str);
            ev.values[3].str = "start";
            ev.values[3].len = 5;
            emit(&g[n], 0, &ev);
        }
    }
    for (unsigned long long k = 0; k < messages; k++) {
        unsigned a = (unsigned)(k % 3), b = (a + 1) % 3;
        char from[32], to_remote[32], to[32], msg[48];
        snprintf(from, sizeof from, "<0.%llu.0>", 100 + k % 50);
        snprintf(to_remote, sizeof to_remote, "<%u.%llu.0>", b + 1, 200 + k % 20);
        snprintf(to, sizeof to, "<0.%llu.0>", 200 + k % 20);
        snprintf(msg, sizeof msg, "{req,%llu,<<\"payload\">>}", k);
        uint64_t ts = 14000000001000ull + k * 1000;
        struct bmt_event ev;
        memset(&ev, 0, sizeof ev);
        ev.id = BMT_TP_message_send_link;
        ev.ts_ns = ts;
        const char *sv[4] = {from, to_remote, msg, "send"};
        for (unsigned f = 0; f < 4; f++) {
            ev.values[f].str = sv[f];
            ev.values[f].len = (uint32_t)strlen(sv[f]);
        }
        ev.values[4].integer = FP(msg);
        emit(&g[a], 0, &ev);
        ev.id = BMT_TP_message_receive_link;
        ev.ts_ns = ts + 50000;
        const char *rv[4] = {to, msg, "undefined", nodes[a]};
        for (unsigned f = 0; f < 4; f++) {
            ev.values[f].str = rv[f];
            ev.values[f].len = (uint32_t)strlen(rv[f]);
        }
        emit(&g[b], 1, &ev);
    }
    for (unsigned n = 0; n < 3; n++)
        if (bmt_test_gen_close(&g[n].t) < 0)
            die("%s: close failed", g[n].t.path);
}

/* ---- a sampled trace and its truth ---- */

/* One event of tracepoint `tp` at t0 + `ts` ns on stream `s` with the
 * given fields (strings, or integers for numeric fields, in catalogue
 * order). */
static void kinds_emit(struct gen *g, unsigned s, int tp, uint64_t ts, ...)
{
    va_list ap;
    va_start(ap, ts);
    emit_fields(g, s, tp, 17000000000000ull + ts, ap);
    va_end(ap);
}

/* The same workload twice over 2 s, as recorded in full (`sampled` 0: its
 * consumer says ratio 1 for every kind) and as a sampled session keeps it
 * (1: procs 1/2; send 1/2 for 1 s, then 1 (calmer); call 1/4), the events
 * kept one in N of their kind, in order: every analysis's counts and
 * totals of the sampled one, scaled back, equal the full one's. 8
 * processes spawned and exiting normally (4 a second); 16 messages
 * <0.86.0> -> <0.87.0> (8 a second), each received 1 ms and <0.87.0>
 * scheduled in 0.5 ms after its send; 8 calls of kv:get/2 of 1 ms by
 * <0.88.0>, root level. */
static void make_kinds(const char *path, int sampled)
{
    struct gen g;
    gen_open(&g, path, 2, 8192, 8, BMT_RING_DISCARD, 1);
    const uint64_t ms = 1000000, s1 = 1000 * ms;
    kinds_emit(&g, 1, BMT_TP_sample_ratio, 0, "procs", (uint64_t)(sampled ? 2 : 1), "start");
    kinds_emit(&g, 1, BMT_TP_sample_ratio, 0, "send", (uint64_t)(sampled ? 2 : 1), "start");
    kinds_emit(&g, 1, BMT_TP_sample_ratio, 0, "call", (uint64_t)(sampled ? 4 : 1), "start");
    kinds_emit(&g, 1, BMT_TP_sample_ratio, s1, "send", (uint64_t)1, "calmer");
    /* In time order, on a 10 ms grid: spawns at x10 ms, calls at x20 ms,
     * sends at x50 ms; each ends within its 10 ms. */
    for (uint64_t t = 0; t < 2 * s1; t += 10 * ms) {
        uint64_t in_s = t % s1, sec = t / s1;
        if (in_s % (100 * ms) == 10 * ms && in_s < 400 * ms) {
            unsigned i = (unsigned)(sec * 4 + in_s / (100 * ms));
            char pid[16];
            snprintf(pid, sizeof pid, "<0.%u.0>", 100 + i);
            if (!sampled || i % 2 == 0) {
                kinds_emit(&g, 0, BMT_TP_process_spawn, t, pid, "<0.80.0>", "kv:init/0");
                kinds_emit(&g, 0, BMT_TP_process_exit, t + 5 * ms, pid, "normal");
            }
        }
        if (t % (200 * ms) == 20 * ms && t < 1600 * ms) {
            unsigned i = (unsigned)(t / (200 * ms));
            if (!sampled || i % 4 == 0) {
                kinds_emit(&g, 0, BMT_TP_function_call, t, "<0.88.0>", "kv:get/2", (uint64_t)0);
                kinds_emit(&g, 0, BMT_TP_function_return, t + ms, "<0.88.0>", "kv:get/2",
                           (uint64_t)0);
            }
        }
        if (in_s % (100 * ms) == 50 * ms && in_s < 800 * ms) {
            unsigned i = (unsigned)(sec * 8 + in_s / (100 * ms));
            char m[8];
            snprintf(m, sizeof m, "m%u", i);
            if (!sampled || i >= 8 || i % 2 == 0)
                kinds_emit(&g, 0, BMT_TP_message_send_link, t, "<0.86.0>", "<0.87.0>", m,
                           "send", FP(m));
            kinds_emit(&g, 0, BMT_TP_process_scheduled, t + ms / 2, "<0.87.0>", "kv:loop/1", "in");
            kinds_emit(&g, 0, BMT_TP_message_receive_link, t + ms, "<0.87.0>", m, "<0.86.0>",
                       "undefined", FP(m));
            kinds_emit(&g, 0, BMT_TP_process_scheduled, t + 2 * ms, "<0.87.0>", "kv:loop/1",
                       "out");
        }
    }
    kinds_emit(&g, 0, BMT_TP_process_scheduled, 2 * s1, "<0.87.0>", "kv:loop/1", "in");
    gen_close(&g);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--big") == 0) {
        make_big(argv[2], strtoull(argv[3], NULL, 10));
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--big-cluster") == 0) {
        make_big_cluster(argv[2], strtoull(argv[3], NULL, 10));
        return 0;
    }
    if (argc != 2)
        die("usage: make_corpus OUTDIR | make_corpus --big DIR EVENTS | "
            "make_corpus --big-cluster DIR MESSAGES");
    char d[4200];
    const char *root = argv[1];
    snprintf(d, sizeof d, "%s/good", root);
    if (mkdir(root, 0755) != 0 && errno != EEXIST)
        die("%s: %s", root, strerror(errno));
    if (mkdir(d, 0755) != 0 && errno != EEXIST)
        die("%s: %s", d, strerror(errno));
    snprintf(d, sizeof d, "%s/bad", root);
    if (mkdir(d, 0755) != 0 && errno != EEXIST)
        die("%s: %s", d, strerror(errno));

#define GOOD(name) snprintf(d, sizeof d, "%s/good/%s", root, name)
    GOOD("basic");
    make_basic(d, 3, 6);
    GOOD("empty_strings");
    empty_percent = 30;
    make_basic(d, 2, 10);
    empty_percent = 0;
    GOOD("one_stream");
    make_basic(d, 1, 2);
    GOOD("bytes");
    make_bytes(d);
    GOOD("drops");
    make_drops(d, BMT_RING_DISCARD);
    GOOD("overwrite");
    make_drops(d, BMT_RING_OVERWRITE);
    GOOD("ties");
    make_ties(d);
    GOOD("many_packets");
    make_many(d, 20000);
#undef GOOD
    make_bad(root);
    make_truncated(root);
    snprintf(d, sizeof d, "%s/cluster", root);
    make_cluster(d);
    /* A directory of captures as `fetch` fills one (`captures`, `calls`). */
    snprintf(d, sizeof d, "%s/captures", root);
    if (mkdir(d, 0755) != 0 && errno != EEXIST)
        die("%s: %s", d, strerror(errno));
    snprintf(d, sizeof d, "%s/captures/capture-1-20231114T235332Z", root);
    make_capture(d, 1, 15, 0);
    snprintf(d, sizeof d, "%s/captures/capture-2-20231114T235342Z", root);
    make_capture(d, 2, 12, 40);
    snprintf(d, sizeof d, "%s/sampled", root);
    make_sampled(d);
    snprintf(d, sizeof d, "%s/kinds-sampled", root);
    make_kinds(d, 1);
    snprintf(d, sizeof d, "%s/kinds-full", root);
    make_kinds(d, 0);
    make_odd(root);
    return 0;
}
