/* Stress test of the recorder (c_src/recorder/) without a VM: writer
 * threads run the writer bracket exactly as the tracer does (enter,
 * reserve, fields, commit, leave), while the main thread flushes idle
 * rings, snapshots, caps and stops sessions. Run under ThreadSanitizer and
 * under AddressSanitizer+UBSan.
 *
 * Every event carries its writer and a per-writer sequence number, so the
 * checks are exact: each writer's events appear in order without
 * duplicates; events in the trace + the losses the trace reports = what the
 * writers offered = events + discarded of the stop figures; babeltrace2
 * reads as many events as the stats say.
 *
 * Nothing here depends on how fast a thread runs: with both cores busy
 * (the test suite shares its machine) a writer may finish before the main
 * thread looks, or the consumer may run late. The main thread waits for
 * what it needs to see (writers paused or finished, offers made, the
 * session stopped by itself, the data on disk), never for a time; the test
 * group's time limit ends a wait that would not end.
 *
 * Usage: stress_recorder DIR [WRITERS] [EVENTS_PER_WRITER]
 */
#include "recorder/recorder.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_WRITERS 16
/* Events per writer that overflow its ring in config() many times over: 4
 * packets of 4 KiB hold fewer than 400 of the events write_one() makes
 * (>= 40 bytes), and a writer makes 512 between two yields. */
#define OVERFLOW_EVENTS 5000

static const char *base;
static unsigned writer_count = 4;
static uint64_t events_per_writer = 20000;

struct writer {
    pthread_t thread;
    unsigned slot;
    _Atomic uint64_t offered;   /* enters made while the session was known */
    _Atomic int pause;          /* main asks the writer to wait */
    _Atomic int paused;         /* the writer is waiting */
    _Atomic int finished;       /* the writer has made all its events */
    _Atomic int keep_going;     /* write past events_per_writer until cleared */
};

static struct bmt_recorder rec;
static struct bmt_session *session;
static uint64_t generation;
static struct writer writers[MAX_WRITERS];
static _Atomic int stopped_reason;

static void on_stopped(void *ctx, int index, uint64_t gen, enum bmt_stop_reason reason)
{
    (void)ctx, (void)index, (void)gen;
    atomic_store(&stopped_reason, (int)reason);
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* ---- writers ---- */

static void write_one(struct writer *w, uint64_t seq)
{
    char from[16], to[24];
    static const char msg[] = "the quick brown fox jumps over the lazy dog, again and again";
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = BMT_TP_message_send;
    snprintf(from, sizeof from, "w%u", w->slot);
    snprintf(to, sizeof to, "%llu", (unsigned long long)seq);
    ev.values[BMT_F_message_send_from].str = from;
    ev.values[BMT_F_message_send_from].len = (uint32_t)strlen(from);
    ev.values[BMT_F_message_send_to].str = to;
    ev.values[BMT_F_message_send_to].len = (uint32_t)strlen(to);
    ev.values[BMT_F_message_send_message].str = msg;
    ev.values[BMT_F_message_send_message].len = (uint32_t)(seq % sizeof msg);
    uint64_t ts = bmt_clock_ns();
    if (!bmt_rec_known(session, generation))
        return;
    atomic_fetch_add_explicit(&w->offered, 1, memory_order_relaxed);
    uint8_t *start, *dst;
    /* Every other event as the tracer's fastest path writes it (try_enter,
     * reserve_open, leave_quiet: nothing changed or counted when they say
     * no), starting over with the full bracket when they say no, as
     * nif_tracer.c's trace_cached does. */
    if (seq & 1) {
        struct bmt_slot *sl = bmt_rec_slot_at(session, bmt_rec_slot_offset(w->slot));
        if (bmt_rec_try_enter(session, generation, sl)) {
            struct bmt_ring *fast = &sl->ring;
            if (bmt_rec_reserve_open(session, fast, ev.id, ts, &start, &dst)) {
                bmt_rec_commit(fast, start, dst + bmt_event_encode_payload(&ev, dst), ts);
                if (bmt_rec_leave_has_work(fast))
                    bmt_rec_leave(session, fast, ts);
                else
                    bmt_rec_leave_quiet(fast);
                return;
            }
            bmt_rec_leave_quiet(fast);
        }
    }
    struct bmt_ring *r = bmt_rec_enter(session, generation, w->slot);
    if (!r)
        return;
    dst = bmt_rec_reserve(session, r, ev.id, ts, &start);
    if (dst)
        bmt_rec_commit(r, start, dst + bmt_event_encode_payload(&ev, dst), ts);
    bmt_rec_leave(session, r, ts);
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    for (uint64_t seq = 0; seq < events_per_writer || atomic_load(&w->keep_going); seq++) {
        while (atomic_load(&w->pause)) {
            atomic_store(&w->paused, 1);
            sleep_ms(1);
        }
        atomic_store(&w->paused, 0);
        write_one(w, seq);
        if (seq % 512 == 511)
            sched_yield(); /* let the consumer in on small machines */
    }
    atomic_store(&w->finished, 1);
    return NULL;
}

static void start_writers(void)
{
    for (unsigned i = 0; i < writer_count; i++) {
        writers[i].slot = i;
        atomic_store(&writers[i].offered, 0);
        atomic_store(&writers[i].pause, 0);
        atomic_store(&writers[i].paused, 0);
        atomic_store(&writers[i].finished, 0);
        pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]);
    }
}

