/* Latency split by value (contract in groupby.h). */
#include "groupby.h"
#include "callstack.h"
#include "ctf/reader.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_groupby_init(struct bmt_groupby *g, unsigned arg)
{
    memset(g, 0, sizeof *g);
    g->arg = arg;
    bmt_strtab_init(&g->values);
    bmt_u64map_init(&g->index);
    int64_t exc = bmt_strtab_intern(&g->values, "(exception)", 11);
    int64_t none = bmt_strtab_intern(&g->values, "(none)", 6);
    if (exc < 0 || none < 0)
        return -ENOMEM;
    g->exception_value = (uint32_t)exc;
    g->none_value = (uint32_t)none;
    return 0;
}

/* Skips a quoted atom or string starting at list[i] (its quote `q`):
 * returns the index past its closing quote, or len when cut. */
static size_t skip_quoted(const char *list, size_t len, size_t i, char q)
{
    for (i++; i < len; i++) {
        if (list[i] == '\\')
            i++;
        else if (list[i] == q)
            return i + 1;
    }
    return len;
}

int bmt_groupby_arg(const char *list, size_t len, unsigned n, size_t *at, size_t *alen)
{
    if (n == 0 || len < 2 || list[0] != '[')
        return -1;
    unsigned index = 1, depth = 0;
    size_t start = 1;
    for (size_t i = 1; i < len;) {
        char ch = list[i];
        if (ch == '"' || ch == '\'') {
            i = skip_quoted(list, len, i, ch);
            continue;
        }
        if (ch == '[' || ch == '{' || (ch == '<' && i + 1 < len && list[i + 1] == '<'))
            depth++;
        else if ((ch == '}' || (ch == '>' && i + 1 < len && list[i + 1] == '>')) && depth)
            depth--;
        else if (ch == ']' && depth)
            depth--;
        else if (depth == 0 && (ch == ',' || ch == ']')) {
            if (index == n && i > start) {
                *at = start;
                *alen = i - start;
                return 0;
            }
            if (ch == ']')
                return -1; /* fewer arguments */
            index++;
            start = i + 1;
        }
        i += (ch == '<' || ch == '>') && i + 1 < len && list[i + 1] == ch ? 2 : 1;
    }
    return -1; /* cut before the end of argument n */
}

int64_t bmt_groupby_value(struct bmt_groupby *g, const char *text, size_t len)
{
    size_t at = 0;
    if (g->arg && bmt_groupby_arg(text, len, g->arg, &at, &len) < 0)
        return g->none_value;
    text += at;
    if (len <= BMT_GROUP_VALUE_BYTES)
        return bmt_strtab_intern(&g->values, text, len);
    char cut[BMT_GROUP_VALUE_BYTES + 4];
    memcpy(cut, text, BMT_GROUP_VALUE_BYTES);
    memcpy(cut + BMT_GROUP_VALUE_BYTES, "...", 3);
    return bmt_strtab_intern(&g->values, cut, BMT_GROUP_VALUE_BYTES + 3);
}

/* The row of (func, value), made if new: the value's own while the
 * function has fewer than BMT_GROUP_MAX_VALUES, else its "other" row. */
static int64_t row_of(struct bmt_groupby *g, uint32_t func, uint32_t value)
{
    uint32_t i = bmt_u64map_find(&g->index, (uint64_t)func << 32 | value);
    if (i != BMT_CS_NONE)
        return i;
    uint32_t *distinct = bmt_grow(g->distinct, &g->distinct_cap, func, sizeof *distinct);
    if (!distinct)
        return -ENOMEM;
    g->distinct = distinct;
    if (distinct[func] >= BMT_GROUP_MAX_VALUES)
        value = BMT_GROUP_OTHER;
    int created;
    uint32_t *slot = bmt_u64map_get(&g->index, (uint64_t)func << 32 | value, g->row_count, &created);
    if (!slot)
        return -ENOMEM;
    if (!created)
        return *slot;
    struct bmt_group_row *rows = bmt_grow(g->rows, &g->row_cap, g->row_count, sizeof *rows);
    if (!rows)
        return -ENOMEM;
    g->rows = rows;
    struct bmt_group_row *r = &rows[g->row_count];
    r->func = func;
    r->value = value;
    r->count = 0;
    bmt_hist_init(&r->hist);
    if (value != BMT_GROUP_OTHER)
        distinct[func]++;
    return g->row_count++;
}

