/* Flight-recorder captures (c_src/recorder/capture.c) through the recorder,
 * without a VM: writer threads run the tracer's writer bracket into an
 * overwrite-mode session while the main thread fires triggers, as the
 * tracer and the NIF do. Run under AddressSanitizer+UBSan and under
 * ThreadSanitizer (the capture copies packets while the writers run).
 *
 * Every event carries its writer and a per-writer sequence number, so the
 * checks are exact: a capture holds, for each writer, an unbroken run of
 * its events from at or before trigger - window to at or after the
 * (latest) trigger + after; its trace reports no loss although the rings
 * overwrote packets all along; babeltrace2 reads it; its metadata names
 * the trigger. Then: extension, the rate limit, the cap on a capture's
 * length, max_bytes, and the incomplete marker of a trace whose process
 * was killed (a child process, killed with SIGKILL). Last, snapshots taken
 * while captures close their tails: both freeze the same idle rings.
 *
 * Usage: test_capture DIR
 *        test_capture --crash-child DIR   (the child of the kill test)
 */
#include "recorder/recorder.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WRITERS 3
#define MS (UINT64_C(1000000))

static const char *base;
static struct bmt_recorder rec;
static struct bmt_session *session;
static uint64_t generation;
static _Atomic int stopped_reason;

struct writer {
    pthread_t thread;
    unsigned slot;
    _Atomic int run;
    _Atomic int pacing;      /* the burst is over */
    int burst;               /* first, as fast as possible until its ring overwrote */
    long pace_us;            /* then one event every pace_us */
    uint64_t *ts_of;         /* the time of its event seq, for seq < TS_KEPT */
    uint64_t written;        /* events written, once stopped */
};
/* Events whose times a writer keeps: the bursts write a few thousand. */
#define TS_KEPT (1u << 20)
static struct writer writers[WRITERS];

static void on_stopped(void *ctx, int index, uint64_t gen, enum bmt_stop_reason reason)
{
    (void)ctx, (void)index, (void)gen;
    atomic_store(&stopped_reason, (int)reason);
}

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

/* Writes event `seq` of writer `slot`; returns its time. */
static uint64_t write_one(unsigned slot, uint64_t seq)
{
    char from[16], to[24];
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = BMT_TP_message_send;
    snprintf(from, sizeof from, "w%u", slot);
    snprintf(to, sizeof to, "%llu", (unsigned long long)seq);
    ev.values[BMT_F_message_send_from].str = from;
    ev.values[BMT_F_message_send_from].len = (uint32_t)strlen(from);
    ev.values[BMT_F_message_send_to].str = to;
    ev.values[BMT_F_message_send_to].len = (uint32_t)strlen(to);
    ev.values[BMT_F_message_send_message].str = "m";
    ev.values[BMT_F_message_send_message].len = 1;
    uint64_t ts = bmt_clock_ns();
    struct bmt_ring *r = bmt_rec_enter(session, generation, slot);
    if (!r)
        return ts;
    uint8_t *start;
    uint8_t *dst = bmt_rec_reserve(session, r, ev.id, ts, &start);
    if (dst)
        bmt_rec_commit(r, start, dst + bmt_event_encode_payload(&ev, dst), ts);
    bmt_rec_leave(session, r, ts);
    return ts;
}

static void keep_ts(struct writer *w, uint64_t seq, uint64_t ts)
{
    if (w->ts_of && seq < TS_KEPT)
        w->ts_of[seq] = ts;
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    uint64_t seq = 0;
    /* The writer's own field: it may read it. */
    for (; w->burst && atomic_load(&w->run) && bmt_rec_live(session, generation) &&
           session->slots[w->slot].ring.overwritten_count == 0;
         seq++)
        keep_ts(w, seq, write_one(w->slot, seq));
    atomic_store(&w->pacing, 1);
    for (; atomic_load(&w->run); seq++) {
        keep_ts(w, seq, write_one(w->slot, seq));
        sleep_us(w->pace_us);
    }
    w->written = seq;
    return NULL;
}

static void start_writers(int burst, long pace_us)
{
    for (unsigned i = 0; i < WRITERS; i++) {
        writers[i].slot = i;
        writers[i].burst = burst;
        writers[i].pace_us = pace_us;
        writers[i].written = 0;
        if (!writers[i].ts_of)
            writers[i].ts_of = calloc(TS_KEPT, sizeof *writers[i].ts_of);
        atomic_store(&writers[i].run, 1);
        atomic_store(&writers[i].pacing, 0);
        pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]);
    }
}

/* Waits until every writer's burst is over (its ring overwrote). */
static void wait_pacing(void)
{
    for (unsigned i = 0; i < WRITERS; i++)
        while (!atomic_load(&writers[i].pacing))
            sleep_us(1000);
}

