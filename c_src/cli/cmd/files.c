/* `beamtrace files`: file I/O from org_erlang_beamtrace:file_op events
 * (session option file_io): latency percentiles and bytes per operation,
 * the paths with the most time spent (top N), and error counts per reason.
 *
 * A file_op event is recorded when the session's helper handles the
 * return, with the latency the VM's timestamps measured in the caller; it
 * is counted when its own time lies inside the window and its pid passes
 * the filter. Memory: per distinct operation, path and error reason,
 * never per event.
 */
#include "analysis.h"
#include "model/files.h"
#include "out/hist_print.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <stdio.h>
#include <stdlib.h>

struct files_opts {
    struct bmt_common common;
    uint64_t top;
};

static const struct bmt_opt options[] = {
    {.name = "top", .letter = 'n', .type = BMT_OPT_COUNT, .arg = "N", .help = "paths listed",
     .def = "10", .min = 1, .offset = BMT_OPT_AT(struct files_opts, top, uint64_t)},
    {0},
};

static void print_row(struct bmt_out *o, const char *key_name, const char *key, size_t len,
                      const struct bmt_fstat_io *s, int json, int first)
{
    const struct bmt_hist *h = &s->hist;
    char buf[256];
    if (json) {
        bmt_out_str(o, first ? "\n  {\"" : ",\n  {\"");
        bmt_out_str(o, key_name);
        bmt_out_str(o, "\": ");
        bmt_json_string(o, key, len);
        bmt_out_str(o, ", ");
        bmt_hist_print_json_stats(o, h);
        snprintf(buf, sizeof buf, ", \"errors\": %llu, \"bytes\": %llu, \"total_ns\": %llu}",
                 (unsigned long long)s->error_count, (unsigned long long)s->bytes,
                 (unsigned long long)h->sum);
        bmt_out_str(o, buf);
        return;
    }
    struct bmt_hist_texts t;
    bmt_hist_texts(h, &t);
    snprintf(buf, sizeof buf, "%8llu %7llu %12llu %12s %12s %12s %12s %12s  ",
             (unsigned long long)h->count, (unsigned long long)s->error_count,
             (unsigned long long)s->bytes, t.total, t.p50, t.p90, t.p99, t.max);
    bmt_out_str(o, buf);
    bmt_out_str(o, key);
    bmt_out_char(o, '\n');
}

static int print_table(struct bmt_out *o, const struct bmt_io_table *t, const char *title,
                       const char *key_name, uint64_t n, int json)
{
    uint32_t *ids;
    int64_t shown = bmt_files_by_total(t, &ids, n);
    if (shown < 0)
        return (int)shown;
    char buf[256];
    if (json) {
        snprintf(buf, sizeof buf, ", \"%s\": [", title);
        bmt_out_str(o, buf);
    } else {
        snprintf(buf, sizeof buf, "\n%s\n%8s %7s %12s %12s %12s %12s %12s %12s  %s\n", title,
                 "COUNT", "ERRORS", "BYTES", "TOTAL", "P50", "P90", "P99", "MAX",
                 key_name[0] == 'o' ? "OP" : "PATH");
        bmt_out_str(o, buf);
    }
    for (int64_t i = 0; i < shown; i++)
        print_row(o, key_name, bmt_strtab_str(&t->keys, ids[i]),
                  bmt_strtab_len(&t->keys, ids[i]), &t->rows[ids[i]], json, i == 0);
    if (json)
        bmt_out_str(o, shown ? "\n]" : "]");
    free(ids);
    return 0;
}

static void print_errors(struct bmt_out *o, const struct bmt_files *f, int json)
{
    char buf[64];
    bmt_out_str(o, json ? ", \"errors\": [" : "\nerrors\n");
    for (uint32_t i = 0; i < f->errnos.count; i++) {
        const char *s = bmt_strtab_str(&f->errnos, i);
        size_t len = bmt_strtab_len(&f->errnos, i);
        if (json) {
            bmt_out_str(o, i ? ", {\"error\": " : "{\"error\": ");
            bmt_json_string(o, s, len);
            snprintf(buf, sizeof buf, ", \"count\": %llu}", (unsigned long long)f->errno_counts[i]);
            bmt_out_str(o, buf);
        } else {
            snprintf(buf, sizeof buf, "%8llu  ", (unsigned long long)f->errno_counts[i]);
            bmt_out_str(o, buf);
            bmt_out_str(o, len ? s : "(no reason)");
            bmt_out_char(o, '\n');
        }
    }
    if (json)
        bmt_out_char(o, ']');
    else if (!f->errnos.count)
        bmt_out_str(o, "(none)\n");
}

