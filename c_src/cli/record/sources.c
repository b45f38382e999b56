/* `beamtrace record`'s session source options (contract in
 * sources.h). The limits are beamtrace_sources:validate/1's, so a
 * bad value is a usage error here, before anything connects. */
#include "sources.h"
#include "base/units.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOP 100          /* beamtrace_sources' ?MAX_TOP */
#define DEFAULT_TOP 10
#define DEFAULT_INTERVAL_MS 1000

struct term {
    char *out;
    size_t size, len;
    int full;
};

static void add(struct term *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct term *t, const char *fmt, ...)
{
    if (t->full)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->out + t->len, t->size - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->size - t->len)
        t->full = 1;
    else
        t->len += (size_t)n;
}

static int fail(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
    return -1;
}

/* A time with its unit ("50ms", "1s", "1.5s") in whole milliseconds >= 1. */
static int parse_ms(const char *s, int64_t *ms)
{
    uint64_t ns;
    if (bmt_parse_duration_ns(s, &ns) != 0)
        return -1;
    if (ns < 1000000 || ns / 1000000 >= (UINT64_C(1) << 32))
        return -1;
    *ms = (int64_t)(ns / 1000000);
    return 0;
}

static int parse_int(const char *s, int64_t *v, int64_t min, int64_t max)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < min || x > max)
        return -1;
    *v = x;
    return 0;
}

/* Calls `item(name, value-or-NULL)` for each comma-separated NAME[=VALUE]. */
static int each_item(const char *list, int (*item)(void *ctx, const char *name, const char *value),
                     void *ctx)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return -1;
    int rc = 0, items = 0;
    for (char *it = strtok_r(copy, ",", &save); it && rc == 0; it = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(it, '=');
        if (eq)
            *eq = '\0';
        rc = item(ctx, it, eq ? eq + 1 : NULL);
        items++;
    }
    free(copy);
    /* No item at all ("", ","): the item callback's error for a missing one. */
    return rc == 0 && items == 0 ? item(ctx, "", NULL) : rc;
}

struct items {
    struct term *t;
    char *err;
    size_t err_size;
    int count;
};

static int sample_item(void *ctx, const char *name, const char *value)
{
    struct items *c = ctx;
    int64_t ms = DEFAULT_INTERVAL_MS, top = DEFAULT_TOP;
    int queues = strcmp(name, "message_queues") == 0;
    if (!queues && strcmp(name, "schedulers") != 0 && strcmp(name, "run_queues") != 0 &&
        strcmp(name, "memory") != 0)
        return fail(c->err, c->err_size, "--samples: unknown counter '%s' (schedulers, "
                    "run_queues, memory, message_queues)", name);
    if (value) {
        char interval[64];
        const char *slash = queues ? strchr(value, '/') : NULL;
        size_t n = slash ? (size_t)(slash - value) : strlen(value);
        snprintf(interval, sizeof interval, "%.*s", (int)(n < sizeof interval ? n : 0), value);
        if (parse_ms(interval, &ms) != 0)
            return fail(c->err, c->err_size, "--samples %s=%s: expected an interval with its "
                        "unit, e.g. %s=100ms%s", name, value, name, queues ? "/10" : "");
        if (slash && parse_int(slash + 1, &top, 1, MAX_TOP) != 0)
            return fail(c->err, c->err_size, "--samples %s=%s: expected how many queues after "
                        "'/', 1 to %d", name, value, MAX_TOP);
    }
    add(c->t, "%s%s => ", c->count++ ? ", " : "", name);
    if (queues)
        add(c->t, "{%" PRId64 ", %" PRId64 "}", ms, top);
    else
        add(c->t, "%" PRId64, ms);
    return 0;
}