static void stop_writers(void)
{
    for (unsigned i = 0; i < WRITERS; i++)
        atomic_store(&writers[i].run, 0);
    for (unsigned i = 0; i < WRITERS; i++)
        pthread_join(writers[i].thread, NULL);
}

static struct bmt_rec_config config(const char *name, uint64_t window_ns, uint64_t after_ns)
{
    struct bmt_rec_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.dir, sizeof cfg.dir, "%s/%s", base, name);
    cfg.enable_mask = UINT64_C(1) << BMT_TP_message_send;
    cfg.mode = BMT_RING_OVERWRITE;
    cfg.subbuf_bytes = 4096;
    cfg.subbuf_count = 64;
    cfg.message_max_bytes = 255;
    cfg.flush_interval_ns = 20 * MS;
    bmt_ctf_trace_info_init(&cfg.info);
    cfg.capture.window_ns = window_ns;
    cfg.capture.after_ns = after_ns;
    return cfg;
}

static int start(const struct bmt_rec_config *cfg)
{
    int index;
    atomic_store(&stopped_reason, BMT_REASON_NONE);
    int rc = bmt_rec_start(&rec, cfg, 255, 1, &index, &generation);
    CHECKF(rc == 0, "bmt_rec_start(%s): %s", cfg->dir, strerror(-rc));
    if (rc == 0)
        session = &rec.sessions[index];
    return rc;
}

static struct bmt_capture_stats stats(void)
{
    struct bmt_capture_stats st;
    memset(&st, 0, sizeof st);
    int index = (int)(session - rec.sessions);
    bmt_rec_capture_stats(&rec, index, generation, &st);
    return st;
}

/* Waits (bounded: 20 s, a loaded machine) until `n` captures are sealed. */
static int wait_captures(uint64_t n)
{
    for (int i = 0; i < 2000; i++) {
        struct bmt_capture_stats st = stats();
        if (st.captures >= n && !st.open)
            return 1;
        sleep_us(10000);
    }
    return 0;
}

static struct bmt_trigger trigger_at(uint64_t ts, uint64_t value)
{
    struct bmt_trigger t;
    memset(&t, 0, sizeof t);
    t.kind = BMT_TRIGGER_CALL;
    t.ts_ns = ts;
    t.value = value;
    t.bound = 10 * MS;
    snprintf(t.pid, sizeof t.pid, "<0.123.0>");
    snprintf(t.function, sizeof t.function, "kv:get/2");
    return t;
}

/* ---- reading a capture ---- */

struct capture_read {
    int well_formed;
    int files;                  /* stream files */
    uint64_t events;
    uint64_t discarded;         /* the loss its packets report */
    uint64_t lost_packets;      /* packet_seq_num gaps */
    int unbroken;               /* each writer's events consecutive */
    uint64_t holes;             /* events missing between a writer's first and last */
    uint64_t first_ts[WRITERS], last_ts[WRITERS];
    uint64_t first_seq[WRITERS], next_seq[WRITERS];
    int seen[WRITERS];
};

static void read_stream(const char *path, struct capture_read *cr)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        cr->well_formed = 0;
        if (fd >= 0)
            close(fd);
        return;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n != st.st_size) {
        cr->well_formed = 0;
        free(buf);
        return;
    }
    cr->files++;
    size_t off = 0;
    uint64_t expect_seq = 0, last_discarded = 0;
    while (off < (size_t)n) {
        const uint8_t *pkt = buf + off;
        uint64_t content = bmt_get_u64(pkt + BMT_PKT_CONTENT_SIZE) / 8;
        uint64_t size = bmt_get_u64(pkt + BMT_PKT_PACKET_SIZE) / 8;
        if ((size_t)n - off < BMT_PKT_HEADER_BYTES || size < content ||
            content < BMT_PKT_HEADER_BYTES || size > (size_t)n - off) {
            cr->well_formed = 0;
            break;
        }
        uint64_t pseq = bmt_get_u64(pkt + BMT_PKT_SEQ_NUM);
        cr->lost_packets += pseq - expect_seq;
        expect_seq = pseq + 1;
        last_discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
        uint64_t prev_ts = bmt_get_u64(pkt + BMT_PKT_TS_BEGIN);
        size_t e = BMT_PKT_HEADER_BYTES;
        while (e < content) {
            unsigned id;
            uint64_t ts;
            size_t h = bmt_event_header_read(pkt + e, content - e, &id, &ts, prev_ts);
            if (!h || id != BMT_TP_message_send) {
                cr->well_formed = 0;
                break;
            }
            prev_ts = ts;
            e += h;
            const char *fields[3];
            for (int f = 0; f < 3 && cr->well_formed; f++) {
                fields[f] = (const char *)pkt + e;
                size_t len = strnlen(fields[f], content - e);
                if (len == content - e)
                    cr->well_formed = 0;
                e += len + 1;
            }
            if (!cr->well_formed)
                break;
            unsigned w = (unsigned)strtoul(fields[0] + 1, NULL, 10);
            uint64_t seq = strtoull(fields[1], NULL, 10);
            if (w >= WRITERS) {
                cr->well_formed = 0;
                break;
            }
            if (!cr->seen[w]) {
                cr->seen[w] = 1;
                cr->first_ts[w] = ts;
                cr->first_seq[w] = seq;
            } else if (seq != cr->next_seq[w]) {
                cr->unbroken = 0;
                if (seq > cr->next_seq[w])
                    cr->holes += seq - cr->next_seq[w];
            }
            cr->next_seq[w] = seq + 1;
            cr->last_ts[w] = ts;
            cr->events++;
        }
        off += size;
    }
    cr->discarded += last_discarded;
    free(buf);
}

