/* The trace clock (contract and design in clock.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define CALIBRATION_NS (20 * 1000 * 1000)
#define ANCHOR_NS (1000 * 1000)
/* CPUs checked one by one at calibration (a larger machine: the first
 * ones, and the kernel's own TSC checks for the rest). */
#define MAX_CPUS_CHECKED 256

void bmt_clock_init(struct bmt_clock *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    snprintf(c->why, sizeof c->why, "not calibrated yet (the first session start calibrates)");
}

void bmt_clock_destroy(struct bmt_clock *c)
{
    pthread_mutex_destroy(&c->lock);
}

uint64_t bmt_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/* 1 when the kernel lists `name` among its available clocksources (it
 * drops the TSC from them when it finds the TSC unstable). */
static int kernel_offers(const char *name)
{
    char list[512] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/available_clocksource", "re");
    if (!f)
        return 0;
    if (!fgets(list, sizeof list, f))
        list[0] = '\0';
    fclose(f);
    size_t n = strlen(name);
    for (char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

/* The start of the mapping /proc/self/maps names `name` (as "[vvar]"),
 * and its length; 0 when there is none. */
static uintptr_t mapping(const char *name, size_t *length)
{
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    uintptr_t start = 0;
    *length = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char *tail = strrchr(line, ' ');
        if (tail && strncmp(tail + 1, name, strlen(name)) == 0 &&
            tail[1 + strlen(name)] == '\n' && sscanf(line, "%lx-%lx", &a, &b) == 2 && b > a) {
            start = a;
            *length = b - a;
            break;
        }
    }
    if (f)
        fclose(f);
    return start;
}

/* KVM's pvclock_vcpu_time_info: what the host publishes for kvm-clock. */
struct pvclock_info {
    uint32_t version;           /* odd while the host updates it */
    uint32_t pad0;
    uint64_t tsc_timestamp;
    uint64_t system_time;
    uint32_t tsc_to_system_mul;
    int8_t tsc_shift;
    uint8_t flags;
    uint8_t pad[2];
};
#define PVCLOCK_TSC_STABLE_BIT 1u

/* Copies `sizeof *out` bytes at `addr` through pipe `fds`: 0 when the
 * kernel cannot read them (EFAULT: an unmapped page), without a signal. */
static int pipe_read(const int fds[2], uintptr_t addr, struct pvclock_info *out)
{
    ssize_t n;
    do
        n = write(fds[1], (const void *)addr, sizeof *out);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof *out && read(fds[0], out, sizeof *out) == (ssize_t)sizeof *out;
}

/* The pvclock page KVM publishes for kvm-clock, if the kernel keeps time
 * with kvm-clock and has mapped the page for the vDSO (which it does when
 * the host says the TSC is stable); else NULL. The page is the first of
 * [vvar_vclock] (Linux 6.13 and later) or the second of [vvar] (4.7 to
 * 6.12). It is read through a pipe: where the kernel has not mapped it,
 * the write fails with EFAULT, where a load would raise SIGBUS in the VM.
 * Once read, it stays mapped (the kernel maps it for good), so later reads
 * load it directly. *info gets a settled copy (even version, read twice
 * the same). */
static const volatile struct pvclock_info *pvclock_page(struct pvclock_info *info)
{
    char current[64] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f)
        return NULL;
    if (!fgets(current, sizeof current, f))
        current[0] = '\0';
    fclose(f);
    if (strcmp(current, "kvm-clock\n") != 0)
        return NULL;
    size_t length;
    uintptr_t page = mapping("[vvar_vclock]", &length);
    if (!page) {
        page = mapping("[vvar]", &length);
        if (length < 2 * 4096)
            return NULL;
        page += 4096;
    }
    int fds[2];
    if (!page || pipe2(fds, O_CLOEXEC) != 0)
        return NULL;
    int settled = 0;
    /* The host updates the page now and then (odd version meanwhile). */
    for (int tries = 0; tries < 100 && !settled; tries++) {
        struct pvclock_info a, b;
        settled = pipe_read(fds, page, &a) && pipe_read(fds, page, &b) && a.version % 2 == 0 &&
                  memcmp(&a, &b, sizeof a) == 0;
        *info = a;
    }
    close(fds[0]);
    close(fds[1]);
    return settled ? (const volatile struct pvclock_info *)page : NULL;
}

