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
                sl->committed_at_enter =
                    atomic_load_explicit(&sl->ring.committed, memory_order_relaxed);
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
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        struct bmt_session *s = &rec->sessions[i];
        if (atomic_load(&s->state) != BMT_SESSION_RUNNING)
            continue;
        uint64_t m = atomic_load(&s->enable_mask);
        mask |= m;
        for (int tp = 0; tp < BMT_TP_COUNT; tp++)
            if (m >> tp & 1)
                per_tp[tp] = (uint16_t)(per_tp[tp] | 1u << i);
    }
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        atomic_store(&rec->tp_sessions[tp], per_tp[tp]);
    atomic_store(&rec->recorder_mask, mask);
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
                 s->dir.bytes_on_disk + bmt_trace_dir_packet_bytes(&s->dir, (unsigned)i, pkt, bytes,
                                                                   r->subbuf_bytes) >
                     s->cfg.max_bytes)
            stop = BMT_REASON_MAX_BYTES;
        if (capped || stop != BMT_REASON_NONE || s->dir.error) {
            bmt_trace_dir_lose(&s->dir, (unsigned)i, events);
            atomic_fetch_add(&s->lost_on_disk, events);
            capped = 1;
        } else {
            /* The consumer owns the packet between peek and release: the
             * directory patches its sequence number and loss count. */
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
    for (int i = 0; i < s->ring_count; i++) {
        uint64_t ring_discarded = atomic_load(&s->slots[i].ring.discarded_count);
        if (i == 0)
            ring_discarded += no_slot;
        /* A seal that fails leaves the trace short of the count; the
         * figures below still have it. */
        (void)bmt_trace_dir_seal_stream(&s->dir, (unsigned)i, ring_discarded, now);
        st->discarded += ring_discarded + s->dir.streams[i].lost_events;
        st->overwritten += s->dir.streams[i].rotated_events;
        st->events += s->dir.streams[i].events;
    }
    if (bmt_trace_dir_removed(&s->dir) && reason != BMT_REASON_DIR_REMOVED) {
        reason = BMT_REASON_DIR_REMOVED;
        atomic_store(&s->reason, reason);
    }
    if (atomic_load(&s->error) && reason != BMT_REASON_WRITE_ERROR &&
        reason != BMT_REASON_DIR_REMOVED)
        reason = BMT_REASON_WRITE_ERROR;
    /* Every event recorded is on disk now, or counted lost. */
    atomic_store(&s->events_on_disk, st->events);
    st->bytes = s->dir.bytes_on_disk;
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
    uint64_t last_flush_ns;
    uint64_t rate_ns, rate_offered;  /* start of the rate window */
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
    cs.last_flush_ns = cs.rate_ns = bmt_clock_ns();
    struct pollfd pfd = {s->wake_fd, POLLIN, 0};
    enum bmt_stop_reason stop = BMT_REASON_NONE;
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
            if ((offered - cs.rate_offered) * UINT64_C(1000000000) >
                s->cfg.max_rate * (now - cs.rate_ns))
                stop = BMT_REASON_MAX_RATE;
            cs.rate_ns = now;
            cs.rate_offered = offered;
        }
        if (stop == BMT_REASON_NONE && bmt_trace_dir_removed(&s->dir))
            stop = BMT_REASON_DIR_REMOVED;
        if (stop == BMT_REASON_NONE)
            poll(&pfd, 1, CONSUMER_TICK_NS / 1000000);
    }
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
    if (cfg->subbuf_count < 2 || cfg->subbuf_bytes <= BMT_PKT_HEADER_BYTES || cfg->enable_mask == 0)
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

    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        s->max_event_bytes[tp] = (uint32_t)(BMT_EVENT_HEADER_MAX_BYTES - BMT_EVENT_HEADER_BYTES +
                                            bmt_event_max_bytes(tp, cfg->message_max_bytes));
    s->ring_count = rec->max_threads;
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
    s->packet_meta = calloc((size_t)s->ring_count * cfg->subbuf_count * 2, sizeof(uint32_t));
    if (!s->packet_meta) {
        rc = -ENOMEM;
        goto fail_mem;
    }
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_slot *sl = &s->slots[i];
        uint32_t *meta = s->packet_meta + (size_t)i * cfg->subbuf_count * 2;
        bmt_ring_init(&sl->ring, s->ring_mem + (size_t)i * cfg->subbuf_bytes * cfg->subbuf_count,
                      meta, meta + cfg->subbuf_count, cfg->subbuf_bytes, cfg->subbuf_count,
                      cfg->mode, (uint64_t)i, cfg->info.uuid);
        atomic_store(&sl->busy, 0);
        atomic_store(&sl->frozen, 0);
        atomic_store(&sl->late_drops, 0);
        sl->frozen_drops = 0;
        sl->committed_at_enter = 0;
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

    /* Generation and state before the consumer runs: it reads them. */
    uint64_t gen = atomic_load(&s->generation) + 1;
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
    } else {
        collect(s, stats);
    }
    snprintf(dir, dir_size, "%s", s->cfg.dir);
    pthread_mutex_unlock(&rec->control);
    return 0;
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