static struct capture_read read_capture(const char *dir)
{
    struct capture_read cr;
    memset(&cr, 0, sizeof cr);
    cr.well_formed = cr.unbroken = 1;
    for (unsigned stream = 0; stream < 64; stream++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/channel0_%u", dir, stream);
        if (access(path, F_OK) == 0)
            read_stream(path, &cr);
    }
    return cr;
}

/* Whether writer `w`'s events reach time `end` in capture `cr`: its last
 * one there is at or after `end`, or the one after it (not in the capture)
 * is later than `end` (a writer descheduled across the capture's end has
 * no event right at it). Read once the writers stopped. */
static int tail_reaches(const struct capture_read *cr, unsigned w, uint64_t end)
{
    const struct writer *wr = &writers[w];
    uint64_t beyond = cr->next_seq[w];
    return cr->seen[w] && (cr->last_ts[w] >= end || (beyond < wr->written && beyond < TS_KEPT &&
                                                      wr->ts_of && wr->ts_of[beyond] > end));
}

/* The capture directory named capture-<n>-* under `session_dir`. */
static int find_capture(const char *session_dir, unsigned n, char *out, size_t size)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "ls -d '%s'/capture-%u-* 2>/dev/null", session_dir, n);
    FILE *p = popen(cmd, "r");
    int found = p && fgets(out, (int)size, p) != NULL;
    if (p)
        pclose(p);
    if (found)
        out[strcspn(out, "\n")] = '\0';
    return found;
}

/* Runs `cmd` and returns its first output line's number, or -1. */
static long run_number(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    long n = -1;
    if (!p || fscanf(p, "%ld", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static long babeltrace_events(const char *dir)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "babeltrace2 '%s' 2>/dev/null | grep -c 'message_send:'", dir);
    return run_number(cmd);
}

static long babeltrace_discard_lines(const char *dir)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "babeltrace2 '%s' 2>&1 | grep -ci 'discarded'", dir);
    return run_number(cmd);
}

static int file_has(const char *path, const char *text)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "grep -c -F '%s' '%s'", text, path);
    return run_number(cmd) > 0;
}

static int exists(const char *dir, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Removes directory `dir` and the files in it (a snapshot: no subfolders). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    (void)rmdir(dir);
}

/* ---- scenarios ---- */

/* One trigger: the capture holds the window before and the tail after,
 * every writer's events unbroken, no loss reported though the rings
 * overwrote packets before and during it; its metadata names the trigger. */
