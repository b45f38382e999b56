/* Flight-recorder captures: when a trigger fires in a session whose rings
 * overwrite (a flight recording), the window of events before it plus a
 * short tail after it become a trace directory of their own,
 * `<session dir>/capture-<N>-<UTC time>`, with the trigger in its metadata.
 * docs/flight-recorder.md is the user's side of this.
 *
 * Workload: triggers are rare (a few an hour get through the rate limit)
 * but may fire in bursts and from any thread, including a scheduler inside
 * the tracer (a slow call's return). A capture copies at most the rings'
 * contents once, then the packets published during its tail.
 *
 * Concurrency contract:
 *  - bmt_capture_fire / bmt_capture_offer: any thread, any time while the
 *    session runs. Lock-free and allocation-free. Two slots: the capture
 *    being written (`cur`) and the next one. One compare-and-swap on a
 *    slot's `word` claims it and the claimer alone writes its `trigger`,
 *    then publishes it with a release store of `ready`; a fire that finds
 *    the current slot taken raises its `word` (the end) instead, up to its
 *    `cap_ns` (first trigger + window); a trigger past that cap claims or
 *    extends the next slot, whose capture starts once the current one is
 *    sealed. Only when both are taken and past their caps is a trigger
 *    skipped. Skips are counted, never silent.
 *  - bmt_capture_tick / _finish: the session's consumer thread only (or
 *    whoever finishes the session after the consumer stopped). It reads the
 *    rings as a sequence-lock reader (ring.h: bmt_ring_copy_packet), so the
 *    writers never wait for it; it never consumes an overwrite ring.
 *  - A slot's `word` goes back to 0 only by the consumer's compare-and-swap
 *    from the end it has written up to: a trigger that moved the end
 *    meanwhile makes that fail, and the capture goes on. So a trigger
 *    counted as absorbed always has its tail in the capture. Then the
 *    consumer moves `cur` to the other slot.
 *
 * Pure C: no VM, no recorder types; the recorder hands in its rings and,
 * when a capture wants every ring's open packet, asks the writers to close
 * theirs at their next event (BMT_CAPTURE_REQUEST_FLUSH), then a tick
 * later closes the packets of the rings whose writer did not come back
 * (BMT_CAPTURE_FLUSH: freezing each, its protocol): a busy writer never
 * waits nor drops for a capture.
 *
 * What cannot be guaranteed: the window reaches back as far as the rings
 * hold, no further (the capture's env says how far it reached); a packet
 * the writer reclaims before it is copied is lost to the capture (a gap in
 * packet_seq_num, which readers report); a fire that races with the
 * session's stop and a restart of the same core could land in the new
 * session.
 */
#ifndef BMT_CAPTURE_H
#define BMT_CAPTURE_H

#include "core/ctf.h"
#include "core/ring.h"
#include "core/trace_dir.h"
#include "sampling.h"

#include <stdatomic.h>
#include <stdint.h>

/* What fired. Names (bmt_trigger_kind_name) are the Erlang atoms. */
enum bmt_trigger_kind {
    BMT_TRIGGER_NONE = 0,
    BMT_TRIGGER_CALL,                /* a call slower than a bound; value ns */
    BMT_TRIGGER_LONG_GC,             /* system monitor; value ms */
    BMT_TRIGGER_LONG_SCHEDULE,       /* value ms */
    BMT_TRIGGER_LARGE_HEAP,          /* value words */
    BMT_TRIGGER_BUSY_PORT,           /* value 1 */
    BMT_TRIGGER_BUSY_DIST_PORT,      /* value 1 */
    BMT_TRIGGER_LONG_MESSAGE_QUEUE,  /* value: the queue length when reported */
    BMT_TRIGGER_PROBE,               /* beamtrace:trigger(Label); value 1 */
    BMT_TRIGGER_MESSAGE_QUEUE,       /* sampled queue length; value messages */
    BMT_TRIGGER_KIND_COUNT,
};

struct bmt_trigger {
    enum bmt_trigger_kind kind;
    uint64_t ts_ns;          /* when it fired, trace clock (CLOCK_MONOTONIC ns) */
    uint64_t value;          /* what crossed the bound, in the kind's unit */
    uint64_t bound;          /* the bound it crossed, same unit */
    char pid[32];            /* the process (or port) it is about, or empty */
    char function[256];      /* m:f/arity, the probe's label, or empty */
};

/* A session's captures; fixed at start. window_ns == 0: no captures. */
struct bmt_capture_config {
    uint64_t window_ns;      /* how far back a capture reaches */
    uint64_t after_ns;       /* tail kept after the (last) trigger */
    uint32_t max_per_hour;   /* token bucket: burst and hourly refill; 0 = no limit */
    uint64_t max_bytes;      /* captures and the session's trace together; 0 = none */
    uint32_t armed;          /* bit per bmt_trigger_kind the NIF may offer */
    uint64_t bound[BMT_TRIGGER_KIND_COUNT]; /* offered value must be >= this */
    char probe_label[64];    /* probe: only this label; empty = any */
};

/* Figures, readable any time. */
struct bmt_capture_stats {
    uint64_t captures;       /* sealed */
    uint64_t fired;          /* triggers that fired (offers past their bound) */
    uint64_t absorbed;       /* fired during a capture: extended it */
    uint64_t skipped_rate;   /* found no token (--max-captures) */
    uint64_t skipped_long;   /* would extend a capture past its cap */
    uint64_t skipped_bytes;  /* came after max_bytes was reached */
    uint64_t lost_packets;   /* reclaimed by a writer before they were copied */
    uint64_t bytes;          /* every capture on disk, bytes */
    int open;                /* a capture is being written */
    int error;               /* errno of the last capture that failed, else 0 */
};

