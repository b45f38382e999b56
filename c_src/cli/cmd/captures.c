/* `beamtrace captures`: a directory of flight-recorder captures in one
 * table: when each fired (UTC), what fired it (kind, the value that
 * crossed the bound, process, function), how far it reaches before the
 * trigger and after, its span and its events. The trigger comes from each
 * capture's metadata (model/capture_info.h); the span and the counts from
 * one pass over its streams (model/tally.h): a capture is small, its
 * window's worth of events.
 */
#include "options.h"
#include "model/capture_info.h"
#include "model/tally.h"
#include "out/json.h"
#include "base/out.h"
#include "base/timefmt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMD "captures"

/* One capture, read. */
struct row {
    char *dir;                 /* owned */
    unsigned long long n;      /* capture-N */
    struct bmt_capture_info c;
    char kind[32], value[96], pid[64], function[256]; /* as printed ("-" for none) */
    int64_t fired_wall_ns;
    uint64_t from_ns, to_ns;   /* reader time: its first packet's begin, last packet's end */
    uint64_t trigger_ns;
    uint64_t events, discarded;
    int incomplete;            /* still being written, or its VM was killed meanwhile */
};

struct rows {
    struct row *v;
    unsigned n, cap;
};

/* capture-N-...: N, or 0 for another name. */
static unsigned long long capture_number(const char *name)
{
    if (strncmp(name, "capture-", 8) != 0 || name[8] < '0' || name[8] > '9')
        return 0;
    char *end;
    unsigned long long n = strtoull(name + 8, &end, 10);
    return *end == '-' ? n : 0;
}

static int by_number(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return strcmp(x->dir, y->dir);
}

