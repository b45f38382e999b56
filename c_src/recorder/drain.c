/* Writing packets (contract in drain.h): the consumer's and the finish's
 * one way of moving a ring's published packets to the trace directory and
 * the relayd client, applying the caps (max_events, max_bytes) and
 * counting what they leave unwritten, and the counts of what a session was
 * offered and what is not on disk yet.
 *
 * Called with the ring's packets owned by the caller: the consumer thread
 * while the session runs, the finisher (control held, writers out) after.
 */
#include "drain.h"

/* Total events offered to `s` so far (recorded or dropped by the rings). */
uint64_t bmt_rec_offered_count(struct bmt_session *s)
{
    uint64_t n = atomic_load_explicit(&s->no_slot_drops, memory_order_relaxed);
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_ring *r = &s->slots[i].ring;
        n += atomic_load_explicit(&r->written_count, memory_order_relaxed) +
             atomic_load_explicit(&r->discarded_count, memory_order_relaxed);
    }
    return n;
}

/* Bytes of the session's flight captures on disk (max_bytes covers them). */
static uint64_t capture_bytes(struct bmt_session *s)
{
    return atomic_load_explicit(&s->capture.bytes, memory_order_relaxed);
}

/* Events offered to `s` that neither its trace on disk holds nor its
 * packets on disk count as discarded: what a crash now would lose. */
uint64_t bmt_rec_unwritten_count(struct bmt_session *s)
{
    uint64_t accounted = atomic_load_explicit(&s->events_on_disk, memory_order_relaxed);
    for (int i = 0; i < s->ring_count; i++)
        accounted += s->dir.streams[i].stamped_discarded;
    uint64_t offered = bmt_rec_offered_count(s);
    return offered > accounted ? offered - accounted : 0;
}

/* Writes (or, past a cap or after a failure, counts as lost) every
 * published packet of ring `i`. Returns the reason the session must stop
 * for, or NONE. */
enum bmt_stop_reason bmt_rec_drain_ring(struct bmt_session *s, int i, int capped)
{
    struct bmt_ring *r = &s->slots[i].ring;
    enum bmt_stop_reason stop = BMT_REASON_NONE;
    const uint8_t *pkt;
    size_t bytes;
    uint32_t events;
    /* At most one ring's worth per call: a writer refilling the ring as
     * fast as the disk takes it would otherwise keep the consumer here, and
     * the caps (duration, max_rate, the directory's removal) it checks
     * between calls would never fire (seen with O_DIRECT: a 100 ms
     * duration ended after 8-18 s). At stop the writers are gone and the
     * ring holds at most subbuf_count packets: one call still drains it. */
    for (uint32_t budget = r->subbuf_count;
         budget > 0 && (pkt = bmt_ring_peek(r, &bytes, &events)) != NULL; budget--) {
        uint64_t on_disk = atomic_load_explicit(&s->events_on_disk, memory_order_relaxed);
        if (!capped && s->cfg.max_events && on_disk + events > s->cfg.max_events)
            stop = BMT_REASON_MAX_EVENTS;
        else if (!capped && s->cfg.max_bytes &&
                 s->dir.bytes_on_disk + capture_bytes(s) +
                         bmt_trace_dir_packet_bytes(&s->dir, (unsigned)i, pkt, bytes,
                                                    r->subbuf_bytes) >
                     s->cfg.max_bytes)
            stop = BMT_REASON_MAX_BYTES;
        if (capped || stop != BMT_REASON_NONE || s->dir.error) {
            bmt_trace_dir_lose(&s->dir, (unsigned)i, events);
            if (s->cfg.relayd)
                bmt_relayd_lose(s->cfg.relayd, (unsigned)i, events);
            atomic_fetch_add(&s->lost_on_disk, events);
            capped = 1;
        } else {
            /* The relayd client copies the packet as the ring made it;
             * then the consumer, which owns it between peek and release,
             * lets the directory patch its sequence number and loss
             * count. */
            if (s->cfg.relayd)
                bmt_relayd_packet(s->cfg.relayd, (unsigned)i, pkt, bytes, events);
            int rc = bmt_trace_dir_write_packet(&s->dir, (unsigned)i, (uint8_t *)pkt, bytes,
                                                r->subbuf_bytes, events);
            if (rc < 0) {
                int none = 0;
                atomic_compare_exchange_strong(&s->error, &none, -rc);
                atomic_fetch_add(&s->lost_on_disk, events);
                stop = BMT_REASON_WRITE_ERROR;
                capped = 1;
            } else {
                atomic_fetch_add(&s->events_on_disk, events);
            }
        }
        bmt_ring_release(r);
    }
    atomic_store(&s->bytes_on_disk, s->dir.bytes_on_disk);
    return stop;
}
