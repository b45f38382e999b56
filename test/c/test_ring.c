/* Unit tests of the sub-buffer ring (c_src/core/ring.c) against a reference model.
 *
 * The model is a plain FIFO of packets, each a list of events, plus the one
 * open packet and the drop counters, advanced by the rules ring.h states
 * (a packet holds what fits in subbuf_bytes after the header; at most
 * subbuf_count packets are committed-or-open; discard mode drops the new
 * event when no sub-buffer is free, overwrite mode drops the oldest packet
 * and counts its events). A random sequence of writer operations (events of
 * random size, some too big; flushes; reader-requested flushes) and reader
 * drains runs against the real ring and the model in lock step, in a tiny
 * configuration (2-3 sub-buffers of 160-256 bytes: packets switch and the
 * ring fills constantly) and a normal one. Every drained packet is checked
 * byte for byte against the model and its header and context field by field.
 *
 * Single-threaded: the interleavings are of operations, not of threads (the
 * multi-threaded test is stress_ring.c). Usage: test_ring [seed].
 */
#include "core/ring.h"
#include "core/event.h"
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t UUID[BMT_CTF_UUID_BYTES] = {0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87,
                                                  0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f};

/* xorshift64*: deterministic for a given seed. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}
static uint64_t rnd_below(uint64_t n)
{
    return rnd() % n;
}

/* ---- test events: serial number, then bytes derived from it ---- */

static uint8_t event_byte(uint64_t serial, size_t i)
{
    return (uint8_t)(serial * 131u + i * 7u + (i >> 3));
}

static void fill_event(uint8_t *p, uint64_t serial, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        p[i] = event_byte(serial, i);
    if (bytes >= 8)
        bmt_put_u64(p, serial);
}

static int event_matches(const uint8_t *p, uint64_t serial, size_t bytes)
{
    if (bytes >= 8 && bmt_get_u64(p) != serial)
        return 0;
    for (size_t i = 8; i < bytes; i++)
        if (p[i] != event_byte(serial, i))
            return 0;
    return 1;
}

/* ---- the reference model ---- */

#define MAX_PKT_EVENTS 512

struct mevent {
    uint64_t serial;
    uint32_t bytes;
    uint64_t ts_ns;
};

struct mpacket {
    uint64_t seq;
    uint64_t ts_begin_ns, ts_end_ns;
    uint64_t discarded; /* running total stamped at close */
    uint32_t bytes;     /* header included */
    uint32_t count;
    struct mevent ev[MAX_PKT_EVENTS];
};

struct model {
    size_t subbuf_bytes;
    uint32_t subbuf_count;
    enum bmt_ring_mode mode;
    struct mpacket *q; /* committed, unconsumed packets: a FIFO */
    size_t q_head, q_len, q_cap;
    int open;
    struct mpacket cur;
    uint64_t next_seq;
    uint64_t discarded, reported, overwritten;
    uint64_t attempted, kept;
};

static void model_init(struct model *m, size_t subbuf_bytes, uint32_t subbuf_count,
                       enum bmt_ring_mode mode)
{
    memset(m, 0, sizeof *m);
    m->subbuf_bytes = subbuf_bytes;
    m->subbuf_count = subbuf_count;
    m->mode = mode;
    m->q_cap = subbuf_count + 1;
    m->q = calloc(m->q_cap, sizeof *m->q);
}

static struct mpacket *model_front(struct model *m)
{
    return m->q_len ? &m->q[m->q_head % m->q_cap] : NULL;
}

static void model_pop(struct model *m)
{
    m->q_head++;
    m->q_len--;
}

static void model_close(struct model *m)
{
    m->cur.discarded = m->discarded;
    m->reported = m->discarded;
    m->q[(m->q_head + m->q_len) % m->q_cap] = m->cur;
    m->q_len++;
    m->open = 0;
}

/* A sub-buffer for a new packet: 1 if one is free (or was freed by
 * overwriting the oldest packet), 0 in discard mode when the ring is full. */