/* A capture to write: claimed by one trigger, extended by later ones. */
struct bmt_capture_slot {
    _Atomic uint64_t word;          /* 0 free; 1 being claimed; else the capture's end, ns */
    _Atomic int ready;              /* `trigger` is written (release) */
    _Atomic uint64_t cap_ns;        /* the end may not pass this; 0 until known */
    struct bmt_trigger trigger;     /* the claimer's; the consumer's after `ready` */
};

enum bmt_capture_phase {
    BMT_CAPTURE_IDLE = 0,
    BMT_CAPTURE_OPEN,        /* copying as packets are published */
    BMT_CAPTURE_REQUESTED,   /* past its end: writers asked to close their packets */
    BMT_CAPTURE_CLOSING,     /* every open packet closed: the last copy */
};

struct bmt_capture {
    struct bmt_capture_config cfg;
    /* ---- shared with any thread ---- */
    _Atomic int on;                 /* init succeeded; cleared by free */
    struct bmt_capture_slot slot[2];
    _Atomic int cur;                /* the slot being (or next to be) written */
    _Atomic uint32_t tokens;        /* captures the rate limit allows now */
    _Atomic int full;               /* max_bytes reached: no more captures */
    _Atomic uint64_t fired, absorbed, skipped_rate, skipped_long, skipped_bytes;
    _Atomic uint64_t captures, lost_packets, bytes;
    _Atomic int open, error;
    /* ---- the consumer's ---- */
    int ring_count;
    struct bmt_ring **rings;        /* the session's rings, by stream */
    char base[4096];                /* the session's directory */
    unsigned file_mode;
    struct bmt_ctf_trace_info info; /* the session's; uuid and env per capture */
    const struct bmt_sampling *sampling; /* the session's: the ratios a window starts with */
    enum bmt_capture_phase phase;
    struct bmt_trigger first;       /* the trigger being captured */
    uint64_t end_ns;                /* end this capture has been written up to */
    uint64_t *next_seq;             /* per ring: next packet to copy */
    uint64_t *stream_drops;         /* per ring: drops stamped in the capture so far */
    uint8_t *buf;                   /* one packet, page-aligned */
    struct bmt_trace_dir *dir;      /* the open capture */
    uint64_t token_credit_ns;       /* token bucket: refill clock */
    uint64_t seq;                   /* captures opened, for the name */
};

/* ---- the session's start and end (control side) ---- */

/* Prepares `c` for a session: `rings` (ring_count, the session's, by
 * stream; kept), its directory, file mode and trace info (copied; each
 * capture gets its own uuid), its sampling (read by the consumer: each
 * capture's metadata says the ratios in force where its window begins).
 * Starts with a full token bucket. Returns 0, -EINVAL (no window, or too
 * many rings), -ENOMEM. */
int bmt_capture_init(struct bmt_capture *c, const struct bmt_capture_config *cfg,
                     struct bmt_ring **rings, int ring_count, const char *base, unsigned file_mode,
                     const struct bmt_ctf_trace_info *info, const struct bmt_sampling *sampling,
                     uint64_t now_ns);

/* Frees what init allocated (an open capture must be finished first). */
void bmt_capture_free(struct bmt_capture *c);

/* 1 when captures are configured (and init succeeded). */
static inline int bmt_capture_on(struct bmt_capture *c)
{
    return atomic_load_explicit(&c->on, memory_order_acquire);
}

/* ---- firing (any thread) ---- */

/* Fires trigger `t` (ts_ns set by the caller): starts a capture, or
 * extends the one being written to t->ts_ns + after. Returns 1 started, 2
 * extended, 0 skipped (counted: rate limit, capture at its cap, max_bytes)
 * or captures off. */
int bmt_capture_fire(struct bmt_capture *c, const struct bmt_trigger *t);

/* Fires when `kind` is armed and `value` >= its bound (and, for probes,
 * `label` matches): the path of triggers decided outside the tracer.
 * Returns bmt_capture_fire's result, or -1 when the offer is not a
 * trigger (not armed, below the bound, another label). */
int bmt_capture_offer(struct bmt_capture *c, enum bmt_trigger_kind kind, uint64_t value,
                      const char *pid, const char *function, uint64_t ts_ns);

/* ---- the consumer ---- */

enum bmt_capture_step {
    BMT_CAPTURE_DONE = 0,      /* nothing more this tick */
    BMT_CAPTURE_REQUEST_FLUSH, /* ask every active ring's writer to close its packet */
    BMT_CAPTURE_FLUSH,         /* close the packets of rings whose writer did not, then tick again */
    BMT_CAPTURE_MAX_BYTES,     /* max_bytes reached: the session must stop */
};

/* One step of the capture work at `now_ns`: opens a capture for a new
 * trigger, copies the packets published since, closes it at its end.
 * `other_bytes` is the session's own trace on disk (for max_bytes). */
enum bmt_capture_step bmt_capture_tick(struct bmt_capture *c, uint64_t now_ns,
                                       uint64_t other_bytes);

/* The session ends (writers gone, every open packet closed by the caller):
 * seals a capture still open, or opens and seals one for a trigger not yet
 * taken, with what the rings hold. `other_bytes` as for tick. */
void bmt_capture_finish(struct bmt_capture *c, uint64_t now_ns, uint64_t other_bytes);

/* ---- figures and names ---- */

void bmt_capture_stats(const struct bmt_capture *c, struct bmt_capture_stats *st);

/* "call", "long_gc", ... (the Erlang atoms); "undefined" for others. */
const char *bmt_trigger_kind_name(enum bmt_trigger_kind kind);

/* The unit of a kind's value: "ns", "ms", "words", "messages" or "". */
const char *bmt_trigger_kind_unit(enum bmt_trigger_kind kind);

#endif
