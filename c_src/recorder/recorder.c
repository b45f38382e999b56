/* Recording sessions (contract in recorder.h): start, the consumer thread,
 * finishing (by request or by the session itself), snapshot, and the
 * process-exit flush.
 *
 * The consumer sleeps on an eventfd: a writer that publishes a packet wakes
 * it (non-blocking write, at most one per wakeup), and it wakes anyway every
 * CONSUMER_TICK_NS. Each pass it writes every published packet of every
 * discard-mode ring, applying the caps as it goes; twice per flush
 * interval it asks rings that saw events to publish their partial packet
 * (a writer does at its next event) and flushes rings that went quiet
 * itself, by freezing them (recorder.h). Overwrite-mode rings belong to
 * their writers until the finish or a snapshot freezes them.
 *
 * A streaming session also hands each packet to its relayd client
 * (relayd_client.h) before the directory writes it, pumps the client's
 * non-blocking sockets every pass (polling them with the eventfd), tells
 * it which rings went idle (live beacons), and ends its copy at the finish
 * (section "streaming" below; the client never blocks the consumer).
 *
 * Threads here are plain pthreads, not the VM's: the recorder is pure C so
 * that its protocol can be tested under ThreadSanitizer without a VM.
 */
#define _GNU_SOURCE /* pthread_setname_np, pthread_mutex_timedlock */
#include "recorder.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CONSUMER_TICK_NS (10 * 1000 * 1000)
#define RATE_WINDOW_NS (100 * 1000 * 1000)
/* Pause iterations a writer waits for a frozen ring to thaw before it
 * drops the event (a freeze lasts one packet close: well under this). */
#define FROZEN_SPIN 2000
/* How long the process-exit flush waits for the control lock. */
#define EXIT_LOCK_WAIT_S 2
/* Streaming: how long a start waits for the relayd session to open, and a
 * finish for the relayd to confirm the trace's end (at process exit: less). */
#define RELAYD_OPEN_NS (UINT64_C(3000) * 1000 * 1000)
#define RELAYD_FINISH_NS (UINT64_C(5000) * 1000 * 1000)
#define RELAYD_EXIT_FINISH_NS (UINT64_C(1000) * 1000 * 1000)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

const char *bmt_rec_reason_name(enum bmt_stop_reason reason)
{
    switch (reason) {
    case BMT_REASON_NONE: return "undefined";
    case BMT_REASON_STOP: return "stop";
    case BMT_REASON_DURATION: return "duration";
    case BMT_REASON_MAX_EVENTS: return "max_events";
    case BMT_REASON_MAX_BYTES: return "max_bytes";
    case BMT_REASON_MAX_RATE: return "max_rate";
    case BMT_REASON_WRITE_ERROR: return "write_error";
    case BMT_REASON_DIR_REMOVED: return "dir_removed";
    case BMT_REASON_EXIT: return "vm_exit";
    case BMT_REASON_UNLOAD: return "unload";
    }
    return "undefined";
}

/* ---- the writer's slow path ---- */

struct bmt_ring *bmt_rec_enter_slow(struct bmt_session *s, uint64_t generation,
                                    struct bmt_slot *sl)
{
    /* busy is 1 here. */
    for (int attempt = 0;; attempt++) {
        int state = atomic_load_explicit(&s->state, memory_order_acquire);
        if (atomic_load_explicit(&s->generation, memory_order_relaxed) != generation)
            break;
        if (state == BMT_SESSION_RUNNING) {
            if (!atomic_load_explicit(&sl->frozen, memory_order_acquire)) {
                if (sl->frozen_drops) {
                    bmt_ring_drop(&sl->ring, sl->frozen_drops);
                    sl->frozen_drops = 0;
                }
                return &sl->ring;
            }
            if (attempt > 0) {
                /* Still frozen after the wait: drop, counted (with busy
                 * held, so a finisher reads the count after us). */
                sl->frozen_drops++;
                break;
            }
            /* Step out while waiting, so the freezer is never held up by
             * us, then announce ourselves again. */
            atomic_store_explicit(&sl->busy, 0, memory_order_release);
            for (int i = 0; i < FROZEN_SPIN && atomic_load_explicit(&sl->frozen,
                                                                   memory_order_acquire); i++)
                cpu_relax();
            atomic_store_explicit(&sl->busy, 1, memory_order_relaxed);
            bmt_fence_light();
            continue;
        }
        if (state == BMT_SESSION_FINISHING || state == BMT_SESSION_FINISHED)
            bmt_ring_count(&sl->late_drops, 1);
        break;
    }
    atomic_store_explicit(&sl->busy, 0, memory_order_release);
    return NULL;
}

void bmt_rec_wake(struct bmt_session *s)
{
    if (!atomic_exchange_explicit(&s->wake_pending, 1, memory_order_relaxed)) {
        uint64_t one = 1;
        /* EAGAIN (counter full) still leaves the consumer woken. */
        if (write(s->wake_fd, &one, sizeof one) < 0) {
        }
    }
}

/* ---- freezing a ring (the other side of the bracket) ---- */

/* Waits until no writer is inside slot `sl`, after the caller stored what
 * keeps new writers out (state or frozen) and issued bmt_fence_heavy. */
static void wait_writer_out(struct bmt_slot *sl)
{
    while (atomic_load_explicit(&sl->busy, memory_order_acquire))
        sched_yield();
}

static void thaw(struct bmt_slot *sl)
{
    atomic_store_explicit(&sl->frozen, 0, memory_order_release);
}

/* ---- session masks ---- */

/* Recomputes the lock-free views of which sessions run (control held). */
static void update_masks(struct bmt_recorder *rec)
{
    uint64_t mask = 0;
    uint16_t per_tp[BMT_TP_COUNT] = {0};
    uint16_t probes = 0;
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        struct bmt_session *s = &rec->sessions[i];
        if (atomic_load(&s->state) != BMT_SESSION_RUNNING)
            continue;
        if (bmt_capture_on(&s->capture) && (s->cfg.capture.armed >> BMT_TRIGGER_PROBE & 1))
            probes = (uint16_t)(probes | 1u << i);
        uint64_t m = atomic_load(&s->enable_mask);
        mask |= m;
        for (int tp = 0; tp < BMT_TP_COUNT; tp++)
            if (m >> tp & 1)
                per_tp[tp] = (uint16_t)(per_tp[tp] | 1u << i);
    }
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        atomic_store(&rec->tp_sessions[tp], per_tp[tp]);
    atomic_store(&rec->recorder_mask, mask);
    atomic_store(&rec->probe_sessions, probes);
    atomic_fetch_add(&rec->epoch, 1);
}

