/* Events per tracepoint (contract in tally.h). */
#include "tally.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fold_rows(const struct bmt_reader *r, struct bmt_tally *st, int scaled);

int bmt_tally_collect(struct bmt_reader *r, struct bmt_tally *st)
{
    memset(st, 0, sizeof *st);
    st->first_ns = UINT64_MAX;
    unsigned n = r->event_class_count + 1;
    st->counts = calloc(n, sizeof *st->counts);
    st->names = calloc(n, sizeof *st->names);
    st->row_counts = calloc(n, sizeof *st->row_counts);
    st->bits = calloc(n, sizeof *st->bits);
    st->row_bits = calloc(n, sizeof *st->row_bits);
    if (!st->counts || !st->names || !st->row_counts || !st->bits || !st->row_bits) {
        snprintf(r->error, sizeof r->error, "out of memory; free some memory");
        return -ENOMEM;
    }
    for (unsigned s = 0; s < r->stream_count; s++) {
        const struct bmt_record *rec;
        uint64_t first = UINT64_MAX, last = 0;
        int rc;
        uint32_t base = r->streams[s].trace->event_base;
        while ((rc = bmt_reader_stream_next(r, s, &rec)) == 1) {
            st->counts[base + rec->ec->index]++;
            st->bits[base + rec->ec->index] += rec->bits;
            if (rec->ts_ns < first)
                first = rec->ts_ns;
            if (rec->ts_ns > last)
                last = rec->ts_ns;
        }
        if (rc < 0)
            return rc;
        if (first < st->first_ns)
            st->first_ns = first;
        if (first != UINT64_MAX && last > st->last_ns)
            st->last_ns = last;
        st->discarded_count += r->streams[s].discarded_count;
        st->lost_packet_count += r->streams[s].lost_packet_count;
        st->packet_count += r->streams[s].packet_count;
    }
    return fold_rows(r, st, 0);
}

/* One row per event name (several traces may declare the same): the
 * counts, or (scaled) the scaled counts. */
static int fold_rows(const struct bmt_reader *r, struct bmt_tally *st, int scaled)
{
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        for (unsigned e = 0; e < m->event_count; e++) {
            unsigned k = r->traces[t].event_base + e;
            uint64_t c = scaled ? st->scaled[k] : st->counts[k];
            if (!c)
                continue;
            unsigned row = 0;
            while (row < st->row_count && strcmp(st->names[row], m->events[e]->name) != 0)
                row++;
            if (scaled) {
                if (row == st->row_count)
                    return -EINVAL; /* not the trace counted */
                st->row_scaled[row] += c;
                st->row_sampled[row] |= st->sampled[k];
                continue;
            }
            if (row == st->row_count)
                st->names[st->row_count++] = m->events[e]->name;
            st->row_counts[row] += c;
            st->row_bits[row] += st->bits[k];
            st->event_count += c;
        }
    }
    return 0;
}

int bmt_tally_is_sampled(const struct bmt_reader *r, const struct bmt_tally *st)
{
    for (unsigned i = 0; i < st->row_count; i++)
        if (bmt_catalogue_find(st->names[i]) == BMT_TP_sample_ratio)
            return 1;
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        for (unsigned i = 0; i < m->env_count; i++)
            if (!m->env[i].str && strncmp(m->env[i].key, "beamtrace_sample_", 17) == 0 &&
                m->env[i].integer > 1)
                return 1;
    }
    return 0;
}

/* A capture's metadata: the ratios in force where its window begins. */
static void env_ratios(const struct bmt_reader *r, struct bmt_sampled *sd)
{
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        for (unsigned i = 0; i < m->env_count; i++)
            if (!m->env[i].str && strncmp(m->env[i].key, "beamtrace_sample_", 17) == 0 &&
                m->env[i].integer > 1)
                bmt_sampled_set(sd, m->env[i].key + 17, strlen(m->env[i].key + 17),
                                (uint64_t)m->env[i].integer, sd->begin_ns);
    }
}

int bmt_tally_scale(struct bmt_reader *r, const char *const *paths, unsigned count,
                    struct bmt_tally *st)
{
    struct bmt_field_set want = {{0}};
    want.tp[BMT_TP_sample_ratio] = 1u << BMT_F_sample_ratio_kind | 1u << BMT_F_sample_ratio_ratio;
    int rc = bmt_reader_open_quiet(r, paths, count);
    if (rc < 0 || (rc = bmt_reader_select(r, &want)) < 0)
        return rc;
    unsigned n = r->event_class_count + 1;
    st->scaled = calloc(n, sizeof *st->scaled);
    st->sampled = calloc(n, sizeof *st->sampled);
    st->row_scaled = calloc(st->row_count + 1, sizeof *st->row_scaled);
    st->row_sampled = calloc(st->row_count + 1, sizeof *st->row_sampled);
    if (!st->scaled || !st->sampled || !st->row_scaled || !st->row_sampled) {
        snprintf(r->error, sizeof r->error, "out of memory; free some memory");
        return -ENOMEM;
    }
    bmt_sampled_reset(&st->ratios, st->first_ns);
    env_ratios(r, &st->ratios);
    const struct bmt_record *rec;
    while ((rc = bmt_reader_next(r, &rec)) == 1) {
        if (rec->tp == BMT_TP_sample_ratio)
            bmt_sampled_set(&st->ratios, rec->values[BMT_F_sample_ratio_kind].str,
                            rec->values[BMT_F_sample_ratio_kind].len,
                            rec->values[BMT_F_sample_ratio_ratio].integer, rec->ts_ns);
        uint32_t w = rec->tp < BMT_TP_COUNT ? st->ratios.weight[rec->tp] : 1;
        unsigned k = r->traces[rec->trace].event_base + rec->ec->index;
        st->scaled[k] += w;
        st->sampled[k] |= w > 1;
    }
    if (rc < 0)
        return rc;
    if ((rc = fold_rows(r, st, 1)) < 0)
        snprintf(r->error, sizeof r->error, "the trace changed while it was read; read it again");
    return rc;
}

void bmt_tally_free(struct bmt_tally *st)
{
    free(st->counts);
    free(st->names);
    free(st->row_counts);
    free(st->bits);
    free(st->row_bits);
    free(st->scaled);
    free(st->row_scaled);
    free(st->sampled);
    free(st->row_sampled);
}
