/* The recorder: recording sessions, each a set of per-thread rings drained
 * by a consumer thread into a trace directory. Owns both halves of the
 * protocol that lets writers run lock-free while a session stops, flushes
 * an idle ring, or takes a snapshot.
 *
 * Workload: a handful of sessions; start, stop and snapshot are rare and
 * run on threads that may block (the NIF calls them on dirty I/O
 * schedulers). Writers are the VM's scheduler threads, one ring per
 * (session, thread slot), millions of events a second; each event is one
 * enter/reserve/commit/leave on the calling thread's own ring.
 *
 * Concurrency contract:
 *  - Writer (any thread, its own slot only): bmt_rec_enter, then, if it
 *    returned a ring, bmt_rec_reserve/commit on it and bmt_rec_leave.
 *    Enter stores slot.busy = 1 (relaxed, then bmt_fence_light) and loads the
 *    session's live word (its generation while it runs) and the slot's
 *    `frozen`; leave stores busy = 0 (release). A writer that must call
 *    nothing (the tracer's fastest path) uses bmt_rec_try_enter and
 *    bmt_rec_reserve_open instead, which change nothing and count nothing
 *    when they say no, and leaves with bmt_rec_leave_quiet when it wrote
 *    nothing or its leave has no work (bmt_rec_leave_has_work).
 *  - Other side (stop/finish, the consumer's idle-ring flush, snapshot):
 *    stores the state (live word first: bmt_rec_set_state) or sets its bit
 *    of `frozen` (atomic or), then bmt_fence_heavy, then waits for
 *    busy == 0 (acquire). After that wait no writer is inside the ring and
 *    every later writer sees the new state or freeze (fence.h has the
 *    argument), so the other side may use the writer-owned ring fields.
 *    A writer that finds its ring frozen waits a bounded spin (the freeze
 *    holds for one packet close), then drops the event and counts it; it
 *    never blocks.
 *  - Control (start, stop, snapshot, info, the consumer's self-stop, VM
 *    exit) is serialised by `control`. The consumer takes it with trylock
 *    so a stop that holds it while joining the consumer cannot deadlock.
 *
 * Stopping: a session stops when asked (bmt_rec_stop) or by itself (a cap:
 * duration, max_events, max_bytes, max_rate; a write error; its directory
 * removed; the VM exiting). "Finishing" waits for writers, drains every ring,
 * seals every stream file with its final loss count and closes the trace;
 * a session that finished by itself keeps its figures (state FINISHED) until
 * bmt_rec_stop collects them, and counts the events still offered to it.
 * Every event a session is offered while it records is either in the trace
 * or counted as discarded: ring full, packet overwritten, no thread slot,
 * re-entry, frozen ring, a packet the disk refused or a cap left unwritten.
 * Events offered once it ended (asked to stop, or a cap, the duration, the
 * VM's exit) are no loss: they are counted apart, as after_stop, and never
 * in the trace's loss counts (LTTng's discarded is what was lost while
 * recording).
 */
#ifndef BMT_RECORDER_H
#define BMT_RECORDER_H

#include "capture.h"
#include "sampling.h"
#include "core/catalogue.h"
#include "core/clock.h"
#include "core/ctf.h"
#include "core/event.h"
#include "core/fence.h"
#include "core/ring.h"
#include "core/trace_dir.h"
#include "relayd_client.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define BMT_MAX_SESSIONS 16
/* A session core's generation counts its starts in this many bits (it
 * wraps, skipping 0): small enough to share one word with the tracer's
 * other per-event facts (nif_dispatch.h's decision word). */
#define BMT_GENERATION_BITS 44
#define BMT_MAX_THREADS BMT_MAX_STREAMS

enum bmt_session_state {
    BMT_SESSION_FREE = 0, /* unused core */
    BMT_SESSION_RUNNING,
    BMT_SESSION_FINISHING,/* someone is finishing it */
    BMT_SESSION_FINISHED, /* stopped by itself; figures kept until collected */
};

/* Why a session stopped. */
enum bmt_stop_reason {
    BMT_REASON_NONE = 0,     /* still running */
    BMT_REASON_STOP,         /* bmt_rec_stop */
    BMT_REASON_DURATION,
    BMT_REASON_MAX_EVENTS,
    BMT_REASON_MAX_BYTES,
    BMT_REASON_MAX_RATE,
    BMT_REASON_WRITE_ERROR,  /* the disk refused a write; errno in the stats */
    BMT_REASON_DIR_REMOVED,  /* the trace directory was deleted */
    BMT_REASON_EXIT,         /* the process exited */
    BMT_REASON_UNLOAD,       /* the library was unloaded */
};