/* 1 when the kernel keeps time with kvm-clock and its host says the TSC
 * is stable: synchronised across virtual CPUs and steady, the promise the
 * vDSO relies on to read kvm-clock without a system call (as
 * PVCLOCK_TSC_STABLE_BIT in the pvclock page it reads). Such guests are
 * often booted with tsc=unstable, so that the kernel keeps kvm-clock.
 * The host clears the bit when it can no longer keep the promise: the
 * re-anchors read it again (c->pvclock). */
static int pvclock_tsc_stable(struct bmt_clock *c)
{
    struct pvclock_info info;
    const volatile struct pvclock_info *page = pvclock_page(&info);
    /* What a pvclock page holds: a scale, a shift that keeps 64 bits, and
     * a TSC reading of the past. */
    if (!page || !(info.flags & PVCLOCK_TSC_STABLE_BIT) || info.tsc_to_system_mul == 0 ||
        info.tsc_shift <= -32 || info.tsc_shift >= 32 || info.tsc_timestamp == 0 ||
        info.tsc_timestamp > __rdtsc())
        return 0;
    c->pvclock = (const volatile void *)page;
    return 1;
}

/* The best of `tries` brackets (rdtsc, clock_gettime, rdtsc): the TSC at
 * the middle of the narrowest, its clock_gettime, and its width in ticks
 * (the middle is within half of it of the TSC when the clock was read). */
static void sample_n(const struct bmt_clock *c, uint64_t *tsc, uint64_t *ns, uint64_t *width,
                     int tries)
{
    uint64_t best = UINT64_MAX;
    *tsc = *ns = 0;
    for (int i = 0; i < tries; i++) {
        uint64_t a = __rdtsc(), n = bmt_clock_ns();
        /* Tests: about one read in two, as a preemption strikes. */
        while (c->stretch_ns && (a >> 8 & 1) && bmt_clock_ns() - n < c->stretch_ns)
            ;
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
    *width = best;
}

static void sample(const struct bmt_clock *c, uint64_t *tsc, uint64_t *ns)
{
    uint64_t width;
    sample_n(c, tsc, ns, &width, 8);
}

/* The TSC's time at `tsc` on the line through (tsc0, ns0) with `mult`. */
static int64_t tsc_to_ns(uint64_t tsc, uint64_t tsc0, uint64_t ns0, uint64_t mult)
{
    if (tsc >= tsc0)
        return (int64_t)(ns0 + (uint64_t)(((unsigned __int128)(tsc - tsc0) * mult) >> 32));
    return (int64_t)(ns0 - (uint64_t)(((unsigned __int128)(tsc0 - tsc) * mult) >> 32));
}

/* Runs on every CPU of this thread's affinity (the first MAX_CPUS_CHECKED)
 * and measures how far each one's TSC is from the calibration's line.
 * Returns 0, or -1 with the reason in c->why. Restores the affinity. */
static int check_cpus(struct bmt_clock *c, uint64_t tsc0, uint64_t ns0)
{
    cpu_set_t mine, one;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0)
        return 0; /* cannot tell: the re-anchors still check */
    int checked = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && checked < MAX_CPUS_CHECKED; cpu++) {
        if (!CPU_ISSET(cpu, &mine))
            continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            continue;
        sched_yield();
        uint64_t tsc = 0, ns = 0;
        sample(c, &tsc, &ns);
        int64_t err = tsc_to_ns(tsc, tsc0, ns0, c->mult) - (int64_t)ns;
        checked++;
        if (err > BMT_CLOCK_MAX_ERROR_NS || err < -BMT_CLOCK_MAX_ERROR_NS) {
            sched_setaffinity(0, sizeof mine, &mine);
            snprintf(c->why, sizeof c->why,
                     "the TSC of CPU %d is %lld ns off the others' (more than %d): "
                     "events read clock_gettime",
                     cpu, (long long)err, BMT_CLOCK_MAX_ERROR_NS);
            return -1;
        }
    }
    sched_setaffinity(0, sizeof mine, &mine);
    return 0;
}
#endif

