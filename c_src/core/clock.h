/* The trace clock: CLOCK_MONOTONIC nanoseconds, and a cheap way to read it
 * for every event.
 *
 * clock_gettime costs 20 to 30 ns even through the vDSO (more where the
 * kernel keeps time with kvm-clock, as many virtual machines do); reading
 * the TSC costs under 10. When the TSC can stand in for CLOCK_MONOTONIC,
 * each thread keeps an anchor (a TSC reading and the CLOCK_MONOTONIC time
 * taken with it), renewed every millisecond, and converts the ticks since
 * the anchor with a rate calibrated against CLOCK_MONOTONIC. Timestamps
 * stay CLOCK_MONOTONIC nanoseconds (comparable with LTTng's, and with
 * other nodes' through the trace's clock offset).
 *
 * When the TSC stands in (bmt_clock_calibrate, once, about 30 ms):
 *  - the CPU says its TSC is invariant (CPUID 0x80000007 EDX bit 8, which
 *    /proc/cpuinfo shows as constant_tsc and nonstop_tsc), on x86-64;
 *  - the kernel has not found it unstable: "tsc" is among its available
 *    clocksources. It need not be the current one: on a KVM guest the
 *    kernel prefers kvm-clock (itself the host's TSC scaled) even when the
 *    TSC is invariant. Or the kernel keeps time with kvm-clock and its
 *    host marks the TSC stable (PVCLOCK_TSC_STABLE_BIT, what lets the vDSO
 *    read kvm-clock itself), as on guests booted with tsc=unstable;
 *  - every CPU this process may run on reads a TSC that agrees with the
 *    calibration's line within BMT_CLOCK_MAX_ERROR_NS (checked by running
 *    on each in turn);
 *  - BEAMTRACE_CLOCK is not "monotonic" (the knob that keeps
 *    clock_gettime).
 * Otherwise every event reads clock_gettime, and bmt_clock_describe says
 * why.
 *
 * How close: between anchors the error is the TSC's rate error against
 * CLOCK_MONOTONIC over at most 1 ms (NTP's slew included: 100 ppm is
 * 100 ns) plus the anchor's read jitter. Each new anchor re-checks: the
 * time the TSC predicted against clock_gettime, read between two TSC reads
 * (a pair an interrupt or a preemption pushed more than
 * BMT_CLOCK_RETRY_WIDTH_NS apart is read again), less the uncertainty of
 * both anchors' reads (half their brackets). Past
 * BMT_CLOCK_MAX_ERROR_NS (a migrated VM's new TSC rate, a CPU whose TSC
 * stepped by less than a few ms) the TSC is given up for good, and the
 * reason kept; so it is where the TSC stands in on kvm-clock's host's word
 * and the host withdraws it. A larger step (a snapshot restored, a VM
 * moved) is not judged: the thread re-anchors, and its events of the
 * millisecond before may be off by the step, clamped to stay ordered. A thread's
 * timestamps never go backwards (a new anchor is clamped), so every
 * stream stays ordered as CTF readers require.
 *
 * Pure C (no erl_nif.h). Threads: bmt_clock_calibrate and
 * bmt_clock_describe serialise on the clock's lock (session start and
 * beamtrace:sinks(), on dirty schedulers); calibration publishes
 * `fast_ticks` and then `usable` with release stores; bmt_clock_event_ns runs on any
 * thread, each with its own struct bmt_clock_thread, and may clear both
 * (then every thread falls back at its next event).
 */
#ifndef BMT_CLOCK_H
#define BMT_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* The largest disagreement between the TSC's time and CLOCK_MONOTONIC's
 * tolerated at calibration and at each re-anchor, ns. */
#define BMT_CLOCK_MAX_ERROR_NS 1000
/* A re-anchor's bracket (rdtsc, clock_gettime, rdtsc) wider than this, ns,
 * is read again (an interrupt or a preemption struck it). */
#define BMT_CLOCK_RETRY_WIDTH_NS (BMT_CLOCK_MAX_ERROR_NS / 2)