/* What a session records and how; fixed at start. */
struct bmt_rec_config {
    char dir[4096];               /* absolute path of the trace directory */
    uint64_t enable_mask;         /* bit per tracepoint id */
    enum bmt_ring_mode mode;
    size_t subbuf_bytes;          /* packet size, bytes */
    uint32_t subbuf_count;        /* packets per ring, >= 2 */
    size_t message_max_bytes;     /* longest message text an event may carry */
    unsigned file_mode;           /* trace file mode, 0 = private (0600) */
    uint64_t max_bytes;           /* trace size cap on disk; 0 = none */
    uint64_t max_events;          /* events written cap; 0 = none */
    uint64_t duration_ns;         /* the session stops itself after this; 0 = never */
    uint64_t max_rate;            /* events offered per second over a 100 ms window; 0 = none */
    uint64_t tracefile_size_bytes;/* rotate stream files past this; 0 = never */
    uint32_t tracefile_count;     /* stream files kept when rotating; 0 = all */
    uint64_t flush_interval_ns;   /* idle partial packets reach the disk within this */
    int wake_on_publish;          /* writers wake the consumer per packet (0: test mode) */
    struct bmt_ctf_trace_info info;
    struct bmt_capture_config capture; /* flight captures (overwrite mode); window 0 = none */
    uint32_t sample_ratio[BMT_SAMPLE_KINDS]; /* the sample option: 1 in N per kind; 0/1 = all */
    enum bmt_on_max_rate on_max_rate;  /* past max_rate: stop, or sample more */
    uint8_t owner[16];            /* the caller's, opaque: who hears of a self-stop */
    size_t owner_bytes;
    /* Streaming (relayd_client.h): a client, not yet opened, that the
     * session opens at start and owns from then on (the caller keeps it
     * when the start fails), or NULL. With an empty `dir` it is the only
     * output: nothing is written locally. */
    struct bmt_relayd *relayd;
};

/* A session's figures. events + discarded + after_stop = every event it
 * was offered (after_stop grows after the finish, while tracers still
 * offer, until the session is collected). */
struct bmt_rec_stats {
    uint64_t events;       /* in the trace */
    uint64_t discarded;    /* offered while recording and not in the trace */
    uint64_t after_stop;   /* offered once the session had ended: not recorded, not a loss */
    uint64_t overwritten;  /* part of discarded: overwritten packets (flight recorder) */
    uint64_t bytes;        /* the trace's size on disk */
    enum bmt_stop_reason reason;
    int error;             /* errno of a write failure, else 0 */
    /* Streaming sessions: the relayd's copy. When it is the only output,
     * events and bytes above are its own and discarded counts what it
     * lost. */
    int has_relayd;
    struct bmt_relayd_stats relayd;
    int flight;            /* the session made captures (capture below) */
    struct bmt_capture_stats capture;
    int sampled;           /* the session sampled (ratios below) */
    uint32_t sample_ratio[BMT_SAMPLE_KINDS]; /* in force at the end */
    uint32_t sample_reactions; /* ratio changes made for max_rate */
};

/* The bits of a slot's `frozen`: the other side's (set and cleared with
 * atomic or/and), and the writer's. */
#define BMT_SLOT_FROZEN 1
#define BMT_SLOT_DROPS 2

/* One thread's ring in one session. */
struct bmt_slot {
    struct bmt_ring ring;
    _Alignas(BMT_CACHE_LINE) _Atomic int busy; /* the writer is inside the ring */
    /* BMT_SLOT_FROZEN: another thread owns the ring for a moment;
     * BMT_SLOT_DROPS: the writer's frozen_drops wait to reach the ring.
     * Either keeps the writer's one test off its common path. */
    _Atomic int frozen;
    uint64_t frozen_drops;        /* writer: events dropped on a frozen ring, not yet in the ring */
    _Atomic uint64_t late_drops;  /* writer: events offered after the session finished */
};