/* ---- writing packets ---- */

/* Total events offered to `s` so far (recorded or dropped by the rings). */
static uint64_t offered_count(struct bmt_session *s)
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

/* A flight capture's tail, first step: asks the writer of every active
 * ring to close its open packet at its next event (no waiting, no drop). */
static void request_flush_all(struct bmt_session *s)
{
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_ring *r = &s->slots[i].ring;
        if (atomic_load_explicit(&r->written_count, memory_order_relaxed) +
                atomic_load_explicit(&r->discarded_count, memory_order_relaxed) !=
            0)
            bmt_ring_request_flush(r);
    }
}

/* Second step, a tick later: closes the open packet of the rings whose
 * writer has not come back since (idle: freezing them costs no writer
 * anything), all with one heavy fence. */
static void flush_requested(struct bmt_session *s, uint64_t now)
{
    int idle[BMT_MAX_THREADS];
    int n = 0;
    for (int i = 0; i < s->ring_count; i++) {
        if (!atomic_load_explicit(&s->slots[i].ring.flush_requested, memory_order_relaxed))
            continue;
        idle[n++] = i;
        atomic_store_explicit(&s->slots[i].frozen, 1, memory_order_relaxed);
    }
    if (n == 0)
        return;
    bmt_fence_heavy();
    for (int k = 0; k < n; k++) {
        struct bmt_slot *sl = &s->slots[idle[k]];
        wait_writer_out(sl);
        atomic_store_explicit(&sl->ring.flush_requested, 0, memory_order_relaxed);
        bmt_ring_flush(&sl->ring, now);
        thaw(sl);
    }
}

/* Events offered to `s` that neither its trace on disk holds nor its
 * packets on disk count as discarded: what a crash now would lose. */
static uint64_t unwritten_count(struct bmt_session *s)
{
    uint64_t accounted = atomic_load_explicit(&s->events_on_disk, memory_order_relaxed);
    for (int i = 0; i < s->ring_count; i++)
        accounted += s->dir.streams[i].stamped_discarded;
    uint64_t offered = offered_count(s);
    return offered > accounted ? offered - accounted : 0;
}

/* Writes (or, past a cap or after a failure, counts as lost) every
 * published packet of ring `i`. Returns the reason the session must stop
 * for, or NONE. */
static enum bmt_stop_reason drain_ring(struct bmt_session *s, int i, int capped)
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

/* ---- streaming (relayd_client.h) ---- */

/* Ends the relayd's copy of `s` (the finish, control held) with each
 * ring's final loss count, puts its figures in *st, and frees the client.
 * A session that streams only has the relayd's events as its own, and what
 * the relayd lost among its discarded. */
static void relayd_finish(struct bmt_session *s, struct bmt_rec_stats *st,
                          const uint64_t *final_discarded, uint64_t now,
                          enum bmt_stop_reason reason)
{
    struct bmt_relayd *r = s->cfg.relayd;
    uint64_t wait = reason == BMT_REASON_EXIT ? RELAYD_EXIT_FINISH_NS : RELAYD_FINISH_NS;
    (void)bmt_relayd_finish(r, final_discarded, (unsigned)s->ring_count, now,
                            bmt_clock_ns() + wait);
    bmt_relayd_stats_get(r, &st->relayd);
    st->has_relayd = 1;
    if (s->dir.no_files) {
        st->events = st->relayd.events;
        st->discarded += st->relayd.lost;
    }
    s->cfg.relayd = NULL;
    bmt_relayd_free(r);
}

/* The live figures of a running streaming session (control held). */
static void relayd_info(struct bmt_session *s, struct bmt_rec_stats *stats)
{
    bmt_relayd_stats_get(s->cfg.relayd, &stats->relayd);
    stats->has_relayd = 1;
    if (s->dir.no_files) {
        stats->events = stats->relayd.events;
        stats->discarded += stats->relayd.lost;
        stats->bytes = stats->relayd.bytes;
    }
}

/* ---- finishing ---- */

/* Finishes `s` (control held, state already FINISHING, consumer stopped or
 * the calling thread): waits for writers, drains every ring, seals and
 * closes the trace, fills s->final, frees the rings. */