static int model_open(struct model *m, uint64_t ts_ns)
{
    if (m->q_len >= m->subbuf_count) {
        if (m->mode == BMT_RING_DISCARD)
            return 0;
        uint32_t lost = model_front(m)->count;
        m->discarded += lost;
        m->overwritten += lost;
        model_pop(m);
    }
    m->open = 1;
    m->cur.seq = m->next_seq++;
    m->cur.ts_begin_ns = m->cur.ts_end_ns = ts_ns;
    m->cur.bytes = BMT_PKT_HEADER_BYTES;
    m->cur.count = 0;
    return 1;
}

/* Returns 1 when the event is kept. */
static int model_write(struct model *m, uint64_t serial, uint32_t bytes, uint64_t ts_ns)
{
    m->attempted++;
    if (!(m->open && m->cur.bytes + bytes <= m->subbuf_bytes)) {
        if (bytes > m->subbuf_bytes - BMT_PKT_HEADER_BYTES) {
            m->discarded++;
            return 0;
        }
        if (m->open)
            model_close(m);
        if (!model_open(m, ts_ns)) {
            m->discarded++;
            return 0;
        }
    }
    m->cur.ev[m->cur.count++] = (struct mevent){serial, bytes, ts_ns};
    m->cur.bytes += bytes;
    m->cur.ts_end_ns = ts_ns;
    m->kept++;
    return 1;
}

static void model_flush(struct model *m, uint64_t ts_ns)
{
    if (m->open) {
        if (m->cur.count == 0 && m->discarded == m->reported) {
            m->open = 0;
            m->next_seq--;
            return;
        }
        if (m->cur.count == 0 && ts_ns > m->cur.ts_end_ns)
            m->cur.ts_end_ns = ts_ns;
        model_close(m);
    }
    /* The drop-count packet only takes a free sub-buffer, in both modes. */
    if (m->discarded != m->reported && m->q_len < m->subbuf_count && model_open(m, ts_ns))
        model_close(m);
}

/* ---- checking a drained packet ---- */

struct drain_stats {
    uint64_t received;         /* events drained */
    uint64_t packets;
    uint64_t last_seq;         /* seq of the previous packet drained */
    uint64_t last_discarded;   /* its events_discarded */
    uint64_t last_serial;      /* serial of the newest event drained, +1 */
    int any;
};

/* Checks one drained packet against the model's oldest packet and the
 * invariants that hold regardless of the model. */
