/* Flight-recorder captures (contract in capture.h). */
#define _GNU_SOURCE /* getrandom */
#include "capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define NS_PER_HOUR (UINT64_C(3600) * 1000000000u)
#define CLAIMING 1u

const char *bmt_trigger_kind_name(enum bmt_trigger_kind kind)
{
    switch (kind) {
    case BMT_TRIGGER_CALL: return "call";
    case BMT_TRIGGER_LONG_GC: return "long_gc";
    case BMT_TRIGGER_LONG_SCHEDULE: return "long_schedule";
    case BMT_TRIGGER_LARGE_HEAP: return "large_heap";
    case BMT_TRIGGER_BUSY_PORT: return "busy_port";
    case BMT_TRIGGER_BUSY_DIST_PORT: return "busy_dist_port";
    case BMT_TRIGGER_LONG_MESSAGE_QUEUE: return "long_message_queue";
    case BMT_TRIGGER_PROBE: return "probe";
    case BMT_TRIGGER_MESSAGE_QUEUE: return "message_queue";
    case BMT_TRIGGER_NONE:
    case BMT_TRIGGER_KIND_COUNT: break;
    }
    return "undefined";
}

const char *bmt_trigger_kind_unit(enum bmt_trigger_kind kind)
{
    switch (kind) {
    case BMT_TRIGGER_CALL: return "ns";
    case BMT_TRIGGER_LONG_GC:
    case BMT_TRIGGER_LONG_SCHEDULE: return "ms";
    case BMT_TRIGGER_LARGE_HEAP: return "words";
    case BMT_TRIGGER_LONG_MESSAGE_QUEUE:
    case BMT_TRIGGER_MESSAGE_QUEUE: return "messages";
    default: return "";
    }
}

