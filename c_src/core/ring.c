/* Sub-buffer ring (contract in ring.h). */
#include "ring.h"

#include <errno.h>
#include <string.h>

int bmt_ring_init(struct bmt_ring *r, uint8_t *mem, uint32_t *packet_events,
                  uint32_t *packet_bytes, size_t subbuf_bytes, uint32_t subbuf_count,
                  enum bmt_ring_mode mode, uint64_t stream_instance,
                  const uint8_t uuid[BMT_CTF_UUID_BYTES])
{
    if (!mem || !packet_events || !packet_bytes || subbuf_count < 2 ||
        subbuf_bytes <= BMT_PKT_HEADER_BYTES)
        return -EINVAL;
    memset(r, 0, sizeof *r);
    r->mem = mem;
    r->packet_events = packet_events;
    r->packet_bytes = packet_bytes;
    r->subbuf_bytes = subbuf_bytes;
    r->subbuf_count = subbuf_count;
    r->mode = mode;
    r->stream_instance = stream_instance;
    memcpy(r->uuid, uuid, BMT_CTF_UUID_BYTES);
    atomic_init(&r->committed, 0);
    atomic_init(&r->written_count, 0);
    atomic_init(&r->discarded_count, 0);
    atomic_init(&r->consumed, 0);
    atomic_init(&r->flush_requested, 0);
    return 0;
}

static uint8_t *subbuf(const struct bmt_ring *r, uint64_t seq)
{
    return r->mem + (size_t)(seq % r->subbuf_count) * r->subbuf_bytes;
}

/* Opens packet next_seq if a sub-buffer is free (or, in overwrite mode,
 * after dropping the oldest). Returns 1 when a packet is open. */
static int open_packet(struct bmt_ring *r, uint64_t ts_ns)
{
    uint64_t consumed = atomic_load_explicit(&r->consumed, memory_order_acquire);
    if (r->next_seq - consumed >= r->subbuf_count) {
        if (r->mode == BMT_RING_DISCARD)
            return 0;
        /* Flight recorder: the writer owns `consumed` in this mode. */
        uint32_t lost = r->packet_events[consumed % r->subbuf_count];
        bmt_ring_count(&r->discarded_count, lost);
        r->overwritten_count += lost;
        atomic_store_explicit(&r->consumed, consumed + 1, memory_order_release);
        /* The reclaim is visible before any byte of the reuse: a copying
         * reader checks `consumed` after its copy (bmt_ring_copy_packet).
         * A compiler barrier on x86. */
        atomic_thread_fence(memory_order_release);
    }
    r->open_seq = r->next_seq++;
    r->is_open = 1;
    r->open_base = subbuf(r, r->open_seq);
    r->open_limit = r->subbuf_bytes;
    r->offset_bytes = BMT_PKT_HEADER_BYTES;
    r->open_events = 0;
    r->last_ts_ns = ts_ns;
    bmt_ctf_packet_open(subbuf(r, r->open_seq), r->uuid, r->stream_instance, ts_ns);
    return 1;
}

static void close_packet(struct bmt_ring *r)
{
    uint32_t idx = (uint32_t)(r->open_seq % r->subbuf_count);
    uint64_t discarded = atomic_load_explicit(&r->discarded_count, memory_order_relaxed);
    bmt_ctf_packet_close(subbuf(r, r->open_seq), r->last_ts_ns, r->offset_bytes, r->open_seq,
                         discarded);
    r->packet_events[idx] = r->open_events;
    r->packet_bytes[idx] = (uint32_t)r->offset_bytes;
    if (r->packet_drops) {
        uint64_t dropped = discarded - r->overwritten_count;
        uint64_t d = dropped - r->logged_drops;
        r->packet_drops[idx] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        r->logged_drops = dropped;
    }
    r->reported_discarded = discarded;
    r->is_open = 0;
    r->open_limit = 0;
    r->published = 1;
    atomic_store_explicit(&r->committed, r->open_seq + 1, memory_order_release);
}

uint8_t *bmt_ring_reserve_slow(struct bmt_ring *r, size_t bytes, uint64_t ts_ns)
{
    if (r->is_open && r->offset_bytes + bytes <= r->subbuf_bytes)
        return subbuf(r, r->open_seq) + r->offset_bytes;
    if (bytes > r->subbuf_bytes - BMT_PKT_HEADER_BYTES) {
        bmt_ring_drop(r, 1);
        return NULL;
    }
    if (r->is_open)
        close_packet(r);
    if (!open_packet(r, ts_ns)) {
        bmt_ring_drop(r, 1);
        return NULL;
    }
    return subbuf(r, r->open_seq) + r->offset_bytes;
}

