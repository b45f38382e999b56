/* Recording sessions: start, stop, info, and the consumer thread that moves
 * finished packets from the rings to the trace directory.
 *
 * Workload: a handful of sessions at most; start and stop are rare and run
 * on dirty I/O schedulers (they create directories, write files, join a
 * thread), serialised by priv->control. Each running session has one
 * consumer thread that sleeps on an eventfd: a writer that publishes a
 * packet wakes it (at most one write per wakeup, never blocking: the fd is
 * non-blocking), and it wakes anyway every CONSUMER_TICK_NS. It drains every
 * ring (discard mode) and, every FLUSH_INTERVAL_NS, asks writers to publish
 * their partial packets: a busy writer's events reach the disk within about
 * half a second. A writer publishes at its next event, so the last events
 * of a thread that went idle stay in its open packet until stop.
 *
 * Stop protocol (pairs with record() in nif_tracer.c): stop stores
 * state = STOPPING (sequentially consistent), then waits until every slot's
 * `busy` is 0. A writer stores busy = 1 (sequentially consistent) and then
 * checks the state, so after the wait no writer is inside a ring and stop
 * may flush and drain every ring itself and unmap them.
 */
#define _GNU_SOURCE /* strerrorname_np */
#include "nif_priv.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CONSUMER_TICK_NS (10 * 1000 * 1000)
#define FLUSH_INTERVAL_NS (500 * 1000 * 1000)
#define MAX_BUFFER_BYTES (UINT64_C(1) << 30)
#define MIN_SUBBUF_BYTES 4096u

struct session *bmt_resolve_session(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM state,
                                    uint64_t *generation)
{
    struct session_handle *h;
    if (enif_is_empty_list(env, state)) {
        uint64_t packed = atomic_load_explicit(&p->default_session, memory_order_acquire);
        if (packed == 0)
            return NULL;
        *generation = packed >> 8;
        return &p->sessions[(packed & 0xff) - 1];
    }
    /* A handle from an earlier load of the library names nothing here. */
    if (enif_get_resource(env, state, p->session_type, (void **)&h) &&
        h->instance == p->instance) {
        *generation = h->generation;
        return &p->sessions[h->index];
    }
    return NULL;
}

/* Recomputes priv->recorder_mask, the tracepoints some running session
 * records: user probes read it to answer "nobody listens" in one load.
 * Called with priv->control held, after a session's state changed. */
static void update_recorder_mask(struct priv *p)
{
    uint64_t mask = 0;
    for (int i = 0; i < BMT_MAX_SESSIONS; i++)
        if (atomic_load(&p->sessions[i].state) == SESSION_RUNNING)
            mask |= atomic_load(&p->sessions[i].enable_mask);
    atomic_store(&p->recorder_mask, mask);
}

/* ---- consumer ---- */

/* Writes every published packet of slot `i` to its stream file. After the
 * first write failure the session fails and later packets are counted as
 * lost instead of written. */
static void drain_slot(struct session *s, int i)
{
    struct bmt_ring *r = &s->slots[i].ring;
    const uint8_t *pkt;
    size_t bytes;
    uint32_t events;
    while ((pkt = bmt_ring_peek(r, &bytes, &events)) != NULL) {
        if (!atomic_load(&s->error)) {
            int rc = bmt_trace_dir_write_packet(&s->dir, (unsigned)i, pkt, bytes);
            if (rc < 0) {
                int expected = SESSION_RUNNING;
                atomic_store(&s->error, -rc);
                atomic_compare_exchange_strong(&s->state, &expected, SESSION_FAILED);
            }
        }
        if (atomic_load(&s->error))
            atomic_fetch_add(&s->write_lost, events);
        else
            atomic_fetch_add(&s->written_events, events);
        bmt_ring_release(r);
    }
}

void bmt_session_wake(struct session *s)
{
    if (!atomic_exchange_explicit(&s->wake_pending, 1, memory_order_relaxed)) {
        uint64_t one = 1;
        /* EAGAIN (counter full) still leaves the consumer woken. */
        if (write(s->wake_fd, &one, sizeof one) < 0) {
        }
    }
}