static uint64_t join_writers(void)
{
    uint64_t offered = 0;
    for (unsigned i = 0; i < writer_count; i++) {
        pthread_join(writers[i].thread, NULL);
        offered += atomic_load(&writers[i].offered);
    }
    return offered;
}

/* Offers made so far by all writers. */
static uint64_t offered_so_far(void)
{
    uint64_t offered = 0;
    for (unsigned i = 0; i < writer_count; i++)
        offered += atomic_load(&writers[i].offered);
    return offered;
}

/* Asks the writers to wait and returns once none writes: each is waiting
 * or has already made all its events (on a loaded machine a writer can
 * finish before the request; waiting for it to pause hung this test for
 * 29 minutes). */
static void pause_writers(int on)
{
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].pause, on);
    if (on)
        for (unsigned i = 0; i < writer_count; i++)
            while (!atomic_load(&writers[i].paused) && !atomic_load(&writers[i].finished))
                sleep_ms(1);
}

/* Waits until every writer has offered at least `each` events since it
 * started (writers with keep_going set). */
static void wait_offered(uint64_t each)
{
    for (unsigned i = 0; i < writer_count; i++)
        while (atomic_load(&writers[i].offered) < each)
            sleep_ms(1);
}

/* Waits until the session has stopped by itself. */
static void wait_stopped(void)
{
    while (atomic_load(&stopped_reason) == BMT_REASON_NONE)
        sleep_ms(1);
}

/* ---- reading a trace back ---- */

struct readback {
    uint64_t events;        /* events in the trace */
    uint64_t discarded;     /* the losses its last packets report */
    int ordered;            /* each writer's sequence increasing */
    int well_formed;        /* whole packets, parseable events */
};

static void read_stream(const char *path, struct readback *rb, uint64_t next_seq[MAX_WRITERS],
                        uint64_t *last_discarded)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rb->well_formed = 0;
        if (fd >= 0)
            close(fd);
        return;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n != st.st_size) {
        rb->well_formed = 0;
        free(buf);
        return;
    }
    size_t off = 0;
    while (off < (size_t)n) {
        if ((size_t)n - off < BMT_PKT_HEADER_BYTES) {
            rb->well_formed = 0;
            break;
        }
        const uint8_t *pkt = buf + off;
        uint64_t content = bmt_get_u64(pkt + BMT_PKT_CONTENT_SIZE) / 8;
        uint64_t size = bmt_get_u64(pkt + BMT_PKT_PACKET_SIZE) / 8;
        if (size < content || content < BMT_PKT_HEADER_BYTES || size > (size_t)n - off) {
            rb->well_formed = 0;
            break;
        }
        *last_discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
        uint64_t prev_ts = bmt_get_u64(pkt + BMT_PKT_TS_BEGIN);
        size_t e = BMT_PKT_HEADER_BYTES;
        while (e < content) {
            unsigned id;
            uint64_t ts;
            size_t h = bmt_event_header_read(pkt + e, content - e, &id, &ts, prev_ts);
            if (!h || id != BMT_TP_message_send) {
                rb->well_formed = 0;
                break;
            }
            prev_ts = ts;
            e += h;
            const char *fields[3];
            for (int f = 0; f < 3; f++) {
                fields[f] = (const char *)pkt + e;
                size_t len = strnlen(fields[f], content - e);
                if (len == content - e) {
                    rb->well_formed = 0;
                    break;
                }
                e += len + 1;
            }
            if (!rb->well_formed)
                break;
            unsigned w = (unsigned)strtoul(fields[0] + 1, NULL, 10);
            uint64_t seq = strtoull(fields[1], NULL, 10);
            if (w >= MAX_WRITERS || seq < next_seq[w])
                rb->ordered = 0;
            else
                next_seq[w] = seq + 1;
            rb->events++;
        }
        off += size;
    }
    free(buf);
}

