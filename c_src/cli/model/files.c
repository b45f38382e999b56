/* The files analysis (contract in files.h). */
#include "files.h"
#include "layouts.h"
#include "run.h"
#include "acc.h"
#include "core/catalogue_fields.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct bmt_fstat_io *row(struct bmt_io_table *t, const char *s, size_t len)
{
    int64_t id = bmt_strtab_intern(&t->keys, s, len);
    if (id < 0)
        return NULL;
    /* Zeroed rows: an empty histogram is all zeroes (histogram.h). */
    struct bmt_fstat_io *rows = bmt_grow(t->rows, &t->cap, (uint32_t)id, sizeof *rows);
    if (!rows)
        return NULL;
    t->rows = rows;
    return &t->rows[id];
}

static void table_free(struct bmt_io_table *t)
{
    for (uint32_t i = 0; i < t->cap; i++)
        bmt_hist_free(&t->rows[i].hist);
    free(t->rows);
    bmt_strtab_free(&t->keys);
}

static int add(struct bmt_fstat_io *s, uint64_t latency_ns, uint64_t bytes, int error)
{
    if (!s)
        return -ENOMEM;
    s->bytes += bytes;
    s->error_count += (uint64_t)error;
    return bmt_hist_add(&s->hist, latency_ns);
}

static int count_errno(struct bmt_files *f, const char *s, size_t len)
{
    int64_t id = bmt_strtab_intern(&f->errnos, s, len);
    if (id < 0)
        return (int)id;
    uint64_t *counts = bmt_grow(f->errno_counts, &f->errno_cap, (uint32_t)id, sizeof *counts);
    if (!counts)
        return -ENOMEM;
    f->errno_counts = counts;
    f->errno_counts[id]++;
    return 0;
}

int bmt_files_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_files *f = ctx;
    const struct bmt_an_scope *sc = f->scope;
    const struct bmt_value *v = rec->values;
    if (rec->tp == BMT_TP_file_info) {
        const struct bmt_value *fp = &v[BMT_F_file_info_path];
        return fp->len && bmt_strtab_intern(&f->open_before, fp->str, fp->len) < 0 ? -ENOMEM : 0;
    }
    if (rec->tp != BMT_TP_file_op)
        return 0;
    const struct bmt_value *pid = &v[BMT_F_file_op_pid], *op = &v[BMT_F_file_op_op],
                           *path = &v[BMT_F_file_op_path], *res = &v[BMT_F_file_op_result],
                           *err = &v[BMT_F_file_op_error];
    if (!bmt_an_valid(sc, rec->ts_ns) || !bmt_an_inside(sc, rec->ts_ns, rec->ts_ns) ||
        !bmt_an_keep(sc, pid->str, pid->len))
        return 0;
    uint64_t lat = v[BMT_F_file_op_latency_ns].integer, bytes = v[BMT_F_file_op_bytes].integer;
    int error = bmt_value_is(res, "error");
    f->op_count++;
    int rc = add(row(&f->ops, op->str, op->len), lat, bytes, error);
    if (rc == 0 && path->len)
        rc = add(row(&f->paths, path->str, path->len), lat, bytes, error);
    f->pathless_count += !path->len;
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

int64_t bmt_files_by_total(const struct bmt_io_table *t, uint32_t **out, uint64_t n)
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

int bmt_files_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_files *f = self;
    memset(f, 0, sizeof *f);
    f->scope = scope;
    bmt_strtab_init(&f->ops.keys);
    bmt_strtab_init(&f->paths.keys);
    bmt_strtab_init(&f->errnos);
    bmt_strtab_init(&f->open_before);
    return 0;
}

void bmt_files_free(void *self)
{
    struct bmt_files *f = self;
    table_free(&f->ops);
    table_free(&f->paths);
    bmt_strtab_free(&f->errnos);
    bmt_strtab_free(&f->open_before);
    free(f->errno_counts);
}

/* ---- as an accumulator (acc.h) ---- */

static const struct bmt_needs needs = {{
    BMT_NEED(file_op, BMT_FIELD(file_op, pid) | BMT_FIELD(file_op, op) | BMT_FIELD(file_op, path) |
                          BMT_FIELD(file_op, bytes) | BMT_FIELD(file_op, result) |
                          BMT_FIELD(file_op, error) | BMT_FIELD(file_op, latency_ns)),
    BMT_NEED(file_info, BMT_FIELD(file_info, path)),
}, 0};

const struct bmt_acc bmt_files_acc = {
    "files", bmt_files_init, bmt_files_feed, NULL, NULL, bmt_files_free, &needs,
    BMT_SCALES_NOTHING};