static void finish(struct bmt_recorder *rec, struct bmt_session *s, enum bmt_stop_reason reason)
{
    atomic_store(&s->reason, reason);
    update_masks(rec);
    bmt_fence_heavy();
    for (int i = 0; i < s->ring_count; i++)
        wait_writer_out(&s->slots[i]);

    uint64_t now = bmt_clock_ns();
    int capped = reason == BMT_REASON_MAX_EVENTS || reason == BMT_REASON_MAX_BYTES ||
                 reason == BMT_REASON_WRITE_ERROR || reason == BMT_REASON_DIR_REMOVED;
    struct bmt_rec_stats *st = &s->final;
    memset(st, 0, sizeof *st);
    if (bmt_capture_on(&s->capture)) {
        /* A capture being written gets its tail before the rings are
         * drained into the session's own trace (which consumes them). */
        for (int i = 0; i < s->ring_count; i++) {
            struct bmt_slot *sl = &s->slots[i];
            if (sl->frozen_drops) {
                bmt_ring_drop(&sl->ring, sl->frozen_drops);
                sl->frozen_drops = 0;
            }
            bmt_ring_flush(&sl->ring, now);
        }
        bmt_capture_finish(&s->capture, now, s->dir.bytes_on_disk);
    }
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_slot *sl = &s->slots[i];
        struct bmt_ring *r = &sl->ring;
        if (sl->frozen_drops) {
            bmt_ring_drop(r, sl->frozen_drops);
            sl->frozen_drops = 0;
        }
        if (atomic_load(&r->written_count) == 0 && atomic_load(&r->discarded_count) == 0)
            continue;
        /* Overwrite rings still hold their packets; discard rings their
         * unwritten ones. Either way: the rest, then the open packet. */
        if (drain_ring(s, i, capped) != BMT_REASON_NONE)
            capped = 1;
        bmt_ring_flush(r, now);
        if (drain_ring(s, i, capped) != BMT_REASON_NONE)
            capped = 1;
        st->overwritten += r->overwritten_count;
    }
    /* Events no ring could take are told in stream 0's last packet. */
    uint64_t no_slot = atomic_load(&s->no_slot_drops);
    uint64_t *final_discarded = s->cfg.relayd ? calloc((size_t)s->ring_count, sizeof *final_discarded)
                                              : NULL;
    for (int i = 0; i < s->ring_count; i++) {
        uint64_t ring_discarded = atomic_load(&s->slots[i].ring.discarded_count);
        if (i == 0)
            ring_discarded += no_slot;
        if (final_discarded)
            final_discarded[i] = ring_discarded;
        /* A seal that fails leaves the trace short of the count; the
         * figures below still have it. */
        (void)bmt_trace_dir_seal_stream(&s->dir, (unsigned)i, ring_discarded, now);
        st->discarded += ring_discarded + s->dir.streams[i].lost_events;
        st->overwritten += s->dir.streams[i].rotated_events;
        st->events += s->dir.streams[i].events;
    }
    if (s->cfg.relayd)
        relayd_finish(s, st, final_discarded, now, reason);
    free(final_discarded);
    if (bmt_trace_dir_removed(&s->dir) && reason != BMT_REASON_DIR_REMOVED) {
        reason = BMT_REASON_DIR_REMOVED;
        atomic_store(&s->reason, reason);
    }
    if (atomic_load(&s->error) && reason != BMT_REASON_WRITE_ERROR &&
        reason != BMT_REASON_DIR_REMOVED)
        reason = BMT_REASON_WRITE_ERROR;
    /* Every event recorded is on disk now, or counted lost. */
    bmt_trace_dir_mark_complete(&s->dir);
    atomic_store(&s->events_on_disk, st->events);
    st->bytes = st->has_relayd && s->dir.no_files ? st->relayd.bytes : s->dir.bytes_on_disk;
    st->reason = reason;
    st->error = atomic_load(&s->error);
    atomic_store(&s->reason, reason);
    atomic_store(&s->bytes_on_disk, st->bytes);

    if (s->wake_fd >= 0)
        close(s->wake_fd);
    s->wake_fd = -1;
    if (s->ring_mem)
        munmap(s->ring_mem, s->ring_mem_bytes);
    s->ring_mem = NULL;
    free(s->packet_meta);
    s->packet_meta = NULL;
    if (bmt_capture_on(&s->capture)) {
        st->flight = 1;
        bmt_capture_stats(&s->capture, &st->capture);
    }
    if (s->control_slot >= 0) {
        st->sampled = 1;
        st->sample_reactions = s->sampling.reactions;
        for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
            st->sample_ratio[k] = atomic_load(&s->sampling.ratio[k]);
    }
    bmt_capture_free(&s->capture);
    free(s->ring_ptrs);
    s->ring_ptrs = NULL;
    atomic_store(&s->state, BMT_SESSION_FINISHED);
    atomic_fetch_add(&rec->epoch, 1);
}

/* Fills *stats with the figures of a finished session, with the events
 * offered since it ended (after_stop: not losses). */
static void collect(struct bmt_session *s, struct bmt_rec_stats *stats)
{
    *stats = s->final;
    for (int i = 0; i < s->ring_count; i++)
        stats->after_stop += atomic_load(&s->slots[i].late_drops);
}

/* Closes a finished session's trace (control held). The events offered
 * after the finish are not in its loss counts: the session had ended. */
static void close_trace(struct bmt_session *s)
{
    if (s->dir.dirfd < 0)
        return;
    /* The caller made the core FREE: wait out writers still counting, so
     * that collect() reads a final after_stop. */
    bmt_fence_heavy();
    for (int i = 0; i < s->ring_count; i++)
        wait_writer_out(&s->slots[i]);
    int rc = bmt_trace_dir_close(&s->dir);
    if (rc < 0) {
        int none = 0;
        atomic_compare_exchange_strong(&s->error, &none, -rc);
    }
}

/* Joins the consumer of `s` if it still has one (control held). */
static void join_consumer(struct bmt_session *s)
{
    if (!s->consumer_joinable)
        return;
    atomic_store(&s->consumer_stop, 1);
    if (s->wake_fd >= 0) {
        atomic_store(&s->wake_pending, 0);
        bmt_rec_wake(s);
    }
    pthread_join(s->consumer, NULL);
    s->consumer_joinable = 0;
}

/* Releases a finished core for reuse (control held). */
static void release_core(struct bmt_recorder *rec, struct bmt_session *s)
{
    join_consumer(s);
    uint64_t packed = atomic_load(&s->generation) << 8 | (uint64_t)(s - rec->sessions + 1);
    atomic_compare_exchange_strong(&rec->default_session, &packed, 0);
    atomic_store(&s->state, BMT_SESSION_FREE);
    atomic_fetch_add(&rec->epoch, 1);
}

/* ---- the consumer ---- */

/* Linux 5.14+: fault pages in as writes would, without writing. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct consumer_state {
    uint8_t *populated;              /* per ring: its pages are faulted in */
    uint64_t *relayd_seen;           /* streaming, per ring: written + discarded when last seen */
    uint64_t *relayd_seen_ns;        /* and when (trace clock) */
    uint64_t last_flush_ns;
    uint64_t last_mark_ns;           /* the incomplete marker's last update */
    uint64_t rate_ns, rate_offered;  /* start of the rate window */
    unsigned calm_windows;           /* rate windows in a row under a quarter of max_rate */
    uint64_t *seen;                  /* per ring: written + discarded at the last flush tick */
    uint8_t *unflushed;              /* per ring: events since its last flush */
};

/* Flushes the partial packets of rings that saw no event since the last
 * tick (frozen, all with one heavy fence), and asks the others to flush at
 * their next event. */
static void flush_tick(struct bmt_session *s, struct consumer_state *cs, uint64_t now)
{
    int quiet[BMT_MAX_THREADS];
    int n = 0;
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_ring *r = &s->slots[i].ring;
        uint64_t v = atomic_load_explicit(&r->written_count, memory_order_relaxed) +
                     atomic_load_explicit(&r->discarded_count, memory_order_relaxed);
        if (v != cs->seen[i]) {
            cs->seen[i] = v;
            cs->unflushed[i] = 1;
            bmt_ring_request_flush(r);
        } else if (cs->unflushed[i]) {
            quiet[n++] = i;
            atomic_store_explicit(&s->slots[i].frozen, 1, memory_order_relaxed);
        }
    }
    if (n == 0)
        return;
    bmt_fence_heavy();
    for (int k = 0; k < n; k++) {
        struct bmt_slot *sl = &s->slots[quiet[k]];
        if (!atomic_load_explicit(&sl->busy, memory_order_acquire)) {
            bmt_ring_flush(&sl->ring, now);
            cs->unflushed[quiet[k]] = 0;
        }
        thaw(sl);
    }
}