static void test_one_capture(void)
{
    const uint64_t window = 200 * MS, after = 100 * MS;
    struct bmt_rec_config cfg = config("one", window, after);
    if (start(&cfg) != 0)
        return;
    /* A burst until each ring overwrote, then a slow pace. */
    start_writers(1, 500);
    wait_pacing();
    sleep_us(400 * 1000);
    uint64_t overwritten = 0;
    for (unsigned i = 0; i < WRITERS; i++)
        overwritten += atomic_load(&session->slots[i].ring.discarded_count);
    CHECKF(overwritten > 0, "the rings overwrote nothing: the test does not test that");
    CHECK(exists(cfg.dir, BMT_INCOMPLETE_FILE));
    uint64_t t = bmt_clock_ns();
    struct bmt_trigger trig = trigger_at(t, 15 * MS);
    CHECK(bmt_capture_fire(&session->capture, &trig) == 1);
    CHECK(wait_captures(1));
    stop_writers();
    struct bmt_capture_stats st = stats();
    CHECKF(st.captures == 1 && st.fired == 1 && st.absorbed == 0 && st.lost_packets == 0,
           "captures %llu fired %llu absorbed %llu lost packets %llu",
           (unsigned long long)st.captures, (unsigned long long)st.fired,
           (unsigned long long)st.absorbed, (unsigned long long)st.lost_packets);
    char dir[4200];
    CHECK(find_capture(cfg.dir, 1, dir, sizeof dir));
    struct capture_read cr = read_capture(dir);
    CHECK(cr.well_formed && cr.files == WRITERS);
    /* Its loss count is exactly the events missing inside it: overwritten
     * packets before it are not. (A writer arriving while the capture's end
     * freezes an idle ring may lose an event: real, and counted.) */
    CHECKF(cr.discarded == cr.holes && cr.lost_packets == 0,
           "the capture reports %llu discarded, %llu lost packets; %llu events missing",
           (unsigned long long)cr.discarded, (unsigned long long)cr.lost_packets,
           (unsigned long long)cr.holes);
    /* Each writer's events from trigger - window to trigger + after are
     * all in: its first one there or earlier, or the one before it (not
     * in the capture) older than the window (a writer descheduled across
     * trigger - window has no event right at it); the same at the end. */
    for (unsigned w = 0; w < WRITERS; w++) {
        const struct writer *wr = &writers[w];
        uint64_t before = cr.first_seq[w] - 1;
        CHECKF(cr.seen[w] && (cr.first_ts[w] <= t - window ||
                              (cr.first_seq[w] > 0 && before < TS_KEPT && wr->ts_of &&
                               wr->ts_of[before] < t - window)),
               "writer %u: first event %lld ns after trigger - window", w,
               (long long)(cr.first_ts[w] - (t - window)));
        CHECKF(tail_reaches(&cr, w, t + after),
               "writer %u: last event %lld ns before trigger + after", w,
               (long long)(t + after - cr.last_ts[w]));
    }
    CHECKF(babeltrace_events(dir) == (long)cr.events, "babeltrace2 reads %ld of %llu events",
           babeltrace_events(dir), (unsigned long long)cr.events);
    CHECK(cr.holes > 0 || babeltrace_discard_lines(dir) == 0);
    char meta[4400];
    snprintf(meta, sizeof meta, "%s/metadata", dir);
    CHECK(file_has(meta, "beamtrace_trigger_kind = \"call\";"));
    CHECK(file_has(meta, "beamtrace_trigger_function = \"kv:get/2\";"));
    CHECK(file_has(meta, "beamtrace_trigger_pid = \"<0.123.0>\";"));
    CHECK(file_has(meta, "beamtrace_trigger_value = 15000000;"));
    CHECK(file_has(meta, "beamtrace_trigger_unit = \"ns\";"));
    CHECK(!exists(dir, BMT_INCOMPLETE_FILE));
    struct bmt_rec_stats rs;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &rs) == 0);
    CHECK(!exists(cfg.dir, BMT_INCOMPLETE_FILE));
    printf("# one capture: %llu events, %llu overwritten before it\n",
           (unsigned long long)cr.events, (unsigned long long)overwritten);
    tap_group("capture: window before and tail after the trigger, its loss count exactly the "
              "events missing in it though the rings overwrote, trigger in the metadata, babeltrace2 "
              "reads it");
}

/* A trigger during a capture extends it (one capture, counted absorbed);
 * one past the capture's cap starts the next capture once this one is
 * sealed; the rate limit skips and counts; nothing is silently dropped. */