static void *consumer_main(void *arg)
{
    struct session *s = arg;
    uint64_t last_flush_ns = bmt_clock_ns();
    struct pollfd pfd = {s->wake_fd, POLLIN, 0};
    while (!atomic_load(&s->consumer_stop)) {
        uint64_t count;
        if (read(s->wake_fd, &count, sizeof count) < 0) {
            /* EAGAIN: woken by the tick, not by a writer. */
        }
        atomic_store_explicit(&s->wake_pending, 0, memory_order_relaxed);
        /* Overwrite rings belong to their writers until stop. */
        if (s->mode == BMT_RING_DISCARD) {
            for (int i = 0; i < s->ring_count; i++)
                drain_slot(s, i);
            /* By the clock, not by passes: under load most passes are
             * writer wakeups, and flushing that often would fill the trace
             * with tiny packets. */
            uint64_t now = bmt_clock_ns();
            if (now - last_flush_ns >= FLUSH_INTERVAL_NS) {
                last_flush_ns = now;
                for (int i = 0; i < s->ring_count; i++)
                    bmt_ring_request_flush(&s->slots[i].ring);
            }
        }
        poll(&pfd, 1, CONSUMER_TICK_NS / 1000000);
    }
    return NULL;
}

/* ---- start ---- */

static void release_memory(struct session *s)
{
    if (s->ring_mem)
        munmap(s->ring_mem, s->ring_mem_bytes);
    s->ring_mem = NULL;
    free(s->packet_meta);
    s->packet_meta = NULL;
}

static ERL_NIF_TERM errno_atom(ErlNifEnv *env, int err)
{
    /* Erlang's file errors use the lowercase errno name: enospc, eacces. */
    char name[32];
    const char *text = strerrorname_np(err);
    size_t i = 0;
    if (!text)
        text = "eio";
    for (; text[i] && i < sizeof name - 1; i++)
        name[i] = (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] + 32 : text[i]);
    name[i] = '\0';
    return enif_make_atom(env, name);
}

static ERL_NIF_TERM error_tuple(ErlNifEnv *env, ERL_NIF_TERM reason)
{
    const struct priv *p = enif_priv_data(env);
    return enif_make_tuple2(env, p->atom.error, reason);
}

static ERL_NIF_TERM badopt(ErlNifEnv *env, struct priv *p, ERL_NIF_TERM key)
{
    return error_tuple(env, enif_make_tuple2(env, p->atom.badopt, key));
}

/* Reads one event pattern (binary or charlist) into `out`. */
static int get_pattern(ErlNifEnv *env, ERL_NIF_TERM term, char *out, size_t size)
{
    ErlNifBinary bin;
    if (enif_inspect_iolist_as_binary(env, term, &bin)) {
        if (bin.size == 0 || bin.size >= size || memchr(bin.data, 0, bin.size))
            return 0;
        memcpy(out, bin.data, bin.size);
        out[bin.size] = '\0';
        return 1;
    }
    return 0;
}

/* start(Dir, Events, Mode, BufferBytes, Subbuffers, MessageLength, Default,
 *       Wakeups) -> {ok, Handle} | {error, {badopt, Key}} | {error, Posix}.
 * Wakeups false is a test mode: writers never wake the consumer. */