struct bmt_session {
    _Atomic int state;            /* enum bmt_session_state */
    _Atomic uint64_t generation;  /* bumped at each start of this core, modulo
                                   * 2^BMT_GENERATION_BITS, never 0 */
    _Atomic uint64_t live;        /* the generation while RUNNING, else 0: the
                                   * writer's one load (bmt_rec_set_state) */
    _Atomic uint64_t enable_mask; /* the config's, readable lock-free */
    _Atomic uint64_t sampled_mask;/* sampling.mask, beside enable_mask: the tracer's one load */
    /* The tracer's formatting option (opaque here; the NIF's). Atomic: a
     * stale writer may read it while a start rewrites a reused core. */
    _Atomic int format_option;
    uint32_t max_event_bytes[BMT_TP_COUNT]; /* per tracepoint, header included */
    struct bmt_rec_config cfg;
    int ring_count;
    uint8_t *ring_mem;            /* ring_count rings, mmap'ed, touched lazily */
    size_t ring_mem_bytes;
    uint32_t *packet_meta;        /* per-ring packet_events, packet_bytes (and drops with captures) */
    struct bmt_ring **ring_ptrs;  /* the rings by stream, for the captures */
    struct bmt_capture capture;   /* flight captures (capture.h); off unless configured */
    struct bmt_trace_dir dir;
    pthread_t consumer;
    int consumer_joinable;
    _Atomic int consumer_stop;
    int wake_fd;                  /* eventfd the consumer sleeps on */
    _Atomic int wake_pending;     /* a wakeup is written and not yet consumed */
    uint64_t start_ns;
    _Atomic uint64_t no_slot_drops;  /* offered from threads without a slot, or re-entered */
    _Atomic uint64_t rate_exempt;    /* offered by beamtrace's own code (the state dump):
                                        not counted toward max_rate */
    _Atomic uint64_t events_on_disk; /* for live figures */
    _Atomic uint64_t lost_on_disk;   /* events the consumer could not or would not write */
    _Atomic uint64_t bytes_on_disk;
    _Atomic int reason;           /* enum bmt_stop_reason; NONE while running */
    _Atomic int error;            /* errno of the first write failure */
    struct bmt_rec_stats final;   /* set by the finish */
    struct bmt_sampling sampling; /* ratios per event kind (sampling.h) */
    int control_slot;             /* the consumer's own ring (sample_ratio events), or -1 */
    struct bmt_slot slots[BMT_MAX_THREADS];
};

/* Called (outside the writer path, from the consumer thread) when a session
 * stops by itself, with the session's index, generation and reason. */
typedef void bmt_rec_notify_fn(void *ctx, int index, uint64_t generation,
                               enum bmt_stop_reason reason);

struct bmt_recorder {
    pthread_mutex_t control;
    int max_threads;              /* slots per session, <= BMT_MAX_THREADS */
    /* Bumped (after the change) on every change of what decides whether a
     * session wants an event: a session's state, masks (sampled_mask
     * included) and options, and the default session. The tracer caches
     * its decision for the default session per thread until it moves. */
    _Atomic uint64_t epoch;
    _Atomic uint64_t recorder_mask; /* OR of the running sessions' masks */
    _Atomic uint16_t tp_sessions[BMT_TP_COUNT]; /* running sessions (bits) per tracepoint */
    _Atomic uint16_t probe_sessions; /* running sessions (bits) armed for beamtrace:trigger/1 */
    /* The default session as (generation << 8 | index + 1), 0 for none: one
     * word, so a reader gets an index and a generation that belong together. */
    _Atomic uint64_t default_session;
    bmt_rec_notify_fn *notify;
    void *notify_ctx;
    struct bmt_session *sessions; /* BMT_MAX_SESSIONS */
};

/* ---- lifecycle (control side) ---- */

/* Prepares `rec` for `max_threads` thread slots and registers it for the
 * process-exit flush. Returns 0 or a negative errno. */
int bmt_rec_init(struct bmt_recorder *rec, int max_threads, bmt_rec_notify_fn *notify,
                 void *notify_ctx);

/* Finishes every session (reason UNLOAD), unregisters, frees. */
void bmt_rec_destroy(struct bmt_recorder *rec);

/* Starts a session: creates the trace directory, opens the relayd session
 * (cfg->relayd; bounded wait), maps the rings, starts the consumer. `format_option` is stored for the tracer. On success returns 0
 * and sets *index and *generation; `make_default` (or no default yet) makes
 * it the default session. Errors: negative errno (trace_dir.h's for the
 * directory, -EBUSY when all BMT_MAX_SESSIONS cores are in use, or
 * bmt_relayd_open's: the client's stats then say why). */
int bmt_rec_start(struct bmt_recorder *rec, const struct bmt_rec_config *cfg, int format_option,
                  int make_default, int *index, uint64_t *generation);