static void check_packet(const struct bmt_ring *r, const struct mpacket *mp, const uint8_t *pkt,
                         size_t bytes, uint32_t events, struct drain_stats *st)
{
    CHECKF(mp != NULL, "ring returned a packet the model does not have");
    if (!mp)
        return;
    CHECKF(bytes == mp->bytes, "packet %llu: %zu bytes, model %u", (unsigned long long)mp->seq,
           bytes, mp->bytes);
    CHECKF(events == mp->count, "packet %llu: %u events, model %u", (unsigned long long)mp->seq,
           events, mp->count);
    CHECK(bmt_get_u32(pkt + BMT_PKT_MAGIC) == BMT_CTF_MAGIC);
    CHECK(memcmp(pkt + BMT_PKT_UUID, UUID, BMT_CTF_UUID_BYTES) == 0);
    CHECK(bmt_get_u32(pkt + BMT_PKT_STREAM_ID) == 0);
    CHECK(bmt_get_u64(pkt + BMT_PKT_STREAM_INSTANCE_ID) == r->stream_instance);
    CHECK(bmt_get_u32(pkt + BMT_PKT_CPU_ID) == (uint32_t)r->stream_instance);
    CHECK(bmt_get_u64(pkt + BMT_PKT_CONTENT_SIZE) == (uint64_t)bytes * 8);
    CHECK(bmt_get_u64(pkt + BMT_PKT_PACKET_SIZE) == (uint64_t)bytes * 8);
    CHECK(bytes <= r->subbuf_bytes);
    CHECKF(bmt_get_u64(pkt + BMT_PKT_SEQ_NUM) == mp->seq, "seq %llu, model %llu",
           (unsigned long long)bmt_get_u64(pkt + BMT_PKT_SEQ_NUM),
           (unsigned long long)mp->seq);
    CHECKF(bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED) == mp->discarded,
           "events_discarded %llu, model %llu",
           (unsigned long long)bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED),
           (unsigned long long)mp->discarded);
    uint64_t begin = bmt_get_u64(pkt + BMT_PKT_TS_BEGIN), end = bmt_get_u64(pkt + BMT_PKT_TS_END);
    CHECK(begin == mp->ts_begin_ns);
    CHECK(end == mp->ts_end_ns);
    CHECK(begin <= end);

    /* Events: identical bytes, in order, timestamps inside [begin, end]. */
    size_t off = BMT_PKT_HEADER_BYTES;
    for (uint32_t i = 0; i < mp->count && off <= bytes; i++) {
        const struct mevent *e = &mp->ev[i];
        CHECKF(event_matches(pkt + off, e->serial, e->bytes), "packet %llu event %u (serial %llu)",
               (unsigned long long)mp->seq, i, (unsigned long long)e->serial);
        CHECK(e->ts_ns >= begin && e->ts_ns <= end);
        if (i == 0)
            CHECK(e->ts_ns == begin);
        if (i + 1 == mp->count)
            CHECK(e->ts_ns == end);
        CHECKF(!st->any || e->serial >= st->last_serial, "event %llu after %llu",
               (unsigned long long)e->serial, (unsigned long long)st->last_serial);
        st->last_serial = e->serial + 1;
        off += e->bytes;
    }
    CHECK(off == bytes);

    /* Model-independent: sequence numbers grow (consecutively in discard
     * mode), and the discard total never goes down. */
    uint64_t seq = bmt_get_u64(pkt + BMT_PKT_SEQ_NUM);
    uint64_t disc = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
    if (st->packets) {
        if (r->mode == BMT_RING_DISCARD)
            CHECKF(seq == st->last_seq + 1, "seq %llu after %llu", (unsigned long long)seq,
                   (unsigned long long)st->last_seq);
        else
            CHECK(seq > st->last_seq);
        CHECK(disc >= st->last_discarded);
    } else if (r->mode == BMT_RING_DISCARD) {
        CHECK(seq == 0);
    }
    st->last_seq = seq;
    st->last_discarded = disc;
    st->packets++;
    st->received += events;
    st->any = 1;
}

/* Drains up to `max` packets from the ring, checking each against the model. */
static void drain(struct bmt_ring *r, struct model *m, unsigned max, struct drain_stats *st)
{
    const uint8_t *pkt;
    size_t bytes;
    uint32_t events;
    for (unsigned n = 0; n < max; n++) {
        pkt = bmt_ring_peek(r, &bytes, &events);
        if (!pkt) {
            CHECKF(m->q_len == 0, "ring empty, model holds %zu packets", m->q_len);
            return;
        }
        check_packet(r, model_front(m), pkt, bytes, events, st);
        if (m->q_len)
            model_pop(m);
        bmt_ring_release(r);
    }
}

/* ---- the randomized run ---- */

struct config {
    const char *name;
    size_t subbuf_bytes;
    uint32_t subbuf_count;
    enum bmt_ring_mode mode;
    unsigned ops;
    int drain_during_run; /* 0: the reader runs only after stop (flight recorder) */
};

