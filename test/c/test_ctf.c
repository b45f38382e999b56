/* CTF writer tests: golden bytes, babeltrace2 as an independent reader, the
 * catalogue's name matching, and the event encoder's size contract.
 *
 * A fixed event set (one event per tracepoint; fixed ids, timestamps,
 * strings, integers, uuid) is encoded into one packet that must equal
 * golden/packet.bin byte for byte; the metadata for a fixed trace info must
 * equal golden/metadata.tsdl. The same events, written through two rings
 * into a trace directory, must read back through babeltrace2 (clock printed
 * in GMT, fixed clock offset) as golden/babeltrace.txt.
 *
 * Usage: test_ctf GOLDEN_DIR [--regen]. --regen rewrites the golden files
 * from the current code; inspect the diff by hand before committing them
 * (hexdump -C packet.bin; offsets in c_src/core/ctf.h).
 */
#include "core/catalogue.h"
#include "core/ctf.h"
#include "core/event.h"
#include "core/ring.h"
#include "tap.h"
#include "core/trace_dir.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *golden_dir;
static int regen;

static const uint8_t UUID[BMT_CTF_UUID_BYTES] = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x42, 0x02,
                                                  0x83, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a};

static void fixed_info(struct bmt_ctf_trace_info *info)
{
    memset(info, 0, sizeof *info);
    memcpy(info->uuid, UUID, sizeof UUID);
    strcpy(info->hostname, "golden-host");
    info->clock_offset_s = 1700000000;
    info->clock_offset_ns = 250000000;
    info->vpid = 4242;
    strcpy(info->procname, "beam.smp");
    info->schedulers_count = 2;
    info->dirty_cpu_schedulers_count = 2;
    info->dirty_io_schedulers_count = 10;
}

/* ---- the fixed event set ---- */

static const char *const STRINGS[] = {
    "<0.66.0>", "sasl_sup", "", "lists:map/2", "#Port<0.7>", "{'EXIT',normal}",
    "h\xc3\xa9llo \"q\\uoted\"", "link", "register", "in", "out_exited",
};
static const uint64_t INTEGERS[] = {
    0, 1, 610, UINT32_MAX, UINT64_MAX, UINT64_C(1) << 32, 123456789,
};
#define N_STRINGS (sizeof STRINGS / sizeof STRINGS[0])
#define N_INTEGERS (sizeof INTEGERS / sizeof INTEGERS[0])

/* Event i of the fixed set: tracepoint i % BMT_TP_COUNT, values picked from
 * the tables above by (i, field). */
static void fixed_event(unsigned i, uint64_t ts_ns, struct bmt_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->id = (uint16_t)(i % BMT_TP_COUNT);
    ev->ts_ns = ts_ns;
    const struct bmt_tracepoint *tp = &bmt_catalogue[ev->id];
    for (unsigned f = 0; f < tp->field_count; f++) {
        if (tp->fields[f].type == BMT_FIELD_STRING) {
            const char *s = STRINGS[(i * 3 + f) % N_STRINGS];
            ev->values[f].str = s;
            ev->values[f].len = (uint32_t)strlen(s);
        } else {
            ev->values[f].integer = INTEGERS[(i + f) % N_INTEGERS];
        }
    }
}

/* The low 32 bits of the clock wrap after event 16 (the large event
 * header's 32-bit timestamps carry into the high half), and events from 30
 * on come 5 s later (more than 2^32 ns: the extended header). */
#define FIXED_TS0 (UINT64_C(0x200000000) - 16384)

static uint64_t fixed_ts(unsigned i)
{
    return FIXED_TS0 + (uint64_t)i * 1000 + (i % 3) /* irregular gaps */ +
           (i >= 30 ? UINT64_C(5000000000) : 0);
}

/* ---- files ---- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t put = fwrite(data, 1, len, f);
    return (fclose(f) == 0 && put == len) ? 0 : -1;
}

/* Compares `data` with golden file `name` (or rewrites it with --regen),
 * reporting the first differing byte. */