ERL_NIF_TERM bmt_nif_start(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    ErlNifBinary dir_bin;
    char dir[4096];
    uint64_t mask = 0;
    ErlNifUInt64 buffer_bytes;
    unsigned subbuffers;
    int message_bytes;
    ERL_NIF_TERM list = argv[1], head;

    if (!enif_inspect_iolist_as_binary(env, argv[0], &dir_bin) || dir_bin.size == 0 ||
        dir_bin.size >= sizeof dir - 64 || memchr(dir_bin.data, 0, dir_bin.size))
        return badopt(env, p, p->atom.dir);
    memcpy(dir, dir_bin.data, dir_bin.size);
    dir[dir_bin.size] = '\0';

    if (!enif_is_list(env, list))
        return badopt(env, p, p->atom.events);
    while (enif_get_list_cell(env, list, &head, &list)) {
        char pattern[256];
        if (!get_pattern(env, head, pattern, sizeof pattern) ||
            bmt_catalogue_match(pattern, &mask) == 0)
            return badopt(env, p, enif_make_tuple2(env, p->atom.events, head));
    }
    if (!enif_is_empty_list(env, list) || mask == 0)
        return badopt(env, p, p->atom.events);

    if (argv[2] != p->atom.discard && argv[2] != p->atom.overwrite)
        return badopt(env, p, p->atom.mode);
    if (!enif_get_uint(env, argv[4], &subbuffers) || subbuffers < 2 || subbuffers > 1024)
        return badopt(env, p, p->atom.subbuffers);
    if (!enif_get_uint64(env, argv[3], &buffer_bytes) || buffer_bytes > MAX_BUFFER_BYTES ||
        buffer_bytes / subbuffers < MIN_SUBBUF_BYTES)
        return badopt(env, p, p->atom.buffer_size);
    if (argv[5] == p->atom.size_only)
        message_bytes = BMT_MESSAGE_SIZE_ONLY;
    else if (!enif_get_int(env, argv[5], &message_bytes) || message_bytes < 0 ||
             message_bytes > BMT_MSG_MAX_BYTES)
        return badopt(env, p, p->atom.message_length);
    if (argv[6] != p->atom.true_ && argv[6] != p->atom.false_)
        return badopt(env, p, p->atom.default_);
    if (argv[7] != p->atom.true_ && argv[7] != p->atom.false_)
        return enif_make_badarg(env);

    size_t subbuf_bytes = (size_t)(buffer_bytes / subbuffers) & ~(size_t)7;
    /* The largest event this session can record must fit a packet, so that
     * no event is ever refused for its size alone. */
    size_t largest = 0;
    for (int tp = 0; tp < BMT_TP_COUNT; tp++) {
        size_t bytes = bmt_event_max_bytes(tp, message_bytes > 0 ? (size_t)message_bytes : 47);
        if ((mask >> tp & 1) && bytes > largest)
            largest = bytes;
    }
    if (subbuf_bytes < BMT_PKT_HEADER_BYTES + largest)
        return badopt(env, p, p->atom.buffer_size);

    enif_mutex_lock(p->control);
    int idx = -1;
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        if (atomic_load(&p->sessions[i].state) == SESSION_STOPPED) {
            idx = i;
            break;
        }
    }
    if (idx < 0) {
        enif_mutex_unlock(p->control);
        return error_tuple(env, p->atom.too_many_sessions);
    }
    struct session *s = &p->sessions[idx];
    struct bmt_ctf_trace_info info;
    int rc = bmt_ctf_trace_info_init(&info);
    if (rc == 0)
        rc = bmt_trace_dir_create(&s->dir, dir, &info);
    if (rc < 0)
        goto fail;

    s->mode = argv[2] == p->atom.overwrite ? BMT_RING_OVERWRITE : BMT_RING_DISCARD;
    s->wake_on_publish = s->mode == BMT_RING_DISCARD && argv[7] == p->atom.true_;
    /* The TSC clock is calibrated once, on this dirty scheduler. */
    bmt_clock_calibrate(&p->clock);
    s->subbuf_bytes = subbuf_bytes;
    s->subbuf_count = subbuffers;
    atomic_store(&s->enable_mask, mask);
    atomic_store(&s->message_bytes, message_bytes);
    s->ring_count = p->max_threads;
    s->ring_mem_bytes = (size_t)s->ring_count * subbuf_bytes * subbuffers;
    /* Reserve address space only: a ring's pages are touched when its
     * thread first writes, so idle threads cost no memory. */
    s->ring_mem = mmap(NULL, s->ring_mem_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s->ring_mem == MAP_FAILED) {
        s->ring_mem = NULL;
        rc = -ENOMEM;
        goto fail_dir;
    }
    s->packet_meta = calloc((size_t)s->ring_count * subbuffers * 2, sizeof(uint32_t));
    if (!s->packet_meta) {
        rc = -ENOMEM;
        goto fail_mem;
    }
    for (int i = 0; i < s->ring_count; i++) {
        uint32_t *meta = s->packet_meta + (size_t)i * subbuffers * 2;
        bmt_ring_init(&s->slots[i].ring, s->ring_mem + (size_t)i * subbuf_bytes * subbuffers, meta,
                      meta + subbuffers, subbuf_bytes, subbuffers, s->mode, (uint64_t)i, info.uuid);
        atomic_store(&s->slots[i].busy, 0);
    }
    atomic_store(&s->no_slot_drops, 0);
    atomic_store(&s->write_lost, 0);
    atomic_store(&s->written_events, 0);
    atomic_store(&s->error, 0);
    atomic_store(&s->consumer_stop, 0);
    atomic_store(&s->wake_pending, 0);
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->wake_fd < 0) {
        rc = -errno;
        goto fail_mem;
    }
    if (enif_thread_create("beamtrace_consumer", &s->consumer, consumer_main, s, NULL) != 0) {
        rc = -EAGAIN;
        close(s->wake_fd);
        goto fail_mem;
    }

    uint64_t gen = atomic_load(&s->generation) + 1;
    atomic_store(&s->generation, gen);
    atomic_store(&s->state, SESSION_RUNNING);
    update_recorder_mask(p);
    if (argv[6] == p->atom.true_ || atomic_load(&p->default_session) == 0)
        atomic_store_explicit(&p->default_session, gen << 8 | (uint64_t)(idx + 1),
                              memory_order_release);
    enif_mutex_unlock(p->control);

    struct session_handle *h = enif_alloc_resource(p->session_type, sizeof *h);
    h->instance = p->instance;
    h->index = idx;
    h->generation = gen;
    ERL_NIF_TERM handle = enif_make_resource(env, h);
    enif_release_resource(h);
    return enif_make_tuple2(env, p->atom.ok, handle);