static void run_random(const struct config *c, uint64_t seed)
{
    uint8_t *mem = malloc(c->subbuf_bytes * c->subbuf_count);
    uint32_t *pe = calloc(c->subbuf_count, sizeof *pe);
    uint32_t *pb = calloc(c->subbuf_count, sizeof *pb);
    struct bmt_ring r;
    struct model m;
    struct drain_stats st = {0};
    rng_state = seed;
    CHECK(bmt_ring_init(&r, mem, pe, pb, c->subbuf_bytes, c->subbuf_count, c->mode, 3, UUID) == 0);
    model_init(&m, c->subbuf_bytes, c->subbuf_count, c->mode);

    size_t cap = c->subbuf_bytes - BMT_PKT_HEADER_BYTES;
    uint64_t ts = 1000, serial = 0, dropped_seen = 0, last_kept_serial = UINT64_MAX;
    int flush_pending = 0;
    for (unsigned op = 0; op < c->ops; op++) {
        ts += rnd_below(4); /* equal timestamps happen */
        unsigned dice = (unsigned)rnd_below(100);
        if (dice < 75) {
            /* Writer: honour a pending flush request, then one event. */
            bmt_ring_flush_if_requested(&r, ts);
            if (flush_pending) {
                model_flush(&m, ts);
                flush_pending = 0;
            }
            uint32_t bytes;
            if (rnd_below(50) == 0)
                bytes = (uint32_t)(cap + 1 + rnd_below(64)); /* too big */
            else if (rnd_below(20) == 0)
                bytes = (uint32_t)cap; /* exactly one packet's room */
            else
                bytes = (uint32_t)(8 + rnd_below(cap < 120 ? cap - 8 : 112));
            int keep = model_write(&m, serial, bytes, ts);
            uint8_t *p = bmt_ring_reserve(&r, bytes, ts);
            CHECKF((p != NULL) == keep, "op %u: reserve %u bytes: ring %s, model %s", op, bytes,
                   p ? "kept" : "dropped", keep ? "kept" : "dropped");
            if (p) {
                fill_event(p, serial, bytes);
                bmt_ring_commit(&r, bytes, ts);
                last_kept_serial = serial;
            } else {
                dropped_seen++;
            }
            serial++;
        } else if (dice < 80) {
            bmt_ring_flush(&r, ts);
            model_flush(&m, ts);
        } else if (dice < 85) {
            bmt_ring_request_flush(&r);
            flush_pending = 1;
        } else if (c->drain_during_run) {
            drain(&r, &m, (unsigned)rnd_below(c->subbuf_count + 1), &st);
        }
        CHECK(r.discarded_count == m.discarded);
        if (tap_group_failures)
            break;
    }

    /* Stop: flush, drain, flush again (the drain may have freed the room the
     * final drop count needs), drain. */
    ts += 10;
    bmt_ring_flush(&r, ts);
    model_flush(&m, ts);
    drain(&r, &m, UINT32_MAX, &st);
    bmt_ring_flush(&r, ts);
    model_flush(&m, ts);
    drain(&r, &m, UINT32_MAX, &st);
    CHECK(bmt_ring_peek(&r, &(size_t){0}, &(uint32_t){0}) == NULL);

    /* Accounting, model-independent. */
    CHECK(m.attempted == serial);
    CHECKF(r.written_count == m.kept, "written %llu, model %llu",
           (unsigned long long)r.written_count, (unsigned long long)m.kept);
    CHECK(r.written_count + dropped_seen == serial);
    CHECKF(st.received + r.discarded_count == serial,
           "received %llu + discarded %llu != attempted %llu", (unsigned long long)st.received,
           (unsigned long long)r.discarded_count, (unsigned long long)serial);
    CHECK(r.overwritten_count == m.overwritten);
    CHECK(r.discarded_count - r.overwritten_count == dropped_seen);
    if (c->mode == BMT_RING_DISCARD)
        CHECK(r.overwritten_count == 0);
    if (st.packets)
        CHECKF(st.last_discarded == r.discarded_count, "last packet says %llu, ring %llu",
               (unsigned long long)st.last_discarded, (unsigned long long)r.discarded_count);
    else
        CHECK(r.discarded_count == 0);
    if (c->mode == BMT_RING_OVERWRITE && !c->drain_during_run && last_kept_serial != UINT64_MAX) {
        /* Flight recorder: the survivors are the newest packets: the newest
         * kept event came out, and at most subbuf_count packets did. */
        CHECK(st.last_serial == last_kept_serial + 1);
        CHECK(st.packets <= c->subbuf_count);
        CHECK(r.written_count - r.overwritten_count == st.received);
    }
    free(m.q);
    free(mem);
    free(pe);
    free(pb);
}

/* ---- directed cases ---- */

static void fresh(struct bmt_ring *r, uint8_t *mem, uint32_t *pe, uint32_t *pb, size_t bytes,
                  uint32_t count, enum bmt_ring_mode mode)
{
    CHECK(bmt_ring_init(r, mem, pe, pb, bytes, count, mode, 7, UUID) == 0);
}