/* Reads every stream file of `dir` (rotated ones in order). */
static struct readback read_trace(const char *dir)
{
    struct readback rb = {0, 0, 1, 1};
    uint64_t next_seq[MAX_WRITERS] = {0};
    for (unsigned stream = 0; stream < 64; stream++) {
        char path[512];
        uint64_t last = 0;
        snprintf(path, sizeof path, "%s/channel0_%u", dir, stream);
        if (access(path, F_OK) != 0)
            continue;
        read_stream(path, &rb, next_seq, &last);
        rb.discarded += last;
    }
    return rb;
}

/* Events babeltrace2 prints for `dir`, or -1 when it fails. */
static long babeltrace_count(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "babeltrace2 '%s' 2>/dev/null | wc -l", dir);
    FILE *p = popen(cmd, "r");
    long n = -1;
    if (!p || fscanf(p, "%ld", &n) != 1)
        n = -1;
    if (p && pclose(p) != 0)
        n = -1;
    return n;
}

/* ---- scenarios ---- */

static struct bmt_rec_config config(const char *name, enum bmt_ring_mode mode)
{
    struct bmt_rec_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.dir, sizeof cfg.dir, "%s/%s", base, name);
    cfg.enable_mask = UINT64_C(1) << BMT_TP_message_send;
    cfg.mode = mode;
    cfg.subbuf_bytes = 4096;
    cfg.subbuf_count = 4;
    cfg.message_max_bytes = 255;
    cfg.flush_interval_ns = 20 * 1000 * 1000;
    cfg.wake_on_publish = mode == BMT_RING_DISCARD;
    bmt_ctf_trace_info_init(&cfg.info);
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

/* `in_flight`: offers a writer may have made as the session was being
 * collected, which nobody counts (0 when the writers stopped first). */
static void check_totals(const char *what, const char *dir, const struct bmt_rec_stats *st,
                         uint64_t offered, uint64_t in_flight)
{
    struct readback rb = read_trace(dir);
    CHECKF(rb.well_formed && rb.ordered, "%s: well formed %d, ordered %d", what, rb.well_formed,
           rb.ordered);
    uint64_t counted = st->events + st->discarded + st->after_stop;
    CHECKF(counted <= offered && offered - counted <= in_flight,
           "%s: events %llu + discarded %llu + after_stop %llu != offered %llu",
           what, (unsigned long long)st->events, (unsigned long long)st->discarded,
           (unsigned long long)st->after_stop, (unsigned long long)offered);
    CHECKF(rb.events == st->events, "%s: trace holds %llu events, stats %llu", what,
           (unsigned long long)rb.events, (unsigned long long)st->events);
    CHECKF(rb.discarded == st->discarded, "%s: trace reports %llu discarded, stats %llu", what,
           (unsigned long long)rb.discarded, (unsigned long long)st->discarded);
    long bt = babeltrace_count(dir);
    CHECKF(bt == (long)st->events, "%s: babeltrace2 printed %ld events, stats %llu", what, bt,
           (unsigned long long)st->events);
    printf("# %s: offered %llu, events %llu, discarded %llu, after_stop %llu, reason %s\n", what,
           (unsigned long long)offered, (unsigned long long)st->events,
           (unsigned long long)st->discarded, (unsigned long long)st->after_stop,
           bmt_rec_reason_name(st->reason));
}