/* Stops session (index, generation), or collects one that stopped by
 * itself, and fills *stats. Returns 0, or -ESRCH when it names no running or
 * finished session. */
int bmt_rec_stop(struct bmt_recorder *rec, int index, uint64_t generation,
                 struct bmt_rec_stats *stats);

/* Live figures of session (index, generation): its state and stats so far.
 * Returns 0 or -ESRCH. */
int bmt_rec_info(struct bmt_recorder *rec, int index, uint64_t generation, int *state,
                 struct bmt_rec_stats *stats, char *dir, size_t dir_size);

/* Writes the current contents of a running flight-recorder (overwrite
 * mode) session's rings to the new trace directory `dir`, without
 * stopping it; events offered to a ring while it is copied are counted as
 * discarded. Fills *stats for the snapshot. Returns 0, -ESRCH, -EINVAL (not
 * overwrite mode), or trace_dir.h's errors for `dir`. */
int bmt_rec_snapshot(struct bmt_recorder *rec, int index, uint64_t generation, const char *dir,
                     struct bmt_rec_stats *stats);

/* The capture figures of session (index, generation). Returns 0 or -ESRCH. */
int bmt_rec_capture_stats(struct bmt_recorder *rec, int index, uint64_t generation,
                          struct bmt_capture_stats *stats);

/* Session cores that are running or finished, as (index, generation); at
 * most BMT_MAX_SESSIONS. Returns the count. */
int bmt_rec_sessions(struct bmt_recorder *rec, int index[], uint64_t generation[]);

/* Finishes every running session with `reason` (process exit: bounded
 * wait for the control lock, so a thread stuck holding it cannot hang the
 * exit). */
void bmt_rec_stop_all(struct bmt_recorder *rec, enum bmt_stop_reason reason);

/* ---- lock-free reads (any thread) ---- */

/* The default session, or NULL; *generation is the one it must still have. */
static inline struct bmt_session *bmt_rec_default(struct bmt_recorder *rec, uint64_t *generation)
{
    uint64_t packed = atomic_load_explicit(&rec->default_session, memory_order_acquire);
    if (packed == 0)
        return NULL;
    *generation = packed >> 8;
    return &rec->sessions[(packed & 0xff) - 1];
}

/* 1 when `s` records with `generation` (a finishing or finished session
 * does not, but still counts what it is offered: bmt_rec_counts). */
/* The writer's bracket (below) is always inline: it runs on every event,
 * in callers the compiler may judge too large to inline it into. */
static inline __attribute__((always_inline)) int bmt_rec_live(struct bmt_session *s, uint64_t generation)
{
    /* Acquire (a plain load on x86): pairs with the release of a start.
     * One word says both "running" and "this generation". */
    return atomic_load_explicit(&s->live, memory_order_acquire) == generation;
}

/* Stores a session's state and, with it, its live word: every change of
 * state goes through here (control held, or the consumer stopping its own
 * session), so the two never disagree for long: `live` is cleared before
 * a running session's state leaves RUNNING, and set after it enters it. */
static inline void bmt_rec_set_state(struct bmt_session *s, enum bmt_session_state state)
{
    if (state != BMT_SESSION_RUNNING)
        atomic_store(&s->live, 0);
    atomic_store(&s->state, state);
    if (state == BMT_SESSION_RUNNING)
        atomic_store(&s->live, atomic_load(&s->generation));
}

/* 1 while `s` is the session with `generation`: running, or stopped by
 * itself and not yet collected. */
static inline int bmt_rec_known(struct bmt_session *s, uint64_t generation)
{
    return atomic_load_explicit(&s->state, memory_order_relaxed) != BMT_SESSION_FREE &&
           atomic_load_explicit(&s->generation, memory_order_relaxed) == generation;
}

/* 1 when `s`, with `generation`, wants tracepoint `tp` offered: running and
 * recording it, or finished by itself and counting what it is still offered
 * (until collected). */
static inline int bmt_rec_wants(struct bmt_session *s, uint64_t generation, int tp)
{
    int state = atomic_load_explicit(&s->state, memory_order_relaxed);
    return state != BMT_SESSION_FREE &&
           (atomic_load_explicit(&s->enable_mask, memory_order_relaxed) >> tp & 1) &&
           atomic_load_explicit(&s->generation, memory_order_relaxed) == generation;
}

/* Offers a trigger decided outside the tracer (a system monitor report,
 * beamtrace:trigger/1, a sampled queue) to `s` if it records with
 * `generation`: bmt_capture_offer's result, -1 otherwise. Any thread,
 * lock-free. */
