/* Starting a recording session (bmt_rec_start, contract in recorder.h): a
 * session core taken, the trace directory created and the relayd session
 * opened, the rings mapped (address space only) and set up, the counters
 * reset, the consumer thread started, and the session made visible to the
 * tracers last, all with the control lock held.
 */
#include "recorder.h"

#include "consumer.h"
#include "finish.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

/* Streaming: how long a start waits for the relayd session to open. */
#define RELAYD_OPEN_NS (UINT64_C(3000) * 1000 * 1000)

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
            bmt_rec_release_core(rec, &rec->sessions[i]);
            bmt_rec_close_trace(&rec->sessions[i]);
            return i;
        }
    }
    return -1;
}

/* Step 1: the trace directory, then the relayd session (cfg->relayd).
 * Returns 0, or a negative errno with nothing left open. */
static int open_outputs(struct bmt_session *s, const struct bmt_rec_config *cfg)
{
    int rc = bmt_trace_dir_create(&s->dir, cfg->dir, cfg->file_mode, &cfg->info,
                                  cfg->tracefile_size_bytes, cfg->tracefile_count);
    if (rc < 0)
        return rc;
    if (cfg->relayd) {
        /* Before anything else can fail: a refused relayd leaves nothing. */
        char why[2];
        rc = bmt_relayd_open(cfg->relayd, RELAYD_OPEN_NS, why, sizeof why);
    } else if (cfg->dir[0] == '\0') {
        rc = -EINVAL;
    }
    if (rc < 0)
        bmt_trace_dir_abandon(&s->dir);
    return rc;
}

/* Step 2: each tracepoint's largest event, the rings' count (one more,
 * the consumer's, when sampling can change) and their address space.
 * Returns 0 or -ENOMEM (nothing mapped). */
static int map_rings(struct bmt_recorder *rec, struct bmt_session *s,
                     const struct bmt_rec_config *cfg)
{
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
        return -ENOMEM;
    }
    return 0;
}

/* Step 3: the rings' packet tables and each slot's ring. Returns 0 or
 * -ENOMEM (the caller releases the rings). */
static int init_rings(struct bmt_session *s, const struct bmt_rec_config *cfg)
{
    /* Per packet: events, bytes, and (captures) the drops while it was open. */
    int capture = cfg->capture.window_ns != 0;
    size_t meta_per_ring = (size_t)cfg->subbuf_count * (capture ? 3 : 2);
    s->packet_meta = calloc((size_t)s->ring_count * meta_per_ring, sizeof(uint32_t));
    s->ring_ptrs = capture ? malloc((size_t)s->ring_count * sizeof *s->ring_ptrs) : NULL;
    memset(&s->capture, 0, sizeof s->capture);
    if (!s->packet_meta || (capture && !s->ring_ptrs))
        return -ENOMEM;
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
    return 0;
}

/* Step 4: the session's counters and flags as a new session has them. */
static void reset_counters(struct bmt_session *s, const struct bmt_rec_config *cfg,
                           int format_option)
{
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
}

/* Step 5: the consumer's eventfd, the start time, the sampling ratios and
 * (flight recorder) the captures. Returns 0 or a negative errno, with the
 * eventfd closed again. */
static int open_wake_and_capture(struct bmt_session *s, const struct bmt_rec_config *cfg)
{
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->wake_fd < 0)
        return -errno;
    s->start_ns = bmt_clock_ns();
    bmt_sampling_init(&s->sampling, cfg->sample_ratio, s->start_ns);
    atomic_store(&s->sampled_mask, atomic_load(&s->sampling.mask));
    if (cfg->capture.window_ns != 0) {
        /* max_bytes covers the session's trace and its captures. */
        struct bmt_capture_config cc = cfg->capture;
        cc.max_bytes = cfg->max_bytes;
        int rc = bmt_capture_init(&s->capture, &cc, s->ring_ptrs, s->ring_count, s->dir.path,
                                  cfg->file_mode, &cfg->info, &s->sampling, s->start_ns);
        if (rc < 0) {
            close(s->wake_fd);
            s->wake_fd = -1;
            return rc;
        }
    }
    return 0;
}

/* Step 6: a new generation, the state RUNNING, the consumer started.
 * Returns the generation, or 0 (-EAGAIN: no thread) with the core FREE
 * and the eventfd closed again. */
static uint64_t launch(struct bmt_recorder *rec, struct bmt_session *s)
{
    /* Generation and state before the consumer runs: it reads them. */
    uint64_t gen = (atomic_load(&s->generation) + 1) & ((UINT64_C(1) << BMT_GENERATION_BITS) - 1);
    if (gen == 0)
        gen = 1;
    atomic_store(&s->generation, gen);
    bmt_rec_set_state(s, BMT_SESSION_RUNNING);
    if (bmt_rec_consumer_start(rec, s) < 0) {
        bmt_rec_set_state(s, BMT_SESSION_FREE);
        close(s->wake_fd);
        s->wake_fd = -1;
        return 0;
    }
    s->consumer_joinable = 1;
    return gen;
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
    int rc = open_outputs(s, cfg);
    if (rc < 0)
        goto fail;
    rc = map_rings(rec, s, cfg);
    if (rc < 0)
        goto fail_dir;
    rc = init_rings(s, cfg);
    if (rc < 0)
        goto fail_mem;
    reset_counters(s, cfg, format_option);
    rc = open_wake_and_capture(s, cfg);
    if (rc < 0)
        goto fail_mem;
    uint64_t gen = launch(rec, s);
    if (gen == 0) {
        rc = -EAGAIN;
        goto fail_mem;
    }
    bmt_rec_update_masks(rec);
    if (make_default || atomic_load(&rec->default_session) == 0)
        atomic_store_explicit(&rec->default_session, gen << 8 | (uint64_t)(idx + 1),
                              memory_order_release);
    atomic_fetch_add(&rec->epoch, 1);
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
