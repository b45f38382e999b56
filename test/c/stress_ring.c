/* Multi-writer stress test of the ring and the trace directory writer, built
 * for ThreadSanitizer and for AddressSanitizer/UBSan.
 *
 * As in production: N writer threads, each owning one small ring (drops are
 * frequent), and one consumer thread that drains every ring round-robin into
 * a trace directory (one stream file per ring) and now and then asks every
 * writer to flush its partial packet. Even-numbered writers use discard
 * mode; odd-numbered ones use overwrite mode (flight recorder), which the
 * consumer, per the contract in ring.h, drains only once they have stopped.
 * A writer writes events that carry (writer, sequence number), alternating a
 * fixed-size and a variable-size tracepoint, and counts its drops.
 *
 * When the writers are joined (quiescent), the main thread tells the
 * consumer, which flushes each ring (legal once its writer is quiescent),
 * drains, flushes again (the final drop count may have needed room), drains
 * and closes the directory. Per writer the test checks: events come out in
 * sequence order without duplicates; received + discarded == attempted;
 * every packet's header and context is right; in discard mode its
 * events_discarded accounts exactly for the sequence numbers missing before
 * its first event, in overwrite mode the survivors are consecutive and end
 * with the last event written; the last packet's events_discarded is the
 * final drop count. Finally
 * babeltrace2 reads the trace and must print one line per received event.
 *
 * Nothing here depends on timing: any interleaving, including one where no
 * event or every event is dropped, must pass.
 *
 * Usage: stress_ring TRACE_DIR [writers [events_per_writer]]
 */
#include "core/catalogue.h"
#include "core/ctf.h"
#include "core/event.h"
#include "core/ring.h"
#include "tap.h"
#include "core/clock.h"
#include "core/trace_dir.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WRITERS 16
#define SUBBUF_BYTES 2048
#define SUBBUF_COUNT 4

static const uint8_t UUID[BMT_CTF_UUID_BYTES] = {0x5a, 0x5a, 0x01, 0x02, 0x03, 0x04, 0x45, 0x06,
                                                  0x87, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e};

struct writer {
    pthread_t thread;
    unsigned id;
    enum bmt_ring_mode mode;
    uint64_t attempted;        /* events to write */
    uint64_t dropped;          /* reserve returned NULL; read after join */
    struct bmt_ring ring;
    uint8_t *mem;
    uint32_t pe[SUBBUF_COUNT], pb[SUBBUF_COUNT];

    /* Consumer-owned accounting. */
    uint64_t received;         /* events drained */
    uint64_t next_seq;         /* sequence number expected next (at least) */
    uint64_t packets;
    uint64_t packet_seq;       /* packet_seq_num expected next */
    uint64_t last_discarded;   /* events_discarded of the last packet */
    uint64_t last_ts;          /* timestamp of the last event or packet end */
    uint64_t bad;              /* malformed packets or events */
};

static struct writer writers[MAX_WRITERS];
static unsigned writer_count = 4;
static uint64_t events_per_writer = 20000;
static atomic_int writers_done;
static struct bmt_trace_dir trace_dir;

/* ---- writers ---- */

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    char pid[32], to[32], msg[80];
    snprintf(pid, sizeof pid, "<0.%u.0>", w->id);
    memset(msg, 'm', sizeof msg);
    for (uint64_t seq = 0; seq < w->attempted; seq++) {
        uint64_t ts = bmt_clock_ns();
        bmt_ring_flush_if_requested(&w->ring, ts);
        struct bmt_event ev;
        memset(&ev, 0, sizeof ev);
        ev.ts_ns = ts;
        if (seq % 2 == 0) {
            ev.id = BMT_TP_gc_minor_start;
            ev.values[0].str = pid;
            ev.values[0].len = (uint32_t)strlen(pid);
            ev.values[1].integer = w->id;
            ev.values[2].integer = seq;
            ev.values[3].integer = ~seq;
        } else {
            ev.id = BMT_TP_message_send;
            snprintf(to, sizeof to, "%llu", (unsigned long long)seq);
            ev.values[0].str = pid;
            ev.values[0].len = (uint32_t)strlen(pid);
            ev.values[1].str = to;
            ev.values[1].len = (uint32_t)strlen(to);
            ev.values[2].str = msg;
            ev.values[2].len = (uint32_t)(seq % sizeof msg);
        }
        ev.ts_ns = ts;
        if (!bmt_ring_put_event(&w->ring, &ev))
            w->dropped++;
        if (seq % 256 == 255)
            sched_yield(); /* give the consumer a chance on small machines */
    }
    return NULL;
}