/* Rings are mapped lazily so that threads that never trace cost no memory;
 * once a thread writes, its whole ring is faulted in here, on the consumer,
 * instead of one page fault per 4 KiB on the traced process's scheduler
 * (about every hundred events). The kernel only maps pages: the writer's
 * bytes are untouched, so this runs beside the writer safely. Kernels
 * without MADV_POPULATE_WRITE refuse it and the writer faults as before. */
static void populate_active_rings(struct bmt_session *s, struct consumer_state *cs)
{
    size_t ring_bytes = s->cfg.subbuf_bytes * s->cfg.subbuf_count;
    for (int i = 0; i < s->ring_count; i++) {
        if (cs->populated[i] ||
            atomic_load_explicit(&s->slots[i].ring.written_count, memory_order_relaxed) +
                    atomic_load_explicit(&s->slots[i].ring.discarded_count,
                                         memory_order_relaxed) == 0)
            continue;
        cs->populated[i] = 1;
        (void)madvise(s->ring_mem + (size_t)i * ring_bytes, ring_bytes, MADV_POPULATE_WRITE);
    }
}

/* Streaming, every pass: in a live session, tells the client which rings
 * are idle (no event since the last flush tick, their last packet flushed
 * and drained) and up to when: the previous pass that saw the same count,
 * not this one, so that an event whose writer read the clock before it and
 * has yet to commit (a few hundred ns; a preempted writer, longer) is
 * still after the beacon. A beacon lets live viewers move past the ring.
 * Then moves the client's sockets along. */
static void relayd_tick(struct bmt_session *s, struct consumer_state *cs, uint64_t now)
{
    struct bmt_relayd *r = s->cfg.relayd;
    if (s->cfg.mode == BMT_RING_DISCARD && cs->relayd_seen && cs->relayd_seen_ns && cs->seen &&
        cs->unflushed) {
        for (int i = 0; i < s->ring_count; i++) {
            struct bmt_ring *ring = &s->slots[i].ring;
            uint64_t v = atomic_load_explicit(&ring->written_count, memory_order_relaxed) +
                         atomic_load_explicit(&ring->discarded_count, memory_order_relaxed);
            uint64_t before = cs->relayd_seen_ns[i];
            cs->relayd_seen_ns[i] = now;
            if (v != cs->relayd_seen[i]) {
                cs->relayd_seen[i] = v;
                continue;
            }
            if (v != cs->seen[i] || cs->unflushed[i] ||
                atomic_load_explicit(&ring->committed, memory_order_acquire) !=
                    atomic_load_explicit(&ring->consumed, memory_order_relaxed))
                continue;
            bmt_relayd_idle(r, (unsigned)i, before, now);
        }
    }
    bmt_relayd_pump(r, now);
}

/* Takes the control lock unless a stop wants the consumer gone first. */
static int lock_or_stop(struct bmt_recorder *rec, struct bmt_session *s)
{
    while (pthread_mutex_trylock(&rec->control) != 0) {
        if (atomic_load(&s->consumer_stop))
            return 0;
        struct timespec ms = {0, 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    if (atomic_load(&s->consumer_stop) || atomic_load(&s->state) != BMT_SESSION_RUNNING) {
        pthread_mutex_unlock(&rec->control);
        return 0;
    }
    return 1;
}

/* Records in the consumer's ring that kind `kind` is sampled 1 in
 * `ratio` from `ts_ns` on (org_erlang_beamtrace:sample_ratio). */
static void emit_ratio(struct bmt_session *s, int kind, uint32_t ratio, const char *reason,
                       uint64_t ts_ns)
{
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = BMT_TP_sample_ratio;
    ev.ts_ns = ts_ns;
    const char *name = bmt_sample_kind_name((enum bmt_sample_kind)kind);
    ev.values[BMT_F_sample_ratio_kind].str = name;
    ev.values[BMT_F_sample_ratio_kind].len = (uint32_t)strlen(name);
    ev.values[BMT_F_sample_ratio_ratio].integer = ratio;
    ev.values[BMT_F_sample_ratio_reason].str = reason;
    ev.values[BMT_F_sample_ratio_reason].len = (uint32_t)strlen(reason);
    uint64_t gen = atomic_load(&s->generation);
    struct bmt_ring *r = bmt_rec_enter(s, gen, (unsigned)s->control_slot);
    if (!r)
        return;
    uint8_t *start;
    uint8_t *dst = bmt_rec_reserve(s, r, BMT_TP_sample_ratio, ts_ns, &start);
    if (dst)
        bmt_rec_commit(r, start, dst + bmt_event_encode_payload(&ev, dst), ts_ns);
    bmt_rec_leave(s, (unsigned)s->control_slot, ts_ns);
}

/* The ratios changed: the tracer's mask, the history, the trace. */
static void ratios_changed(struct bmt_session *s, const uint32_t before[BMT_SAMPLE_KINDS],
                           const char *reason, uint64_t now)
{
    atomic_store_explicit(&s->sampled_mask, atomic_load(&s->sampling.mask), memory_order_relaxed);
    bmt_sampling_note(&s->sampling, now);
    s->sampling.reactions++;
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++) {
        uint32_t r = atomic_load(&s->sampling.ratio[k]);
        if (r != before[k])
            emit_ratio(s, k, r, reason, now);
    }
}

/* The offered rate passed max_rate (events_ns > cap_ns, both events/s
 * times the window): every kind that reacts keeps fewer, by the factor
 * that brings the rate to 80% of the cap, at least 2. */
static void sample_more(struct bmt_session *s, struct consumer_state *cs, uint64_t events_ns,
                        uint64_t cap_ns, uint64_t now)
{
    uint64_t four_caps = cap_ns > 0 ? cap_ns * 4 : 1;
    uint64_t factor = (events_ns * 5 + four_caps - 1) / four_caps;
    if (factor < 2)
        factor = 2;
    uint32_t before[BMT_SAMPLE_KINDS];
    int changed = 0;
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++) {
        before[k] = atomic_load(&s->sampling.ratio[k]);
        if (!bmt_sample_reacts(&s->sampling, (enum bmt_sample_kind)k))
            continue;
        uint64_t r = (uint64_t)before[k] * factor;
        changed |= bmt_sampling_set(&s->sampling, (enum bmt_sample_kind)k,
                                    r > BMT_SAMPLE_MAX_RATIO ? BMT_SAMPLE_MAX_RATIO : (uint32_t)r);
    }
    cs->calm_windows = 0;
    if (changed)
        ratios_changed(s, before, "max_rate", now);
}

