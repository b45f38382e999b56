/* The trace clock: CLOCK_MONOTONIC nanoseconds, and a cheap way to read it
 * for every event.
 *
 * clock_gettime costs about 23 ns here even through the vDSO; reading the
 * TSC costs under 10. When the CPU has an invariant TSC, each thread keeps
 * an anchor (a TSC reading and the CLOCK_MONOTONIC time taken with it),
 * renewed every millisecond, and converts TSC ticks since the anchor with a
 * rate calibrated once against CLOCK_MONOTONIC. Between anchors the error is
 * the rate's error over at most 1 ms (a few ns); at a new anchor the time is
 * clamped so it never goes backwards within a thread, which keeps every
 * stream's timestamps monotonic as CTF readers require. The TSC is used
 * only when the CPU says it is invariant and the kernel itself keeps time
 * with it (clocksource "tsc"), which is the kernel's verdict that the TSCs
 * of all CPUs agree; otherwise (or off x86-64) every event reads
 * clock_gettime.
 *
 * Pure C (no erl_nif.h). Threads: bmt_clock_calibrate runs on one thread at
 * a time (the recorder's session start, under its control lock) and
 * publishes `usable` last with a release store; bmt_clock_event_ns runs on
 * any thread, each with its own struct bmt_clock_thread.
 */
#ifndef BMT_CLOCK_H
#define BMT_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

/* The calibrated TSC, shared by every thread. Zero-initialised: not usable. */
struct bmt_clock {
    _Atomic int usable;         /* calibrated, invariant TSC */
    uint64_t mult;              /* ns per tick, 32.32 fixed point */
    uint64_t anchor_ticks;      /* ticks between a thread's re-anchors (1 ms) */
};

/* One thread's anchor; owned by that thread. Zero-initialised: no anchor. */
struct bmt_clock_thread {
    uint64_t tsc_anchor;        /* TSC at the last anchor, ticks */
    uint64_t ns_anchor;         /* CLOCK_MONOTONIC at that anchor, ns */
    uint64_t last_ns;           /* last timestamp this thread gave, ns */
};

/* CLOCK_MONOTONIC now, in nanoseconds: the trace clock. */
uint64_t bmt_clock_ns(void);

/* Calibrates `c` against CLOCK_MONOTONIC (about 20 ms of sampling, so only
 * from a thread that may block); a no-op when done already or when the TSC
 * is not safe to use. */
void bmt_clock_calibrate(struct bmt_clock *c);

/* CLOCK_MONOTONIC ns for an event on the thread owning `t`: never less than
 * the last value it gave that thread. */
uint64_t bmt_clock_event_ns(const struct bmt_clock *c, struct bmt_clock_thread *t);

#endif
