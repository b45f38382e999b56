/* Events per tracepoint (contract in tally.h). */
#include "tally.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* One row per event name (several traces may declare the same). */
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        for (unsigned e = 0; e < m->event_count; e++) {
            uint64_t c = st->counts[r->traces[t].event_base + e];
            if (!c)
                continue;
            unsigned row = 0;
            while (row < st->row_count && strcmp(st->names[row], m->events[e]->name) != 0)
                row++;
            if (row == st->row_count)
                st->names[st->row_count++] = m->events[e]->name;
            st->row_counts[row] += c;
            st->row_bits[row] += st->bits[r->traces[t].event_base + e];
            st->event_count += c;
        }
    }
    return 0;
}

void bmt_tally_free(struct bmt_tally *st)
{
    free(st->counts);
    free(st->names);
    free(st->row_counts);
    free(st->bits);
    free(st->row_bits);
}