/* Under max_rate: after CALM_WINDOWS windows in a row where twice the
 * rate stays under half the cap, each kind keeps twice as many again, down
 * to the sample option's own ratio. */
#define CALM_WINDOWS 20
static void sample_less(struct bmt_session *s, struct consumer_state *cs, uint64_t events_ns,
                        uint64_t cap_ns, uint64_t now)
{
    int above_base = 0;
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
        if (atomic_load(&s->sampling.ratio[k]) > s->sampling.base[k])
            above_base = 1;
    if (!above_base || events_ns * 4 >= cap_ns) {
        cs->calm_windows = 0;
        return;
    }
    if (++cs->calm_windows < CALM_WINDOWS)
        return;
    cs->calm_windows = 0;
    uint32_t before[BMT_SAMPLE_KINDS];
    int changed = 0;
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++) {
        before[k] = atomic_load(&s->sampling.ratio[k]);
        uint32_t r = before[k] / 2;
        if (r < s->sampling.base[k])
            r = s->sampling.base[k];
        changed |= bmt_sampling_set(&s->sampling, (enum bmt_sample_kind)k, r);
    }
    if (changed)
        ratios_changed(s, before, "calmer", now);
}

struct consumer_arg {
    struct bmt_recorder *rec;
    struct bmt_session *s;
};

static void *consumer_main(void *arg)
{
    struct bmt_recorder *rec = ((struct consumer_arg *)arg)->rec;
    struct bmt_session *s = ((struct consumer_arg *)arg)->s;
    free(arg);
    pthread_setname_np(pthread_self(), "beamtrace_cons");
    struct consumer_state cs = {0};
    cs.seen = calloc((size_t)s->ring_count, sizeof *cs.seen);
    cs.unflushed = calloc((size_t)s->ring_count, 1);
    cs.populated = calloc((size_t)s->ring_count, 1);
    if (s->cfg.relayd) {
        cs.relayd_seen = calloc((size_t)s->ring_count, sizeof *cs.relayd_seen);
        cs.relayd_seen_ns = calloc((size_t)s->ring_count, sizeof *cs.relayd_seen_ns);
    }
    cs.last_flush_ns = cs.rate_ns = cs.last_mark_ns = bmt_clock_ns();
    /* The eventfd, and a streaming session's two sockets. */
    struct pollfd pfd[3] = {{s->wake_fd, POLLIN, 0}};
    enum bmt_stop_reason stop = BMT_REASON_NONE;
    /* The sample option's ratios, at the trace's start. */
    for (int k = 0; s->control_slot >= 0 && k < BMT_SAMPLE_KINDS; k++)
        if (atomic_load(&s->sampling.ratio[k]) > 1)
            emit_ratio(s, k, atomic_load(&s->sampling.ratio[k]), "start", cs.rate_ns);
    while (!atomic_load(&s->consumer_stop) && stop == BMT_REASON_NONE) {
        uint64_t count;
        if (read(s->wake_fd, &count, sizeof count) < 0) {
            /* EAGAIN: woken by the tick, not by a writer. */
        }
        atomic_store_explicit(&s->wake_pending, 0, memory_order_relaxed);
        uint64_t now = bmt_clock_ns();
        if (cs.populated)
            populate_active_rings(s, &cs);
        if (s->cfg.mode == BMT_RING_DISCARD) {
            for (int i = 0; i < s->ring_count && stop == BMT_REASON_NONE; i++)
                stop = drain_ring(s, i, 0);
            if (stop == BMT_REASON_NONE && cs.seen && cs.unflushed &&
                now - cs.last_flush_ns >= s->cfg.flush_interval_ns / 2) {
                cs.last_flush_ns = now;
                flush_tick(s, &cs, now);
            }
        }
        if (s->cfg.relayd)
            relayd_tick(s, &cs, now);
        if (stop == BMT_REASON_NONE && bmt_capture_on(&s->capture)) {
            enum bmt_capture_step step = bmt_capture_tick(&s->capture, now, s->dir.bytes_on_disk);
            if (step == BMT_CAPTURE_REQUEST_FLUSH) {
                request_flush_all(s);
            } else if (step == BMT_CAPTURE_FLUSH) {
                flush_requested(s, now);
                step = bmt_capture_tick(&s->capture, now, s->dir.bytes_on_disk);
            }
            if (step == BMT_CAPTURE_MAX_BYTES)
                stop = BMT_REASON_MAX_BYTES;
        }
        if (stop == BMT_REASON_NONE && now - cs.last_mark_ns >= s->cfg.flush_interval_ns) {
            /* What a crash now would lose, said in the trace. */
            cs.last_mark_ns = now;
            (void)bmt_trace_dir_set_unwritten(&s->dir, unwritten_count(s), now);
        }
        if (stop == BMT_REASON_NONE && s->cfg.duration_ns && now - s->start_ns >= s->cfg.duration_ns)
            stop = BMT_REASON_DURATION;
        if (stop == BMT_REASON_NONE && s->cfg.max_rate && now - cs.rate_ns >= RATE_WINDOW_NS) {
            /* Not counting the state dump (bmt_rec_rate_exempt): read the
             * exempt count first, it is bumped before its event is offered,
             * so an event in between is undercounted now (then counted in
             * the next window), never counted twice; the value is kept
             * from going backwards. */
            uint64_t exempt = atomic_load_explicit(&s->rate_exempt, memory_order_relaxed);
            uint64_t total = offered_count(s);
            uint64_t offered = total > exempt ? total - exempt : 0;
            if (offered < cs.rate_offered)
                offered = cs.rate_offered;
            /* events/s = offered over the window, compared without division. */
            uint64_t events_ns = (offered - cs.rate_offered) * UINT64_C(1000000000);
            uint64_t cap_ns = s->cfg.max_rate * (now - cs.rate_ns);
            if (events_ns > cap_ns) {
                if (s->cfg.on_max_rate == BMT_ON_MAX_RATE_SAMPLE && s->control_slot >= 0)
                    sample_more(s, &cs, events_ns, cap_ns, now);
                else
                    stop = BMT_REASON_MAX_RATE;
            } else if (s->cfg.on_max_rate == BMT_ON_MAX_RATE_SAMPLE && s->control_slot >= 0) {
                sample_less(s, &cs, events_ns, cap_ns, now);
            }
            cs.rate_ns = now;
            cs.rate_offered = offered;
        }
        if (stop == BMT_REASON_NONE && bmt_trace_dir_removed(&s->dir))
            stop = BMT_REASON_DIR_REMOVED;
        if (stop == BMT_REASON_NONE) {
            int n = 1 + (s->cfg.relayd ? bmt_relayd_pollfds(s->cfg.relayd, pfd + 1) : 0);
            poll(pfd, (nfds_t)n, CONSUMER_TICK_NS / 1000000);
        }
    }
    free(cs.relayd_seen);
    free(cs.relayd_seen_ns);
    free(cs.seen);
    free(cs.unflushed);
    free(cs.populated);
    if (stop != BMT_REASON_NONE && lock_or_stop(rec, s)) {
        int index = (int)(s - rec->sessions);
        uint64_t generation = atomic_load(&s->generation);
        atomic_store(&s->state, BMT_SESSION_FINISHING);
        finish(rec, s, stop);
        enum bmt_stop_reason reason = s->final.reason;
        pthread_mutex_unlock(&rec->control);
        if (rec->notify)
            rec->notify(rec->notify_ctx, index, generation, reason);
    }
    return NULL;
}