/* ---- consumer ---- */

/* Decodes one event at `p` (at most `room` bytes); returns its size, or 0
 * when malformed. Sets *writer_id and *seq from the payload. */
static size_t decode_event(const uint8_t *p, size_t room, uint64_t prev_ts, uint64_t *ts,
                           uint64_t *writer_id, uint64_t *seq)
{
    unsigned id;
    size_t off = bmt_event_header_read(p, room, &id, ts, prev_ts);
    if (!off)
        return 0;
    const char *pid = (const char *)p + off;
    size_t n = strnlen(pid, room - off);
    if (n == room - off)
        return 0;
    off += n + 1;
    unsigned pid_writer;
    if (sscanf(pid, "<0.%u.0>", &pid_writer) != 1)
        return 0;
    if (id == BMT_TP_gc_minor_start) {
        if (room - off < 24)
            return 0;
        *writer_id = bmt_get_u64(p + off);
        *seq = bmt_get_u64(p + off + 8);
        if (bmt_get_u64(p + off + 16) != ~*seq || *writer_id != pid_writer)
            return 0;
        return off + 24;
    }
    if (id == BMT_TP_message_send) {
        const char *to = (const char *)p + off;
        n = strnlen(to, room - off);
        if (n == room - off)
            return 0;
        off += n + 1;
        *seq = strtoull(to, NULL, 10);
        *writer_id = pid_writer;
        const char *msg = (const char *)p + off;
        n = strnlen(msg, room - off);
        if (n == room - off || n != *seq % 80)
            return 0;
        for (size_t i = 0; i < n; i++)
            if (msg[i] != 'm')
                return 0;
        return off + n + 1;
    }
    return 0;
}

/* The sequence number of a packet's first event (UINT64_MAX if malformed). */
static uint64_t decode_first_seq(const uint8_t *pkt, size_t bytes)
{
    uint64_t ts, wid, seq;
    if (!decode_event(pkt + BMT_PKT_HEADER_BYTES, bytes - BMT_PKT_HEADER_BYTES,
                      bmt_get_u64(pkt + BMT_PKT_TS_BEGIN), &ts, &wid, &seq))
        return UINT64_MAX;
    return seq;
}

/* Checks one packet of writer `w`; failures are counted in w->bad (the
 * main thread turns them into CHECKs after joining the consumer). */
