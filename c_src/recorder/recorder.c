/* The recorder's writer side (contract in recorder.h): the slow path of
 * bmt_rec_enter (a ring that is frozen, or a session that is stopping),
 * waking the consumer, and the lock-free views of which sessions run
 * that the tracers read. The rest of the recorder is one file per job:
 * start.c (starting a session), consumer.c (the consumer thread),
 * drain.c (writing packets), finish.c (finishing a session), control.c
 * (stop, info, snapshot, init, destroy and the process-exit flush).
 *
 * Threads here are plain pthreads, not the VM's: the recorder is pure C so
 * that its protocol can be tested under ThreadSanitizer without a VM.
 */
#include "recorder.h"

#include <sched.h>
#include <unistd.h>

/* Pause iterations a writer waits for a frozen ring to thaw before it
 * drops the event (a freeze lasts one packet close: well under this). */
#define FROZEN_SPIN 2000

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
            int frozen = atomic_load_explicit(&sl->frozen, memory_order_acquire);
            if (!(frozen & BMT_SLOT_FROZEN)) {
                if (frozen & BMT_SLOT_DROPS) {
                    if (sl->frozen_drops)
                        bmt_ring_drop(&sl->ring, sl->frozen_drops);
                    sl->frozen_drops = 0;
                    atomic_fetch_and_explicit(&sl->frozen, ~BMT_SLOT_DROPS, memory_order_relaxed);
                }
                return &sl->ring;
            }
            if (attempt > 0) {
                /* Still frozen after the wait: drop, counted (with busy
                 * held, so a finisher reads the count after us), and
                 * flagged, so the next entry takes this path to fold it
                 * into the ring. */
                sl->frozen_drops++;
                atomic_fetch_or_explicit(&sl->frozen, BMT_SLOT_DROPS, memory_order_relaxed);
                break;
            }
            /* Step out while waiting, so the freezer is never held up by
             * us, then announce ourselves again. */
            atomic_store_explicit(&sl->busy, 0, memory_order_release);
            for (int i = 0; i < FROZEN_SPIN && (atomic_load_explicit(&sl->frozen,
                                                                    memory_order_acquire) &
                                                BMT_SLOT_FROZEN);
                 i++)
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
void bmt_rec_wait_writer_out(struct bmt_slot *sl)
{
    while (atomic_load_explicit(&sl->busy, memory_order_acquire))
        sched_yield();
}

void bmt_rec_thaw(struct bmt_slot *sl)
{
    atomic_fetch_and_explicit(&sl->frozen, ~BMT_SLOT_FROZEN, memory_order_release);
}

/* ---- session masks ---- */

/* Recomputes the lock-free views of which sessions run (control held). */
void bmt_rec_update_masks(struct bmt_recorder *rec)
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