static void check_golden(const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", golden_dir, name);
    if (regen) {
        CHECKF(write_file(path, data, len) == 0, "cannot write %s", path);
        printf("# regenerated %s (%zu bytes)\n", path, len);
        return;
    }
    size_t glen;
    char *g = read_file(path, &glen);
    CHECKF(g != NULL, "missing golden file %s (run with --regen)", path);
    if (!g)
        return;
    size_t i = 0;
    const uint8_t *d = data;
    while (i < len && i < glen && d[i] == (uint8_t)g[i])
        i++;
    CHECKF(glen == len && i == len, "%s: %zu bytes, golden %zu; first difference at byte %zu",
           name, len, glen, i);
    free(g);
}

/* ---- golden packet and metadata ---- */

static size_t build_fixed_packet(uint8_t *pkt, size_t cap)
{
    size_t off = BMT_PKT_HEADER_BYTES;
    uint64_t prev_ts = fixed_ts(0);
    bmt_ctf_packet_open(pkt, UUID, 1, fixed_ts(0));
    for (unsigned i = 0; i < BMT_TP_COUNT; i++) {
        struct bmt_event ev;
        fixed_event(i, fixed_ts(i), &ev);
        if (off + bmt_event_size(&ev) > cap)
            return 0;
        off += bmt_event_encode(&ev, pkt + off, prev_ts);
        prev_ts = ev.ts_ns;
    }
    bmt_ctf_packet_close(pkt, fixed_ts(BMT_TP_COUNT - 1), off, 5, 7);
    return off;
}

static void test_golden_packet(void)
{
    static uint8_t pkt[8192];
    size_t len = build_fixed_packet(pkt, sizeof pkt);
    CHECK(len > BMT_PKT_HEADER_BYTES);
    /* Spot checks of the layout in ctf.h, independent of the golden file. */
    static const uint8_t magic_le[4] = {0xc1, 0x1f, 0xfc, 0xc1};
    CHECK(memcmp(pkt, magic_le, 4) == 0);
    CHECK(memcmp(pkt + 4, UUID, 16) == 0);
    CHECK(bmt_get_u32(pkt + 20) == 0);
    CHECK(bmt_get_u64(pkt + 24) == 1);
    CHECK(bmt_get_u64(pkt + 32) == fixed_ts(0));
    CHECK(bmt_get_u64(pkt + 40) == fixed_ts(BMT_TP_COUNT - 1));
    CHECK(bmt_get_u64(pkt + 48) == len * 8);
    CHECK(bmt_get_u64(pkt + 56) == len * 8);
    CHECK(bmt_get_u64(pkt + 64) == 5);
    CHECK(bmt_get_u64(pkt + 72) == 7);
    CHECK(bmt_get_u32(pkt + 80) == 1);
    CHECK(bmt_get_u16(pkt + 84) == 0);            /* first event id */
    CHECK(bmt_get_u32(pkt + 86) == (uint32_t)fixed_ts(0)); /* its timestamp's low half */
    CHECK(memcmp(pkt + 90, STRINGS[0], strlen(STRINGS[0]) + 1) == 0);
    check_golden("packet.bin", pkt, len);
    tap_group("ctf: fixed event set encodes to golden/packet.bin byte for byte");
}