static inline int bmt_rec_offer_trigger(struct bmt_session *s, uint64_t generation,
                                        enum bmt_trigger_kind kind, uint64_t value,
                                        const char *pid, const char *function, uint64_t ts_ns)
{
    if (!bmt_rec_live(s, generation))
        return -1;
    return bmt_capture_offer(&s->capture, kind, value, pid, function, ts_ns);
}

/* 1 when tracepoint `tp` is sampled in `s` now: the tracer then keeps
 * one of its events in the kind's ratio (nif/nif_sample.h). */
static inline int bmt_rec_sampled(struct bmt_session *s, int tp)
{
    return atomic_load_explicit(&s->sampled_mask, memory_order_relaxed) >> tp & 1;
}

/* Counts an event `s` wanted but that no ring could take from the calling
 * thread (no slot, re-entered). */
static inline void bmt_rec_drop(struct bmt_session *s)
{
    atomic_fetch_add_explicit(&s->no_slot_drops, 1, memory_order_relaxed);
}

/* Marks one event offered to `s` as beamtrace's own (emit_nif: the state
 * dump at start, one event per process), which max_rate does not count:
 * the cap is on what tracing costs the traced processes, and a node with
 * many processes would trip it before tracing began. Not for the tracer's
 * path: only beamtrace's Erlang code emits these. */
static inline void bmt_rec_rate_exempt(struct bmt_session *s)
{
    atomic_fetch_add_explicit(&s->rate_exempt, 1, memory_order_relaxed);
}

/* ---- the writer bracket (one thread per slot) ---- */

/* Enters slot `slot` of `s` for one event. Returns its ring when `s`
 * records with `generation`; else NULL, having counted the event if `s`
 * still counts what it is offered. A non-NULL return must be followed by
 * bmt_rec_leave. */
struct bmt_ring *bmt_rec_enter_slow(struct bmt_session *s, uint64_t generation,
                                    struct bmt_slot *sl);

/* The common case of bmt_rec_enter: marks slot `sl` busy and says whether
 * its ring may be written (the session records with `generation`, the
 * ring is not frozen, no drop on a frozen ring waits to be counted). */
static inline __attribute__((always_inline)) int bmt_rec_enter_open(struct bmt_session *s,
                                                                   uint64_t generation,
                                                                   struct bmt_slot *sl)
{
    atomic_store_explicit(&sl->busy, 1, memory_order_relaxed);
    bmt_fence_light();
    /* frozen with acquire: a thaw's release hands the ring back with
     * whatever the freezer wrote in it. One test for a freeze and for drops
     * on a frozen ring still to count (BMT_SLOT_DROPS). */
    return __builtin_expect(bmt_rec_live(s, generation) &&
                                !atomic_load_explicit(&sl->frozen, memory_order_acquire),
                            1);
}

static inline __attribute__((always_inline)) struct bmt_ring *bmt_rec_enter(struct bmt_session *s, uint64_t generation,
                                             unsigned slot)
{
    struct bmt_slot *sl = &s->slots[slot];
    if (bmt_rec_enter_open(s, generation, sl))
        return &sl->ring;
    return bmt_rec_enter_slow(s, generation, sl);
}

/* Where slot `slot` lies in every session, in bytes from the session's
 * start: a writer that keeps it finds its slot with one add. */
static inline size_t bmt_rec_slot_offset(unsigned slot)
{
    return offsetof(struct bmt_session, slots) + slot * sizeof(struct bmt_slot);
}

/* The slot at `slot_offset` (bmt_rec_slot_offset) of `s`. */
static inline __attribute__((always_inline)) struct bmt_slot *bmt_rec_slot_at(struct bmt_session *s,
                                                                             size_t slot_offset)
{
    return (struct bmt_slot *)((char *)s + slot_offset);
}

/* bmt_rec_enter for a writer that can start over with bmt_rec_enter (the
 * tracer's fastest path, which calls nothing): 1 when slot `sl`'s ring
 * may be written (then left with bmt_rec_leave), else 0 with the slot
 * left as it was, nothing counted. A flag rather than the ring, so that
 * the caller tests no pointer. */
static inline __attribute__((always_inline)) int
bmt_rec_try_enter(struct bmt_session *s, uint64_t generation, struct bmt_slot *sl)
{
    if (bmt_rec_enter_open(s, generation, sl))
        return 1;
    atomic_store_explicit(&sl->busy, 0, memory_order_release);
    return 0;
}

