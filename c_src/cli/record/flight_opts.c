/* `record --flight`'s option values, checked before anything connects:
 * --trigger SPEC in the forms beamtrace_flight:parse_trigger/1 reads
 * (src/beamtrace_flight.erl, which checks them again on the node, with
 * what its VM supports: long_message_queue needs OTP 27), --max-captures
 * N/h and --sample 1/N or KIND=1/N,... (beamtrace's `sample` option;
 * ratios up to the recorder's BMT_SAMPLE_MAX_RATIO). Contracts in
 * flight_opts.h. Pure; reentrant.
 */
#include "flight_opts.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIGGER_FORMS "Mod:Fun/Arity>15ms, long_gc=50ms, long_schedule=50ms, large_heap=WORDS, " \
                      "busy_port, busy_dist_port, long_message_queue=D/E, probe, probe=LABEL, "   \
                      "message_queue=N"

/* The event kinds beamtrace's `sample` option takes (erlang:trace/3's
 * flags, as nif_sample.c reads them), in the controller's spelling. */
static const char *const sample_kinds[] = {"call",    "send", "receive", "running",
                                           "garbage_collection", "procs", "ports", NULL};

/* A whole number in [lo, hi], all of `s`. */
static int whole(const char *s, unsigned long long lo, unsigned long long hi,
                 unsigned long long *v)
{
    if (!*s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || *end || n < lo || n > hi)
        return -1;
    *v = n;
    return 0;
}

/* A duration as the node's trigger parser reads it: a number and ns, us,
 * ms or s (no minutes: a bound is short); its value in ns, above 0. */
static int bound_ns(const char *s, uint64_t *ns)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0) || s[0] == '+' || s[0] == '-')
        return -1;
    for (unsigned i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0 && v * units[i].ns >= 1 && v * units[i].ns < 1e18) {
            *ns = (uint64_t)(v * units[i].ns + 0.5);
            return 0;
        }
    return -1;
}

/* Mod:Fun/Arity: two names and an arity 0..255, one function. */
static int check_mfa(const char *mfa, size_t len)
{
    const char *colon = memchr(mfa, ':', len), *slash = memchr(mfa, '/', len);
    unsigned long long arity;
    char a[8];
    if (!colon || !slash || colon == mfa || slash < colon + 2 || (size_t)(mfa + len - slash) < 2 ||
        (size_t)(mfa + len - slash - 1) >= sizeof a)
        return -1;
    memcpy(a, slash + 1, (size_t)(mfa + len - slash - 1));
    a[mfa + len - slash - 1] = '\0';
    if (whole(a, 0, 255, &arity) != 0)
        return -1;
    /* One function: no wildcard for the module or the function. */
    if ((colon - mfa == 1 && mfa[0] == '_') || (slash - colon == 2 && colon[1] == '_') ||
        memchr(mfa, '*', len))
        return -1;
    return 0;
}