void bmt_ring_flush(struct bmt_ring *r, uint64_t ts_ns)
{
    uint64_t discarded = atomic_load_explicit(&r->discarded_count, memory_order_relaxed);
    if (r->is_open) {
        if (r->open_events == 0 && discarded == r->reported_discarded) {
            /* Nothing worth publishing; give the sub-buffer back unused. */
            r->is_open = 0;
            r->open_limit = 0;
            r->next_seq = r->open_seq;
            return;
        }
        if (ts_ns > r->last_ts_ns && r->open_events == 0)
            r->last_ts_ns = ts_ns;
        close_packet(r);
    }
    /* The empty packet that carries the drop count only takes a free
     * sub-buffer: overwriting recorded events to report a loss would lose
     * more. The count stays in discarded_count for the stop figures. */
    uint64_t consumed = atomic_load_explicit(&r->consumed, memory_order_acquire);
    if (discarded != r->reported_discarded && r->next_seq - consumed < r->subbuf_count &&
        open_packet(r, ts_ns)) {
        if (ts_ns > r->last_ts_ns)
            r->last_ts_ns = ts_ns;
        close_packet(r);
    }
}

void bmt_ring_request_flush(struct bmt_ring *r)
{
    atomic_store_explicit(&r->flush_requested, 1, memory_order_relaxed);
}

const uint8_t *bmt_ring_peek(struct bmt_ring *r, size_t *bytes, uint32_t *events)
{
    uint64_t consumed = atomic_load_explicit(&r->consumed, memory_order_relaxed);
    uint64_t committed = atomic_load_explicit(&r->committed, memory_order_acquire);
    if (consumed == committed)
        return NULL;
    uint32_t idx = (uint32_t)(consumed % r->subbuf_count);
    *bytes = r->packet_bytes[idx];
    *events = r->packet_events[idx];
    return subbuf(r, consumed);
}

void bmt_ring_release(struct bmt_ring *r)
{
    uint64_t consumed = atomic_load_explicit(&r->consumed, memory_order_relaxed);
    atomic_store_explicit(&r->consumed, consumed + 1, memory_order_release);
}

void bmt_ring_log_drops(struct bmt_ring *r, uint32_t *drops)
{
    r->packet_drops = drops;
    r->logged_drops = atomic_load_explicit(&r->discarded_count, memory_order_relaxed) -
                      r->overwritten_count;
}

/* The copy races with a writer reusing the sub-buffer; that copy is then
 * thrown away (the check below), so ThreadSanitizer is told not to look. */
__attribute__((no_sanitize("thread"))) static void racy_copy(void *dst, const void *src,
                                                             size_t bytes)
{
    memcpy(dst, src, bytes);
}

__attribute__((no_sanitize("thread"))) static uint32_t racy_u32(const uint32_t *p)
{
    return *(const volatile uint32_t *)p;
}

__attribute__((no_sanitize("thread"))) static uint64_t racy_u64_at(const uint8_t *p)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = ((const volatile uint8_t *)p)[i];
    return bmt_get_u64(b);
}

/* 1 when packet `seq` is published and not reclaimed now. */
static int still_there(const struct bmt_ring *r, uint64_t seq)
{
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&((struct bmt_ring *)r)->consumed, memory_order_relaxed) <= seq;
}

int bmt_ring_copy_packet(const struct bmt_ring *r, uint64_t seq, uint8_t *out, size_t *bytes,
                         uint32_t *events, uint32_t *drops)
{
    struct bmt_ring *rw = (struct bmt_ring *)r;
    if (seq >= atomic_load_explicit(&rw->committed, memory_order_acquire) || !still_there(r, seq))
        return 0;
    uint32_t idx = (uint32_t)(seq % r->subbuf_count);
    uint32_t size = racy_u32(&r->packet_bytes[idx]);
    if (size < BMT_PKT_HEADER_BYTES || size > r->subbuf_bytes)
        return 0;
    racy_copy(out, subbuf(r, seq), size);
    *events = racy_u32(&r->packet_events[idx]);
    *drops = r->packet_drops ? racy_u32(&r->packet_drops[idx]) : 0;
    *bytes = size;
    return still_there(r, seq);
}

int bmt_ring_packet_end(const struct bmt_ring *r, uint64_t seq, uint64_t *ts_end_ns)
{
    struct bmt_ring *rw = (struct bmt_ring *)r;
    if (seq >= atomic_load_explicit(&rw->committed, memory_order_acquire) || !still_there(r, seq))
        return 0;
    *ts_end_ns = racy_u64_at(subbuf(r, seq) + BMT_PKT_TS_END);
    return still_there(r, seq);
}