/* ---- start ---- */

static void release_rings(struct bmt_session *s)
{
    bmt_capture_free(&s->capture);
    free(s->ring_ptrs);
    s->ring_ptrs = NULL;
    if (s->ring_mem)
        munmap(s->ring_mem, s->ring_mem_bytes);
    s->ring_mem = NULL;
    free(s->packet_meta);
    s->packet_meta = NULL;
}

/* A core to start in: a free one, else the one that finished by itself
 * first (its figures were never collected; its trace is complete). */
static int take_core(struct bmt_recorder *rec)
{
    for (int i = 0; i < BMT_MAX_SESSIONS; i++)
        if (atomic_load(&rec->sessions[i].state) == BMT_SESSION_FREE)
            return i;
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        if (atomic_load(&rec->sessions[i].state) == BMT_SESSION_FINISHED) {
            release_core(rec, &rec->sessions[i]);
            close_trace(&rec->sessions[i]);
            return i;
        }
    }
    return -1;
}

int bmt_rec_start(struct bmt_recorder *rec, const struct bmt_rec_config *cfg, int format_option,
                  int make_default, int *index, uint64_t *generation)
{
    if (cfg->subbuf_count < 2 || cfg->subbuf_bytes <= BMT_PKT_HEADER_BYTES || cfg->enable_mask == 0 ||
        (cfg->capture.window_ns && cfg->mode != BMT_RING_OVERWRITE))
        return -EINVAL;
    pthread_mutex_lock(&rec->control);
    int idx = take_core(rec);
    if (idx < 0) {
        pthread_mutex_unlock(&rec->control);
        return -EBUSY;
    }
    struct bmt_session *s = &rec->sessions[idx];
    s->cfg = *cfg;
    if (s->cfg.flush_interval_ns == 0)
        s->cfg.flush_interval_ns = UINT64_C(1000000000);
    int rc = bmt_trace_dir_create(&s->dir, cfg->dir, cfg->file_mode, &cfg->info,
                                  cfg->tracefile_size_bytes, cfg->tracefile_count);
    if (rc < 0)
        goto fail;
    if (cfg->relayd) {
        /* Before anything else can fail: a refused relayd leaves nothing. */
        char why[2];
        rc = bmt_relayd_open(cfg->relayd, RELAYD_OPEN_NS, why, sizeof why);
        if (rc < 0)
            goto fail_dir;
    } else if (cfg->dir[0] == '\0') {
        rc = -EINVAL;
        goto fail_dir;
    }

    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        s->max_event_bytes[tp] = (uint32_t)(BMT_EVENT_HEADER_MAX_BYTES - BMT_EVENT_HEADER_BYTES +
                                            bmt_event_max_bytes(tp, cfg->message_max_bytes));
    /* Sampling that can change (the sample option, on_max_rate sample):
     * one more ring, the consumer's, where the sample_ratio events go. */
    int sampled = cfg->on_max_rate == BMT_ON_MAX_RATE_SAMPLE;
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
        if (cfg->sample_ratio[k] > 1)
            sampled = 1;
    s->ring_count = rec->max_threads;
    s->control_slot = -1;
    if (sampled && rec->max_threads < BMT_MAX_THREADS)
        s->control_slot = s->ring_count++;
    s->ring_mem_bytes = (size_t)s->ring_count * cfg->subbuf_bytes * cfg->subbuf_count;
    /* Address space only: a ring's pages are touched when its thread first
     * writes, so idle threads cost no memory. */
    s->ring_mem = mmap(NULL, s->ring_mem_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s->ring_mem == MAP_FAILED) {
        s->ring_mem = NULL;
        rc = -ENOMEM;
        goto fail_dir;
    }
    /* Per packet: events, bytes, and (captures) the drops while it was open. */
    int capture = cfg->capture.window_ns != 0;
    size_t meta_per_ring = (size_t)cfg->subbuf_count * (capture ? 3 : 2);
    s->packet_meta = calloc((size_t)s->ring_count * meta_per_ring, sizeof(uint32_t));
    s->ring_ptrs = capture ? malloc((size_t)s->ring_count * sizeof *s->ring_ptrs) : NULL;
    memset(&s->capture, 0, sizeof s->capture);
    if (!s->packet_meta || (capture && !s->ring_ptrs)) {
        rc = -ENOMEM;
        goto fail_mem;
    }
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_slot *sl = &s->slots[i];
        uint32_t *meta = s->packet_meta + (size_t)i * meta_per_ring;
        bmt_ring_init(&sl->ring, s->ring_mem + (size_t)i * cfg->subbuf_bytes * cfg->subbuf_count,
                      meta, meta + cfg->subbuf_count, cfg->subbuf_bytes, cfg->subbuf_count,
                      cfg->mode, (uint64_t)i, cfg->info.uuid);
        if (capture) {
            bmt_ring_log_drops(&sl->ring, meta + 2 * cfg->subbuf_count);
            s->ring_ptrs[i] = &sl->ring;
        }
        atomic_store(&sl->busy, 0);
        atomic_store(&sl->frozen, 0);
        atomic_store(&sl->late_drops, 0);
        sl->frozen_drops = 0;
    }
    atomic_store(&s->no_slot_drops, 0);
    atomic_store(&s->rate_exempt, 0);
    atomic_store(&s->events_on_disk, 0);
    atomic_store(&s->lost_on_disk, 0);
    atomic_store(&s->bytes_on_disk, s->dir.bytes_on_disk);
    atomic_store(&s->reason, BMT_REASON_NONE);
    atomic_store(&s->error, 0);
    atomic_store(&s->consumer_stop, 0);
    atomic_store(&s->wake_pending, 0);
    atomic_store(&s->enable_mask, cfg->enable_mask);
    atomic_store(&s->format_option, format_option);
    memset(&s->final, 0, sizeof s->final);
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->wake_fd < 0) {
        rc = -errno;
        goto fail_mem;
    }
    s->start_ns = bmt_clock_ns();
    bmt_sampling_init(&s->sampling, cfg->sample_ratio, s->start_ns);
    atomic_store(&s->sampled_mask, atomic_load(&s->sampling.mask));
    if (capture) {
        /* max_bytes covers the session's trace and its captures. */
        struct bmt_capture_config cc = cfg->capture;
        cc.max_bytes = cfg->max_bytes;
        rc = bmt_capture_init(&s->capture, &cc, s->ring_ptrs, s->ring_count, s->dir.path,
                              cfg->file_mode, &cfg->info, &s->sampling, s->start_ns);
        if (rc < 0) {
            close(s->wake_fd);
            s->wake_fd = -1;
            goto fail_mem;
        }
    }

    /* Generation and state before the consumer runs: it reads them. */
    uint64_t gen = (atomic_load(&s->generation) + 1) & ((UINT64_C(1) << BMT_GENERATION_BITS) - 1);
    if (gen == 0)
        gen = 1;
    atomic_store(&s->generation, gen);
    atomic_store(&s->state, BMT_SESSION_RUNNING);
    struct consumer_arg *arg = malloc(sizeof *arg);
    if (arg) {
        arg->rec = rec;
        arg->s = s;
    }
    if (!arg || pthread_create(&s->consumer, NULL, consumer_main, arg) != 0) {
        free(arg);
        atomic_store(&s->state, BMT_SESSION_FREE);
        close(s->wake_fd);
        s->wake_fd = -1;
        rc = -EAGAIN;
        goto fail_mem;
    }
    s->consumer_joinable = 1;
    update_masks(rec);
    if (make_default || atomic_load(&rec->default_session) == 0)
        atomic_store_explicit(&rec->default_session, gen << 8 | (uint64_t)(idx + 1),
                              memory_order_release);
    pthread_mutex_unlock(&rec->control);
    *index = idx;
    *generation = gen;
    return 0;