static int write_one(struct bmt_ring *r, size_t bytes, uint64_t ts, uint64_t serial)
{
    uint8_t *p = bmt_ring_reserve(r, bytes, ts);
    if (!p)
        return 0;
    fill_event(p, serial, bytes);
    bmt_ring_commit(r, bytes, ts);
    return 1;
}

static void test_init(void)
{
    static uint8_t mem[4 * 256];
    static uint32_t pe[4], pb[4];
    struct bmt_ring r;
    CHECK(bmt_ring_init(&r, NULL, pe, pb, 256, 4, BMT_RING_DISCARD, 0, UUID) == -EINVAL);
    CHECK(bmt_ring_init(&r, mem, NULL, pb, 256, 4, BMT_RING_DISCARD, 0, UUID) == -EINVAL);
    CHECK(bmt_ring_init(&r, mem, pe, NULL, 256, 4, BMT_RING_DISCARD, 0, UUID) == -EINVAL);
    CHECK(bmt_ring_init(&r, mem, pe, pb, 256, 1, BMT_RING_DISCARD, 0, UUID) == -EINVAL);
    CHECK(bmt_ring_init(&r, mem, pe, pb, 256, 0, BMT_RING_DISCARD, 0, UUID) == -EINVAL);
    CHECK(bmt_ring_init(&r, mem, pe, pb, BMT_PKT_HEADER_BYTES, 4, BMT_RING_DISCARD, 0, UUID) ==
          -EINVAL);
    CHECK(bmt_ring_init(&r, mem, pe, pb, 0, 4, BMT_RING_DISCARD, 0, UUID) == -EINVAL);
    CHECK(bmt_ring_init(&r, mem, pe, pb, BMT_PKT_HEADER_BYTES + 1, 2, BMT_RING_OVERWRITE, 0,
                        UUID) == 0);
    CHECK(bmt_ring_init(&r, mem, pe, pb, 256, 4, BMT_RING_DISCARD, 0, UUID) == 0);
    CHECK(bmt_ring_peek(&r, &(size_t){0}, &(uint32_t){0}) == NULL);
    tap_group("ring: init rejects bad arguments, accepts the smallest valid ring");
}

static void test_oversized(void)
{
    static uint8_t mem[3 * 200];
    static uint32_t pe[3], pb[3];
    struct bmt_ring r;
    size_t cap = 200 - BMT_PKT_HEADER_BYTES;
    for (int mode = 0; mode < 2; mode++) {
        fresh(&r, mem, pe, pb, 200, 3, (enum bmt_ring_mode)mode);
        CHECK(bmt_ring_reserve(&r, cap + 1, 10) == NULL);
        CHECK(r.discarded_count == 1 && r.overwritten_count == 0);
        CHECK(bmt_ring_reserve(&r, SIZE_MAX / 2, 11) == NULL);
        CHECK(r.discarded_count == 2);
        CHECK(write_one(&r, cap, 12, 1)); /* exactly fits */
        CHECK(write_one(&r, 1, 13, 2));   /* forces a new packet */
        CHECK(bmt_ring_reserve(&r, cap + 1, 14) == NULL); /* drop while a packet is open */
        CHECK(r.discarded_count == 3 && r.written_count == 2);
        bmt_ring_flush(&r, 15);
        size_t bytes;
        uint32_t events;
        const uint8_t *p = bmt_ring_peek(&r, &bytes, &events);
        CHECK(p && bytes == 200 && events == 1);
        if (p) {
            CHECK(bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED) == 2);
            CHECK(event_matches(p + BMT_PKT_HEADER_BYTES, 1, cap));
            bmt_ring_release(&r);
        }
        p = bmt_ring_peek(&r, &bytes, &events);
        CHECK(p && bytes == BMT_PKT_HEADER_BYTES + 1 && events == 1);
        if (p) {
            CHECK(bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED) == 3);
            CHECK(bmt_get_u64(p + BMT_PKT_TS_END) == 13); /* last event, not the flush */
            bmt_ring_release(&r);
        }
        CHECK(bmt_ring_peek(&r, &bytes, &events) == NULL);
    }
    tap_group("ring: oversized events are dropped and counted, an exact fit is kept");
}