/* Reserves room for an event of tracepoint `tp` stamped `ts_ns` in `r` and
 * writes its header. Returns where the fields go (room for the session's
 * largest event of `tp`), or NULL when the ring dropped (and counted) it.
 * *start is the event's first byte, for bmt_rec_commit. */
static inline __attribute__((always_inline)) uint8_t *bmt_rec_reserve(struct bmt_session *s, struct bmt_ring *r, int tp,
                                       uint64_t ts_ns, uint8_t **start)
{
    uint8_t *dst = bmt_ring_reserve(r, s->max_event_bytes[tp], ts_ns);
    if (!dst)
        return NULL;
    *start = dst;
    return dst + bmt_event_header_write(dst, (unsigned)tp, ts_ns, r->last_ts_ns);
}

/* bmt_rec_reserve when the open packet has room (no call): 1, with *start
 * and *fields set as bmt_rec_reserve's; else 0, nothing changed or
 * counted: the caller leaves (bmt_rec_leave_quiet) and starts over with
 * bmt_rec_enter and bmt_rec_reserve. */
static inline __attribute__((always_inline)) int
bmt_rec_reserve_open(struct bmt_session *s, struct bmt_ring *r, int tp, uint64_t ts_ns,
                     uint8_t **start, uint8_t **fields)
{
    if (!bmt_ring_open_has_room(r, s->max_event_bytes[tp]))
        return 0;
    uint8_t *dst = r->open_base + r->offset_bytes;
    *start = dst;
    *fields = dst + bmt_event_header_write(dst, (unsigned)tp, ts_ns, r->last_ts_ns);
    return 1;
}

/* Publishes the event that starts at `start` and ends at `end`. */
static inline __attribute__((always_inline)) void bmt_rec_commit(struct bmt_ring *r, const uint8_t *start, const uint8_t *end,
                                  uint64_t ts_ns)
{
    bmt_ring_commit(r, (size_t)(end - start), ts_ns);
}

void bmt_rec_wake(struct bmt_session *s);

/* The slot whose ring is `r`. */
static inline __attribute__((always_inline)) struct bmt_slot *bmt_rec_slot_of(struct bmt_ring *r)
{
    return (struct bmt_slot *)((char *)r - offsetof(struct bmt_slot, ring));
}

/* 1 when leaving ring `r` has work beyond bmt_rec_leave_quiet: a flush
 * the consumer asked for, or a published packet to wake it for. */
static inline __attribute__((always_inline)) int bmt_rec_leave_has_work(struct bmt_ring *r)
{
    return __builtin_expect(r->published |
                                atomic_load_explicit(&r->flush_requested, memory_order_relaxed),
                            0);
}

/* Leaves the slot of ring `r` when bmt_rec_leave_has_work says no (or
 * after a failed bmt_rec_reserve_open): lets stop proceed. */
static inline __attribute__((always_inline)) void bmt_rec_leave_quiet(struct bmt_ring *r)
{
    atomic_store_explicit(&bmt_rec_slot_of(r)->busy, 0, memory_order_release);
}

/* Leaves the slot of ring `r` (what bmt_rec_enter returned): honours a
 * flush the consumer asked for, wakes the consumer when a packet was
 * published, and lets stop proceed. Both are rare, and one test covers
 * the two. */
static inline __attribute__((always_inline)) void bmt_rec_leave(struct bmt_session *s, struct bmt_ring *r, uint64_t ts_ns)
{
    if (bmt_rec_leave_has_work(r)) {
        bmt_ring_flush_if_requested(r, ts_ns);
        if (bmt_ring_take_published(r) && s->cfg.wake_on_publish)
            bmt_rec_wake(s);
    }
    bmt_rec_leave_quiet(r);
}

/* ---- the other side of the bracket (the recorder's own files) ---- */

/* Waits until no writer is inside slot `sl`, after the caller stored what
 * keeps new writers out (state or frozen) and issued bmt_fence_heavy. */
void bmt_rec_wait_writer_out(struct bmt_slot *sl);

/* Lets writers into a slot frozen by its caller again. */
void bmt_rec_thaw(struct bmt_slot *sl);

/* Recomputes the lock-free views of which sessions run (control held). */
void bmt_rec_update_masks(struct bmt_recorder *rec);

/* ---- names ---- */

/* The reason's name as Erlang writes it ("max_bytes", "write_error", ...). */
const char *bmt_rec_reason_name(enum bmt_stop_reason reason);

#endif