/* Decides and calibrates; c->lock held. */
static void calibrate(struct bmt_clock *c)
{
#if defined(__x86_64__)
    unsigned eax, ebx, ecx, edx;
    const char *knob = getenv("BEAMTRACE_CLOCK");
    if (knob && strcmp(knob, "monotonic") == 0) {
        snprintf(c->why, sizeof c->why, "BEAMTRACE_CLOCK=monotonic: events read clock_gettime");
        return;
    }
    if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 8))) {
        snprintf(c->why, sizeof c->why,
                 "the CPU does not say its TSC is invariant (no constant_tsc/nonstop_tsc): "
                 "events read clock_gettime");
        return;
    }
    if (kernel_offers("tsc")) {
        snprintf(c->basis, sizeof c->basis, "the kernel offers it as a clocksource");
    } else if (pvclock_tsc_stable(c)) {
        snprintf(c->basis, sizeof c->basis, "kvm-clock's host marks it stable");
    } else if (c->ignore_kernel) {
        snprintf(c->basis, sizeof c->basis, "the kernel's verdict ignored (a test)");
    } else {
        snprintf(c->why, sizeof c->why,
                 "the kernel does not offer the TSC as a clocksource (it found it unstable, or "
                 "was booted with tsc=unstable) and no kvm-clock host marks it stable: "
                 "events read clock_gettime");
        return;
    }
    uint64_t ns0 = 0, tsc0 = 0, ns1 = 0, tsc1 = 0;
    sample(c, &tsc0, &ns0);
    do
        sample(c, &tsc1, &ns1);
    while (ns1 - ns0 < CALIBRATION_NS);
    if (tsc1 <= tsc0) {
        snprintf(c->why, sizeof c->why, "the TSC did not advance: events read clock_gettime");
        return;
    }
    /* ns per tick in 32.32 fixed point: 1 ms of ticks times this fits 64 bits. */
    c->mult = ((ns1 - ns0) << 32) / (tsc1 - tsc0);
    c->anchor_ticks = (tsc1 - tsc0) * ANCHOR_NS / (ns1 - ns0);
    if (c->mult == 0 || c->anchor_ticks == 0) {
        snprintf(c->why, sizeof c->why, "the TSC runs too fast to calibrate: events read clock_gettime");
        return;
    }
    if (check_cpus(c, tsc1, ns1) != 0)
        return;
    c->why[0] = '\0';
    /* fast_ticks first: a give_up (which needs `usable`) can then only
     * come after both, and leaves both cleared. Until `usable`, the slow
     * path an anchor-less thread takes still reads clock_gettime. */
    atomic_store_explicit(&c->fast_ticks, c->anchor_ticks, memory_order_release);
    atomic_store_explicit(&c->usable, 1, memory_order_release);
#else
    snprintf(c->why, sizeof c->why, "no TSC on this architecture: events read clock_gettime");
#endif
}

void bmt_clock_calibrate(struct bmt_clock *c)
{
    pthread_mutex_lock(&c->lock);
    if (!c->calibrated) {
        calibrate(c);
        c->calibrated = 1;
    }
    pthread_mutex_unlock(&c->lock);
}

int bmt_clock_describe(struct bmt_clock *c, char *out, size_t size)
{
    pthread_mutex_lock(&c->lock);
    int tsc = atomic_load(&c->usable);
    snprintf(out, size, "%s", tsc ? "tsc" : c->why);
    pthread_mutex_unlock(&c->lock);
    return tsc;
}

#if defined(__x86_64__)
/* Gives the TSC up for every thread, with reason `why`. The reason is
 * written by the first thread to give up, without the lock (a writer may
 * not wait): c->why is read only under the lock once usable is 0, so it is
 * written before the release store. */
static void give_up_because(struct bmt_clock *c, const char *why)
{
    int expected = 1;
    /* First: no event takes the TSC's fast path after this store. */
    atomic_store_explicit(&c->fast_ticks, 0, memory_order_relaxed);
    if (pthread_mutex_trylock(&c->lock) == 0) {
        if (atomic_load(&c->usable))
            snprintf(c->why, sizeof c->why, "%s", why);
        atomic_compare_exchange_strong(&c->usable, &expected, 0);
        pthread_mutex_unlock(&c->lock);
    } else {
        /* The lock holder is only ever describing or calibrating (done):
         * the reason may stay the old one; the fallback is what matters. */
        atomic_compare_exchange_strong(&c->usable, &expected, 0);
    }
}