static void check_packet(struct writer *w, const uint8_t *pkt, size_t bytes, uint32_t events)
{
    int ok = bytes >= BMT_PKT_HEADER_BYTES && bytes <= SUBBUF_BYTES &&
             bmt_get_u32(pkt + BMT_PKT_MAGIC) == BMT_CTF_MAGIC &&
             memcmp(pkt + BMT_PKT_UUID, UUID, BMT_CTF_UUID_BYTES) == 0 &&
             bmt_get_u32(pkt + BMT_PKT_STREAM_ID) == 0 &&
             bmt_get_u64(pkt + BMT_PKT_STREAM_INSTANCE_ID) == w->id &&
             bmt_get_u32(pkt + BMT_PKT_CPU_ID) == w->id &&
             bmt_get_u64(pkt + BMT_PKT_CONTENT_SIZE) == bytes * 8 &&
             bmt_get_u64(pkt + BMT_PKT_PACKET_SIZE) == bytes * 8 &&
             (bmt_get_u64(pkt + BMT_PKT_SEQ_NUM) == w->packet_seq ||
              (w->mode == BMT_RING_OVERWRITE && w->packets == 0));
    uint64_t begin = bmt_get_u64(pkt + BMT_PKT_TS_BEGIN), end = bmt_get_u64(pkt + BMT_PKT_TS_END);
    uint64_t discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
    ok = ok && begin <= end && begin >= w->last_ts && discarded >= w->last_discarded;
    if (!ok) {
        if (w->bad++ < 5)
            printf("# writer %u: bad header in packet %llu\n", w->id,
                   (unsigned long long)w->packets);
        return;
    }
    /* Discard mode: no drop happens while a packet is open (no event is too
     * big), so the events missing before this packet's first are exactly the
     * drops it reports, and its events are consecutive. Overwrite mode: the
     * oldest survivor starts anywhere; the rest follow without a gap. */
    uint64_t first_expected = w->received + discarded;
    if (w->mode == BMT_RING_OVERWRITE)
        first_expected = w->packets == 0 && events ? decode_first_seq(pkt, bytes) : w->next_seq;
    size_t off = BMT_PKT_HEADER_BYTES;
    uint64_t ts = begin;
    for (uint32_t i = 0; i < events; i++) {
        uint64_t ets = 0, wid = 0, seq = 0;
        size_t n = decode_event(pkt + off, bytes - off, ts, &ets, &wid, &seq);
        if (!n || wid != w->id || seq != first_expected + i || seq < w->next_seq || ets < ts ||
            ets > end || (i == 0 && ets != begin) || (i + 1 == events && ets != end)) {
            if (w->bad++ < 5)
                printf("# writer %u: packet %llu event %u: n %zu writer %llu seq %llu "
                       "(expected %llu)\n",
                       w->id, (unsigned long long)w->packets, i, n, (unsigned long long)wid,
                       (unsigned long long)seq, (unsigned long long)(first_expected + i));
            return;
        }
        ts = ets;
        w->next_seq = seq + 1;
        off += n;
    }
    if (off != bytes && w->bad++ < 5)
        printf("# writer %u: packet %llu: %zu bytes of %zu decoded\n", w->id,
               (unsigned long long)w->packets, off, bytes);
    w->received += events;
    w->packets++;
    w->packet_seq = bmt_get_u64(pkt + BMT_PKT_SEQ_NUM) + 1;
    w->last_discarded = discarded;
    w->last_ts = end;
}

/* Drains every discard ring, and the overwrite rings too when `all`. */
static int drain_all(int all)
{
    int drained = 0;
    for (unsigned i = 0; i < writer_count; i++) {
        struct writer *w = &writers[i];
        if (w->mode == BMT_RING_OVERWRITE && !all)
            continue;
        const uint8_t *pkt;
        size_t bytes;
        uint32_t events;
        while ((pkt = bmt_ring_peek(&w->ring, &bytes, &events))) {
            check_packet(w, pkt, bytes, events);
            int rc = bmt_trace_dir_write_packet(&trace_dir, w->id, (uint8_t *)pkt, bytes,
                                                w->ring.subbuf_bytes, events);
            if (rc && w->bad++ < 5)
                printf("# writer %u: write_packet: %s\n", w->id, strerror(-rc));
            bmt_ring_release(&w->ring);
            drained++;
        }
    }
    return drained;
}

static void *consumer_main(void *arg)
{
    (void)arg;
    unsigned round = 0;
    while (!atomic_load_explicit(&writers_done, memory_order_acquire)) {
        int drained = drain_all(0);
        if (++round % 8 == 0)
            for (unsigned i = 0; i < writer_count; i++)
                bmt_ring_request_flush(&writers[i].ring);
        if (!drained) {
            struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
    }
    /* The writers are joined: the consumer may flush for them. */
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < writer_count; i++)
            bmt_ring_flush(&writers[i].ring, bmt_clock_ns());
        drain_all(1);
    }
    return NULL;
}

/* ---- main ---- */

