/* A single-writer, single-reader ring of sub-buffers; each sub-buffer is one
 * CTF packet (layout in ctf.h).
 *
 * Workload: one ring per (session, recording thread). The writer is the one
 * scheduler thread that owns the ring; it reserves space for one event at a
 * time (tens to hundreds of bytes, at most a few KiB), fills it, commits it.
 * The reader is the session's consumer thread, which drains committed
 * packets every few tens of milliseconds and writes them to the stream file.
 *
 * Concurrency contract:
 *  - bmt_ring_reserve/commit/flush_if_requested: writer thread only.
 *  - bmt_ring_peek/release, bmt_ring_request_flush: reader thread only.
 *  - bmt_ring_flush: writer thread, or any thread once the writer is known
 *    to be quiescent (the session's stop protocol guarantees that).
 *  - Packets [consumed, committed) belong to the reader; the writer publishes
 *    a packet by a release store of `committed` after writing its bytes and
 *    bookkeeping, the reader acquires it by loading `committed`, and hands the
 *    sub-buffer back by a release store of `consumed`, which the writer
 *    acquires before reusing it.
 *  - Overwrite mode (flight recorder): the writer itself advances `consumed`
 *    over the oldest packet when it needs space, so the reader must not
 *    consume while the writer can: the session drains overwrite rings only
 *    after stop. A reader may still copy published packets meanwhile
 *    (bmt_ring_copy_packet), as a sequence-lock reader: the writer stores
 *    `consumed` past a packet, then a release fence, before reusing its
 *    sub-buffer, so a copy followed by an acquire fence and a load of
 *    `consumed` that is still at or before the packet was not torn.
 *
 * A full ring never blocks: discard mode drops the new event and counts it;
 * overwrite mode drops the oldest packet and counts its events. The count is
 * free-running and lands in each packet's events_discarded.
 *
 * written_count and discarded_count are the writer's, stored with relaxed
 * atomics (a plain store on every target) so the reader may sample them at
 * any time for caps and idle detection; only the writer ever stores them.
 */
#ifndef BMT_RING_H
#define BMT_RING_H

#include "ctf.h"
#include "event.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum bmt_ring_mode {
    BMT_RING_DISCARD,   /* keep the oldest: drop new events when full */
    BMT_RING_OVERWRITE, /* keep the newest: overwrite the oldest packet */
};

#define BMT_CACHE_LINE 64

struct bmt_ring {
    /* Fixed at init. */
    uint8_t *mem;                 /* subbuf_count * subbuf_bytes */
    uint32_t *packet_events;      /* events in each committed sub-buffer */
    uint32_t *packet_bytes;       /* content bytes of each committed sub-buffer */
    uint32_t *packet_drops;       /* optional: events dropped while each was open
                                     (not overwritten ones), or NULL */
    size_t subbuf_bytes;
    uint32_t subbuf_count;
    enum bmt_ring_mode mode;
    uint64_t stream_instance;     /* stream number, also the packet's cpu_id */
    uint8_t uuid[BMT_CTF_UUID_BYTES];

    /* Writer-owned. */
    _Alignas(BMT_CACHE_LINE) uint8_t *open_base; /* the open packet's first byte */
    size_t open_limit;            /* subbuf_bytes while a packet is open, else 0 */
    int is_open;                  /* a packet is open for writing */
    uint64_t open_seq;            /* absolute index of the open packet */
    size_t offset_bytes;          /* write position inside the open packet */
    uint32_t open_events;         /* events in the open packet */
    uint64_t last_ts_ns;          /* timestamp of the last event written */
    uint64_t next_seq;            /* absolute index of the next packet to open */
    _Atomic uint64_t discarded_count; /* free-running: events dropped or overwritten */
    uint64_t overwritten_count;   /* part of discarded_count lost to overwrite */
    uint64_t reported_discarded;  /* discarded_count stamped in the last packet */
    uint64_t logged_drops;        /* discarded - overwritten at the last packet_drops entry */
    _Atomic uint64_t written_count; /* events committed into packets */
    int published;                /* a packet was published since the writer last
                                     * cleared this (bmt_ring_take_published) */

    /* Shared. */
    _Alignas(BMT_CACHE_LINE) _Atomic uint64_t committed; /* packets published */
    _Atomic uint64_t consumed;    /* packets handed back */
    _Atomic int flush_requested;  /* reader asks the writer to close its packet */
};

/* Prepares `r` over caller-owned memory: `mem` of subbuf_count * subbuf_bytes
 * bytes and two arrays of subbuf_count uint32_t. subbuf_bytes must exceed
 * BMT_PKT_HEADER_BYTES; subbuf_count must be >= 2. Returns 0 or -EINVAL. */
int bmt_ring_init(struct bmt_ring *r, uint8_t *mem, uint32_t *packet_events,
                  uint32_t *packet_bytes, size_t subbuf_bytes, uint32_t subbuf_count,
                  enum bmt_ring_mode mode, uint64_t stream_instance,
                  const uint8_t uuid[BMT_CTF_UUID_BYTES]);

/* Keeps, for every packet from now on, how many events were dropped while
 * it was open, overwritten packets aside (`drops`: subbuf_count entries,
 * caller-owned). Call before the writer starts. A flight capture copies a
 * window of packets and reports only the losses inside it. */
void bmt_ring_log_drops(struct bmt_ring *r, uint32_t *drops);

