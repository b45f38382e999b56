/* Where a process's time goes, from the events around it: on a CPU,
 * runnable, waiting for a message, collecting garbage, or unknown.
 *
 * What OTP 25's trace says (checked with erlang:trace/3 and monotonic
 * timestamps): `out` and `in` bracket every descheduling; a 'receive'
 * event is emitted when the receiver *takes* a message, i.e. just after
 * it is scheduled in, and a receive that times out emits 'receive'
 * `timeout` the same way; a message_send is emitted by the sender when it
 * sends. So an off-CPU period [out, in] is classified when the process's
 * next event after `in` shows why it ran again:
 *  - 'receive' of a message: it was waiting until the message was sent to
 *    it (the first message_send to it since `out`), runnable from then
 *    until `in`; when no such send is in the trace (senders not traced with
 *    `send`), the period cannot be split and counts as unknown;
 *  - 'receive' `timeout`: waiting (for a timer) the whole period; the
 *    trace does not say when the timer fired, so its run-queue delay is
 *    counted as waiting;
 *  - anything else (a call, a return, a send, being scheduled out again):
 *    it was preempted with work to do: runnable the whole period
 *    ("preempted", reported with runnable).
 * A collection (gc_*_start .. gc_*_end) counts as GC whatever else; time
 * before a process's first scheduling event, off CPU at the end of the
 * trace, after a run ended at the process's last event (BMT_PS_LOST,
 * runs.h), or after its last event at all (a snapshot past it), is
 * unknown: never on CPU. Limits: a process preempted just before a receive
 * whose message arrived while it was out looks woken by that message;
 * without message_receive events nothing tells waiting from preempted, so
 * callers report off-CPU time as one unsplit figure (the trace lacks the
 * events); a process traced without 'receive' among processes traced with
 * it has its waits counted as preempted.
 *
 * Time is kept as running sums per kind, counted only inside the window
 * [begin, end], so the breakdown of any interval is the difference of two
 * snapshots taken at events of the process, and sums to the interval's
 * wall time within the window. Who ended a wait is kept too: the sender
 * of the message that ended it (the first sent to the process while it
 * was out, when the caller gives the sender: bmt_pstate_sent), for the
 * calls' tally by waker (wakers.h). ~112 bytes per process. Single-threaded.
 */
#ifndef BMT_CLI_PROC_STATE_H
#define BMT_CLI_PROC_STATE_H

#include <stdint.h>

#define BMT_PS_NOBODY UINT32_MAX /* no sender known */

enum bmt_kind {
    BMT_K_ON_CPU,
    BMT_K_RUNNABLE,   /* a message was sent to it, not yet scheduled in */
    BMT_K_WAITING,    /* for a message or a timeout */
    BMT_K_GC,
    BMT_K_UNKNOWN,
    BMT_K_PREEMPTED,  /* off CPU and resumed without a receive: runnable when the
                       * process is traced with 'receive' (callers fold it in) */
    BMT_K_OFF_UNKNOWN, /* seen off CPU (or past its last event) for a reason the
                        * trace does not give: shown as unknown (callers fold it
                        * in), never own CPU time */
    BMT_K_COUNT
};

enum bmt_pstate_event {
    BMT_PS_IN,        /* scheduled in */
    BMT_PS_OUT,       /* scheduled out */
    BMT_PS_SENT_TO,   /* a message was sent to it */
    BMT_PS_RECEIVE,   /* it took a message (message_receive) */
    BMT_PS_TIMEOUT,   /* message_receive of `timeout`: a receive timed out */
    BMT_PS_ACTIVITY,  /* anything else it did (call, return, send, spawn, ...) */
    BMT_PS_GC_START,
    BMT_PS_GC_END,
    BMT_PS_EXIT,
    BMT_PS_LOST,      /* the trace stops saying it runs (runs.h ended its run here) */
};

struct bmt_window {
    uint64_t begin_ns, end_ns;      /* time is counted in [begin, end] */
};

/* Where a process is (struct bmt_pstate's state). */
enum bmt_pstate_state {
    BMT_PSS_UNKNOWN,    /* no scheduling event yet */
    BMT_PSS_RUNNING,
    BMT_PSS_OUT,        /* scheduled out */
    BMT_PSS_IN_PENDING, /* scheduled in; the off-CPU period awaits its classification */
    BMT_PSS_EXITED,
    BMT_PSS_LOST,       /* its run ended at its last event (runs.h): not seen since */
};