static int monitor_item(void *ctx, const char *name, const char *value)
{
    struct items *c = ctx;
    int64_t v, d, e;
    const char *sep = c->count++ ? ", " : "";
    if (strcmp(name, "long_gc") == 0 || strcmp(name, "long_schedule") == 0) {
        if (!value || parse_ms(value, &v) != 0)
            return fail(c->err, c->err_size, "--system-monitor %s: expected %s=TIME with its "
                        "unit, e.g. %s=50ms", name, name, name);
        add(c->t, "%s%s => %" PRId64, sep, name, v);
    } else if (strcmp(name, "large_heap") == 0) {
        if (!value || parse_int(value, &v, 1, (INT64_C(1) << 32) - 1) != 0)
            return fail(c->err, c->err_size, "--system-monitor large_heap: expected "
                        "large_heap=WORDS, e.g. large_heap=10000000");
        add(c->t, "%s%s => %" PRId64, sep, name, v);
    } else if (strcmp(name, "busy_port") == 0 || strcmp(name, "busy_dist_port") == 0) {
        if (value)
            return fail(c->err, c->err_size, "--system-monitor %s takes no value", name);
        add(c->t, "%s%s => true", sep, name);
    } else if (strcmp(name, "long_message_queue") == 0) {
        char low[32];
        const char *slash = value ? strchr(value, '/') : NULL;
        size_t n = slash ? (size_t)(slash - value) : 0;
        snprintf(low, sizeof low, "%.*s", (int)(n < sizeof low ? n : 0), value ? value : "");
        if (!slash || parse_int(low, &d, 0, INT64_MAX - 1) != 0 ||
            parse_int(slash + 1, &e, d + 1, INT64_MAX) != 0)
            return fail(c->err, c->err_size, "--system-monitor long_message_queue: expected "
                        "long_message_queue=DISABLE/ENABLE with DISABLE < ENABLE, e.g. "
                        "long_message_queue=100/1000");
        add(c->t, "%s%s => {%" PRId64 ", %" PRId64 "}", sep, name, d, e);
    } else {
        return fail(c->err, c->err_size, "--system-monitor: unknown setting '%s' (long_gc, "
                    "long_schedule, large_heap, busy_port, busy_dist_port, long_message_queue)",
                    name);
    }
    return 0;
}

static int ets_item(void *ctx, const char *name, const char *value)
{
    struct items *c = ctx;
    if (!*name || value)
        return fail(c->err, c->err_size, "--ets: expected table names (NAME,NAME,...) or all");
    /* A binary of the name's bytes (UTF-8 stays UTF-8: \x{..} are bytes
     * in a plain binary); the controller makes it an atom. */
    add(c->t, "%s<<\"", c->count++ ? ", " : "");
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p == '"' || *p == '\\')
            add(c->t, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            add(c->t, "\\x{%x}", *p);
        else
            add(c->t, "%c", *p);
    }
    add(c->t, "\">>");
    return 0;
}

int bmt_record_sources_term(const struct bmt_record_sources *s, char *out, size_t size, char *err,
                            size_t err_size)
{
    struct term t = {out, size, 0, 0};
    struct items c = {&t, err, err_size, 0};
    out[0] = '\0';
    if (s->samples) {
        add(&t, ", samples => #{");
        if (each_item(s->samples, sample_item, &c) != 0)
            return -1;
        add(&t, "}");
    }
    if (s->system_monitor) {
        c.count = 0;
        add(&t, ", system_monitor => #{");
        if (each_item(s->system_monitor, monitor_item, &c) != 0)
            return -1;
        add(&t, "}");
    }
    if (s->distribution)
        add(&t, ", distribution => true");
    if (s->file_io)
        add(&t, ", file_io => true");
    if (s->ets) {
        c.count = 0;
        if (strcmp(s->ets, "all") == 0) {
            add(&t, ", ets => [all]");
        } else {
            add(&t, ", ets => [");
            if (each_item(s->ets, ets_item, &c) != 0)
                return -1;
            add(&t, "]");
        }
    }
    if (t.full)
        return fail(err, err_size, "the source options are too long");
    return 0;
}