static void run_babeltrace(const char *dir, uint64_t received)
{
    if (system("babeltrace2 --version >/dev/null 2>&1") != 0) {
        tap_skip("stress: babeltrace2 reads the trace, one line per received event",
                 "babeltrace2 not installed");
        return;
    }
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "timeout 60 babeltrace2 '%s' 2>/dev/null | wc -l", dir);
    FILE *p = popen(cmd, "r");
    unsigned long long lines = 0;
    CHECK(p && fscanf(p, "%llu", &lines) == 1);
    if (p)
        CHECK(pclose(p) == 0);
    CHECKF(lines == received, "babeltrace2 printed %llu events, received %llu", lines,
           (unsigned long long)received);
    tap_group("stress: babeltrace2 reads the trace, one line per received event");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s TRACE_DIR [writers [events_per_writer]]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    if (argc > 2)
        writer_count = (unsigned)strtoul(argv[2], NULL, 10);
    if (argc > 3)
        events_per_writer = strtoull(argv[3], NULL, 10);
    if (writer_count < 1 || writer_count > MAX_WRITERS)
        writer_count = 4;

    struct bmt_ctf_trace_info info;
    CHECK(bmt_ctf_trace_info_init(&info) == 0);
    memcpy(info.uuid, UUID, sizeof UUID);
    int rc = bmt_trace_dir_create(&trace_dir, dir, 0, &info, 0, 0);
    CHECKF(rc == 0, "bmt_trace_dir_create(%s): %s", dir, strerror(-rc));
    if (rc) {
        tap_group("stress: trace directory created");
        return tap_exit();
    }

    for (unsigned i = 0; i < writer_count; i++) {
        struct writer *w = &writers[i];
        w->id = i;
        w->attempted = events_per_writer;
        w->mode = i % 2 ? BMT_RING_OVERWRITE : BMT_RING_DISCARD;
        w->mem = malloc(SUBBUF_BYTES * SUBBUF_COUNT);
        CHECK(bmt_ring_init(&w->ring, w->mem, w->pe, w->pb, SUBBUF_BYTES, SUBBUF_COUNT,
                            w->mode, i, UUID) == 0);
    }
    pthread_t consumer;
    CHECK(pthread_create(&consumer, NULL, consumer_main, NULL) == 0);
    for (unsigned i = 0; i < writer_count; i++)
        CHECK(pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]) == 0);
    for (unsigned i = 0; i < writer_count; i++)
        CHECK(pthread_join(writers[i].thread, NULL) == 0);
    atomic_store_explicit(&writers_done, 1, memory_order_release);
    CHECK(pthread_join(consumer, NULL) == 0);
    CHECK(bmt_trace_dir_close(&trace_dir) == 0);

    uint64_t total_received = 0;
    for (unsigned i = 0; i < writer_count; i++) {
        struct writer *w = &writers[i];
        CHECKF(w->bad == 0, "writer %u: %llu malformed packets or events", i,
               (unsigned long long)w->bad);
        if (w->mode == BMT_RING_DISCARD) {
            CHECK(w->ring.discarded_count == w->dropped);
            CHECK(w->ring.written_count == w->received);
            CHECK(w->ring.overwritten_count == 0);
        } else {
            /* Nothing is refused; the oldest packets are overwritten. */
            CHECK(w->dropped == 0);
            CHECK(w->ring.discarded_count == w->ring.overwritten_count);
            CHECK(w->ring.written_count == w->attempted);
            CHECK(w->received > 0 && w->next_seq == w->attempted); /* the newest survive */
            CHECK(w->packets <= SUBBUF_COUNT);
            w->dropped = w->ring.discarded_count;
        }
        CHECKF(w->received + w->dropped == w->attempted,
               "writer %u: received %llu + discarded %llu != attempted %llu", i,
               (unsigned long long)w->received, (unsigned long long)w->dropped,
               (unsigned long long)w->attempted);
        CHECKF(w->last_discarded == w->dropped, "writer %u: last packet says %llu dropped, %llu",
               i, (unsigned long long)w->last_discarded, (unsigned long long)w->dropped);
        CHECK(bmt_ring_peek(&w->ring, &(size_t){0}, &(uint32_t){0}) == NULL);
        printf("# writer %u (%s): %llu received, %llu discarded, %llu packets\n", i,
               w->mode == BMT_RING_DISCARD ? "discard" : "overwrite",
               (unsigned long long)w->received, (unsigned long long)w->dropped,
               (unsigned long long)w->packets);
        total_received += w->received;
        free(w->mem);
    }
    char name[192];
    snprintf(name, sizeof name,
             "stress: %u writers x %llu events, discard and overwrite rings: in order, no "
             "duplicates, received + discarded = attempted",
             writer_count, (unsigned long long)events_per_writer);
    tap_group(name);
    run_babeltrace(dir, total_received);
    return tap_exit();
}