fail_mem:
    release_rings(s);
fail_dir:
    bmt_trace_dir_abandon(&s->dir);
fail:
    s->cfg.relayd = NULL; /* the caller's again */
    pthread_mutex_unlock(&rec->control);
    return rc;
}

/* ---- stop, info, sessions ---- */

static struct bmt_session *find(struct bmt_recorder *rec, int index, uint64_t generation)
{
    if (index < 0 || index >= BMT_MAX_SESSIONS)
        return NULL;
    struct bmt_session *s = &rec->sessions[index];
    int state = atomic_load(&s->state);
    if (state == BMT_SESSION_FREE || atomic_load(&s->generation) != generation)
        return NULL;
    return s;
}

/* Stops `s` for `reason` if it runs, then collects it (control held). */
static void stop_locked(struct bmt_recorder *rec, struct bmt_session *s,
                        enum bmt_stop_reason reason, struct bmt_rec_stats *stats)
{
    if (atomic_load(&s->state) == BMT_SESSION_RUNNING) {
        atomic_store(&s->state, BMT_SESSION_FINISHING);
        join_consumer(s);
        finish(rec, s, reason);
    }
    join_consumer(s);
    /* Release first: from here on the tracers are told to remove this
     * session and its late count stops; then it goes on disk. */
    release_core(rec, s);
    close_trace(s);
    collect(s, stats);
}

int bmt_rec_stop(struct bmt_recorder *rec, int index, uint64_t generation,
                 struct bmt_rec_stats *stats)
{
    pthread_mutex_lock(&rec->control);
    struct bmt_session *s = find(rec, index, generation);
    if (!s) {
        pthread_mutex_unlock(&rec->control);
        return -ESRCH;
    }
    stop_locked(rec, s, BMT_REASON_STOP, stats);
    pthread_mutex_unlock(&rec->control);
    return 0;
}

int bmt_rec_info(struct bmt_recorder *rec, int index, uint64_t generation, int *state,
                 struct bmt_rec_stats *stats, char *dir, size_t dir_size)
{
    pthread_mutex_lock(&rec->control);
    struct bmt_session *s = find(rec, index, generation);
    if (!s) {
        pthread_mutex_unlock(&rec->control);
        return -ESRCH;
    }
    *state = atomic_load(&s->state);
    if (*state == BMT_SESSION_RUNNING) {
        memset(stats, 0, sizeof *stats);
        stats->events = atomic_load(&s->events_on_disk);
        stats->discarded = atomic_load(&s->lost_on_disk) + atomic_load(&s->no_slot_drops);
        for (int i = 0; i < s->ring_count; i++)
            stats->discarded += atomic_load(&s->slots[i].ring.discarded_count);
        stats->bytes = atomic_load(&s->bytes_on_disk);
        stats->error = atomic_load(&s->error);
        if (s->cfg.relayd)
            relayd_info(s, stats);
    } else {
        collect(s, stats);
    }
    snprintf(dir, dir_size, "%s", s->cfg.dir);
    pthread_mutex_unlock(&rec->control);
    return 0;
}

int bmt_rec_capture_stats(struct bmt_recorder *rec, int index, uint64_t generation,
                          struct bmt_capture_stats *stats)
{
    pthread_mutex_lock(&rec->control);
    struct bmt_session *s = find(rec, index, generation);
    if (s)
        bmt_capture_stats(&s->capture, stats);
    pthread_mutex_unlock(&rec->control);
    return s ? 0 : -ESRCH;
}

int bmt_rec_sessions(struct bmt_recorder *rec, int index[], uint64_t generation[])
{
    int n = 0;
    pthread_mutex_lock(&rec->control);
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        struct bmt_session *s = &rec->sessions[i];
        if (atomic_load(&s->state) == BMT_SESSION_FREE)
            continue;
        index[n] = i;
        generation[n] = atomic_load(&s->generation);
        n++;
    }
    pthread_mutex_unlock(&rec->control);
    return n;
}