static void test_extend_and_limits(void)
{
    const uint64_t window = 300 * MS, after = 100 * MS;
    struct bmt_rec_config cfg = config("extend", window, after);
    cfg.capture.max_per_hour = 2;
    if (start(&cfg) != 0)
        return;
    start_writers(0, 300);
    sleep_us(400 * 1000);
    uint64_t t1 = bmt_clock_ns();
    struct bmt_trigger a = trigger_at(t1, 11 * MS);
    /* Stamped ahead: the capture must wait for its tail too. */
    struct bmt_trigger b = trigger_at(t1 + 200 * MS, 12 * MS);
    struct bmt_trigger past_cap = trigger_at(t1 + window + 1, 13 * MS);
    CHECK(bmt_capture_fire(&session->capture, &a) == 1);
    CHECK(bmt_capture_fire(&session->capture, &b) == 2);
    CHECK(bmt_capture_fire(&session->capture, &past_cap) == 1);
    CHECK(wait_captures(2));
    /* Both captures are sealed: the writers' later events are in neither,
     * and stopped writers' times can be read. */
    stop_writers();
    char dir[4200];
    CHECK(find_capture(cfg.dir, 1, dir, sizeof dir));
    struct capture_read cr = read_capture(dir);
    for (unsigned w = 0; w < WRITERS; w++)
        CHECKF(tail_reaches(&cr, w, t1 + 200 * MS + after),
               "writer %u: the extended tail ends %lld ns early", w,
               (long long)(t1 + 200 * MS + after - cr.last_ts[w]));
    CHECK(cr.discarded == cr.holes);
    /* Each capture's metadata names its first trigger. */
    char meta[4400];
    snprintf(meta, sizeof meta, "%s/metadata", dir);
    CHECK(file_has(meta, "beamtrace_trigger_value = 11000000;"));
    CHECK(find_capture(cfg.dir, 2, dir, sizeof dir));
    snprintf(meta, sizeof meta, "%s/metadata", dir);
    CHECK(file_has(meta, "beamtrace_trigger_value = 13000000;"));
    cr = read_capture(dir);
    for (unsigned w = 0; w < WRITERS; w++)
        CHECKF(tail_reaches(&cr, w, t1 + window + 1 + after),
               "writer %u: the second capture's tail ends early", w);
    /* Two tokens an hour, both spent. */
    struct bmt_trigger d = trigger_at(bmt_clock_ns(), 15 * MS);
    CHECK(bmt_capture_fire(&session->capture, &d) == 0);
    struct bmt_capture_stats st = stats();
    CHECKF(st.captures == 2 && st.fired == 4 && st.absorbed == 1 && st.skipped_rate == 1 &&
               st.skipped_long == 0,
           "captures %llu fired %llu absorbed %llu skipped long %llu rate %llu",
           (unsigned long long)st.captures, (unsigned long long)st.fired,
           (unsigned long long)st.absorbed, (unsigned long long)st.skipped_long,
           (unsigned long long)st.skipped_rate);
    CHECK(!find_capture(cfg.dir, 3, dir, sizeof dir));
    struct bmt_rec_stats rs;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &rs) == 0);

    /* Unlimited: a third trigger past both captures' caps is skipped. */
    cfg = config("long", window, after);
    if (start(&cfg) != 0)
        return;
    uint64_t t = bmt_clock_ns();
    struct bmt_trigger x = trigger_at(t, 1), y = trigger_at(t + window + 1, 2),
                       z = trigger_at(t + 2 * window + 2, 3);
    CHECK(bmt_capture_fire(&session->capture, &x) == 1);
    CHECK(bmt_capture_fire(&session->capture, &y) == 1);
    CHECK(bmt_capture_fire(&session->capture, &z) == 0);
    st = stats();
    CHECK(st.skipped_long == 1);
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &rs) == 0);
    CHECK(find_capture(cfg.dir, 1, dir, sizeof dir) && find_capture(cfg.dir, 2, dir, sizeof dir));
    tap_group("capture: a trigger during a capture extends it, one past its cap makes the next "
              "capture, one past --max-captures or past both is skipped and counted");
}

/* Offers decided outside the tracer: armed kinds past their bound fire,
 * others do not; a probe trigger with a label takes only that label. */
static void test_offer_bounds(void)
{
    struct bmt_rec_config cfg = config("offer", 100 * MS, 10 * MS);
    cfg.capture.armed = 1u << BMT_TRIGGER_LONG_GC | 1u << BMT_TRIGGER_PROBE;
    cfg.capture.bound[BMT_TRIGGER_LONG_GC] = 50;
    snprintf(cfg.capture.probe_label, sizeof cfg.capture.probe_label, "checkout");
    if (start(&cfg) != 0)
        return;
    uint64_t now = bmt_clock_ns();
    CHECK(bmt_rec_offer_trigger(session, generation, BMT_TRIGGER_LONG_GC, 49, "<0.1.0>", "", now) ==
          -1);
    CHECK(bmt_rec_offer_trigger(session, generation, BMT_TRIGGER_LONG_SCHEDULE, 500, "<0.1.0>", "",
                                now) == -1);
    CHECK(bmt_rec_offer_trigger(session, generation, BMT_TRIGGER_PROBE, 1, "<0.1.0>", "other",
                                now) == -1);
    CHECK(bmt_rec_offer_trigger(session, generation + 1, BMT_TRIGGER_LONG_GC, 99, "<0.1.0>", "",
                                now) == -1);
    CHECK(bmt_rec_offer_trigger(session, generation, BMT_TRIGGER_LONG_GC, 50, "<0.1.0>", "",
                                now) == 1);
    CHECK(bmt_rec_offer_trigger(session, generation, BMT_TRIGGER_PROBE, 1, "<0.2.0>", "checkout",
                                now) == 2);
    struct bmt_capture_stats st = stats();
    CHECK(st.fired == 2);
    struct bmt_rec_stats rs;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &rs) == 0);
    /* The trigger just before the stop still got its capture (tail cut). */
    char dir[4200];
    CHECK(find_capture(cfg.dir, 1, dir, sizeof dir));
    tap_group("capture: offers fire only armed kinds past their bound (probe: its label), on the "
              "live session; a trigger at the stop still gets its capture");
}