static void test_flush(void)
{
    static uint8_t mem[3 * 256];
    static uint32_t pe[3], pb[3];
    struct bmt_ring r;
    size_t bytes;
    uint32_t events;
    const uint8_t *p;

    /* Nothing written: flush publishes nothing. */
    fresh(&r, mem, pe, pb, 256, 3, BMT_RING_DISCARD);
    bmt_ring_flush(&r, 5);
    CHECK(bmt_ring_peek(&r, &bytes, &events) == NULL);

    /* A partial packet is published by flush, then nothing more. */
    CHECK(write_one(&r, 20, 100, 1));
    CHECK(write_one(&r, 30, 110, 2));
    bmt_ring_flush(&r, 200);
    p = bmt_ring_peek(&r, &bytes, &events);
    CHECK(p && events == 2 && bytes == BMT_PKT_HEADER_BYTES + 50);
    if (p) {
        CHECK(bmt_get_u64(p + BMT_PKT_TS_BEGIN) == 100);
        CHECK(bmt_get_u64(p + BMT_PKT_TS_END) == 110);
        CHECK(bmt_get_u64(p + BMT_PKT_SEQ_NUM) == 0);
        CHECK(bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED) == 0);
        CHECK(event_matches(p + BMT_PKT_HEADER_BYTES + 20, 2, 30));
        bmt_ring_release(&r);
    }
    bmt_ring_flush(&r, 210);
    CHECK(bmt_ring_peek(&r, &bytes, &events) == NULL);

    /* A drop after the last packet: flush publishes an empty packet with the
     * final count, stamped at the flush time. */
    CHECK(bmt_ring_reserve(&r, 1000, 220) == NULL);
    bmt_ring_flush(&r, 230);
    p = bmt_ring_peek(&r, &bytes, &events);
    CHECK(p && events == 0 && bytes == BMT_PKT_HEADER_BYTES);
    if (p) {
        CHECK(bmt_get_u64(p + BMT_PKT_TS_BEGIN) == 230);
        CHECK(bmt_get_u64(p + BMT_PKT_TS_END) == 230);
        CHECK(bmt_get_u64(p + BMT_PKT_SEQ_NUM) == 1);
        CHECK(bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED) == 1);
        CHECK(bmt_get_u64(p + BMT_PKT_CONTENT_SIZE) == BMT_PKT_HEADER_BYTES * 8);
        bmt_ring_release(&r);
    }
    bmt_ring_flush(&r, 240);
    CHECK(bmt_ring_peek(&r, &bytes, &events) == NULL);

    /* Ring full of unread packets and drops: the empty packet waits for room. */
    fresh(&r, mem, pe, pb, 256, 2, BMT_RING_DISCARD);
    uint64_t ts = 1, s = 0;
    while (r.discarded_count == 0)
        write_one(&r, 100, ts++, s++);
    bmt_ring_flush(&r, ts);
    int packets = 0;
    uint64_t last_disc = 0;
    while ((p = bmt_ring_peek(&r, &bytes, &events))) {
        packets++;
        last_disc = bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED);
        bmt_ring_release(&r);
    }
    CHECK(packets == 2 && last_disc == 0);
    bmt_ring_flush(&r, ts + 1);
    p = bmt_ring_peek(&r, &bytes, &events);
    CHECK(p && events == 0 && bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED) == 1);
    CHECK(p && bmt_get_u64(p + BMT_PKT_SEQ_NUM) == 2);

    /* A reserve that is never committed leaves no packet behind. */
    fresh(&r, mem, pe, pb, 256, 3, BMT_RING_DISCARD);
    CHECK(bmt_ring_reserve(&r, 10, 1) != NULL);
    bmt_ring_flush(&r, 2);
    CHECK(bmt_ring_peek(&r, &bytes, &events) == NULL);
    CHECK(write_one(&r, 10, 3, 9));
    bmt_ring_flush(&r, 4);
    p = bmt_ring_peek(&r, &bytes, &events);
    CHECK(p && events == 1 && bmt_get_u64(p + BMT_PKT_SEQ_NUM) == 0);

    /* flush_if_requested: nothing without a request; a request is honoured once. */
    fresh(&r, mem, pe, pb, 256, 3, BMT_RING_DISCARD);
    CHECK(write_one(&r, 10, 1, 1));
    bmt_ring_flush_if_requested(&r, 2);
    CHECK(bmt_ring_peek(&r, &bytes, &events) == NULL);
    bmt_ring_request_flush(&r);
    bmt_ring_flush_if_requested(&r, 3);
    p = bmt_ring_peek(&r, &bytes, &events);
    CHECK(p && events == 1);
    CHECK(atomic_load(&r.flush_requested) == 0);
    tap_group("ring: flush publishes partial packets and an empty packet with the final drop count");
}