/* Discard mode: writers pause mid-run; an idle ring's partial packet must
 * reach the disk within the flush interval, with the session running. */
static void test_discard_idle_flush(void)
{
    struct bmt_rec_config cfg = config("discard", BMT_RING_DISCARD);
    if (start(&cfg) != 0)
        return;
    /* Few enough events that no ring fills before the pause. */
    uint64_t saved = events_per_writer;
    events_per_writer = saved / 4;
    start_writers();
    pause_writers(1);
    uint64_t offered = offered_so_far();
    /* Events and losses so far all reach the disk with the session still
     * running: only the idle flush can put them there. */
    struct readback rb = read_trace(cfg.dir);
    while (rb.events + rb.discarded < offered && bmt_rec_live(session, generation)) {
        sleep_ms(5);
        rb = read_trace(cfg.dir);
    }
    CHECKF(rb.events + rb.discarded == offered,
           "idle rings: %llu events + %llu discarded on disk, %llu offered before the pause",
           (unsigned long long)rb.events, (unsigned long long)rb.discarded,
           (unsigned long long)offered);
    CHECK(bmt_rec_live(session, generation));
    pause_writers(0);
    offered = join_writers();
    events_per_writer = saved;
    struct bmt_rec_stats st;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &st) == 0);
    CHECK(st.reason == BMT_REASON_STOP);
    check_totals("discard with idle flush", cfg.dir, &st, offered, 0);
    tap_group("recorder: idle partial packets reach the disk while running; every event counted");
}

/* Heavy traffic against tiny rings and a stop while writers run. */
static void test_discard_stop_under_load(void)
{
    struct bmt_rec_config cfg = config("stop-under-load", BMT_RING_DISCARD);
    /* The consumer drains only on its tick, far away: the rings overflow
     * however slowly the writers run. */
    cfg.wake_on_publish = 0;
    cfg.flush_interval_ns = UINT64_C(3600) * 1000 * 1000 * 1000;
    if (start(&cfg) != 0)
        return;
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 1);
    start_writers();
    wait_offered(OVERFLOW_EVENTS);
    struct bmt_rec_stats st;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &st) == 0);
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 0);
    uint64_t offered = join_writers();
    /* Offers after the collection are not counted, and mostly not made:
     * writers check the session first, as the tracer's trace_status does;
     * one per writer may slip between that check and the collection. */
    check_totals("stop under load", cfg.dir, &st, offered, writer_count);
    CHECK(st.discarded > 0);
    tap_group("recorder: stop while writers run: whole trace, exact counts");
}

/* A cap: the session stops itself; offers after that are counted until
 * collected, apart (after_stop): neither losses nor in the trace's loss
 * counts. */
static void test_max_events(void)
{
    struct bmt_rec_config cfg = config("max-events", BMT_RING_DISCARD);
    cfg.max_events = 5000;
    cfg.subbuf_bytes = 16384;
    if (start(&cfg) != 0)
        return;
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 1);
    start_writers();
    wait_stopped();
    CHECK(atomic_load(&stopped_reason) == BMT_REASON_MAX_EVENTS);
    /* Late offers: each writer makes some after the stop. */
    uint64_t at_stop = offered_so_far();
    while (offered_so_far() < at_stop + writer_count)
        sleep_ms(1);
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 0);
    uint64_t offered = join_writers();
    struct bmt_rec_stats st;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &st) == 0);
    CHECK(st.reason == BMT_REASON_MAX_EVENTS);
    CHECKF(st.events <= cfg.max_events, "events %llu over the cap", (unsigned long long)st.events);
    CHECKF(st.after_stop > 0, "no offer counted after the stop (writers ran on for 20 ms)");
    check_totals("max_events", cfg.dir, &st, offered, 0);
    tap_group("recorder: max_events stops the session by itself, trace within the cap, late offers counted apart");
}