static void count(_Atomic uint64_t *counter)
{
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* ---- start and end of a session ---- */

int bmt_capture_init(struct bmt_capture *c, const struct bmt_capture_config *cfg,
                     struct bmt_ring **rings, int ring_count, const char *base, unsigned file_mode,
                     const struct bmt_ctf_trace_info *info, const struct bmt_sampling *sampling,
                     uint64_t now_ns)
{
    memset(c, 0, sizeof *c);
    if (cfg->window_ns == 0 || ring_count < 1 || ring_count > BMT_MAX_STREAMS ||
        strlen(base) + 64 >= sizeof c->base)
        return -EINVAL;
    c->cfg = *cfg;
    c->ring_count = ring_count;
    c->next_seq = calloc((size_t)ring_count, sizeof *c->next_seq);
    c->stream_drops = calloc((size_t)ring_count, sizeof *c->stream_drops);
    struct bmt_ring **copy = malloc((size_t)ring_count * sizeof *copy);
    if (!c->next_seq || !c->stream_drops || !copy) {
        free(copy);
        bmt_capture_free(c);
        return -ENOMEM;
    }
    memcpy(copy, rings, (size_t)ring_count * sizeof *copy);
    strcpy(c->base, base);
    c->file_mode = file_mode;
    c->info = *info;
    c->sampling = sampling;
    atomic_store(&c->tokens, cfg->max_per_hour ? cfg->max_per_hour : UINT32_MAX);
    c->token_credit_ns = now_ns;
    c->rings = copy;
    /* Last: bmt_capture_on() says yes once everything is in place. */
    atomic_store_explicit(&c->on, 1, memory_order_release);
    return 0;
}

void bmt_capture_free(struct bmt_capture *c)
{
    atomic_store_explicit(&c->on, 0, memory_order_relaxed);
    free(c->next_seq);
    free(c->stream_drops);
    free(c->buf);
    free(c->dir);
    free(c->rings);
    c->next_seq = c->stream_drops = NULL;
    c->buf = NULL;
    c->dir = NULL;
    c->rings = NULL;
}

/* ---- firing ---- */

/* Raises slot `sl`'s end to at least `end` while a capture holds it.
 * Returns 0 when the slot is free (the capture closed meanwhile). */
static int raise_end(struct bmt_capture_slot *sl, uint64_t end)
{
    uint64_t w = atomic_load_explicit(&sl->word, memory_order_relaxed);
    for (;;) {
        if (w == 0)
            return 0;
        if (w != CLAIMING && w >= end)
            return 1;
        if (atomic_compare_exchange_weak_explicit(&sl->word, &w, end, memory_order_relaxed,
                                                  memory_order_relaxed))
            return 1;
    }
}

/* Trigger `t` (ending at `end`) on slot `sl`: 1 claimed it, 2 extended
 * it, 0 taken and past its cap (or closing under us), -1 free but the rate
 * limit has no token. */
static int try_slot(struct bmt_capture *c, struct bmt_capture_slot *sl, const struct bmt_trigger *t,
                    uint64_t end)
{
    uint64_t w = atomic_load_explicit(&sl->word, memory_order_relaxed);
    if (w == 0) {
        if (atomic_load_explicit(&c->tokens, memory_order_relaxed) == 0)
            return -1;
        if (atomic_compare_exchange_strong_explicit(&sl->word, &w, CLAIMING, memory_order_acquire,
                                                    memory_order_relaxed)) {
            sl->trigger = *t;
            atomic_store_explicit(&sl->cap_ns, t->ts_ns + c->cfg.window_ns, memory_order_relaxed);
            raise_end(sl, end);
            atomic_store_explicit(&sl->ready, 1, memory_order_release);
            return 1;
        }
    }
    /* Taken: extend it, up to its cap (unknown for a moment while the
     * claimer copies its trigger in). */
    uint64_t cap = atomic_load_explicit(&sl->cap_ns, memory_order_relaxed);
    if (cap && t->ts_ns > cap)
        return 0;
    return raise_end(sl, cap && end > cap ? cap : end) ? 2 : 0;
}

int bmt_capture_fire(struct bmt_capture *c, const struct bmt_trigger *t)
{
    if (!bmt_capture_on(c))
        return 0;
    count(&c->fired);
    if (atomic_load_explicit(&c->full, memory_order_relaxed)) {
        count(&c->skipped_bytes);
        return 0;
    }
    uint64_t end = t->ts_ns + c->cfg.after_ns;
    /* The current capture, else the next one. A few rounds at most: the
     * consumer moving on between our looks. */
    for (int round = 0; round < 4; round++) {
        int cur = atomic_load_explicit(&c->cur, memory_order_acquire);
        for (int k = 0; k < 2; k++) {
            int rc = try_slot(c, &c->slot[cur ^ k], t, end);
            if (rc == 1 || rc == 2) {
                if (rc == 2)
                    count(&c->absorbed);
                return rc;
            }
            if (rc < 0) {
                count(&c->skipped_rate);
                return 0;
            }
        }
        if (atomic_load_explicit(&c->cur, memory_order_acquire) == cur)
            break;
    }
    count(&c->skipped_long);
    return 0;
}

int bmt_capture_offer(struct bmt_capture *c, enum bmt_trigger_kind kind, uint64_t value,
                      const char *pid, const char *function, uint64_t ts_ns)
{
    if (!bmt_capture_on(c) || kind <= BMT_TRIGGER_NONE || kind >= BMT_TRIGGER_KIND_COUNT ||
        !(c->cfg.armed >> kind & 1) || value < c->cfg.bound[kind])
        return -1;
    if (kind == BMT_TRIGGER_PROBE && c->cfg.probe_label[0] &&
        (!function || strcmp(function, c->cfg.probe_label) != 0))
        return -1;
    struct bmt_trigger t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.ts_ns = ts_ns;
    t.value = value;
    t.bound = c->cfg.bound[kind];
    if (pid)
        snprintf(t.pid, sizeof t.pid, "%s", pid);
    if (function)
        snprintf(t.function, sizeof t.function, "%s", function);
    return bmt_capture_fire(c, &t);
}

/* ---- the consumer: opening ---- */

/* Refills the token bucket: max_per_hour tokens an hour, at most that many
 * held. */
static void refill(struct bmt_capture *c, uint64_t now)
{
    uint32_t max = c->cfg.max_per_hour;
    if (max == 0)
        return;
    uint32_t tokens = atomic_load_explicit(&c->tokens, memory_order_relaxed);
    if (tokens >= max || now <= c->token_credit_ns) {
        c->token_credit_ns = now;
        return;
    }
    uint64_t per_token_ns = NS_PER_HOUR / max;
    uint64_t earned = (now - c->token_credit_ns) / per_token_ns;
    if (earned == 0)
        return;
    c->token_credit_ns += earned * per_token_ns;
    tokens = earned >= max - tokens ? max : tokens + (uint32_t)earned;
    atomic_store_explicit(&c->tokens, tokens, memory_order_relaxed);
}

static struct bmt_capture_slot *current(struct bmt_capture *c)
{
    return &c->slot[atomic_load_explicit(&c->cur, memory_order_relaxed)];
}

/* Gives the current slot back (its capture sealed, or not made) and moves
 * on to the other one. */
static void release_slot(struct bmt_capture *c)
{
    struct bmt_capture_slot *sl = current(c);
    atomic_store_explicit(&sl->ready, 0, memory_order_relaxed);
    atomic_store_explicit(&sl->cap_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&sl->word, 0, memory_order_release);
    atomic_store_explicit(&c->cur, atomic_load_explicit(&c->cur, memory_order_relaxed) ^ 1,
                          memory_order_release);
}

static void env_text(struct bmt_ctf_trace_info *info, const char *key, const char *text)
{
    (void)bmt_ctf_env_add_text(info, key, text);
}

static void env_int(struct bmt_ctf_trace_info *info, const char *key, uint64_t value)
{
    (void)bmt_ctf_env_add_int(info, key, (int64_t)(value > INT64_MAX ? INT64_MAX : value));
}

/* capture-<N>-<YYYYmmddTHHMMSSZ> of the trigger's wall time. */
static void capture_path(const struct bmt_capture *c, uint64_t ts_ns, char *out, size_t size)
{
    int64_t wall_s = (int64_t)(ts_ns / 1000000000u) + c->info.clock_offset_s +
                     ((int64_t)(ts_ns % 1000000000u) + c->info.clock_offset_ns) / 1000000000;
    time_t t = (time_t)wall_s;
    struct tm tm;
    char when[32] = "unknown";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(out, size, "%s/capture-%llu-%s", c->base, (unsigned long long)c->seq, when);
}

/* First packet of ring `r` to copy: the oldest one ending at or after
 * `from_ns` (packets reclaimed while looking are skipped). */
static uint64_t first_in_window(const struct bmt_ring *r, uint64_t from_ns)
{
    uint64_t seq = atomic_load_explicit(&((struct bmt_ring *)r)->consumed, memory_order_acquire);
    uint64_t committed = atomic_load_explicit(&((struct bmt_ring *)r)->committed,
                                              memory_order_acquire);
    for (; seq < committed; seq++) {
        uint64_t end;
        if (bmt_ring_packet_end(r, seq, &end) && end >= from_ns)
            break;
    }
    return seq;
}

static int open_capture(struct bmt_capture *c)
{
    const struct bmt_trigger *t = &c->first;
    size_t packet_bytes = c->rings[0]->subbuf_bytes;
    if (!c->dir)
        c->dir = malloc(sizeof *c->dir);
    if (!c->buf && posix_memalign((void **)&c->buf, BMT_DIRECT_BLOCK, packet_bytes) != 0)
        c->buf = NULL;
    if (!c->dir || !c->buf)
        return -ENOMEM;

    struct bmt_ctf_trace_info *info = malloc(sizeof *info);
    if (!info)
        return -ENOMEM;
    *info = c->info;
    /* Its own uuid: babeltrace2 merges traces that share one. */
    if (getrandom(info->uuid, sizeof info->uuid, 0) != (ssize_t)sizeof info->uuid) {
        free(info);
        return -EIO;
    }
    info->uuid[6] = (uint8_t)((info->uuid[6] & 0x0f) | 0x40);
    info->uuid[8] = (uint8_t)((info->uuid[8] & 0x3f) | 0x80);
    c->seq++;
    env_int(info, "beamtrace_capture", c->seq);
    env_text(info, "beamtrace_trigger_kind", bmt_trigger_kind_name(t->kind));
    env_int(info, "beamtrace_trigger_value", t->value);
    env_int(info, "beamtrace_trigger_bound", t->bound);
    env_text(info, "beamtrace_trigger_unit", bmt_trigger_kind_unit(t->kind));
    env_text(info, "beamtrace_trigger_pid", t->pid);
    env_text(info, "beamtrace_trigger_function", t->function);
    env_int(info, "beamtrace_trigger_ts", t->ts_ns);
    env_int(info, "beamtrace_capture_window_ns", c->cfg.window_ns);
    env_int(info, "beamtrace_capture_after_ns", c->cfg.after_ns);
    /* The ratios in force where the window begins; the changes after it
     * are sample_ratio events in the capture. */
    uint64_t from_ns = t->ts_ns > c->cfg.window_ns ? t->ts_ns - c->cfg.window_ns : 0;
    if (c->sampling) {
        uint32_t ratio[BMT_SAMPLE_KINDS];
        bmt_sampling_at(c->sampling, from_ns, ratio);
        for (int k = 0; k < BMT_SAMPLE_KINDS; k++) {
            char key[40];
            snprintf(key, sizeof key, "beamtrace_sample_%s", bmt_sample_kind_name(k));
            if (ratio[k] > 1)
                env_int(info, key, ratio[k]);
        }
    }

    char path[4096 + 64];
    capture_path(c, t->ts_ns, path, sizeof path);
    int rc = bmt_trace_dir_create(c->dir, path, c->file_mode, info, 0, 0);
    free(info);
    if (rc < 0)
        return rc;
    for (int i = 0; i < c->ring_count; i++) {
        c->next_seq[i] = first_in_window(c->rings[i], from_ns);
        c->stream_drops[i] = 0;
    }
    return 0;
}

/* ---- the consumer: copying ---- */

/* Copies the packets ring `i` published since the last call. Returns 0,
 * or -ENOSPC when max_bytes stops the capture. */
static int copy_ring(struct bmt_capture *c, int i, uint64_t other_bytes)
{
    struct bmt_ring *r = c->rings[i];
    struct bmt_trace_dir *d = c->dir;
    uint64_t consumed = atomic_load_explicit(&r->consumed, memory_order_acquire);
    uint64_t committed = atomic_load_explicit(&r->committed, memory_order_acquire);
    uint64_t lost = 0;
    if (c->next_seq[i] < consumed) {
        lost += consumed - c->next_seq[i];
        c->next_seq[i] = consumed;
    }
    int rc = 0;
    for (uint64_t seq = c->next_seq[i]; seq < committed; seq++) {
        size_t bytes;
        uint32_t events, drops;
        if (!bmt_ring_copy_packet(r, seq, c->buf, &bytes, &events, &drops)) {
            lost++;
            continue;
        }
        /* Reclaimed packets before this one: a gap in its sequence. */
        bmt_trace_dir_skip_packets(d, (unsigned)i, lost);
        atomic_fetch_add_explicit(&c->lost_packets, lost, memory_order_relaxed);
        lost = 0;
        uint64_t on_disk = atomic_load_explicit(&c->bytes, memory_order_relaxed) +
                           d->bytes_on_disk + other_bytes;
        if (c->cfg.max_bytes &&
            on_disk + bmt_trace_dir_packet_bytes(d, (unsigned)i, c->buf, bytes, r->subbuf_bytes) >
                c->cfg.max_bytes) {
            bmt_trace_dir_lose(d, (unsigned)i, events);
            rc = -ENOSPC;
            continue;
        }
        memcpy(c->buf + BMT_PKT_UUID, d->uuid, BMT_CTF_UUID_BYTES);
        c->stream_drops[i] += drops;
        bmt_put_u64(c->buf + BMT_PKT_EVENTS_DISCARDED, c->stream_drops[i]);
        if (bmt_trace_dir_write_packet(d, (unsigned)i, c->buf, bytes, r->subbuf_bytes, events) < 0)
            atomic_store_explicit(&c->error, d->error, memory_order_relaxed);
    }
    bmt_trace_dir_skip_packets(d, (unsigned)i, lost);
    atomic_fetch_add_explicit(&c->lost_packets, lost, memory_order_relaxed);
    c->next_seq[i] = committed;
    return rc;
}

static int copy_all(struct bmt_capture *c, uint64_t other_bytes)
{
    int rc = 0;
    for (int i = 0; i < c->ring_count; i++)
        if (copy_ring(c, i, other_bytes) < 0)
            rc = -ENOSPC;
    return rc;
}

/* Seals and closes the open capture. */
static void seal(struct bmt_capture *c, uint64_t now)
{
    struct bmt_trace_dir *d = c->dir;
    for (int i = 0; i < c->ring_count; i++) {
        if (d->streams[i].fd >= 0 || d->streams[i].lost_events)
            (void)bmt_trace_dir_seal_stream(d, (unsigned)i, c->stream_drops[i], now);
        /* Each stream says it was recorded until the capture's end, even
         * when its thread had no event in the tail. */
        if (d->streams[i].fd >= 0)
            (void)bmt_trace_dir_end_stream(d, (unsigned)i, now);
    }
    uint64_t bytes = d->bytes_on_disk;
    int rc = bmt_trace_dir_close(d);
    if (rc < 0)
        atomic_store_explicit(&c->error, -rc, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
    count(&c->captures);
    atomic_store_explicit(&c->open, 0, memory_order_relaxed);
    c->phase = BMT_CAPTURE_IDLE;
}

/* The end a capture is written up to: the latest trigger's, capped. */
static uint64_t capture_end(struct bmt_capture *c, uint64_t *word)
{
    struct bmt_capture_slot *sl = current(c);
    *word = atomic_load_explicit(&sl->word, memory_order_relaxed);
    uint64_t cap = atomic_load_explicit(&sl->cap_ns, memory_order_relaxed);
    return *word > cap ? cap : *word;
}

/* Marks max_bytes reached: no capture from now on. */
static enum bmt_capture_step full(struct bmt_capture *c, uint64_t now)
{
    atomic_store_explicit(&c->full, 1, memory_order_relaxed);
    if (c->phase != BMT_CAPTURE_IDLE)
        seal(c, now);
    release_slot(c);
    return BMT_CAPTURE_MAX_BYTES;
}

enum bmt_capture_step bmt_capture_tick(struct bmt_capture *c, uint64_t now, uint64_t other_bytes)
{
    if (!c->rings)
        return BMT_CAPTURE_DONE;
    refill(c, now);
    uint64_t word;
    switch (c->phase) {
    case BMT_CAPTURE_IDLE: {
        struct bmt_capture_slot *sl = current(c);
        if (!atomic_load_explicit(&sl->ready, memory_order_acquire))
            return BMT_CAPTURE_DONE;
        c->first = sl->trigger;
        uint32_t tokens = atomic_load_explicit(&c->tokens, memory_order_relaxed);
        if (tokens == 0) {
            /* Both slots were claimed on the last token. */
            count(&c->skipped_rate);
            release_slot(c);
            return BMT_CAPTURE_DONE;
        }
        if (tokens != UINT32_MAX)
            atomic_store_explicit(&c->tokens, tokens - 1, memory_order_relaxed);
        int rc = open_capture(c);
        if (rc < 0) {
            atomic_store_explicit(&c->error, -rc, memory_order_relaxed);
            release_slot(c);
            return BMT_CAPTURE_DONE;
        }
        c->phase = BMT_CAPTURE_OPEN;
        atomic_store_explicit(&c->open, 1, memory_order_relaxed);
        /* Copy what the rings hold now. */
    }
        __attribute__((fallthrough));
    case BMT_CAPTURE_OPEN:
        if (copy_all(c, other_bytes) < 0)
            return full(c, now);
        c->end_ns = capture_end(c, &word);
        if (now < c->end_ns)
            return BMT_CAPTURE_DONE;
        c->phase = BMT_CAPTURE_REQUESTED;
        return BMT_CAPTURE_REQUEST_FLUSH;
    case BMT_CAPTURE_REQUESTED:
        /* The writers that came back closed their packets: copy those. */
        if (copy_all(c, other_bytes) < 0)
            return full(c, now);
        c->phase = BMT_CAPTURE_CLOSING;
        return BMT_CAPTURE_FLUSH;
    case BMT_CAPTURE_CLOSING:
        /* The caller closed every open packet: the tail is published. */
        if (copy_all(c, other_bytes) < 0)
            return full(c, now);
        c->end_ns = capture_end(c, &word);
        if (now < c->end_ns) {
            c->phase = BMT_CAPTURE_OPEN; /* a trigger extended it */
            return BMT_CAPTURE_DONE;
        }
        {
            struct bmt_capture_slot *sl = current(c);
            atomic_store_explicit(&sl->ready, 0, memory_order_relaxed);
            if (!atomic_compare_exchange_strong_explicit(&sl->word, &word, 0, memory_order_release,
                                                         memory_order_relaxed)) {
                atomic_store_explicit(&sl->ready, 1, memory_order_relaxed);
                c->phase = BMT_CAPTURE_OPEN;
                return BMT_CAPTURE_DONE;
            }
            atomic_store_explicit(&sl->cap_ns, 0, memory_order_relaxed);
            atomic_store_explicit(&c->cur, atomic_load_explicit(&c->cur, memory_order_relaxed) ^ 1,
                                  memory_order_release);
        }
        seal(c, now);
        /* The next capture may be waiting already. */
        return bmt_capture_tick(c, now, other_bytes);
    }
    return BMT_CAPTURE_DONE;
}

void bmt_capture_finish(struct bmt_capture *c, uint64_t now, uint64_t other_bytes)
{
    if (!c->rings)
        return;
    /* The capture being written, then one waiting for it: both get what
     * the rings hold now. */
    for (int k = 0; k < 2; k++) {
        struct bmt_capture_slot *sl = current(c);
        if (c->phase == BMT_CAPTURE_IDLE && atomic_load_explicit(&sl->ready, memory_order_acquire)) {
            c->first = sl->trigger;
            if (open_capture(c) < 0) {
                release_slot(c);
                continue;
            }
            c->phase = BMT_CAPTURE_OPEN;
        }
        if (c->phase == BMT_CAPTURE_IDLE)
            continue;
        (void)copy_all(c, other_bytes);
        seal(c, now);
        release_slot(c);
    }
}

void bmt_capture_stats(const struct bmt_capture *c, struct bmt_capture_stats *st)
{
    struct bmt_capture *m = (struct bmt_capture *)c;
    memset(st, 0, sizeof *st);
    st->captures = atomic_load_explicit(&m->captures, memory_order_relaxed);
    st->fired = atomic_load_explicit(&m->fired, memory_order_relaxed);
    st->absorbed = atomic_load_explicit(&m->absorbed, memory_order_relaxed);
    st->skipped_rate = atomic_load_explicit(&m->skipped_rate, memory_order_relaxed);
    st->skipped_long = atomic_load_explicit(&m->skipped_long, memory_order_relaxed);
    st->skipped_bytes = atomic_load_explicit(&m->skipped_bytes, memory_order_relaxed);
    st->lost_packets = atomic_load_explicit(&m->lost_packets, memory_order_relaxed);
    st->bytes = atomic_load_explicit(&m->bytes, memory_order_relaxed);
    st->open = atomic_load_explicit(&m->open, memory_order_relaxed);
    st->error = atomic_load_explicit(&m->error, memory_order_relaxed);
}
