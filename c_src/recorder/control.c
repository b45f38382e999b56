/* The recorder's control side (contracts in recorder.h): stopping and
 * collecting a session, its live figures, the list of sessions, a flight
 * recorder's snapshot, and the recorder's init and destroy with the
 * process-exit flush. Every request here takes the control lock, which
 * serialises it with starts and with a consumer finishing its session.
 */
#define _GNU_SOURCE /* pthread_mutex_timedlock */
#include "recorder.h"

#include "finish.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long the process-exit flush waits for the control lock. */
#define EXIT_LOCK_WAIT_S 2

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
        bmt_rec_set_state(s, BMT_SESSION_FINISHING);
        bmt_rec_join_consumer(s);
        bmt_rec_finish(rec, s, reason);
    }
    bmt_rec_join_consumer(s);
    /* Release first: from here on the tracers are told to remove this
     * session and its late count stops; then it goes on disk. */
    bmt_rec_release_core(rec, s);
    bmt_rec_close_trace(s);
    bmt_rec_collect(s, stats);
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
        bmt_rec_collect(s, stats);
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
    /* Packets are written from a copy: the directory renumbers them in
     * place, and the ring's stay as they are for the flight capture the
     * consumer may be copying at the same time, and for the final trace. */
    uint8_t *copy = NULL;
    if (posix_memalign((void **)&copy, BMT_DIRECT_BLOCK, s->cfg.subbuf_bytes) != 0) {
        free(snap);
        rc = -ENOMEM;
        goto out;
    }
    rc = bmt_trace_dir_create(snap, dir, s->cfg.file_mode, &s->cfg.info, 0, 0);
    if (rc < 0) {
        free(copy);
        free(snap);
        goto out;
    }
    memset(stats, 0, sizeof *stats);
    uint64_t now = bmt_clock_ns();
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_slot *sl = &s->slots[i];
        if (atomic_load(&sl->ring.written_count) == 0 && atomic_load(&sl->ring.discarded_count) == 0)
            continue;
        atomic_fetch_or_explicit(&sl->frozen, BMT_SLOT_FROZEN, memory_order_relaxed);
        bmt_fence_heavy();
        bmt_rec_wait_writer_out(sl);
        struct bmt_ring *r = &sl->ring;
        bmt_ring_flush(r, bmt_ring_quiet_flush_ts(r, now));
        /* Overwrite mode: [consumed, committed) are the ring's packets,
         * oldest first; they stay in the ring for the session's own trace. */
        uint64_t committed = atomic_load(&r->committed), consumed = atomic_load(&r->consumed);
        for (uint64_t seq = consumed; seq < committed; seq++) {
            uint32_t k = (uint32_t)(seq % r->subbuf_count);
            memcpy(copy, r->mem + (size_t)k * r->subbuf_bytes, r->packet_bytes[k]);
            (void)bmt_trace_dir_write_packet(snap, (unsigned)i, copy, r->packet_bytes[k],
                                             r->subbuf_bytes, r->packet_events[k]);
        }
        /* Drops the freeze itself causes are the writer's to fold in later
         * (frozen_drops is its own): they belong to events after this. */
        uint64_t ring_discarded = atomic_load(&r->discarded_count);
        bmt_rec_thaw(sl);
        bmt_trace_dir_seal_stream(snap, (unsigned)i, ring_discarded, now);
        stats->discarded += ring_discarded + snap->streams[i].lost_events;
        stats->events += snap->streams[i].events;
    }
    free(copy);
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
        bmt_rec_set_state(s, BMT_SESSION_FINISHING);
        bmt_rec_join_consumer(s);
        bmt_rec_finish(rec, s, reason);
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
        bmt_rec_join_consumer(s);
        if (atomic_load(&s->state) == BMT_SESSION_FINISHED) {
            bmt_rec_release_core(rec, s);
            bmt_rec_close_trace(s);
        }
    }
    pthread_mutex_unlock(&rec->control);
    pthread_mutex_destroy(&rec->control);
    free(rec->sessions);
    rec->sessions = NULL;
}