/* The calibrated TSC, shared by every thread. */
struct bmt_clock {
    _Atomic int usable;         /* the TSC stands in for CLOCK_MONOTONIC */
    uint64_t mult;              /* ns per tick, 32.32 fixed point */
    uint64_t anchor_ticks;      /* ticks between a thread's re-anchors (1 ms) */
    _Atomic uint64_t fast_ticks;/* anchor_ticks while `usable`, else 0: the
                                 * event's one test for both (its slow path
                                 * then reads clock_gettime) */
    _Atomic uint64_t worst_ns;  /* largest error a re-anchor measured beyond its
                                 * reads' uncertainty, ns */
    pthread_mutex_t lock;       /* calibration and its reason */
    int calibrated;             /* calibration ran (under lock) */
    char why[200];              /* why the TSC does not stand in (under lock) */
    char basis[64];             /* why it may: the kernel's or the host's word
                                 * (set by calibration, under lock) */
    const volatile void *pvclock; /* when on the host's word: its pvclock page,
                                   * whose stable bit each re-anchor reads */
    int ignore_kernel;          /* tests only: calibrate even where the kernel
                                 * distrusts the TSC, to measure it there */
    uint64_t stretch_ns;        /* tests only: about one clock_gettime read in
                                 * two takes this long, as when the thread is
                                 * preempted there */
};

/* One thread's anchor; owned by that thread. Zero-initialised: no anchor. */
struct bmt_clock_thread {
    uint64_t tsc_anchor;        /* TSC at the last anchor, ticks */
    uint64_t ns_anchor;         /* CLOCK_MONOTONIC at that anchor, ns */
    uint64_t last_ns;           /* last timestamp this thread gave, ns */
    uint64_t anchor_slack_ns;   /* how far the anchor's read may be off (half
                                 * its bracket): allowed at the next re-check */
};

/* Prepares `c` (not calibrated: events read clock_gettime). */
void bmt_clock_init(struct bmt_clock *c);
void bmt_clock_destroy(struct bmt_clock *c);

/* CLOCK_MONOTONIC now, in nanoseconds: the trace clock. */
uint64_t bmt_clock_ns(void);

/* Decides whether the TSC stands in and calibrates it (about 30 ms of
 * sampling, so only from a thread that may block); a no-op after the first
 * call. */
void bmt_clock_calibrate(struct bmt_clock *c);

/* Writes what the events' clock is to `out` (`size` bytes): "tsc" when the
 * TSC stands in, else why not (a sentence). Returns 1 for the TSC. */
int bmt_clock_describe(struct bmt_clock *c, char *out, size_t size);

/* bmt_clock_event_ns's slow path: a new anchor (and its re-check), or no
 * TSC (clock_gettime). */
uint64_t bmt_clock_event_ns_slow(struct bmt_clock *c, struct bmt_clock_thread *t);

/* CLOCK_MONOTONIC ns for an event on the thread owning `t`: never less than
 * the last value it gave that thread. Inline: one load that says both
 * "the TSC stands in" and how long an anchor lasts (fast_ticks), one TSC
 * read, a compare, a multiply. Without the TSC (a CPU without an
 * invariant one, or one given up), clock_gettime straight from here. */
static inline uint64_t bmt_clock_event_ns(struct bmt_clock *c, struct bmt_clock_thread *t)
{
    uint64_t ns;
#if defined(__x86_64__)
    uint64_t fast_ticks = atomic_load_explicit(&c->fast_ticks, memory_order_acquire);
    if (__builtin_expect(fast_ticks != 0, 1)) {
        uint64_t dt = __rdtsc() - t->tsc_anchor;
        if (__builtin_expect(dt >= fast_ticks, 0))
            return bmt_clock_event_ns_slow(c, t);
        ns = t->ns_anchor + ((dt * c->mult) >> 32);
    } else
#else
    (void)c; /* no TSC here */
#endif
    {
        /* No rdtsc here: where the TSC does not stand in, a hypervisor
         * may trap it. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    /* A thread moved to a CPU whose TSC reads a little behind. */
    ns = ns < t->last_ns ? t->last_ns : ns;
    t->last_ns = ns;
    return ns;
}

/* bmt_clock_event_ns when it needs no call: the TSC stands in and the
 * thread's anchor is fresh. Returns 1 and sets *ns, else returns 0 having
 * changed nothing (the caller then takes bmt_clock_event_ns). For a path
 * that must call nothing (the tracer's fastest). */
static inline __attribute__((always_inline)) int
bmt_clock_event_ns_inline(struct bmt_clock *c, struct bmt_clock_thread *t, uint64_t *ns)
{
#if defined(__x86_64__)
    uint64_t fast_ticks = atomic_load_explicit(&c->fast_ticks, memory_order_acquire);
    if (__builtin_expect(fast_ticks == 0, 0))
        return 0;
    uint64_t dt = __rdtsc() - t->tsc_anchor;
    if (__builtin_expect(dt >= fast_ticks, 0))
        return 0;
    uint64_t v = t->ns_anchor + ((dt * c->mult) >> 32);
    v = v < t->last_ns ? t->last_ns : v;
    t->last_ns = v;
    *ns = v;
    return 1;
#else
    (void)c, (void)t, (void)ns;
    return 0;
#endif
}

#endif
