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
#include "args.h"
#include "model/files.h"
#include "out/hist_print.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOP 10

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
    char t[5][32];
    bmt_duration_text(h->sum, t[0]);
    bmt_duration_text(bmt_hist_quantile(h, 0.5), t[1]);
    bmt_duration_text(bmt_hist_quantile(h, 0.9), t[2]);
    bmt_duration_text(bmt_hist_quantile(h, 0.99), t[3]);
    bmt_duration_text(h->max, t[4]);
    snprintf(buf, sizeof buf, "%8llu %7llu %12llu %12s %12s %12s %12s %12s  ",
             (unsigned long long)h->count, (unsigned long long)s->error_count,
             (unsigned long long)s->bytes, t[0], t[1], t[2], t[3], t[4]);
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

static int parse_opt(void *ctx, int code, const char *arg)
{
    uint64_t *top = ctx;
    char *end;
    if (code != 'n')
        return BMT_EXIT_USAGE;
    errno = 0;
    uint64_t v = strtoull(arg, &end, 10);
    if (errno || *end || end == arg || arg[0] == '-' || v == 0)
        return bmt_cli_usage_error("files", "--top needs a number from 1, not '%s'", arg);
    *top = v;
    return 0;
}

int bmt_cmd_files(int argc, char **argv)
{
    static const struct option extra[] = {
        {"top", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    uint64_t top = DEFAULT_TOP;
    int json = 0;
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("files", argc, argv, extra, "n:", parse_opt, &top, &json, &scope,
                               &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_reader r;
    struct bmt_files f;
    struct bmt_an_pass pass;
    bmt_files_init(&f, &scope);
    int status = BMT_EXIT_FAIL;
    rc = bmt_an_run(&r, dir, &scope, bmt_files_feed, &f, &pass);
    struct bmt_out o;
    if (rc < 0) {
        status = bmt_an_fail("files", dir, &r, rc);
    } else if (bmt_an_out_open(&o, NULL) == 0) {
        char buf[128];
        if (json) {
            bmt_out_str(&o, "{\"trace\": ");
            bmt_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf, ", \"operations\": %llu, ", (unsigned long long)f.op_count);
            bmt_out_str(&o, buf);
            bmt_json_window(&o, &r, &scope, &pass);
        } else {
            snprintf(buf, sizeof buf, "file operations: %llu\n", (unsigned long long)f.op_count);
            bmt_out_str(&o, buf);
        }
        if (!json && !f.op_count) {
            bmt_out_str(&o, "(no file_op events: record with the session option file_io)\n");
            rc = 0;
        } else {
            rc = print_table(&o, &f.ops, json ? "by_op" : "by operation", "op", UINT64_MAX, json);
            if (rc == 0)
                rc = print_table(&o, &f.paths, json ? "top_paths" : "top paths by total time",
                                 "path", top, json);
            if (rc == 0)
                print_errors(&o, &f, json);
        }
        if (json)
            bmt_out_str(&o, "}\n");
        status = bmt_an_out_close(&o, "files");
        if (rc < 0) {
            bmt_cli_error("files: out of memory");
            status = BMT_EXIT_FAIL;
        }
    }
    bmt_files_free(&f);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status;
}