static void test_overwrite_survivors(void)
{
    static uint8_t mem[3 * 256];
    static uint32_t pe[3], pb[3];
    struct bmt_ring r;
    fresh(&r, mem, pe, pb, 256, 3, BMT_RING_OVERWRITE);
    /* 34 bytes per event: 5 per packet (84 + 5 * 34 = 254). 100 events = 20 packets. */
    for (uint64_t s = 0; s < 100; s++)
        CHECK(write_one(&r, 34, 1000 + s, s));
    bmt_ring_flush(&r, 2000);
    size_t bytes;
    uint32_t events;
    const uint8_t *p;
    uint64_t want_seq = 17, want_serial = 85;
    while ((p = bmt_ring_peek(&r, &bytes, &events))) {
        CHECK(events == 5);
        CHECK(bmt_get_u64(p + BMT_PKT_SEQ_NUM) == want_seq);
        for (uint32_t i = 0; i < events; i++)
            CHECK(event_matches(p + BMT_PKT_HEADER_BYTES + 34 * i, want_serial + i, 34));
        /* Opening packet k overwrote packet k - 3, and packet k closed
         * before k + 1 opened: packets 0..k-3 (5 events each) were lost. */
        CHECK(bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED) == (want_seq - 2) * 5);
        want_seq++;
        want_serial += events;
        bmt_ring_release(&r);
    }
    CHECK(want_seq == 20 && want_serial == 100);
    CHECK(r.discarded_count == 85 && r.overwritten_count == 85);
    CHECK(r.written_count == 100);
    tap_group("ring: overwrite mode keeps exactly the newest packets and counts the overwritten");
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : UINT64_C(0x5eed1234abcd);
    printf("# seed %llu\n", (unsigned long long)seed);

    test_init();
    test_oversized();
    test_flush();
    test_overwrite_survivors();

    static const struct config configs[] = {
        {"tiny discard, 2 x 160 bytes", 160, 2, BMT_RING_DISCARD, 20000, 1},
        {"tiny discard, 3 x 256 bytes", 256, 3, BMT_RING_DISCARD, 20000, 1},
        {"tiny overwrite, 2 x 160 bytes, drained during the run", 160, 2, BMT_RING_OVERWRITE, 20000, 1},
        {"tiny overwrite, 3 x 256 bytes, drained after stop", 256, 3, BMT_RING_OVERWRITE, 20000, 0},
        {"normal discard, 8 x 4096 bytes", 4096, 8, BMT_RING_DISCARD, 100000, 1},
        {"normal overwrite, 8 x 4096 bytes, drained during the run", 4096, 8, BMT_RING_OVERWRITE, 100000, 1},
        {"normal overwrite, 8 x 4096 bytes, drained after stop", 4096, 8, BMT_RING_OVERWRITE, 100000, 0},
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        for (uint64_t k = 0; k < 5; k++)
            run_random(&configs[i], seed + k * UINT64_C(0x9e3779b97f4a7c15));
        char name[160];
        snprintf(name, sizeof name, "ring: matches the FIFO model, %s", configs[i].name);
        tap_group(name);
    }
    return tap_exit();
}