struct bmt_pstate {
    uint64_t cum[BMT_K_COUNT];      /* ns in each kind, inside the window, up to since_ns */
    uint64_t since_ns;              /* start of the open segment */
    uint64_t out_ns;                /* last scheduled out */
    uint64_t in_ns;                 /* scheduled in again (classification pending) */
    uint64_t sent_ns;               /* first message sent to it while out, + 1, or 0 */
    uint64_t woke_ns;               /* waiting time (inside the window) the last wait
                                     * classified added, when its ender is known; the
                                     * caller takes it and sets it to 0 */
    uint32_t sent_from;             /* pid id of sent_ns's sender, or BMT_PS_NOBODY */
    uint32_t woke_from;             /* pid id of the sender that ended that wait */
    uint8_t state;                  /* enum bmt_pstate_state */
    uint8_t gc_depth;               /* collections open */
    uint8_t used;                   /* kinds (1 << BMT_K_*) cum may be non-zero in; 0 in the
                                     * others: most processes' time is of one or two kinds, and
                                     * callers add up only those (issue 17) */
};

/* A process first seen at `ts`. */
void bmt_pstate_init(struct bmt_pstate *p, uint64_t ts);

/* Applies event `e` at `ts` (>= the previous event's). */
void bmt_pstate_apply(struct bmt_pstate *p, enum bmt_pstate_event e, uint64_t ts,
                      const struct bmt_window *w);

/* bmt_pstate_apply, with the events of nearly every call inline: the
 * process did something while running (or in an unknown state), outside
 * a collection and inside the window (one addition), or a message was
 * sent to a process that is not scheduled out (nothing to do). */
static inline void bmt_pstate_event(struct bmt_pstate *p, enum bmt_pstate_event e, uint64_t ts,
                                    const struct bmt_window *w)
{
    if (e == BMT_PS_ACTIVITY && (p->state == BMT_PSS_RUNNING || p->state == BMT_PSS_UNKNOWN) &&
        !p->gc_depth && p->since_ns >= w->begin_ns && ts >= p->since_ns && ts <= w->end_ns) {
        enum bmt_kind k = p->state == BMT_PSS_RUNNING ? BMT_K_ON_CPU : BMT_K_UNKNOWN;
        p->cum[k] += ts - p->since_ns;
        p->used |= (uint8_t)(1u << k);
        p->since_ns = ts;
        return;
    }
    if (e == BMT_PS_SENT_TO && p->state != BMT_PSS_OUT)
        return;
    bmt_pstate_apply(p, e, ts, w);
}

/* A message from pid id `from` was sent to it at `ts`: BMT_PS_SENT_TO,
 * the sender kept when it is the first since the process went out (the
 * message that ends its wait: woke_from when the wait is classified). */
static inline void bmt_pstate_sent(struct bmt_pstate *p, uint64_t ts, uint32_t from)
{
    if (p->state == BMT_PSS_OUT && !p->sent_ns && ts >= p->since_ns) {
        p->sent_ns = ts + 1;
        p->sent_from = from;
    }
}

/* The same for a message seen sent only when the process takes it (a
 * send to a process alias, callstack.h): the sender kept when the send
 * came while it was out and before any other message sent to it. */
static inline void bmt_pstate_sent_before(struct bmt_pstate *p, uint64_t ts, uint32_t from)
{
    if (p->state == BMT_PSS_IN_PENDING && ts >= p->out_ns && ts <= p->in_ns &&
        (!p->sent_ns || ts + 1 < p->sent_ns)) {
        p->sent_ns = ts + 1;
        p->sent_from = from;
    }
}

/* The sums at `ts` (>= since) into out[BMT_K_COUNT], the open segment
 * included (an off-CPU period not yet classified counts as unknown).
 * Returns the kinds (1 << BMT_K_*) out may be non-zero in: it is 0 in the
 * others. */
unsigned bmt_pstate_snapshot(const struct bmt_pstate *p, uint64_t ts, const struct bmt_window *w,
                             uint64_t out[BMT_K_COUNT]);

/* Runnable time as reported: a message waiting for it, or preempted. */
static inline uint64_t bmt_kind_runnable(const uint64_t *kinds)
{
    return kinds[BMT_K_RUNNABLE] + kinds[BMT_K_PREEMPTED];
}

/* Unknown time as reported: never classified, or seen off CPU for a reason
 * the trace does not give. */
static inline uint64_t bmt_kind_unknown(const uint64_t *kinds)
{
    return kinds[BMT_K_UNKNOWN] + kinds[BMT_K_OFF_UNKNOWN];
}

/* Display names of the kinds. */
extern const char *const bmt_kind_names[BMT_K_COUNT];

#endif