/* Reader, any time, even while the writer runs: copies published packet
 * `seq` (absolute index, in [consumed, committed)) into `out` (subbuf_bytes
 * bytes) with its size in bytes, events and logged drops (0 without a
 * drop log). Returns 1 when the copy is whole; 0 when the writer reclaimed
 * the packet before or while it was copied (overwrite mode), or it is not
 * published: `out` is then garbage. Lock-free (a sequence-lock read). */
int bmt_ring_copy_packet(const struct bmt_ring *r, uint64_t seq, uint8_t *out, size_t *bytes,
                         uint32_t *events, uint32_t *drops);

/* Reader: the end time of published packet `seq`, read the same way;
 * returns 0 when it was reclaimed. */
int bmt_ring_packet_end(const struct bmt_ring *r, uint64_t seq, uint64_t *ts_end_ns);

/* Writer-side add to one of the reader-visible counters. */
static inline void bmt_ring_count(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Writer: returns a pointer to at least `bytes` writable bytes for an event
 * stamped `ts_ns`, or NULL when the event is dropped (ring full in discard
 * mode, or larger than a packet); drops are counted. `bytes` may be an upper
 * bound: commit says how many were used. On success r->last_ts_ns is the
 * stream's previous timestamp (the packet's begin time in a new packet),
 * which the event header is relative to. */
uint8_t *bmt_ring_reserve_slow(struct bmt_ring *r, size_t bytes, uint64_t ts_ns);

/* 1 when the open packet has room for `bytes` more (a closed ring's
 * limit is 0): bmt_ring_reserve's common case. */
static inline int bmt_ring_open_has_room(const struct bmt_ring *r, size_t bytes)
{
    return r->offset_bytes + bytes <= r->open_limit;
}

static inline uint8_t *bmt_ring_reserve(struct bmt_ring *r, size_t bytes, uint64_t ts_ns)
{
    if (__builtin_expect(bmt_ring_open_has_room(r, bytes), 1))
        return r->open_base + r->offset_bytes;
    return bmt_ring_reserve_slow(r, bytes, ts_ns);
}

/* Writer: publishes the `bytes` (at most what reserve granted) just written
 * at the pointer reserve gave. */
static inline void bmt_ring_commit(struct bmt_ring *r, size_t bytes, uint64_t ts_ns)
{
    r->offset_bytes += bytes;
    r->open_events++;
    bmt_ring_count(&r->written_count, 1);
    r->last_ts_ns = ts_ns;
}

/* Writer: counts `n` events dropped before reaching the ring. */
static inline void bmt_ring_drop(struct bmt_ring *r, uint64_t n)
{
    bmt_ring_count(&r->discarded_count, n);
}

/* Writer (or quiescent writer): closes and publishes the open packet if it
 * holds events; then, if drops happened since the last published packet and
 * a sub-buffer is free, publishes an empty packet stamped `ts_ns` so the
 * drop count reaches the trace. */
void bmt_ring_flush(struct bmt_ring *r, uint64_t ts_ns);

/* Other side (writer quiescent, its ring frozen, the session still
 * recording): the time to flush at. Not the reader's "now": a writer may
 * have stamped its next event before it and write it once the ring
 * thaws, and a packet stamped later than an event after it breaks the
 * stream's order (babeltrace2 stops there). The ring's last event time
 * is no later than anything its writer stamps next; a loss-only packet
 * stamped there says the losses came after it. */
static inline uint64_t bmt_ring_quiet_flush_ts(const struct bmt_ring *r, uint64_t now_ns)
{
    return r->last_ts_ns ? r->last_ts_ns : now_ns;
}

/* Writer: honours a flush the reader asked for. One relaxed load when none. */
static inline void bmt_ring_flush_if_requested(struct bmt_ring *r, uint64_t ts_ns)
{
    if (atomic_load_explicit(&r->flush_requested, memory_order_relaxed)) {
        atomic_store_explicit(&r->flush_requested, 0, memory_order_relaxed);
        bmt_ring_flush(r, ts_ns);
    }
}

/* Writer: encodes `ev` into the ring (reserve, encode, commit). Returns 1
 * when recorded, 0 when dropped (and counted). For code that builds a
 * struct bmt_event first: tests, generators. */
static inline int bmt_ring_put_event(struct bmt_ring *r, const struct bmt_event *ev)
{
    uint8_t *p = bmt_ring_reserve(r, bmt_event_size(ev), ev->ts_ns);
    if (!p)
        return 0;
    bmt_ring_commit(r, bmt_event_encode(ev, p, r->last_ts_ns), ev->ts_ns);
    return 1;
}

/* Writer: 1 when a packet was published since the last call (by the
 * writer's reserve or flush, or by the other side while the writer was
 * quiescent), and clears it: whether the reader has something new. */
static inline int bmt_ring_take_published(struct bmt_ring *r)
{
    if (__builtin_expect(!r->published, 1))
        return 0;
    r->published = 0;
    return 1;
}

/* Reader: asks the writer to publish its partial packet at its next event. */
void bmt_ring_request_flush(struct bmt_ring *r);

/* Reader: returns the oldest published packet and its size in bytes and
 * events, or NULL when there is none. */
const uint8_t *bmt_ring_peek(struct bmt_ring *r, size_t *bytes, uint32_t *events);

/* Reader: hands the packet peek returned back to the writer. */
void bmt_ring_release(struct bmt_ring *r);

#endif