fail_mem:
    release_memory(s);
fail_dir:
    /* Leave no metadata behind: a retry with the same dir must work. */
    bmt_trace_dir_abandon(&s->dir);
fail:
    enif_mutex_unlock(p->control);
    return error_tuple(env, errno_atom(env, -rc));
}

/* ---- stop ---- */

struct stop_result {
    uint64_t events, discarded, overwritten, bytes;
    int error;
};

/* Stops session `s` (control held, state already STOPPING): waits for
 * writers, joins the consumer, drains every ring, closes the files. */
static void finish(struct session *s, struct stop_result *res)
{
    for (int i = 0; i < s->ring_count; i++)
        while (atomic_load(&s->slots[i].busy))
            sched_yield();
    atomic_store(&s->consumer_stop, 1);
    atomic_store(&s->wake_pending, 0);
    bmt_session_wake(s);
    enif_thread_join(s->consumer, NULL);
    close(s->wake_fd);

    uint64_t now = bmt_clock_ns();
    memset(res, 0, sizeof *res);
    for (int i = 0; i < s->ring_count; i++) {
        struct bmt_ring *r = &s->slots[i].ring;
        drain_slot(s, i);
        bmt_ring_flush(r, now);
        drain_slot(s, i);
        res->discarded += r->discarded_count;
        res->overwritten += r->overwritten_count;
    }
    int rc = bmt_trace_dir_close(&s->dir);
    if (rc < 0 && !atomic_load(&s->error))
        atomic_store(&s->error, -rc);
    res->events = atomic_load(&s->written_events);
    res->discarded += atomic_load(&s->no_slot_drops) + atomic_load(&s->write_lost);
    res->bytes = s->dir.bytes_written;
    res->error = atomic_load(&s->error);
    release_memory(s);
    atomic_store(&s->state, SESSION_STOPPED);
}

/* Moves `s` to STOPPING if it is running (or failed) with `gen`. */
static int begin_stop(struct priv *p, struct session *s, uint64_t gen)
{
    int st = atomic_load(&s->state);
    if ((st != SESSION_RUNNING && st != SESSION_FAILED) || atomic_load(&s->generation) != gen)
        return 0;
    atomic_store(&s->state, SESSION_STOPPING);
    update_recorder_mask(p);
    uint64_t packed = gen << 8 | (uint64_t)(s - p->sessions + 1);
    atomic_compare_exchange_strong(&p->default_session, &packed, 0);
    return 1;
}