static int add_dir(struct rows *rs, const char *dir, unsigned long long n)
{
    if (rs->n == rs->cap) {
        unsigned cap = rs->cap ? rs->cap * 2 : 16;
        struct row *v = realloc(rs->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        rs->v = v, rs->cap = cap;
    }
    struct row *r = &rs->v[rs->n];
    memset(r, 0, sizeof *r);
    if (!(r->dir = strdup(dir)))
        return -ENOMEM;
    r->n = n;
    rs->n++;
    return 0;
}

/* DIR's capture-N-* directories (not through symlinks); else DIR itself
 * when it is a trace (one capture). An attached `record --flight`'s
 * directory is a trace too (the rings at the end) holding its captures:
 * those are listed. 0, or -ENOMEM. */
static int gather(struct rows *rs, const char *dir)
{
    char path[4096];
    struct stat st;
    unsigned before = rs->n;
    int rc = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while (rc == 0 && (e = readdir(d)) != NULL) {
            unsigned long long n = capture_number(e->d_name);
            if (!n || (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path)
                continue;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
                rc = add_dir(rs, path, n);
        }
        closedir(d);
    }
    snprintf(path, sizeof path, "%s/metadata", dir);
    if (rc == 0 && rs->n == before && stat(path, &st) == 0) {
        const char *base = strrchr(dir, '/');
        rc = add_dir(rs, dir, capture_number(base ? base + 1 : dir));
    }
    return rc;
}

static void copy(char *to, size_t size, const char *s)
{
    snprintf(to, size, "%s", s && *s ? s : "-");
}

/* Reads one capture: its trigger and one pass for the span and counts.
 * 0; 1 for a trace that is not a capture; or a negative errno with the
 * reader's message in err. */
static int read_row(struct row *w, char *err, size_t size)
{
    struct bmt_reader r;
    struct bmt_tally st;
    memset(&st, 0, sizeof st);
    const char *paths[] = {w->dir};
    int rc = bmt_reader_open(&r, paths, 1);
    if (rc == 0 && !bmt_capture_info_find(&r, &w->c))
        rc = 1;
    if (rc == 0 && (rc = bmt_tally_collect(&r, &st)) == 0) {
        w->events = st.event_count;
        w->discarded = st.discarded_count;
        w->from_ns = UINT64_MAX;
        for (unsigned s = 0; s < r.stream_count; s++) {
            const struct bmt_reader_stream *rs = &r.streams[s];
            if (!rs->packet_count)
                continue;
            if (rs->first_packet_begin_ns < w->from_ns)
                w->from_ns = rs->first_packet_begin_ns;
            if (rs->last_ts_end_ns > w->to_ns)
                w->to_ns = rs->last_ts_end_ns;
        }
        if (w->from_ns == UINT64_MAX)
            w->from_ns = w->to_ns = w->c.trigger_ns;
        w->trigger_ns = w->c.trigger_ns;
        w->fired_wall_ns = w->c.trigger_wall_ns;
        copy(w->kind, sizeof w->kind, w->c.kind);
        bmt_capture_info_value_text(&w->c, w->value, sizeof w->value);
        copy(w->pid, sizeof w->pid, w->c.pid);
        copy(w->function, sizeof w->function, w->c.function);
    }
    if (rc < 0)
        snprintf(err, size, "%s", r.error);
    bmt_tally_free(&st);
    bmt_reader_close(&r);
    char marker[4096];
    snprintf(marker, sizeof marker, "%s/channel0_incomplete", w->dir);
    w->incomplete = access(marker, F_OK) == 0;
    return rc;
}

static uint64_t before_ns(const struct row *w)
{
    return w->trigger_ns > w->from_ns ? w->trigger_ns - w->from_ns : 0;
}

static uint64_t after_ns(const struct row *w)
{
    return w->to_ns > w->trigger_ns ? w->to_ns - w->trigger_ns : 0;
}

static void print_text(struct bmt_out *o, const struct rows *rs)
{
    char buf[1200], when[40], before[32], span[32];
    snprintf(buf, sizeof buf, "%-8s %-27s %-18s %-24s %-14s %-28s %-11s %-11s %10s\n", "CAPTURE",
             "FIRED", "TRIGGER", "VALUE", "PID", "FUNCTION", "DURATION", "BEFORE", "EVENTS");
    bmt_out_str(o, buf);
    for (unsigned i = 0; i < rs->n; i++) {
        const struct row *w = &rs->v[i];
        bmt_capture_info_utc_text(w->fired_wall_ns, when);
        bmt_duration_text(before_ns(w), before);
        bmt_duration_text(w->to_ns - w->from_ns, span);
        snprintf(buf, sizeof buf, "%-8llu %-27s %-18s %-24s %-14s %-28s %-11s %-11s %10llu%s%s\n",
                 w->n, when, w->kind, w->value, w->pid, w->function, span, before,
                 (unsigned long long)w->events, w->incomplete ? "  incomplete" : "",
                 w->discarded ? "  (events discarded)" : "");
        bmt_out_str(o, buf);
    }
    uint64_t total = 0;
    for (unsigned i = 0; i < rs->n; i++)
        total += rs->v[i].to_ns - rs->v[i].from_ns;
    bmt_duration_text(total, span);
    snprintf(buf, sizeof buf, "%u capture%s, %s recorded in all\n", rs->n, rs->n == 1 ? "" : "s",
             span);
    bmt_out_str(o, buf);
}

static void print_json(struct bmt_out *o, const struct rows *rs)
{
    char buf[256], when[40];
    bmt_out_str(o, "{\"captures\": [");
    for (unsigned i = 0; i < rs->n; i++) {
        const struct row *w = &rs->v[i];
        bmt_capture_info_utc_text(w->fired_wall_ns, when);
        bmt_out_str(o, i ? ",\n  {\"dir\": " : "\n  {\"dir\": ");
        bmt_json_cstr(o, w->dir);
        snprintf(buf, sizeof buf, ", \"capture\": %llu, \"fired\": ", w->n);
        bmt_out_str(o, buf);
        bmt_json_cstr(o, when);
        snprintf(buf, sizeof buf, ", \"fired_ns\": %lld, \"kind\": ", (long long)w->fired_wall_ns);
        bmt_out_str(o, buf);
        bmt_json_cstr(o, w->c.kind);
        snprintf(buf, sizeof buf, ", \"value\": %lld, \"bound\": %lld, \"unit\": ",
                 (long long)w->c.value, (long long)w->c.bound);
        bmt_out_str(o, buf);
        bmt_json_cstr(o, w->c.unit);
        bmt_out_str(o, ", \"pid\": ");
        bmt_json_cstr(o, w->c.pid);
        bmt_out_str(o, ", \"function\": ");
        bmt_json_cstr(o, w->c.function);
        snprintf(buf, sizeof buf, ", \"before_ns\": %llu, \"after_ns\": %llu, \"span_ns\": %llu, "
                 "\"window_ns\": %llu, \"events\": %llu, \"discarded\": %llu, \"incomplete\": %s}",
                 (unsigned long long)before_ns(w), (unsigned long long)after_ns(w),
                 (unsigned long long)(w->to_ns - w->from_ns), (unsigned long long)w->c.window_ns,
                 (unsigned long long)w->events, (unsigned long long)w->discarded,
                 w->incomplete ? "true" : "false");
        bmt_out_str(o, buf);
    }
    bmt_out_str(o, rs->n ? "\n]}\n" : "]}\n");
}

static void free_rows(struct rows *rs)
{
    for (unsigned i = 0; i < rs->n; i++)
        free(rs->v[i].dir);
    free(rs->v);
}

static int run(void *opts)
{
    const struct bmt_common *c = opts;
    struct rows rs = {NULL, 0, 0};
    int status = BMT_EXIT_FAIL, rc = 0;
    for (unsigned i = 0; rc == 0 && i < c->dirs.n; i++) {
        unsigned before = rs.n;
        struct stat st;
        int missing = stat(c->dirs.v[i], &st) != 0;
        if (missing || !S_ISDIR(st.st_mode)) {
            bmt_cli_error(CMD ": %s: %s; give the directory fetch or record --flight filled",
                          c->dirs.v[i], missing ? strerror(errno) : "not a directory");
            goto out;
        }
        rc = gather(&rs, c->dirs.v[i]);
        if (rc == 0 && rs.n == before) {
            bmt_cli_error(CMD ": %s holds no flight capture (a capture-N-TIME directory, or one "
                          "of them): copy them with beamtrace fetch --node NODE -o %s",
                          c->dirs.v[i], c->dirs.v[i]);
            goto out;
        }
    }
    if (rc < 0) {
        bmt_cli_error(CMD ": out of memory; free some memory");
        goto out;
    }
    qsort(rs.v, rs.n, sizeof *rs.v, by_number);
    for (unsigned i = 0; i < rs.n; i++) {
        char err[1100];
        rc = read_row(&rs.v[i], err, sizeof err);
        if (rc == 1) {
            bmt_cli_error(CMD ": %s is a trace but not a flight capture (no trigger in its "
                          "metadata): read it with the other commands (beamtrace stats %s)",
                          rs.v[i].dir, rs.v[i].dir);
            goto out;
        }
        if (rc < 0) {
            bmt_cli_error(CMD ": %s: %s", rs.v[i].dir, err);
            goto out;
        }
    }
    struct bmt_out o;
    if (bmt_out_open(&o, 1, 1 << 16) < 0) {
        bmt_cli_error(CMD ": out of memory; free some memory");
        goto out;
    }
    if (c->format == 1)
        print_json(&o, &rs);
    else
        print_text(&o, &rs);
    if (bmt_out_close(&o) < 0) {
        bmt_cli_error(CMD ": cannot write the output; check the disk or pipe");
        goto out;
    }
    status = BMT_EXIT_OK;
out:
    free_rows(&rs);
    return status;
}

const struct bmt_command bmt_cmd_captures = {
    .name = "captures",
    .summary = "list flight-recorder captures: when, what fired each, how long",
    .description =
        "Lists the flight-recorder captures in DIR (the directory `beamtrace fetch`\n"
        "or `record --flight` filled, or one capture), oldest first, one line each:\n"
        "its number, when its trigger fired (UTC), what fired it (call, long_gc,\n"
        "probe, ...: the value that crossed the bound, the process, the function or\n"
        "probe label), how far back before the trigger and how long after it the\n"
        "capture holds events, and its event count. A capture is a trace: every\n"
        "other command reads it (beamtrace calls --breakdown DIR/capture-1-...).",
    .uses = BMT_USES_FORMAT | BMT_USES_DIRS,
    .size = sizeof(struct bmt_common),
    .run = run,
};