int bmt_groupby_add(struct bmt_groupby *g, uint32_t func, uint32_t value, uint64_t duration_ns,
                    uint32_t weight)
{
    int64_t i = row_of(g, func, value == BMT_CS_NONE ? g->none_value : value);
    if (i < 0)
        return (int)i;
    g->rows[i].count += weight > 1 ? weight : 1;
    return bmt_hist_add(&g->rows[i].hist, duration_ns);
}

const char *bmt_groupby_value_text(const struct bmt_groupby *g, const struct bmt_group_row *r)
{
    return r->value == BMT_GROUP_OTHER ? "other" : bmt_strtab_str(&g->values, r->value);
}

static const struct bmt_groupby *sort_g;
static const struct bmt_strtab *sort_funcs;

static int by_func_count(const void *a, const void *b)
{
    const struct bmt_group_row *x = &sort_g->rows[*(const uint32_t *)a];
    const struct bmt_group_row *y = &sort_g->rows[*(const uint32_t *)b];
    int d = strcmp(bmt_strtab_str(sort_funcs, x->func), bmt_strtab_str(sort_funcs, y->func));
    if (d)
        return d;
    if ((x->value == BMT_GROUP_OTHER) != (y->value == BMT_GROUP_OTHER))
        return x->value == BMT_GROUP_OTHER ? 1 : -1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(bmt_groupby_value_text(sort_g, x), bmt_groupby_value_text(sort_g, y));
}

uint32_t *bmt_groupby_sorted(const struct bmt_groupby *g, const struct bmt_strtab *funcs)
{
    uint32_t *order = malloc((g->row_count + 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t i = 0; i < g->row_count; i++)
        order[i] = i;
    sort_g = g;
    sort_funcs = funcs;
    qsort(order, g->row_count, sizeof *order, by_func_count);
    return order;
}

void bmt_groupby_free(struct bmt_groupby *g)
{
    for (uint32_t i = 0; i < g->row_count; i++)
        bmt_hist_free(&g->rows[i].hist);
    free(g->rows);
    free(g->distinct);
    bmt_u64map_free(&g->index);
    bmt_strtab_free(&g->values);
    memset(g, 0, sizeof *g);
}

/* ---- as an accumulator (acc.h) ---- */

int bmt_groupby_acc_init(void *self, struct bmt_an_scope *scope)
{
    (void)self, (void)scope;
    return 0; /* made by bmt_groupby_init, which knows the argument */
}

static int feed(void *self, const struct bmt_record *rec)
{
    struct bmt_groupby *g = self;
    const struct bmt_value *v;
    if (rec->tp == BMT_TP_function_result && !g->arg)
        v = &rec->values[BMT_F_function_result_result];
    else if (rec->tp == BMT_TP_function_call_args && g->arg)
        v = &rec->values[BMT_F_function_call_args_args];
    else
        return 0;
    g->value_events++;
    int64_t id = bmt_groupby_value(g, v->str ? v->str : "", v->str ? v->len : 0);
    if (id < 0)
        return (int)id;
    if (g->pending)
        *g->pending = (uint32_t)id;
    return 0;
}

static void acc_free(void *self)
{
    (void)self; /* freed by its owner, after printing */
}

static const struct bmt_needs needs = {{
    BMT_NEED(function_result, BMT_FIELD(function_result, result)),
    BMT_NEED(function_call_args, BMT_FIELD(function_call_args, args)),
}, 0};

const struct bmt_acc bmt_groupby_acc = {
    "groupby", bmt_groupby_acc_init, feed, NULL, NULL, acc_free, &needs,
    BMT_SCALES /* each row's count, by the call ratio in force (bmt_groupby_add) */};