static void test_golden_metadata(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    static char buf[65536];
    long len = bmt_ctf_metadata(&info, buf, sizeof buf);
    CHECK(len > 0);
    if (len <= 0)
        return;
    CHECK(strncmp(buf, "/* CTF 1.8 */", 13) == 0);
    CHECK(strstr(buf, "uuid = \"deadbeef-0001-4202-8304-05060708090a\";") != NULL);
    CHECK((size_t)len == strlen(buf));
    check_golden("metadata.tsdl", buf, (size_t)len);

    /* Exactly len + 1 bytes suffice (the NUL); one less is -ENOSPC. */
    char *tight = malloc((size_t)len + 1);
    CHECK(bmt_ctf_metadata(&info, tight, (size_t)len + 1) == len);
    CHECK(memcmp(tight, buf, (size_t)len + 1) == 0);
    CHECK(bmt_ctf_metadata(&info, tight, (size_t)len) == -ENOSPC);
    CHECK(bmt_ctf_metadata(&info, tight, 0) == -ENOSPC);
    free(tight);

    /* Hostile strings are escaped, never break the TSDL. */
    strcpy(info.hostname, "a\"b\\c\nd");
    CHECK(bmt_ctf_metadata(&info, buf, sizeof buf) > 0);
    CHECK(strstr(buf, "hostname = \"a\\\"b\\\\cd\";") != NULL);

    char text[37];
    bmt_ctf_uuid_text(UUID, text);
    CHECK(strcmp(text, "deadbeef-0001-4202-8304-05060708090a") == 0);
    tap_group("ctf: metadata for a fixed trace info equals golden/metadata.tsdl");
}

/* ---- a trace directory read back by babeltrace2 ---- */

struct stream {
    struct bmt_ring ring;
    uint8_t mem[4 * 256];
    uint32_t pe[4], pb[4];
    unsigned id;
};

static void drain(struct stream *s, struct bmt_trace_dir *d)
{
    const uint8_t *pkt;
    size_t bytes;
    uint32_t events;
    while ((pkt = bmt_ring_peek(&s->ring, &bytes, &events))) {
        CHECK(bmt_trace_dir_write_packet(d, s->id, (uint8_t *)pkt, bytes, s->ring.subbuf_bytes,
                                         events) == 0);
        bmt_ring_release(&s->ring);
    }
}

static void put_event(struct stream *s, struct bmt_trace_dir *d, const struct bmt_event *ev)
{
    bmt_ring_put_event(&s->ring, ev);
    drain(s, d);
}

/* Writes the fixed trace into `path`: stream 0 gets the fixed set twice,
 * stream 3 gets it once, 500 ns later, with one event too big for a packet
 * dropped in the middle (babeltrace2 reports it on stderr). Small packets,
 * so both streams hold several. */
static int write_fixed_trace(const char *path)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    int rc = bmt_trace_dir_create(&d, path, 0, &info, 0, 0);
    CHECKF(rc == 0, "bmt_trace_dir_create(%s) = %d", path, rc);
    if (rc)
        return rc;
    static struct stream s[2];
    s[0].id = 0;
    s[1].id = 3;
    for (int k = 0; k < 2; k++)
        CHECK(bmt_ring_init(&s[k].ring, s[k].mem, s[k].pe, s[k].pb, 256, 4, BMT_RING_DISCARD,
                            s[k].id, UUID) == 0);
    for (unsigned i = 0; i < 2 * BMT_TP_COUNT; i++) {
        struct bmt_event ev;
        fixed_event(i, fixed_ts(i), &ev);
        put_event(&s[0], &d, &ev);
        if (i < BMT_TP_COUNT) {
            fixed_event(i, fixed_ts(i) + 500, &ev);
            put_event(&s[1], &d, &ev);
        }
        if (i == 5)
            CHECK(bmt_ring_reserve(&s[1].ring, 1000, fixed_ts(i) + 600) == NULL);
    }
    uint64_t end = fixed_ts(2 * BMT_TP_COUNT);
    for (int k = 0; k < 2; k++) {
        bmt_ring_flush(&s[k].ring, end);
        drain(&s[k], &d);
    }
    CHECK(s[1].ring.discarded_count == 1 && s[0].ring.discarded_count == 0);
    return bmt_trace_dir_close(&d);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* babeltrace2 --clock-cycles prints each event's raw clock value: every
 * timestamp written (compact headers across the low half's wrap, extended
 * ones after the 5 s gap) must come back exactly. */
