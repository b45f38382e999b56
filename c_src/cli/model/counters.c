/* The report's counter charts (contract in counters.h). */
#include "counters.h"
#include "run.h"
#include "acc.h"
#include "core/catalogue_fields.h"
#include "ctf/reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bmt_counters_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_counters *c = self;
    memset(c, 0, sizeof *c);
    c->scope = scope;
    c->col_ns = 1000;
    bmt_strtab_init(&c->keys);
    return 0;
}

static void merge(struct bmt_counter_col *into, const struct bmt_counter_col *a,
                  const struct bmt_counter_col *b)
{
    struct bmt_counter_col m = {a->sum + b->sum, a->max, a->n + b->n};
    if (!a->n || (b->n && b->max > a->max))
        m.max = b->max;
    *into = m;
}

/* Widens the columns until `ts` falls in one. */
static void fit(struct bmt_counters *c, uint64_t ts)
{
    while ((ts - c->t0_ns) / c->col_ns >= COUNTER_COLS) {
        for (uint32_t k = 0; k < c->chart_count; k++) {
            struct bmt_counter_chart *ch = c->charts[k];
            for (uint32_t i = 0; i < ch->series_count; i++) {
                struct bmt_counter_col *col = ch->series[i]->cols;
                for (unsigned j = 0; j < COUNTER_COLS / 2; j++)
                    merge(&col[j], &col[2 * j], &col[2 * j + 1]);
                memset(col + COUNTER_COLS / 2, 0, COUNTER_COLS / 2 * sizeof *col);
            }
        }
        c->col_ns *= 2;
    }
}

/* The chart of (trace, counter, unit), made on first use; NULL when
 * COUNTER_CHARTS are taken. Sets *oom on allocation failure. */
static struct bmt_counter_chart *chart(struct bmt_counters *c, unsigned trace,
                                       const struct bmt_value *counter,
                                       const struct bmt_value *unit, int *oom)
{
    char key[BMT_TERM_MAX_BYTES + BMT_WORD_MAX_BYTES + 16];
    int n = snprintf(key, sizeof key, "%u %.*s %.*s", trace, (int)counter->len, counter->str,
                     (int)unit->len, unit->str);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof key ? (size_t)n : sizeof key - 1;
    int64_t id = bmt_strtab_find(&c->keys, key, len);
    if (id >= 0)
        return c->charts[id];
    if (c->chart_count == COUNTER_CHARTS)
        return NULL;
    struct bmt_counter_chart *ch = calloc(1, sizeof *ch);
    if (!ch || bmt_strtab_intern(&c->keys, key, len) != (int64_t)c->chart_count) {
        free(ch);
        *oom = 1;
        return NULL;
    }
    ch->trace = trace;
    snprintf(ch->counter, sizeof ch->counter, "%.*s", (int)counter->len, counter->str);
    snprintf(ch->unit, sizeof ch->unit, "%.*s", (int)unit->len, unit->str);
    ch->peak_mode = strcmp(ch->unit, "count") == 0 || strcmp(ch->unit, "messages") == 0;
    bmt_strtab_init(&ch->instances);
    c->charts[c->chart_count++] = ch;
    return ch;
}

/* The series of `instance` in `ch`, made on first use; NULL when
 * COUNTER_SERIES are taken. Sets *oom on allocation failure. */
static struct bmt_counter_series *series(struct bmt_counter_chart *ch,
                                         const struct bmt_value *instance, int *oom)
{
    int64_t id = bmt_strtab_find(&ch->instances, instance->str, instance->len);
    if (id >= 0)
        return ch->series[id];
    if (ch->series_count == COUNTER_SERIES)
        return NULL;
    struct bmt_counter_series *s = calloc(1, sizeof *s);
    if (!s ||
        bmt_strtab_intern(&ch->instances, instance->str, instance->len) != ch->series_count) {
        free(s);
        *oom = 1;
        return NULL;
    }
    s->name = ch->series_count;
    ch->series[ch->series_count++] = s;
    return s;
}

int bmt_counters_feed(void *self, const struct bmt_record *rec)
{
    struct bmt_counters *c = self;
    if (rec->tp != BMT_TP_counter)
        return 0;
    const struct bmt_an_scope *sc = c->scope;
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    if (ts < sc->window.begin_ns || ts > sc->window.end_ns)
        return 0;
    if (!c->started) {
        c->started = 1;
        c->t0_ns = sc->window.begin_ns > sc->first_ns ? sc->window.begin_ns : sc->first_ns;
    }
    if (ts < c->t0_ns)
        return 0;
    int oom = 0;
    struct bmt_counter_chart *ch =
        chart(c, rec->trace, &v[BMT_F_counter_counter], &v[BMT_F_counter_unit], &oom);
    if (oom)
        return -ENOMEM;
    c->sample_count++;
    if (!ch) {
        c->unkept_samples++;
        return 0;
    }
    struct bmt_counter_series *s = series(ch, &v[BMT_F_counter_instance], &oom);
    if (oom)
        return -ENOMEM;
    if (!s) {
        ch->unkept_samples++;
        return 0;
    }
    fit(c, ts);
    int64_t value = v[BMT_F_counter_value].integer;
    struct bmt_counter_col *col = &s->cols[(ts - c->t0_ns) / c->col_ns];
    if (!col->n || value > col->max)
        col->max = value;
    col->sum += (double)value;
    col->n++;
    if (!s->n || value > s->peak)
        s->peak = value;
    s->sum += (double)value;
    s->n++;
    return 0;
}

static const struct bmt_counter_chart *sort_chart;

static int by_peak_desc(const void *a, const void *b)
{
    const struct bmt_counter_series *x = sort_chart->series[*(const uint32_t *)a];
    const struct bmt_counter_series *y = sort_chart->series[*(const uint32_t *)b];
    if (x->peak != y->peak)
        return x->peak > y->peak ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

uint32_t bmt_counters_drawn(const struct bmt_counter_chart *ch, uint32_t out[COUNTER_LINES])
{
    uint32_t order[COUNTER_SERIES], n = 0;
    for (uint32_t i = 0; i < ch->series_count; i++)
        order[i] = i;
    sort_chart = ch;
    qsort(order, ch->series_count, sizeof *order, by_peak_desc);
    int64_t total = bmt_strtab_find(&ch->instances, "total", 5);
    if (total >= 0)
        out[n++] = (uint32_t)total;
    for (uint32_t i = 0; i < ch->series_count && n < COUNTER_LINES; i++)
        if ((int64_t)order[i] != total)
            out[n++] = order[i];
    return n;
}

void bmt_counters_free(void *self)
{
    struct bmt_counters *c = self;
    for (uint32_t k = 0; k < c->chart_count; k++) {
        for (uint32_t i = 0; i < c->charts[k]->series_count; i++)
            free(c->charts[k]->series[i]);
        bmt_strtab_free(&c->charts[k]->instances);
        free(c->charts[k]);
    }
    bmt_strtab_free(&c->keys);
    memset(c, 0, sizeof *c);
}

/* ---- as an accumulator (acc.h) ---- */

static const struct bmt_needs needs = {{
    BMT_NEED(counter, BMT_FIELD(counter, counter) | BMT_FIELD(counter, instance) |
                          BMT_FIELD(counter, value) | BMT_FIELD(counter, unit)),
}, 0};

const struct bmt_acc bmt_counters_acc = {
    "counters", bmt_counters_init, bmt_counters_feed, NULL, NULL, bmt_counters_free, &needs,
    BMT_SCALES_NOTHING};