static void test_self_stops(void)
{
    struct bmt_rec_config cfg = config("duration", BMT_RING_DISCARD);
    cfg.duration_ns = 50 * 1000 * 1000;
    if (start(&cfg) != 0)
        return;
    wait_stopped();
    struct bmt_rec_stats st;
    CHECK(atomic_load(&stopped_reason) == BMT_REASON_DURATION);
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &st) == 0);
    CHECK(st.reason == BMT_REASON_DURATION && st.events == 0 && st.discarded == 0);

    cfg = config("max-rate", BMT_RING_DISCARD);
    cfg.max_rate = 1000;
    if (start(&cfg) != 0)
        return;
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 1);
    start_writers();
    wait_stopped();
    CHECK(atomic_load(&stopped_reason) == BMT_REASON_MAX_RATE);
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 0);
    uint64_t offered = join_writers();
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &st) == 0);
    check_totals("max_rate", cfg.dir, &st, offered, 0);
    tap_group("recorder: duration and max_rate stop the session by themselves");
}

/* Overwrite mode: snapshots while writers run, then the final trace. */
static void test_overwrite_snapshots(void)
{
    struct bmt_rec_config cfg = config("overwrite", BMT_RING_OVERWRITE);
    if (start(&cfg) != 0)
        return;
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 1);
    start_writers();
    for (int k = 0; k < 3; k++) {
        /* New events since the last snapshot, whatever the machine's load. */
        wait_offered((uint64_t)(k + 1) * 100);
        char dir[4200];
        snprintf(dir, sizeof dir, "%s-snapshot-%d", cfg.dir, k);
        struct bmt_rec_stats st;
        int rc = bmt_rec_snapshot(&rec, (int)(session - rec.sessions), generation, dir, &st);
        CHECKF(rc == 0, "snapshot %d: %s", k, strerror(-rc));
        struct readback rb = read_trace(dir);
        CHECK(rb.well_formed && rb.ordered && rb.events == st.events && st.events > 0);
        CHECK(babeltrace_count(dir) == (long)st.events);
    }
    /* More than a ring holds: the oldest are overwritten. */
    wait_offered(OVERFLOW_EVENTS);
    for (unsigned i = 0; i < writer_count; i++)
        atomic_store(&writers[i].keep_going, 0);
    uint64_t offered = join_writers();
    struct bmt_rec_stats st;
    CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &st) == 0);
    check_totals("overwrite", cfg.dir, &st, offered, 0);
    CHECK(st.overwritten > 0);
    /* Snapshots of a discard session are refused. */
    cfg = config("not-overwrite", BMT_RING_DISCARD);
    if (start(&cfg) == 0) {
        char dir[4200];
        struct bmt_rec_stats snap;
        snprintf(dir, sizeof dir, "%s-snapshot", cfg.dir);
        CHECK(bmt_rec_snapshot(&rec, (int)(session - rec.sessions), generation, dir, &snap) ==
              -EINVAL);
        CHECK(bmt_rec_stop(&rec, (int)(session - rec.sessions), generation, &snap) == 0);
    }
    tap_group("recorder: flight recorder snapshots while running; newest events kept and counted");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: stress_recorder DIR [WRITERS] [EVENTS]\n");
        return 2;
    }
    base = argv[1];
    if (argc > 2)
        writer_count = (unsigned)strtoul(argv[2], NULL, 10);
    if (argc > 3)
        events_per_writer = strtoull(argv[3], NULL, 10);
    if (writer_count < 1 || writer_count > MAX_WRITERS)
        writer_count = 4;
    if (mkdir(base, 0700) != 0 && errno != EEXIST) {
        printf("not ok - recorder: cannot create %s\n", base);
        return 1;
    }
    if (bmt_rec_init(&rec, MAX_WRITERS, on_stopped, NULL) != 0) {
        printf("not ok - recorder: bmt_rec_init\n");
        return 1;
    }
    test_discard_idle_flush();
    test_discard_stop_under_load();
    test_max_events();
    test_self_stops();
    test_overwrite_snapshots();
    bmt_rec_destroy(&rec);
    return tap_exit();
}