int bmt_record_trigger_check(const char *spec, char *err, size_t size)
{
    const char *gt = strchr(spec, '>'), *eq = strchr(spec, '=');
    unsigned long long n, d, e;
    uint64_t ns;
    const char *why = NULL;
    if (gt) {
        if (check_mfa(spec, (size_t)(gt - spec)) != 0)
            why = "a call trigger names one function: Mod:Fun/Arity>BOUND (e.g. kv:get/2>15ms)";
        else if (bound_ns(gt + 1, &ns) != 0)
            why = "the bound is a duration with its unit: ns, us, ms or s (e.g. 15ms)";
    } else if (eq) {
        size_t k = (size_t)(eq - spec);
        const char *v = eq + 1;
        if ((k == 7 && strncmp(spec, "long_gc", k) == 0) ||
            (k == 13 && strncmp(spec, "long_schedule", k) == 0)) {
            if (bound_ns(v, &ns) != 0 || ns < 1000000)
                why = "the system monitor counts whole milliseconds: 1ms or more (e.g. 50ms)";
        } else if ((k == 10 && strncmp(spec, "large_heap", k) == 0) ||
                   (k == 13 && strncmp(spec, "message_queue", k) == 0)) {
            if (whole(v, 1, UINT64_C(1) << 59, &n) != 0)
                why = "expected a positive whole number (large_heap: words; message_queue: "
                      "messages)";
        } else if (k == 18 && strncmp(spec, "long_message_queue", k) == 0) {
            const char *sl = strchr(v, '/');
            char dt[24] = "";
            if (sl && (size_t)(sl - v) < sizeof dt) {
                memcpy(dt, v, (size_t)(sl - v));
                dt[sl - v] = '\0';
            }
            if (!sl || whole(dt, 0, UINT64_C(1) << 59, &d) != 0 ||
                whole(sl + 1, 1, UINT64_C(1) << 59, &e) != 0 || e <= d)
                why = "expected long_message_queue=DISABLE/ENABLE, queue lengths with DISABLE "
                      "below ENABLE (e.g. 100/1000)";
        } else if (k == 5 && strncmp(spec, "probe", k) == 0) {
            if (!*v || strlen(v) >= 64)
                why = "probe=LABEL takes a label of 1 to 63 bytes, the one "
                      "beamtrace:trigger(LABEL) gives";
        } else {
            why = "unknown trigger";
        }
    } else if (strcmp(spec, "busy_port") != 0 && strcmp(spec, "busy_dist_port") != 0 &&
               strcmp(spec, "probe") != 0) {
        why = strcmp(spec, "long_gc") == 0 || strcmp(spec, "long_schedule") == 0 ||
                      strcmp(spec, "large_heap") == 0 || strcmp(spec, "message_queue") == 0 ||
                      strcmp(spec, "long_message_queue") == 0
                  ? "needs its bound (KIND=...)"
                  : "unknown trigger";
    }
    if (!why)
        return 0;
    snprintf(err, size, "--trigger '%s': %s; the triggers: " TRIGGER_FORMS, spec, why);
    return -1;
}

int bmt_record_max_captures_check(const char *v, char *err, size_t size)
{
    unsigned long long n;
    size_t len = strlen(v);
    char num[16];
    if (strcmp(v, "infinity") == 0)
        return 0;
    if (len > 2 && len - 2 < sizeof num && strcmp(v + len - 2, "/h") == 0) {
        memcpy(num, v, len - 2);
        num[len - 2] = '\0';
        if (whole(num, 1, 3600, &n) == 0)
            return 0;
    }
    snprintf(err, size, "--max-captures '%s': expected N/h, captures an hour from 1/h to 3600/h "
             "(e.g. 6/h), or infinity", v);
    return -1;
}

/* "1/N": N in 1..BMT_RECORD_SAMPLE_MAX. */
static int one_in(const char *s, unsigned long long *n)
{
    return strncmp(s, "1/", 2) == 0 ? whole(s + 2, 1, BMT_RECORD_SAMPLE_MAX, n) : -1;
}

int bmt_record_sample_each(const char *v, void (*fn)(void *ctx, const char *kind,
                                                     unsigned long long n), void *ctx)
{
    char copy[512], *save = NULL;
    unsigned long long n;
    if (strlen(v) >= sizeof copy)
        return -1;
    if (one_in(v, &n) == 0) {
        if (fn)
            fn(ctx, NULL, n);
        return 0;
    }
    snprintf(copy, sizeof copy, "%s", v);
    int items = 0;
    for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save), items++) {
        char *eq = strchr(it, '=');
        if (!eq)
            return -1;
        *eq = '\0';
        unsigned k = 0;
        while (sample_kinds[k] && strcmp(sample_kinds[k], it) != 0)
            k++;
        if (!sample_kinds[k] || one_in(eq + 1, &n) != 0)
            return -1;
        if (fn)
            fn(ctx, sample_kinds[k], n);
    }
    return items ? 0 : -1;
}

int bmt_record_sample_check(const char *v, char *err, size_t size)
{
    if (bmt_record_sample_each(v, NULL, NULL) == 0)
        return 0;
    snprintf(err, size, "--sample '%s': expected 1/N (calls, sends, receives, scheduling and GC; "
             "N up to %llu) or KIND=1/N,... with KIND call, send, receive, running, "
             "garbage_collection, procs or ports (e.g. call=1/10,send=1/100)", v,
             (unsigned long long)BMT_RECORD_SAMPLE_MAX);
    return -1;
}

int bmt_record_on_max_rate_check(const char *v, char *err, size_t size)
{
    if (strcmp(v, "stop") == 0 || strcmp(v, "sample") == 0)
        return 0;
    snprintf(err, size, "--on-max-rate '%s': expected stop or sample", v);
    return -1;
}