/* stop(Handle | []) -> {ok, Stats} | {error, {Posix, Stats}} | {error, not_running} */
ERL_NIF_TERM bmt_nif_stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    uint64_t gen;
    struct session_handle *h;
    if (!enif_is_empty_list(env, argv[0]) &&
        !enif_get_resource(env, argv[0], p->session_type, (void **)&h))
        return enif_make_badarg(env);
    enif_mutex_lock(p->control);
    struct session *s = bmt_resolve_session(p, env, argv[0], &gen);
    if (!s || !begin_stop(p, s, gen)) {
        enif_mutex_unlock(p->control);
        return error_tuple(env, p->atom.not_running);
    }
    char dir[sizeof s->dir.path];
    memcpy(dir, s->dir.path, sizeof dir);
    struct stop_result res;
    finish(s, &res);
    enif_mutex_unlock(p->control);

    ERL_NIF_TERM keys[] = {p->atom.dir, p->atom.events, p->atom.discarded, p->atom.overwritten,
                           p->atom.written_bytes};
    ERL_NIF_TERM dir_term;
    size_t dir_len = strlen(dir);
    memcpy(enif_make_new_binary(env, dir_len, &dir_term), dir, dir_len);
    ERL_NIF_TERM values[] = {dir_term, enif_make_uint64(env, res.events),
                             enif_make_uint64(env, res.discarded),
                             enif_make_uint64(env, res.overwritten),
                             enif_make_uint64(env, res.bytes)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, 5, &map);
    if (res.error)
        return error_tuple(env, enif_make_tuple2(env, errno_atom(env, res.error), map));
    return enif_make_tuple2(env, p->atom.ok, map);
}

void bmt_sessions_stop_all(struct priv *p)
{
    enif_mutex_lock(p->control);
    for (int i = 0; i < BMT_MAX_SESSIONS; i++) {
        struct session *s = &p->sessions[i];
        struct stop_result res;
        if (begin_stop(p, s, atomic_load(&s->generation)))
            finish(s, &res);
    }
    enif_mutex_unlock(p->control);
}

/* info(Handle | []) -> #{state, dir, events} | {error, not_running}.
 * Live figures only: drops are totalled at stop, when writers are quiet. */
ERL_NIF_TERM bmt_nif_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    uint64_t gen;
    enif_mutex_lock(p->control);
    struct session *s = bmt_resolve_session(p, env, argv[0], &gen);
    int st = s ? atomic_load(&s->state) : SESSION_STOPPED;
    if (!s || atomic_load(&s->generation) != gen ||
        (st != SESSION_RUNNING && st != SESSION_FAILED)) {
        enif_mutex_unlock(p->control);
        return error_tuple(env, p->atom.not_running);
    }
    ERL_NIF_TERM dir_term;
    size_t dir_len = strlen(s->dir.path);
    memcpy(enif_make_new_binary(env, dir_len, &dir_term), s->dir.path, dir_len);
    int err = atomic_load(&s->error);
    ERL_NIF_TERM keys[] = {p->atom.state, p->atom.dir, p->atom.events, p->atom.default_,
                           p->atom.reason};
    ERL_NIF_TERM values[] = {
        st == SESSION_RUNNING ? p->atom.running : p->atom.failed, dir_term,
        enif_make_uint64(env, atomic_load(&s->written_events)),
        (atomic_load(&p->default_session) & 0xff) == (uint64_t)(s - p->sessions + 1)
            ? p->atom.true_ : p->atom.false_,
        err ? errno_atom(env, err) : p->atom.undefined};
    enif_mutex_unlock(p->control);
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, 5, &map);
    return map;
}

/* sessions() -> [Handle]: every running or failed session. */
ERL_NIF_TERM bmt_nif_sessions(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    struct priv *p = enif_priv_data(env);
    ERL_NIF_TERM list = enif_make_list(env, 0);
    enif_mutex_lock(p->control);
    for (int i = BMT_MAX_SESSIONS - 1; i >= 0; i--) {
        int st = atomic_load(&p->sessions[i].state);
        if (st != SESSION_RUNNING && st != SESSION_FAILED)
            continue;
        struct session_handle *h = enif_alloc_resource(p->session_type, sizeof *h);
        h->instance = p->instance;
        h->index = i;
        h->generation = atomic_load(&p->sessions[i].generation);
        list = enif_make_list_cell(env, enif_make_resource(env, h), list);
        enif_release_resource(h);
    }
    enif_mutex_unlock(p->control);
    return list;
}