/* ---- snapshot ---- */

int bmt_rec_snapshot(struct bmt_recorder *rec, int index, uint64_t generation, const char *dir,
                     struct bmt_rec_stats *stats)
{
    pthread_mutex_lock(&rec->control);
    struct bmt_session *s = find(rec, index, generation);
    int rc = 0;
    if (!s || atomic_load(&s->state) != BMT_SESSION_RUNNING) {
        rc = -ESRCH;
        goto out;
    }
    if (s->cfg.mode != BMT_RING_OVERWRITE) {
        rc = -EINVAL;
        goto out;
    }
    /* Same metadata (and uuid) as the session: the packets carry it. */
    struct bmt_trace_dir *snap = calloc(1, sizeof *snap);
    if (!snap) {
        rc = -ENOMEM;
        goto out;
    }
    rc = bmt_trace_dir_create(snap, dir, s->cfg.file_mode, &s->cfg.info, 0, 0);
    if (rc < 0) {
        free(snap);
        goto out;
    }
    memset(stats, 0, sizeof *stats);
    uint64_t now = bmt_clock_ns();
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_slot *sl = &s->slots[i];
        if (atomic_load(&sl->ring.written_count) == 0 && atomic_load(&sl->ring.discarded_count) == 0)
            continue;
        atomic_store_explicit(&sl->frozen, 1, memory_order_relaxed);
        bmt_fence_heavy();
        wait_writer_out(sl);
        struct bmt_ring *r = &sl->ring;
        bmt_ring_flush(r, now);
        /* Overwrite mode: [consumed, committed) are the ring's packets,
         * oldest first; they stay in the ring for the session's own trace. */
        uint64_t committed = atomic_load(&r->committed), consumed = atomic_load(&r->consumed);
        for (uint64_t seq = consumed; seq < committed; seq++) {
            uint32_t k = (uint32_t)(seq % r->subbuf_count);
            uint8_t *pkt = r->mem + (size_t)k * r->subbuf_bytes;
            /* The directory renumbers packets in place: keep the ring's. */
            uint64_t seq_num = bmt_get_u64(pkt + BMT_PKT_SEQ_NUM);
            uint64_t discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
            (void)bmt_trace_dir_write_packet(snap, (unsigned)i, pkt, r->packet_bytes[k],
                                             r->subbuf_bytes, r->packet_events[k]);
            bmt_put_u64(pkt + BMT_PKT_SEQ_NUM, seq_num);
            bmt_put_u64(pkt + BMT_PKT_EVENTS_DISCARDED, discarded);
        }
        /* Drops the freeze itself causes are the writer's to fold in later
         * (frozen_drops is its own): they belong to events after this. */
        uint64_t ring_discarded = atomic_load(&r->discarded_count);
        thaw(sl);
        bmt_trace_dir_seal_stream(snap, (unsigned)i, ring_discarded, now);
        stats->discarded += ring_discarded + snap->streams[i].lost_events;
        stats->events += snap->streams[i].events;
    }
    rc = bmt_trace_dir_close(snap);
    stats->bytes = snap->bytes_on_disk;
    stats->error = -rc;
    free(snap);
out:
    pthread_mutex_unlock(&rec->control);
    return rc;
}

/* ---- init, destroy, process exit ---- */

/* Recorders alive in this process, for the exit handler: atexit takes no
 * argument, so this registry is the one process-wide mutable state here. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bmt_recorder *registry[8];
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void at_exit(void)
{
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (registry[i])
            bmt_rec_stop_all(registry[i], BMT_REASON_EXIT);
    pthread_mutex_unlock(&registry_lock);
}

static void register_exit(void)
{
    atexit(at_exit);
}

int bmt_rec_init(struct bmt_recorder *rec, int max_threads, bmt_rec_notify_fn *notify,
                 void *notify_ctx)
{
    memset(rec, 0, sizeof *rec);
    if (max_threads < 1 || max_threads > BMT_MAX_THREADS)
        return -EINVAL;
    rec->max_threads = max_threads;
    rec->notify = notify;
    rec->notify_ctx = notify_ctx;
    rec->sessions = calloc(BMT_MAX_SESSIONS, sizeof *rec->sessions);
    if (!rec->sessions)
        return -ENOMEM;
    for (int i = 0; i < BMT_MAX_SESSIONS; i++)
        rec->sessions[i].wake_fd = -1;
    if (pthread_mutex_init(&rec->control, NULL) != 0) {
        free(rec->sessions);
        rec->sessions = NULL;
        return -ENOMEM;
    }
    bmt_fence_init();
    pthread_once(&exit_once, register_exit);
    pthread_mutex_lock(&registry_lock);
    int rc = -ENOSPC;
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++) {
        if (!registry[i]) {
            registry[i] = rec;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (rc < 0) {
        pthread_mutex_destroy(&rec->control);
        free(rec->sessions);
        rec->sessions = NULL;
    }
    return rc;
}

void bmt_rec_stop_all(struct bmt_recorder *rec, enum bmt_stop_reason reason)
{
    if (reason == BMT_REASON_EXIT) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += EXIT_LOCK_WAIT_S;
        if (pthread_mutex_timedlock(&rec->control, &deadline) != 0)
            return;
    } else {
        pthread_mutex_lock(&rec->control);
    }
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        struct bmt_session *s = &rec->sessions[i];
        if (atomic_load(&s->state) != BMT_SESSION_RUNNING)
            continue;
        atomic_store(&s->state, BMT_SESSION_FINISHING);
        join_consumer(s);
        finish(rec, s, reason);
        /* Kept FINISHED: a later stop still gets the figures. */
    }
    pthread_mutex_unlock(&rec->control);
}

void bmt_rec_destroy(struct bmt_recorder *rec)
{
    if (!rec->sessions)
        return;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (registry[i] == rec)
            registry[i] = NULL;
    pthread_mutex_unlock(&registry_lock);
    bmt_rec_stop_all(rec, BMT_REASON_UNLOAD);
    pthread_mutex_lock(&rec->control);
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        struct bmt_session *s = &rec->sessions[i];
        join_consumer(s);
        if (atomic_load(&s->state) == BMT_SESSION_FINISHED) {
            release_core(rec, s);
            close_trace(s);
        }
    }
    pthread_mutex_unlock(&rec->control);
    pthread_mutex_destroy(&rec->control);
    free(rec->sessions);
    rec->sessions = NULL;
}