static void check_cycles(const char *trace, const char *dir)
{
    char cmd[1024], out[160];
    snprintf(out, sizeof out, "%s/cycles.txt", dir);
    snprintf(cmd, sizeof cmd, "timeout 20 babeltrace2 --clock-cycles '%s' >'%s' 2>/dev/null", trace,
             out);
    CHECK(system(cmd) == 0);
    size_t len;
    char *text = read_file(out, &len);
    CHECK(text != NULL);
    if (!text)
        return;
    static uint64_t want[3 * BMT_TP_COUNT], got[3 * BMT_TP_COUNT];
    size_t nw = 0, ng = 0;
    for (unsigned i = 0; i < 2 * BMT_TP_COUNT; i++) {
        want[nw++] = fixed_ts(i);
        if (i < BMT_TP_COUNT)
            want[nw++] = fixed_ts(i) + 500;
    }
    for (char *line = text; line && *line && ng < 3 * BMT_TP_COUNT;) {
        unsigned long long v;
        if (sscanf(line, "[%llu]", &v) == 1)
            got[ng++] = v;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    qsort(want, nw, sizeof want[0], cmp_u64);
    qsort(got, ng, sizeof got[0], cmp_u64);
    CHECKF(ng == nw, "babeltrace2 --clock-cycles printed %zu events, %zu written", ng, nw);
    for (size_t i = 0; i < ng && i < nw; i++)
        CHECKF(got[i] == want[i], "event %zu: babeltrace2 reads clock %llu, written %llu", i,
               (unsigned long long)got[i], (unsigned long long)want[i]);
    free(text);
}

static void test_babeltrace(void)
{
    if (system("babeltrace2 --version >/dev/null 2>&1") != 0) {
        tap_skip("ctf: babeltrace2 reads the fixed trace as golden/babeltrace.txt",
                 "babeltrace2 not installed");
        return;
    }
    char dir[] = "/tmp/bmt-test-ctf-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char trace[128], cmd[1024], out[128], err[128];
    snprintf(trace, sizeof trace, "%s/trace", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    CHECK(write_fixed_trace(trace) == 0);
    snprintf(cmd, sizeof cmd, "TZ=UTC timeout 20 babeltrace2 --clock-gmt '%s' >'%s' 2>'%s'",
             trace, out, err);
    int rc = system(cmd);
    CHECKF(rc == 0, "babeltrace2 exited with %d", rc);
    size_t len, elen;
    char *text = read_file(out, &len);
    char *etext = read_file(err, &elen);
    CHECK(text != NULL && etext != NULL);
    if (text && etext) {
        size_t lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += text[i] == '\n';
        CHECKF(lines == 3 * BMT_TP_COUNT, "babeltrace2 printed %zu events", lines);
        CHECKF(strstr(etext, "discarded 1 event") != NULL, "stderr: %s", etext);
        check_golden("babeltrace.txt", text, len);
        check_cycles(trace, dir);
        if (tap_group_failures)
            printf("# babeltrace2 stderr:\n%s", etext);
    }
    free(text);
    free(etext);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    tap_group("ctf: babeltrace2 reads the fixed trace as golden/babeltrace.txt");
}

/* A trace being written says so from before its metadata exists until it
 * is complete: a reader that finds the metadata, then no incomplete marker,
 * knows it is complete (a flight capture is listed once sealed; with the
 * metadata made first, one was listed while still being written). The
 * order the files appear and go, as inotify saw it. */
static void test_marker_order(void)
{
    char dir[] = "/tmp/bmt-test-ctf-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char trace[128];
    snprintf(trace, sizeof trace, "%s/trace", dir);
    CHECK(mkdir(trace, 0700) == 0);
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    CHECK(in >= 0 && inotify_add_watch(in, trace, IN_CREATE | IN_DELETE) >= 0);
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    CHECK(bmt_trace_dir_create(&d, trace, 0, &info, 0, 0) == 0);
    CHECK(bmt_trace_dir_close(&d) == 0);
    /* "+name" created, "-name" deleted, in order. */
    char order[256] = "";
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n = in >= 0 ? read(in, buf, sizeof buf) : -1;
    for (ssize_t off = 0; n > 0 && off < n;) {
        const struct inotify_event *e = (const struct inotify_event *)(buf + off);
        if (e->len && strlen(order) + strlen(e->name) + 3 < sizeof order) {
            strcat(order, e->mask & IN_CREATE ? "+" : "-");
            strcat(order, e->name);
            strcat(order, " ");
        }
        off += (ssize_t)(sizeof *e + e->len);
    }
    CHECKF(strcmp(order, "+" BMT_INCOMPLETE_FILE " +metadata -" BMT_INCOMPLETE_FILE " ") == 0,
           "files made and removed in the order: %s", order);
    if (in >= 0)
        close(in);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    tap_group("trace directory: the incomplete marker is made before the metadata and removed when "
              "the trace is complete");
}

/* ---- catalogue ---- */

static void test_catalogue(void)
{
    static const struct {
        const char *pattern, *text;
        int match;
    } globs[] = {
        {"", "", 1},          {"", "a", 0},          {"*", "", 1},
        {"*", "anything", 1}, {"a", "a", 1},         {"a", "b", 0},
        {"abc", "ab", 0},     {"ab", "abc", 0},      {"a*", "a", 1},
        {"a**", "a", 1},      {"*a", "ba", 1},       {"*a", "ab", 0},
        {"a*b", "ab", 1},     {"a*b", "acb", 1},     {"a*b", "acbd", 0},
        {"a*b*c", "abxbc", 1}, {"*ab*cd", "xabyabzcd", 1}, {"*a*a", "aaa", 1},
        {"*aab", "aaaab", 1}, {"*x*", "abc", 0},     {"**", "", 1},
        {"org_erlang_dyntrace:*", "org_erlang_dyntrace:gc_minor_start", 1},
        {"*:gc_*_end", "org_erlang_dyntrace:gc_minor_end", 1},
        {"*:gc_*_end", "org_erlang_dyntrace:gc_minor_start", 0},
    };
    for (size_t i = 0; i < sizeof globs / sizeof globs[0]; i++)
        CHECKF(bmt_glob_match(globs[i].pattern, globs[i].text) == globs[i].match,
               "glob(\"%s\", \"%s\") != %d", globs[i].pattern, globs[i].text, globs[i].match);
    tap_group("catalogue: bmt_glob_match cases");

    uint64_t all = BMT_TP_COUNT == 64 ? UINT64_MAX : (UINT64_C(1) << BMT_TP_COUNT) - 1;
    uint64_t mask = 0;
    CHECK(bmt_catalogue_match("*", &mask) == BMT_TP_COUNT && mask == all);
    mask = 0;
    /* OTP's domain is every row before beamtrace's own. */
    uint64_t dyntrace = (UINT64_C(1) << BMT_TP_process_info) - 1;
    CHECK(bmt_catalogue_match("org_erlang_dyntrace:*", &mask) == BMT_TP_process_info &&
          mask == dyntrace);
    mask = 0;
    CHECK(bmt_catalogue_match("org_erlang_dyntrace:gc_*", &mask) == 4);
    CHECK(mask == ((UINT64_C(1) << BMT_TP_gc_minor_start) | (UINT64_C(1) << BMT_TP_gc_minor_end) |
                   (UINT64_C(1) << BMT_TP_gc_major_start) | (UINT64_C(1) << BMT_TP_gc_major_end)));
    mask = 0;
    CHECK(bmt_catalogue_match("*_exit", &mask) == 2);
    CHECK(mask == ((UINT64_C(1) << BMT_TP_process_exit) | (UINT64_C(1) << BMT_TP_port_exit)));
    mask = UINT64_C(1) << 63; /* bits already set are kept */
    CHECK(bmt_catalogue_match("org_erlang_dyntrace:process_spawn", &mask) == 1);
    CHECK(mask == ((UINT64_C(1) << 63) | (UINT64_C(1) << BMT_TP_process_spawn)));
    mask = 0;
    CHECK(bmt_catalogue_match("process_spawn", &mask) == 0 && mask == 0); /* full names only */
    CHECK(bmt_catalogue_match("org_erlang_dyntrace:nope*", &mask) == 0 && mask == 0);
    CHECK(bmt_catalogue_match("", &mask) == 0 && mask == 0);
    mask = 0;
    /* message_send, message_receive, their _link variants, long_message_queue */
    CHECK(bmt_catalogue_match("*message*", &mask) == 5);

    for (int i = 0; i < BMT_TP_COUNT; i++) {
        const struct bmt_tracepoint *tp = &bmt_catalogue[i];
        CHECK(bmt_catalogue_find(tp->full_name) == i);
        char want[256];
        snprintf(want, sizeof want, "%s:%s", tp->domain, tp->name);
        CHECK(strcmp(want, tp->full_name) == 0);
        CHECK(tp->field_count >= 1 && tp->field_count <= BMT_MAX_FIELDS);
        mask = 0;
        CHECK(bmt_catalogue_match(tp->full_name, &mask) == 1 && mask == UINT64_C(1) << i);
    }
    CHECK(bmt_catalogue_find("org_erlang_dyntrace:") == -1);
    CHECK(bmt_catalogue_find("org_erlang_dyntrace:*") == -1);
    CHECK(bmt_catalogue_find("") == -1);
    CHECK(BMT_TP_COUNT <= 64); /* masks are uint64_t */
    tap_group("catalogue: bmt_catalogue_match and bmt_catalogue_find cases");
}

/* ---- event size == encoded length, and the encoding decodes back ---- */

static void test_event_size(void)
{
    static uint8_t buf[3 * BMT_TERM_MAX_BYTES];
    static char big[BMT_TERM_MAX_BYTES + 1];
    memset(big, 'x', sizeof big - 1);
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        const struct bmt_tracepoint *tp = &bmt_catalogue[i];
        for (int variant = 0; variant < 3; variant++) {
            struct bmt_event ev;
            memset(&ev, 0, sizeof ev);
            ev.id = (uint16_t)i;
            ev.ts_ns = UINT64_C(0x0102030405060708) + (uint64_t)variant;
            size_t want = BMT_EVENT_HEADER_MAX_BYTES;
            for (unsigned f = 0; f < tp->field_count; f++) {
                switch (tp->fields[f].type) {
                case BMT_FIELD_STRING:
                    ev.values[f].str = big;
                    ev.values[f].len = variant == 0 ? 0 : variant == 1 ? f + 3 : BMT_TERM_MAX_BYTES / 4;
                    want += ev.values[f].len + 1;
                    break;
                case BMT_FIELD_U32:
                    ev.values[f].integer = UINT64_C(0xaabbccdd) + f;
                    want += 4;
                    break;
                case BMT_FIELD_U64:
                case BMT_FIELD_S64:
                    ev.values[f].integer = UINT64_C(0x1122334455667788) + f;
                    want += 8;
                    break;
                }
            }
            size_t sz = bmt_event_size(&ev);
            CHECKF(sz == want, "%s variant %d: size %zu, expected %zu", tp->full_name, variant, sz,
                   want);
            if (sz > sizeof buf - 16)
                continue;
            memset(buf, 0xa5, sizeof buf);
            size_t used = bmt_event_encode(&ev, buf, ev.ts_ns);
            CHECKF(used <= sz, "%s: encoded %zu bytes, more than the %zu bound", tp->full_name, used, sz);
            sz = used;
            for (size_t k = sz; k < sz + 16; k++)
                CHECKF(buf[k] == 0xa5, "%s: byte %zu past the size was written", tp->full_name, k);
            /* Decode it back with the catalogue: ends exactly at sz. */
            unsigned got_id;
            uint64_t got_ts;
            size_t off = bmt_event_header_read(buf, sz, &got_id, &got_ts, ev.ts_ns);
            CHECK(off == BMT_EVENT_HEADER_BYTES && got_id == (unsigned)i && got_ts == ev.ts_ns);
            for (unsigned f = 0; f < tp->field_count && off < sz; f++) {
                switch (tp->fields[f].type) {
                case BMT_FIELD_STRING: {
                    size_t n = strnlen((const char *)buf + off, sz - off);
                    CHECK(n == ev.values[f].len && memcmp(buf + off, big, n) == 0);
                    off += n + 1;
                    break;
                }
                case BMT_FIELD_U32:
                    CHECK(bmt_get_u32(buf + off) == (uint32_t)ev.values[f].integer);
                    off += 4;
                    break;
                case BMT_FIELD_U64:
                case BMT_FIELD_S64:
                    CHECK(bmt_get_u64(buf + off) == ev.values[f].integer);
                    off += 8;
                    break;
                }
            }
            CHECKF(off == sz, "%s: decoded %zu bytes, size says %zu", tp->full_name, off, sz);
            /* The sinks' reader of an event written in place: the same
             * values back, ending at the same byte. */
            struct bmt_event back;
            memset(&back, 0, sizeof back);
            size_t read = bmt_event_values_from_payload(&back, i, buf + BMT_EVENT_HEADER_BYTES);
            CHECKF(read == sz - BMT_EVENT_HEADER_BYTES, "%s: values_from_payload read %zu of %zu",
                   tp->full_name, read, sz - BMT_EVENT_HEADER_BYTES);
            for (unsigned f = 0; f < tp->field_count; f++) {
                if (tp->fields[f].type == BMT_FIELD_STRING)
                    CHECK(back.values[f].len == ev.values[f].len &&
                          memcmp(back.values[f].str, big, back.values[f].len) == 0 &&
                          back.values[f].str[back.values[f].len] == '\0');
                else
                    CHECK(back.values[f].integer == (tp->fields[f].type == BMT_FIELD_U32
                                                         ? (uint32_t)ev.values[f].integer
                                                         : ev.values[f].integer));
            }
        }
    }
    tap_group("event: bmt_event_size equals the encoded length for every tracepoint, "
              "bmt_event_values_from_payload reads it back");
}

/* The large event header: compact while the timestamp is at most 2^32-1 ns
 * past the previous one and not before it, extended otherwise; reading it
 * back with the same previous timestamp gives the id and time written. */
static void test_event_header(void)
{
    static const struct {
        uint64_t prev, ts;
        unsigned id;
        size_t bytes;
    } cases[] = {
        {1000, 1000, 3, 6},
        {1000, 1001, 0, 6},
        {UINT64_C(0x1fffffff0), UINT64_C(0x200000010), 7, 6}, /* low half wraps */
        {0, UINT32_MAX, 1, 6},
        {0, UINT64_C(0x100000000), 1, 14},                     /* 2^32 ns later */
        {UINT64_C(0x100000000), 5, 2, 14},                     /* backwards */
        {5, UINT64_MAX, 65534, 14},
        {5, 6, 65535, 14},                                     /* id needs 32 bits */
        {5, 6, 70000, 14},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[BMT_EVENT_HEADER_MAX_BYTES + 1];
        memset(buf, 0xa5, sizeof buf);
        size_t n = bmt_event_header_write(buf, cases[i].id, cases[i].ts, cases[i].prev);
        CHECKF(n == cases[i].bytes, "case %zu: header of %zu bytes, expected %zu", i, n,
               cases[i].bytes);
        CHECK(buf[BMT_EVENT_HEADER_MAX_BYTES] == 0xa5);
        unsigned id = 0;
        uint64_t ts = 0;
        CHECKF(bmt_event_header_read(buf, n, &id, &ts, cases[i].prev) == n && id == cases[i].id &&
                   ts == cases[i].ts,
               "case %zu: read id %u ts %llu", i, id, (unsigned long long)ts);
        CHECK(bmt_event_header_read(buf, n - 1, &id, &ts, cases[i].prev) == 0);
    }
    tap_group("event: large header, compact and extended, round trip and bounds");
}

int main(int argc, char **argv)
{
    golden_dir = argc > 1 ? argv[1] : "test/c/golden";
    regen = argc > 2 && strcmp(argv[2], "--regen") == 0;
    test_golden_packet();
    test_golden_metadata();
    test_babeltrace();
    test_marker_order();
    test_catalogue();
    test_event_size();
    test_event_header();
    return tap_exit();
}
