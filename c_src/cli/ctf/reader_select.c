/* Field selection: the compiled decoder of every event class for the
 * fields a caller reads (contract in reader.h, plans in plan.h).
 *
 * Compiled once per reader, after the metadata is parsed and before any
 * event is read: a handful of event classes per trace (the catalogue's
 * rows for a beamtrace trace), each a few operations, in one arena.
 */
#include "reader.h"
#include "plan.h"
#include "reader_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* BEAMTRACE_READER=generic: the reader as without a selection (every field
 * of every event through the type-tree walk), for comparing the compiled
 * decoders and the field sets against it. */
static int compiled_decoders_off(void)
{
    const char *e = getenv("BEAMTRACE_READER");
    return e && strcmp(e, "generic") == 0;
}

int bmt_reader_select(struct bmt_reader *r, const struct bmt_field_set *want)
{
    if (r->merge_started)
        return bmt_reader_fail(r, -EBUSY, "internal error: fields selected after events were read");
    for (unsigned i = 0; i < r->stream_count; i++)
        if (r->streams[i].packet_count)
            return bmt_reader_fail(r, -EBUSY, "internal error: fields selected after events were read");
    if (compiled_decoders_off())
        return 0;                   /* every field, as without a selection */
    r->want = *want;
    if (r->cluster)
        r->want.tp[BMT_TP_node_info] = BMT_FIELDS_ALL; /* node tables (nodes.h) */
    r->selected = 1;
    bmt_arena_free(&r->plan_arena);
    bmt_arena_init(&r->plan_arena);
    struct bmt_arena *a = &r->plan_arena;
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        const struct bmt_fast_event **fast = bmt_arena_alloc(a, (m->stream_count + 1) * sizeof *fast);
        if (!fast)
            return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
        for (unsigned k = 0; k < m->stream_count; k++) {
            const struct bmt_ctf_stream_class *sc = m->streams[k];
            if (!sc->fast_header || !sc->dense_count)
                continue;
            struct bmt_fast_event *by_id = bmt_arena_alloc(a, sc->dense_count * sizeof *by_id);
            if (!by_id)
                return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
            for (uint32_t e = 0; e < sc->event_count; e++) {
                const struct bmt_ctf_event_class *ec = sc->events[e];
                if (ec->id >= sc->dense_count)
                    continue;               /* a sparse id: the type-tree walk */
                const struct bmt_ctf_type *roots[3] = {sc->event_context, ec->context, ec->fields};
                int bound = ec->tp != BMT_TP_NONE;
                by_id[ec->id].ec = ec;
                if (bmt_plan_body(a, roots, ec->cat_slot, bound ? bmt_catalogue[ec->tp].field_count : 0,
                                  bound ? r->want.tp[ec->tp] : 0, &by_id[ec->id].plan) < 0)
                    return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
            }
            fast[k] = by_id;
        }
        r->traces[t].fast = fast;
    }
    r->compiled = 1;
    return 0;
}
