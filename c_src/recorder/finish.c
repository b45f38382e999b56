/* Finishing a session (contract in finish.h): the writers waited out,
 * every ring drained, each stream sealed with its final loss count, the
 * relayd's copy ended, the figures kept in s->final and the rings freed;
 * then, separately, the core released for reuse and the trace closed.
 *
 * Everything here runs with the control lock held, on the thread that
 * stops the session (bmt_rec_stop, bmt_rec_stop_all) or on the session's
 * own consumer when it stops by itself.
 */
#include "finish.h"

#include "drain.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* How long a finish waits for the relayd to confirm the trace's end (at
 * process exit: less). */
#define RELAYD_FINISH_NS (UINT64_C(5000) * 1000 * 1000)
#define RELAYD_EXIT_FINISH_NS (UINT64_C(1000) * 1000 * 1000)

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

/* Finish, step 1: tells the tracers the session is off and waits out the
 * writers still inside its rings. */
static void writers_out(struct bmt_recorder *rec, struct bmt_session *s,
                        enum bmt_stop_reason reason)
{
    atomic_store(&s->reason, reason);
    bmt_rec_update_masks(rec);
    bmt_fence_heavy();
    for (int i = 0; i < s->ring_count; i++)
        bmt_rec_wait_writer_out(&s->slots[i]);
}

/* Step 2: a capture being written gets its tail before the rings are
 * drained into the session's own trace (which consumes them). */
static void capture_tail(struct bmt_session *s, uint64_t now)
{
    if (!bmt_capture_on(&s->capture))
        return;
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_slot *sl = &s->slots[i];
        if (sl->frozen_drops) {
            bmt_ring_drop(&sl->ring, sl->frozen_drops);
            sl->frozen_drops = 0;
            atomic_fetch_and(&sl->frozen, ~BMT_SLOT_DROPS);
        }
        bmt_ring_flush(&sl->ring, now);
    }
    bmt_capture_finish(&s->capture, now, s->dir.bytes_on_disk);
}

/* Step 3: every ring's packets on disk (or counted lost past a cap). */
static void drain_all(struct bmt_session *s, struct bmt_rec_stats *st, int capped, uint64_t now)
{
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_slot *sl = &s->slots[i];
        struct bmt_ring *r = &sl->ring;
        if (sl->frozen_drops) {
            bmt_ring_drop(r, sl->frozen_drops);
            sl->frozen_drops = 0;
            atomic_fetch_and(&sl->frozen, ~BMT_SLOT_DROPS);
        }
        if (atomic_load(&r->written_count) == 0 && atomic_load(&r->discarded_count) == 0)
            continue;
        /* Overwrite rings still hold their packets; discard rings their
         * unwritten ones. Either way: the rest, then the open packet. */
        if (bmt_rec_drain_ring(s, i, capped) != BMT_REASON_NONE)
            capped = 1;
        bmt_ring_flush(r, now);
        if (bmt_rec_drain_ring(s, i, capped) != BMT_REASON_NONE)
            capped = 1;
        st->overwritten += r->overwritten_count;
    }
}

/* Step 4: each stream sealed with its final loss count, the figures
 * summed into *st, the relayd's copy ended. */
static void seal_streams(struct bmt_session *s, struct bmt_rec_stats *st, uint64_t now,
                         enum bmt_stop_reason reason)
{
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
}

/* Step 5: the reason the figures give (a removed directory, a write
 * error), the trace marked complete, the session's final figures. */
static void settle(struct bmt_session *s, struct bmt_rec_stats *st, enum bmt_stop_reason reason)
{
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
}

/* Step 6: the eventfd, the rings and the captures freed, their figures
 * (captures, sampling) kept in *st. */
static void free_rings(struct bmt_session *s, struct bmt_rec_stats *st)
{
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
}

void bmt_rec_finish(struct bmt_recorder *rec, struct bmt_session *s, enum bmt_stop_reason reason)
{
    writers_out(rec, s, reason);
    uint64_t now = bmt_clock_ns();
    int capped = reason == BMT_REASON_MAX_EVENTS || reason == BMT_REASON_MAX_BYTES ||
                 reason == BMT_REASON_WRITE_ERROR || reason == BMT_REASON_DIR_REMOVED;
    struct bmt_rec_stats *st = &s->final;
    memset(st, 0, sizeof *st);
    capture_tail(s, now);
    drain_all(s, st, capped, now);
    seal_streams(s, st, now, reason);
    settle(s, st, reason);
    free_rings(s, st);
    bmt_rec_set_state(s, BMT_SESSION_FINISHED);
    atomic_fetch_add(&rec->epoch, 1);
}

/* Fills *stats with the figures of a finished session, with the events
 * offered since it ended (after_stop: not losses). */
void bmt_rec_collect(struct bmt_session *s, struct bmt_rec_stats *stats)
{
    *stats = s->final;
    for (int i = 0; i < s->ring_count; i++)
        stats->after_stop += atomic_load(&s->slots[i].late_drops);
}

/* Closes a finished session's trace (control held). The events offered
 * after the finish are not in its loss counts: the session had ended. */
void bmt_rec_close_trace(struct bmt_session *s)
{
    if (s->dir.dirfd < 0)
        return;
    /* The caller made the core FREE: wait out writers still counting, so
     * that collect() reads a final after_stop. */
    bmt_fence_heavy();
    for (int i = 0; i < s->ring_count; i++)
        bmt_rec_wait_writer_out(&s->slots[i]);
    int rc = bmt_trace_dir_close(&s->dir);
    if (rc < 0) {
        int none = 0;
        atomic_compare_exchange_strong(&s->error, &none, -rc);
    }
}

/* Joins the consumer of `s` if it still has one (control held). */
void bmt_rec_join_consumer(struct bmt_session *s)
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
void bmt_rec_release_core(struct bmt_recorder *rec, struct bmt_session *s)
{
    bmt_rec_join_consumer(s);
    uint64_t packed = atomic_load(&s->generation) << 8 | (uint64_t)(s - rec->sessions + 1);
    atomic_compare_exchange_strong(&rec->default_session, &packed, 0);
    bmt_rec_set_state(s, BMT_SESSION_FREE);
    atomic_fetch_add(&rec->epoch, 1);
}

