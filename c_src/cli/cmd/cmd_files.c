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
#include "model/analyses.h"
#include "core/catalogue_fields.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOP 10

/* One operation's or one path's figures. */
struct fstat {
    uint64_t bytes;         /* bytes read or written */
    uint64_t error_count;   /* result error */
    struct bmt_hist hist;   /* latency, ns */
};

/* Rows keyed by interned strings: rows[id] for the string with that id. */
struct table {
    struct bmt_strtab keys;
    struct fstat *rows;
    uint32_t cap;
};

struct files {
    struct bmt_an_scope *scope;
    struct table ops, paths;
    struct bmt_strtab errnos;
    uint64_t *errno_counts;     /* by errno id */
    uint32_t errno_cap;
    uint64_t op_count;
};

static struct fstat *row(struct table *t, const char *s, size_t len)
{
    int64_t id = bmt_strtab_intern(&t->keys, s, len);
    if (id < 0)
        return NULL;
    if ((uint32_t)id >= t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        while (cap <= (uint32_t)id)
            cap *= 2;
        struct fstat *r = realloc(t->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        for (uint32_t i = t->cap; i < cap; i++) {
            memset(&r[i], 0, sizeof r[i]);
            bmt_hist_init(&r[i].hist);
        }
        t->rows = r;
        t->cap = cap;
    }
    return &t->rows[id];
}

static void table_free(struct table *t)
{
    for (uint32_t i = 0; i < t->cap; i++)
        bmt_hist_free(&t->rows[i].hist);
    free(t->rows);
    bmt_strtab_free(&t->keys);
}

static int add(struct fstat *s, uint64_t latency_ns, uint64_t bytes, int error)
{
    if (!s)
        return -ENOMEM;
    s->bytes += bytes;
    s->error_count += (uint64_t)error;
    return bmt_hist_add(&s->hist, latency_ns);
}

static int count_errno(struct files *f, const char *s, size_t len)
{
    int64_t id = bmt_strtab_intern(&f->errnos, s, len);
    if (id < 0)
        return (int)id;
    if ((uint32_t)id >= f->errno_cap) {
        uint32_t cap = f->errno_cap ? f->errno_cap * 2 : 16;
        while (cap <= (uint32_t)id)
            cap *= 2;
        uint64_t *c = realloc(f->errno_counts, cap * sizeof *c);
        if (!c)
            return -ENOMEM;
        memset(c + f->errno_cap, 0, (cap - f->errno_cap) * sizeof *c);
        f->errno_counts = c;
        f->errno_cap = cap;
    }
    f->errno_counts[id]++;
    return 0;
}

static int files_feed(void *ctx, const struct bmt_record *rec)
{
    struct files *f = ctx;
    const struct bmt_an_scope *sc = f->scope;
    if (rec->tp != BMT_TP_file_op)
        return 0;
    const struct bmt_value *v = rec->values;
    const struct bmt_value *pid = &v[BMT_F_file_op_pid], *op = &v[BMT_F_file_op_op],
                           *path = &v[BMT_F_file_op_path], *res = &v[BMT_F_file_op_result],
                           *err = &v[BMT_F_file_op_error];
    if (!bmt_an_valid(sc, rec->ts_ns) || !bmt_an_inside(sc, rec->ts_ns, rec->ts_ns) ||
        !bmt_an_keep(sc, pid->str, pid->len))
        return 0;
    uint64_t lat = v[BMT_F_file_op_latency_ns].integer, bytes = v[BMT_F_file_op_bytes].integer;
    int error = res->len == 5 && memcmp(res->str, "error", 5) == 0;
    f->op_count++;
    int rc = add(row(&f->ops, op->str, op->len), lat, bytes, error);
    if (rc == 0 && path->len)
        rc = add(row(&f->paths, path->str, path->len), lat, bytes, error);
    if (rc == 0 && error)
        rc = count_errno(f, err->str, err->len);
    return rc;
}

struct ranked {
    uint64_t total_ns;
    uint32_t id;
};

static int by_total_desc(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Ids of `t`'s rows sorted by total latency, largest first (at most `n`)
 * into *out (malloc'd); returns how many, or -ENOMEM. */
static int64_t by_total(const struct table *t, uint32_t **out, uint64_t n)
{
    uint32_t count = t->keys.count;
    struct ranked *r = malloc((count ? count : 1) * sizeof *r);
    uint32_t *ids = malloc((count ? count : 1) * sizeof *ids);
    if (!r || !ids) {
        free(r);
        free(ids);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < count; i++)
        r[i] = (struct ranked){t->rows[i].hist.sum, i};
    qsort(r, count, sizeof *r, by_total_desc);
    for (uint32_t i = 0; i < count; i++)
        ids[i] = r[i].id;
    free(r);
    *out = ids;
    return count < n ? count : (int64_t)n;
}

static void print_row(struct bmt_out *o, const char *key_name, const char *key, size_t len,
                      const struct fstat *s, int json, int first)
{
    const struct bmt_hist *h = &s->hist;
    char buf[256];
    if (json) {
        bmt_out_str(o, first ? "\n  {\"" : ",\n  {\"");
        bmt_out_str(o, key_name);
        bmt_out_str(o, "\": ");
        bmt_an_json_string(o, key, len);
        bmt_out_str(o, ", ");
        bmt_hist_print_json_stats(o, h);
        snprintf(buf, sizeof buf, ", \"errors\": %llu, \"bytes\": %llu, \"total_ns\": %llu}",
                 (unsigned long long)s->error_count, (unsigned long long)s->bytes,
                 (unsigned long long)h->sum);
        bmt_out_str(o, buf);
        return;
    }
    char t[5][32];
    bmt_an_duration_text(h->sum, t[0]);
    bmt_an_duration_text(bmt_hist_quantile(h, 0.5), t[1]);
    bmt_an_duration_text(bmt_hist_quantile(h, 0.9), t[2]);
    bmt_an_duration_text(bmt_hist_quantile(h, 0.99), t[3]);
    bmt_an_duration_text(h->max, t[4]);
    snprintf(buf, sizeof buf, "%8llu %7llu %12llu %12s %12s %12s %12s %12s  ",
             (unsigned long long)h->count, (unsigned long long)s->error_count,
             (unsigned long long)s->bytes, t[0], t[1], t[2], t[3], t[4]);
    bmt_out_str(o, buf);
    bmt_out_str(o, key);
    bmt_out_char(o, '\n');
}

static int print_table(struct bmt_out *o, const struct table *t, const char *title,
                       const char *key_name, uint64_t n, int json)
{
    uint32_t *ids;
    int64_t shown = by_total(t, &ids, n);
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

static void print_errors(struct bmt_out *o, const struct files *f, int json)
{
    char buf[64];
    bmt_out_str(o, json ? ", \"errors\": [" : "\nerrors\n");
    for (uint32_t i = 0; i < f->errnos.count; i++) {
        const char *s = bmt_strtab_str(&f->errnos, i);
        size_t len = bmt_strtab_len(&f->errnos, i);
        if (json) {
            bmt_out_str(o, i ? ", {\"error\": " : "{\"error\": ");
            bmt_an_json_string(o, s, len);
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
    struct files f;
    struct bmt_an_pass pass;
    memset(&f, 0, sizeof f);
    f.scope = &scope;
    bmt_strtab_init(&f.ops.keys);
    bmt_strtab_init(&f.paths.keys);
    bmt_strtab_init(&f.errnos);
    int status = BMT_EXIT_FAIL;
    bmt_an_reads(&scope, &bmt_fields_files);
    rc = bmt_an_run(&r, dir, &scope, files_feed, &f, &pass);
    struct bmt_out o;
    if (rc < 0) {
        status = bmt_an_fail("files", dir, &r, rc);
    } else if (bmt_an_out_open(&o, NULL) == 0) {
        char buf[128];
        if (json) {
            bmt_out_str(&o, "{\"trace\": ");
            bmt_an_json_string(&o, dir, strlen(dir));
            snprintf(buf, sizeof buf, ", \"operations\": %llu, ", (unsigned long long)f.op_count);
            bmt_out_str(&o, buf);
            bmt_an_json_scope(&o, &r, &scope, &pass);
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
    table_free(&f.ops);
    table_free(&f.paths);
    bmt_strtab_free(&f.errnos);
    free(f.errno_counts);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status;
}
