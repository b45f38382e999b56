/* The consumer thread of a recording session (contract in consumer.h).
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
 * non-blocking sockets every pass (polling them with the eventfd), and
 * tells it which rings went idle (live beacons); the client never blocks
 * the consumer.
 *
 * Under max_rate with on_max_rate sample, the consumer also adjusts the
 * sampling ratios each rate window and records each change in its own
 * ring (org_erlang_beamtrace:sample_ratio).
 *
 * A session that stops by itself is finished here, on its consumer, with
 * the control lock taken by trylock (a stop holding it while joining the
 * consumer cannot deadlock), and the recorder's notify called after.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "consumer.h"

#include "drain.h"
#include "finish.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CONSUMER_TICK_NS (10 * 1000 * 1000)
#define RATE_WINDOW_NS (100 * 1000 * 1000)

/* Linux 5.14+: fault pages in as writes would, without writing. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

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
 * anything), all with one heavy fence. The caller holds `control`: a
 * snapshot freezes the same rings, and two freezes of one ring at once
 * would flush it twice over, the first thaw ending both. */
static void flush_requested(struct bmt_session *s, uint64_t now)
{
    int idle[BMT_MAX_THREADS];
    int n = 0;
    for (int i = 0; i < s->ring_count; i++) {
        if (!atomic_load_explicit(&s->slots[i].ring.flush_requested, memory_order_relaxed))
            continue;
        idle[n++] = i;
        atomic_fetch_or_explicit(&s->slots[i].frozen, BMT_SLOT_FROZEN, memory_order_relaxed);
    }
    if (n == 0)
        return;
    bmt_fence_heavy();
    for (int k = 0; k < n; k++) {
        struct bmt_slot *sl = &s->slots[idle[k]];
        bmt_rec_wait_writer_out(sl);
        atomic_store_explicit(&sl->ring.flush_requested, 0, memory_order_relaxed);
        bmt_ring_flush(&sl->ring, bmt_ring_quiet_flush_ts(&sl->ring, now));
        bmt_rec_thaw(sl);
    }
}
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
            atomic_fetch_or_explicit(&s->slots[i].frozen, BMT_SLOT_FROZEN, memory_order_relaxed);
        }
    }
    if (n == 0)
        return;
    bmt_fence_heavy();
    for (int k = 0; k < n; k++) {
        struct bmt_slot *sl = &s->slots[quiet[k]];
        if (!atomic_load_explicit(&sl->busy, memory_order_acquire)) {
            bmt_ring_flush(&sl->ring, bmt_ring_quiet_flush_ts(&sl->ring, now));
            cs->unflushed[quiet[k]] = 0;
        }
        bmt_rec_thaw(sl);
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
    bmt_rec_leave(s, r, ts_ns);
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

/* The end of a rate window: the offered rate against max_rate, and either
 * the sampling ratios adjusted (on_max_rate sample) or the session stopped.
 * Returns BMT_REASON_MAX_RATE or NONE. */
static enum bmt_stop_reason rate_window(struct bmt_session *s, struct consumer_state *cs,
                                        uint64_t now)
{
    enum bmt_stop_reason stop = BMT_REASON_NONE;
    /* Not counting the state dump (bmt_rec_rate_exempt): read the
     * exempt count first, it is bumped before its event is offered,
     * so an event in between is undercounted now (then counted in
     * the next window), never counted twice; the value is kept
     * from going backwards. */
    uint64_t exempt = atomic_load_explicit(&s->rate_exempt, memory_order_relaxed);
    uint64_t total = bmt_rec_offered_count(s);
    uint64_t offered = total > exempt ? total - exempt : 0;
    if (offered < cs->rate_offered)
        offered = cs->rate_offered;
    /* events/s = offered over the window, compared without division. */
    uint64_t events_ns = (offered - cs->rate_offered) * UINT64_C(1000000000);
    uint64_t cap_ns = s->cfg.max_rate * (now - cs->rate_ns);
    if (events_ns > cap_ns) {
        if (s->cfg.on_max_rate == BMT_ON_MAX_RATE_SAMPLE && s->control_slot >= 0)
            sample_more(s, cs, events_ns, cap_ns, now);
        else
            stop = BMT_REASON_MAX_RATE;
    } else if (s->cfg.on_max_rate == BMT_ON_MAX_RATE_SAMPLE && s->control_slot >= 0) {
        sample_less(s, cs, events_ns, cap_ns, now);
    }
    cs->rate_ns = now;
    cs->rate_offered = offered;
    return stop;
}

/* A flight recorder's step this pass (capture.h): a capture's tail is
 * flushed in two steps, a tick apart. Returns BMT_REASON_MAX_BYTES or NONE. */
static enum bmt_stop_reason capture_tick(struct bmt_recorder *rec, struct bmt_session *s,
                                         uint64_t now)
{
    enum bmt_capture_step step = bmt_capture_tick(&s->capture, now, s->dir.bytes_on_disk);
    if (step == BMT_CAPTURE_REQUEST_FLUSH) {
        request_flush_all(s);
    } else if (step == BMT_CAPTURE_FLUSH) {
        /* Refused only when the session is stopping: its finish closes
         * the capture with every packet. Waits out a snapshot in progress
         * (it writes whole rings): the consumer's other duties (the
         * duration, the directory check, the incomplete marker) wait with
         * it, and a writer reusing a packet meanwhile costs the capture
         * that packet, counted in lost_packets. */
        if (!lock_or_stop(rec, s))
            return BMT_REASON_NONE;
        flush_requested(s, now);
        pthread_mutex_unlock(&rec->control);
        step = bmt_capture_tick(&s->capture, now, s->dir.bytes_on_disk);
    }
    return step == BMT_CAPTURE_MAX_BYTES ? BMT_REASON_MAX_BYTES : BMT_REASON_NONE;
}

/* A session that stopped by itself (a cap, an error): finished here, on
 * its consumer, unless a stop wants the consumer gone first; then the
 * recorder's owner is told. */
static void stop_by_itself(struct bmt_recorder *rec, struct bmt_session *s,
                           enum bmt_stop_reason stop)
{
    if (!lock_or_stop(rec, s))
        return;
    int index = (int)(s - rec->sessions);
    uint64_t generation = atomic_load(&s->generation);
    bmt_rec_set_state(s, BMT_SESSION_FINISHING);
    bmt_rec_finish(rec, s, stop);
    enum bmt_stop_reason reason = s->final.reason;
    pthread_mutex_unlock(&rec->control);
    if (rec->notify)
        rec->notify(rec->notify_ctx, index, generation, reason);
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
                stop = bmt_rec_drain_ring(s, i, 0);
            if (stop == BMT_REASON_NONE && cs.seen && cs.unflushed &&
                now - cs.last_flush_ns >= s->cfg.flush_interval_ns / 2) {
                cs.last_flush_ns = now;
                flush_tick(s, &cs, now);
            }
        }
        if (s->cfg.relayd)
            relayd_tick(s, &cs, now);
        if (stop == BMT_REASON_NONE && bmt_capture_on(&s->capture))
            stop = capture_tick(rec, s, now);
        if (stop == BMT_REASON_NONE && now - cs.last_mark_ns >= s->cfg.flush_interval_ns) {
            /* What a crash now would lose, said in the trace. */
            cs.last_mark_ns = now;
            (void)bmt_trace_dir_set_unwritten(&s->dir, bmt_rec_unwritten_count(s), now);
        }
        if (stop == BMT_REASON_NONE && s->cfg.duration_ns && now - s->start_ns >= s->cfg.duration_ns)
            stop = BMT_REASON_DURATION;
        if (stop == BMT_REASON_NONE && s->cfg.max_rate && now - cs.rate_ns >= RATE_WINDOW_NS) {
            uint64_t sampled = atomic_load(&s->sampled_mask);
            stop = rate_window(s, &cs, now);
            /* The tracer's cached decisions carry the sampled bit. */
            if (atomic_load(&s->sampled_mask) != sampled)
                atomic_fetch_add(&rec->epoch, 1);
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
    if (stop != BMT_REASON_NONE)
        stop_by_itself(rec, s, stop);
    return NULL;
}

int bmt_rec_consumer_start(struct bmt_recorder *rec, struct bmt_session *s)
{
    struct consumer_arg *arg = malloc(sizeof *arg);
    if (!arg)
        return -EAGAIN;
    arg->rec = rec;
    arg->s = s;
    if (pthread_create(&s->consumer, NULL, consumer_main, arg) != 0) {
        free(arg);
        return -EAGAIN;
    }
    return 0;
}