/* A re-anchor found the TSC `err` ns off CLOCK_MONOTONIC. */
static void give_up(struct bmt_clock *c, int64_t err)
{
    char why[sizeof c->why];
    snprintf(why, sizeof why,
             "the TSC drifted %lld ns from CLOCK_MONOTONIC between two of a thread's checks, a "
             "few ms apart (more than %d; a migrated VM?): events read clock_gettime",
             (long long)err, BMT_CLOCK_MAX_ERROR_NS);
    give_up_because(c, why);
}

/* Half a bracket of `width` ticks in ns: how far its middle may be from
 * the TSC when the clock was read. Saturated (a paused VM's bracket). */
static uint64_t bracket_slack_ns(const struct bmt_clock *c, uint64_t width)
{
    unsigned __int128 ns = ((unsigned __int128)width * c->mult) >> 33;
    return ns > UINT32_MAX ? UINT32_MAX : (uint64_t)ns;
}

#endif

uint64_t bmt_clock_event_ns_slow(struct bmt_clock *c, struct bmt_clock_thread *t)
{
    uint64_t ns;
#if defined(__x86_64__)
    if (atomic_load_explicit(&c->usable, memory_order_acquire)) {
        /* A new anchor, re-checking the line: where the old one said the
         * TSC now is against clock_gettime (only over a slice of at most a
         * few ms: an idle thread's old anchor says nothing). */
        uint64_t tsc = 0, now = 0, width;
        sample_n(c, &tsc, &now, &width, 2);
        uint64_t slack = bracket_slack_ns(c, width);
        /* An interrupt or a preemption in both reads widens the bracket
         * and places the clock read no better than half of it: read again,
         * the narrower kept. */
        if (slack > BMT_CLOCK_RETRY_WIDTH_NS / 2) {
            uint64_t tsc2, now2, width2;
            sample_n(c, &tsc2, &now2, &width2, 4);
            if (width2 < width) {
                tsc = tsc2, now = now2, width = width2;
                slack = bracket_slack_ns(c, width);
            }
        }
        uint64_t dt = tsc - t->tsc_anchor;
        if (t->ns_anchor && dt <= 4 * c->anchor_ticks) {
            int64_t err = (int64_t)(t->ns_anchor + ((dt * c->mult) >> 32)) - (int64_t)now;
            uint64_t abs_err = (uint64_t)(err < 0 ? -err : err);
            /* Either anchor's middle may be off by its slack: only what
             * lies beyond both is the TSC's own error. Judged whole, one
             * preempted read gave the TSC up for good on a loaded machine;
             * skipped instead, a clock always read slowly (hpet, a VM
             * trapping rdtsc) would never be judged at all. */
            uint64_t allowed = slack + t->anchor_slack_ns;
            uint64_t beyond = abs_err > allowed ? abs_err - allowed : 0;
            uint64_t worst = atomic_load_explicit(&c->worst_ns, memory_order_relaxed);
            while (beyond > worst &&
                   !atomic_compare_exchange_weak_explicit(&c->worst_ns, &worst, beyond,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed))
                ;
            if (beyond > BMT_CLOCK_MAX_ERROR_NS)
                give_up(c, err);
        }
        /* Where the TSC stands in on kvm-clock's host's word: that word
         * still given (the host clears it when its virtual CPUs' TSCs stop
         * agreeing). */
        if (c->pvclock && !(((const volatile struct pvclock_info *)c->pvclock)->flags &
                            PVCLOCK_TSC_STABLE_BIT))
            give_up_because(c, "kvm-clock's host no longer marks the TSC stable: "
                               "events read clock_gettime");
        t->ns_anchor = ns = now;
        t->tsc_anchor = tsc;
        t->anchor_slack_ns = slack;
    } else
#else
    (void)c; /* no TSC here: the clock is not consulted */
#endif
    {
        ns = bmt_clock_ns();
    }
    if (ns < t->last_ns)
        ns = t->last_ns;
    t->last_ns = ns;
    return ns;
}