/* Operations on files opened before the trace (no path), and the files
 * the node had open when recording started (file_info), by path. */
static void print_before(struct bmt_out *o, const struct bmt_files *f, int json)
{
    char buf[96];
    if (json) {
        snprintf(buf, sizeof buf, ", \"opened_before\": {\"operations\": %llu, \"open_files\": [",
                 (unsigned long long)f->pathless_count);
        bmt_out_str(o, buf);
    } else if (f->pathless_count || f->open_before.count) {
        snprintf(buf, sizeof buf, "\nopened before the trace: %llu operations\n",
                 (unsigned long long)f->pathless_count);
        bmt_out_str(o, buf);
        if (f->open_before.count)
            bmt_out_str(o, "files open when recording started:\n");
    }
    for (uint32_t i = 0; i < f->open_before.count; i++) {
        const char *s = bmt_strtab_str(&f->open_before, i);
        uint32_t len = bmt_strtab_len(&f->open_before, i);
        if (json) {
            if (i)
                bmt_out_str(o, ", ");
            bmt_json_string(o, s, len);
        } else {
            bmt_out_str(o, "  ");
            bmt_out_mem(o, s, len);
            bmt_out_char(o, '\n');
        }
    }
    if (json)
        bmt_out_str(o, "]}");
}

struct printing {
    const struct bmt_analysis *a;
    const struct bmt_files *f;
    uint64_t top;
    int json;
};

static int print_files(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_files *f = p->f;
    char buf[128];
    int rc = 0;
    if (p->json) {
        bmt_out_str(o, "{\"trace\": ");
        bmt_json_cstr(o, p->a->dir);
        snprintf(buf, sizeof buf, ", \"operations\": %llu, ", (unsigned long long)f->op_count);
        bmt_out_str(o, buf);
        bmt_json_window(o, &p->a->r, &p->a->scope, &p->a->pass);
    } else {
        snprintf(buf, sizeof buf, "file operations: %llu\n", (unsigned long long)f->op_count);
        bmt_out_str(o, buf);
    }
    if (!p->json && !f->op_count) {
        bmt_out_str(o, "(no file_op events: record with the session option file_io)\n");
    } else {
        rc = print_table(o, &f->ops, p->json ? "by_op" : "by operation", "op", UINT64_MAX,
                         p->json);
        if (rc == 0)
            rc = print_table(o, &f->paths, p->json ? "top_paths" : "top paths by total time",
                             "path", p->top, p->json);
        if (rc == 0)
            print_before(o, f, p->json);
        if (rc == 0)
            print_errors(o, f, p->json);
    }
    if (p->json)
        bmt_out_str(o, "}\n");
    return rc;
}

static int print(struct bmt_out *o, const struct bmt_analysis *a, void *self, const void *opts)
{
    const struct files_opts *op = opts;
    const struct printing p = {a, self, op->top, op->common.format == 1};
    return print_files(o, &p);
}

const struct bmt_command bmt_cmd_files = {
    .name = "files",
    .summary = "file I/O: latency percentiles per operation and path, errors",
    .description =
        "Reads org_erlang_beamtrace:file_op events (recorded with the session option\n"
        "file_io): count, errors, bytes and latency (total, p50, p90, p99, max) per\n"
        "operation and for the paths with the most total time, and the count of each\n"
        "error reason (enoent, eacces, ...). Latency is the caller's, call to return.\n"
        "Operations on files opened before the trace carry no path unless the node\n"
        "could name them: they are counted (\"opened before the trace: N operations\"),\n"
        "and the files the node had open when recording started are listed.",
    .opts = options, .uses = BMT_USES_ANALYSIS, .size = sizeof(struct files_opts),
    .acc = &bmt_files_acc, .state_size = sizeof(struct bmt_files),
    .print = print,
};
