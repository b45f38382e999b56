/* The trace clock (contract and design in clock.h). */
#include "clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#define CALIBRATION_NS (20 * 1000 * 1000)
#define ANCHOR_NS (1000 * 1000)

uint64_t bmt_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/* 1 when the kernel's current clocksource is the TSC. */
static int kernel_uses_tsc(void)
{
    char name[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f)
        return 0;
    if (!fgets(name, sizeof name, f))
        name[0] = '\0';
    fclose(f);
    return strncmp(name, "tsc\n", 4) == 0;
}

/* One (TSC, CLOCK_MONOTONIC) pair: the TSC read on both sides of the clock
 * read, keeping the tightest of a few tries, so a preemption between the
 * two reads cannot skew the rate. */
static void sample(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = __rdtsc(), n = bmt_clock_ns(), b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}
#endif

void bmt_clock_calibrate(struct bmt_clock *c)
{
#if defined(__x86_64__)
    unsigned eax, ebx, ecx, edx;
    if (atomic_load(&c->usable) || !__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) ||
        !(edx & (1u << 8)) /* invariant TSC */ || !kernel_uses_tsc())
        return;
    uint64_t ns0 = 0, tsc0 = 0, ns1 = 0, tsc1 = 0;
    sample(&tsc0, &ns0);
    do
        sample(&tsc1, &ns1);
    while (ns1 - ns0 < CALIBRATION_NS);
    if (tsc1 <= tsc0)
        return;
    /* ns per tick in 32.32 fixed point: 1 ms of ticks times this fits 64 bits. */
    c->mult = ((ns1 - ns0) << 32) / (tsc1 - tsc0);
    c->anchor_ticks = (tsc1 - tsc0) * ANCHOR_NS / (ns1 - ns0);
    if (c->mult == 0 || c->anchor_ticks == 0)
        return;
    atomic_store_explicit(&c->usable, 1, memory_order_release);
#else
    (void)c;
#endif
}

uint64_t bmt_clock_event_ns(const struct bmt_clock *c, struct bmt_clock_thread *t)
{
#if defined(__x86_64__)
    if (atomic_load_explicit(&c->usable, memory_order_acquire)) {
        uint64_t tsc = __rdtsc();
        uint64_t dt = tsc - t->tsc_anchor;
        if (dt > c->anchor_ticks) {
            t->ns_anchor = bmt_clock_ns();
            t->tsc_anchor = __rdtsc();
            dt = 0;
        }
        uint64_t ns = t->ns_anchor + ((dt * c->mult) >> 32);
        if (ns < t->last_ns)
            ns = t->last_ns;
        t->last_ns = ns;
        return ns;
    }
#else
    (void)c;
#endif
    uint64_t ns = bmt_clock_ns();
    if (ns < t->last_ns)
        ns = t->last_ns;
    t->last_ns = ns;
    return ns;
}