/* max_bytes covers the captures: the capture is cut at it, its loss
 * counted in it, and the session stops with reason max_bytes. */
static void test_max_bytes(void)
{
    struct bmt_rec_config cfg = config("max_bytes", 300 * MS, 50 * MS);
    cfg.max_bytes = 40 * 1024;
    if (start(&cfg) != 0)
        return;
    start_writers(1, 300);
    wait_pacing();
    sleep_us(300 * 1000);
    struct bmt_trigger t = trigger_at(bmt_clock_ns(), 20 * MS);
    CHECK(bmt_capture_fire(&session->capture, &t) == 1);
    for (int i = 0; i < 2000 && atomic_load(&stopped_reason) == BMT_REASON_NONE; i++)
        sleep_us(10000);
    stop_writers();
    CHECKF(atomic_load(&stopped_reason) == BMT_REASON_MAX_BYTES, "stopped by %s",
           bmt_rec_reason_name((enum bmt_stop_reason)atomic_load(&stopped_reason)));
    struct bmt_capture_stats st = stats();
    CHECK(st.captures == 1 && st.bytes <= cfg.max_bytes);
    struct bmt_trigger late = trigger_at(bmt_clock_ns(), 20 * MS);
    CHECK(bmt_capture_fire(&session->capture, &late) == 0);
    char dir[4200];
    CHECK(find_capture(cfg.dir, 1, dir, sizeof dir));
    struct capture_read cr = read_capture(dir);
    CHECKF(cr.well_formed && cr.discarded > 0, "the cut capture reports %llu discarded",
           (unsigned long long)cr.discarded);
    CHECK(babeltrace_discard_lines(dir) > 0);
    struct bmt_rec_stats rs;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &rs) == 0);
    CHECK(rs.reason == BMT_REASON_MAX_BYTES);
    tap_group("capture: max_bytes cuts the capture (its loss counted in it) and stops the "
              "session");
}

/* What session directory `dir`'s incomplete marker says never reached the
 * disk (its second packet's discard count), or -1 when it cannot be read. */
static long long marker_says(const char *dir)
{
    char marker[4400];
    snprintf(marker, sizeof marker, "%s/%s", dir, BMT_INCOMPLETE_FILE);
    int fd = open(marker, O_RDONLY);
    if (fd < 0)
        return -1;
    /* Two packets: nothing discarded, then the count. */
    uint8_t pkt[2 * BMT_PKT_HEADER_BYTES];
    ssize_t n = read(fd, pkt, sizeof pkt);
    close(fd);
    if (n != (ssize_t)sizeof pkt)
        return -1;
    return (long long)bmt_get_u64(pkt + BMT_PKT_HEADER_BYTES + BMT_PKT_EVENTS_DISCARDED);
}

/* A process killed with SIGKILL while an overwrite session ran: its trace
 * must not read as an empty, complete one. */
static int crash_child(const char *dir)
{
    if (bmt_rec_init(&rec, 4, NULL, NULL) != 0)
        return 2;
    base = dir;
    struct bmt_rec_config cfg = config("killed", 0, 0);
    int index;
    if (bmt_rec_start(&rec, &cfg, 255, 1, &index, &generation) != 0)
        return 3;
    session = &rec.sessions[index];
    for (uint64_t seq = 0; seq < 5000; seq++)
        write_one(0, seq);
    /* The marker is brought up to date at the next flush (every 20 ms; up
     * to 60 s on a loaded machine), then the kill. */
    char session_dir[4200];
    snprintf(session_dir, sizeof session_dir, "%s/killed", dir);
    for (int i = 0; i < 6000 && marker_says(session_dir) != 5000; i++)
        sleep_us(10000);
    raise(SIGKILL);
    return 4;
}

static void test_killed(const char *self)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "--crash-child", base, (char *)NULL);
        _exit(5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child ended with status %d",
           status);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/killed", base);
    long long said = marker_says(dir);
    CHECKF(said == 5000, "the marker says %lld events never reached the disk (-1: unreadable), "
           "5000 were offered", said);
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "babeltrace2 '%s' 2>&1 | grep -c 'discarded 5000 events'", dir);
    CHECKF(run_number(cmd) == 1, "babeltrace2 does not report the 5000 events");
    tap_group("incomplete: an overwrite session's trace after SIGKILL says 5000 events never "
              "reached the disk, babeltrace2 too");
}

/* The sampling ratios' bookkeeping (recorder/sampling.c): kinds from the
 * catalogue's flags, returns never sampled, the mask, the history a
 * capture reads its window's ratios from. */
static void test_sampling(void)
{
    struct bmt_sampling smp;
    uint32_t ratio[BMT_SAMPLE_KINDS] = {0};
    ratio[BMT_SAMPLE_SEND] = 10;
    bmt_sampling_init(&smp, ratio, 1000);
    CHECK(smp.kind_of[BMT_TP_function_call] == BMT_SAMPLE_CALL);
    CHECK(smp.kind_of[BMT_TP_function_return] == BMT_SAMPLE_NONE);
    CHECK(smp.kind_of[BMT_TP_function_exception] == BMT_SAMPLE_NONE);
    CHECK(smp.kind_of[BMT_TP_message_send_link] == BMT_SAMPLE_SEND);
    CHECK(smp.kind_of[BMT_TP_message_receive] == BMT_SAMPLE_RECEIVE);
    CHECK(smp.kind_of[BMT_TP_process_scheduled] == BMT_SAMPLE_RUNNING);
    CHECK(smp.kind_of[BMT_TP_port_scheduled] == BMT_SAMPLE_PORTS);
    CHECK(smp.kind_of[BMT_TP_gc_major_end] == BMT_SAMPLE_GC);
    CHECK(smp.kind_of[BMT_TP_sample_ratio] == BMT_SAMPLE_NONE);
    uint64_t mask = atomic_load(&smp.mask);
    CHECK((mask >> BMT_TP_message_send & 1) && (mask >> BMT_TP_message_send_link & 1));
    CHECK(!(mask >> BMT_TP_function_call & 1));
    CHECK(atomic_load(&smp.threshold[BMT_SAMPLE_SEND]) == (uint32_t)((UINT64_C(1) << 32) / 10));
    CHECK(atomic_load(&smp.threshold[BMT_SAMPLE_CALL]) == UINT32_MAX);
    CHECK(bmt_sample_reacts(&smp, BMT_SAMPLE_CALL) && !bmt_sample_reacts(&smp, BMT_SAMPLE_PROCS));
    CHECK(bmt_sampling_set(&smp, BMT_SAMPLE_CALL, 8) == 1);
    CHECK(bmt_sampling_set(&smp, BMT_SAMPLE_CALL, 8) == 0);
    bmt_sampling_note(&smp, 2000);
    CHECK(atomic_load(&smp.mask) >> BMT_TP_function_call & 1);
    CHECK(!(atomic_load(&smp.mask) >> BMT_TP_function_return & 1));
    CHECK(bmt_sampling_set(&smp, BMT_SAMPLE_CALL, BMT_SAMPLE_MAX_RATIO * 2) == 1);
    CHECK(atomic_load(&smp.ratio[BMT_SAMPLE_CALL]) == BMT_SAMPLE_MAX_RATIO);
    bmt_sampling_note(&smp, 3000);
    uint32_t at[BMT_SAMPLE_KINDS];
    bmt_sampling_at(&smp, 1500, at);
    CHECK(at[BMT_SAMPLE_CALL] == 1 && at[BMT_SAMPLE_SEND] == 10);
    bmt_sampling_at(&smp, 2500, at);
    CHECK(at[BMT_SAMPLE_CALL] == 8);
    bmt_sampling_at(&smp, 999, at); /* before the history: its oldest */
    CHECK(at[BMT_SAMPLE_CALL] == 1);
    /* The history keeps the newest BMT_SAMPLE_HISTORY. */
    for (uint32_t i = 0; i < BMT_SAMPLE_HISTORY + 5; i++) {
        bmt_sampling_set(&smp, BMT_SAMPLE_GC, i + 2);
        bmt_sampling_note(&smp, 10000 + i);
    }
    bmt_sampling_at(&smp, 10000 + BMT_SAMPLE_HISTORY + 4, at);
    CHECK(at[BMT_SAMPLE_GC] == BMT_SAMPLE_HISTORY + 6);
    bmt_sampling_at(&smp, 0, at);
    CHECK(at[BMT_SAMPLE_GC] == 7); /* the oldest kept: the 6th note of the loop */
    tap_group("sampling: kinds from the catalogue's flags, returns never sampled, mask and "
              "thresholds, the ratios in force at a time");
}

/* The snapshot thread of test_snapshots_during_captures: snapshots the
 * session until told to stop, reading each back whole, then removing it. */
static _Atomic int snapshots_run;
static _Atomic long snapshots_taken, snapshots_bad;
static char snapshot_base[4200];

static void *snapshot_main(void *arg)
{
    (void)arg;
    for (long k = 0; atomic_load(&snapshots_run); k++) {
        char dir[4300];
        snprintf(dir, sizeof dir, "%s-%ld", snapshot_base, k);
        struct bmt_rec_stats st;
        int rc = bmt_rec_snapshot(&rec, (int)(session - rec.sessions), generation, dir, &st);
        struct capture_read cr = read_capture(dir);
        if (rc != 0 || !cr.well_formed || cr.events != st.events) {
            printf("# snapshot %ld: rc %d, well formed %d, %llu events read of %llu\n", k, rc,
                   cr.well_formed, (unsigned long long)cr.events, (unsigned long long)st.events);
            atomic_fetch_add(&snapshots_bad, 1);
        }
        atomic_fetch_add(&snapshots_taken, 1);
        remove_dir(dir);
        sleep_us(300);
    }
    return NULL;
}

/* Snapshots while captures close their tails. A capture's end freezes the
 * rings whose writer stayed away (the consumer) and a snapshot freezes
 * every ring (its caller's thread): the control lock keeps the two apart,
 * since either one's thaw would end both freezes; and a snapshot writes
 * from a copy, never renumbering the packets a capture is copying. Under
 * ThreadSanitizer, any overlap is a reported race. Each capture and each
 * snapshot reads whole, and a capture counts every event missing in it:
 * it may count more, since a writer that finds its ring frozen by a
 * snapshot drops the event and counts it in its next packet, whose first
 * event may be the capture's first. The writers pace slower than the
 * consumer's tick, so every capture's end finds idle rings to freeze. */
static void test_snapshots_during_captures(void)
{
    struct bmt_rec_config cfg = config("snapshots", 30 * MS, 5 * MS);
    if (start(&cfg) != 0)
        return;
    start_writers(0, 25 * 1000);
    snprintf(snapshot_base, sizeof snapshot_base, "%s-snapshot", cfg.dir);
    atomic_store(&snapshots_run, 1);
    pthread_t snapper;
    pthread_create(&snapper, NULL, snapshot_main, NULL);
    const unsigned captures = 20;
    for (unsigned k = 1; k <= captures; k++) {
        struct bmt_trigger t = trigger_at(bmt_clock_ns(), 11 * MS);
        CHECK(bmt_capture_fire(&session->capture, &t) == 1);
        CHECKF(wait_captures(k), "capture %u not sealed", k);
    }
    atomic_store(&snapshots_run, 0);
    pthread_join(snapper, NULL);
    stop_writers();
    struct bmt_capture_stats st = stats();
    CHECKF(st.captures == captures && st.lost_packets == 0 && st.error == 0,
           "captures %llu, lost packets %llu, error %d", (unsigned long long)st.captures,
           (unsigned long long)st.lost_packets, st.error);
    for (unsigned k = 1; k <= captures; k++) {
        char dir[4200];
        CHECKF(find_capture(cfg.dir, k, dir, sizeof dir), "capture %u missing", k);
        struct capture_read cr = read_capture(dir);
        CHECKF(cr.well_formed && cr.events > 0 && cr.discarded >= cr.holes &&
                   cr.lost_packets == 0,
               "capture %u: well formed %d, %llu events, %llu discarded, %llu missing, %llu "
               "lost packets",
               k, cr.well_formed, (unsigned long long)cr.events,
               (unsigned long long)cr.discarded, (unsigned long long)cr.holes,
               (unsigned long long)cr.lost_packets);
    }
    CHECKF(atomic_load(&snapshots_taken) > 0 && atomic_load(&snapshots_bad) == 0,
           "%ld snapshots, %ld unreadable", atomic_load(&snapshots_taken),
           atomic_load(&snapshots_bad));
    struct bmt_rec_stats rs;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &rs) == 0);
    printf("# %u captures beside %ld snapshots\n", captures, atomic_load(&snapshots_taken));
    tap_group("capture: snapshots taken while captures close their tails (both freeze the same "
              "idle rings) leave every capture and snapshot whole, every loss counted");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--crash-child") == 0)
        return crash_child(argv[2]);
    if (argc < 2) {
        fprintf(stderr, "usage: test_capture DIR\n");
        return 2;
    }
    base = argv[1];
    mkdir(base, 0700);
    /* First, before this process has threads of its own. */
    test_killed(argv[0]);
    test_sampling();
    if (bmt_rec_init(&rec, 8, on_stopped, NULL) != 0) {
        printf("not ok - bmt_rec_init\n");
        return 1;
    }
    test_one_capture();
    test_extend_and_limits();
    test_offer_bounds();
    test_max_bytes();
    test_snapshots_during_captures();
    bmt_rec_destroy(&rec);
    return tap_exit();
}
