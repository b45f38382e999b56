/* A trace's metadata as the reader uses it: the trace class parsed from
 * CTF 1.8 TSDL (plain text, or LTTng's packetized metadata), with its
 * clocks, environment, stream classes and event classes, and the binding
 * of event classes to beamtrace's catalogue.
 *
 * Any layout the metadata declares is read: beamtrace's own (uint16 id +
 * uint64 timestamp headers today, LTTng's "large" header tomorrow), LTTng's
 * compact and large headers with their extended variants, stream and event
 * contexts, babeltrace2's rewritten traces (sink.ctf.fs), either byte
 * order. Events outside the catalogue are kept (`view` prints them); an
 * event named like a catalogue tracepoint binds when every catalogue field
 * is present with a compatible type (strings from string or text arrays,
 * integers from any integer of up to 64 bits). Pure function of its input;
 * everything is allocated in the metadata's arena.
 */
#ifndef BMT_CLI_METADATA_H
#define BMT_CLI_METADATA_H

#include "base/arena.h"
#include "core/catalogue.h"
#include "core/ctf.h"
#include "ctf_type.h"
#include "base/strtab.h"

struct bmt_decode_op;
struct bmt_header_plan;

#include <stddef.h>
#include <stdint.h>

#define BMT_META_ERROR_BYTES 512
#define BMT_TP_NONE 0xffffu  /* an event outside the catalogue */

struct bmt_ctf_event_class {
    const char *name;          /* "domain:name" as written */
    uint64_t id;
    uint64_t stream_id;
    struct bmt_ctf_type *context, *fields;  /* NULL when absent */
    uint32_t index;            /* dense index in bmt_meta.events */
    uint16_t tp;               /* catalogue id, or BMT_TP_NONE */
    uint32_t cat_slot[BMT_MAX_FIELDS];      /* value slot of each catalogue field */
    int cat_contiguous;        /* cat_slot[i] == cat_slot[0] + i: values read in place */
    const char *mismatch;      /* why a catalogue-like name did not bind, or NULL */
    const struct bmt_decode_op *body;  /* stream event context + context + fields, compiled */
};

struct bmt_ctf_stream_class {
    uint64_t id;
    struct bmt_ctf_type *packet_context, *event_header, *event_context;
    struct bmt_ctf_event_class **events;    /* this class's events */
    uint32_t event_count;
    struct bmt_ctf_event_class **by_id;     /* dense table when ids < dense_count */
    uint32_t dense_count;
    struct bmt_u64map sparse;               /* other ids -> index in events */
    uint32_t stream_slots;     /* slots used by the packet and stream scopes */
    uint32_t slot_count;       /* value slots a stream of this class needs */
    int32_t clock;             /* clock of event timestamps, or -1 */
    const struct bmt_decode_op *header; /* event header, compiled */
    const struct bmt_header_plan *fast_header; /* its plan (plan.h), or NULL: generic only */
};

struct bmt_meta {
    struct bmt_arena arena;
    uint8_t uuid[BMT_CTF_UUID_BYTES];
    int has_uuid;
    int big_endian;
    struct bmt_ctf_type *packet_header;     /* NULL when absent */
    uint32_t header_slots;     /* slots used by the packet header */
    struct bmt_ctf_clock *clocks;
    unsigned clock_count;
    struct bmt_ctf_env *env;
    unsigned env_count;
    const char *hostname, *procname;  /* env strings, or NULL */
    int has_vpid;
    int64_t vpid;
    int tracer_is_lttng;       /* env tracer_name starts with "lttng" */
    struct bmt_ctf_stream_class **streams;
    unsigned stream_count;
    struct bmt_ctf_event_class **events;
    unsigned event_count;
    unsigned catalogue_event_count;  /* events bound to the catalogue */
    const char *warning;       /* catalogue-named events that did not bind, or NULL */
};

/* Parses `len` bytes of metadata (plain TSDL starting with "/ * CTF 1.8",
 * or LTTng's packetized form) into `m`, which it initialises (free with
 * bmt_meta_free, also on failure). Returns 0, -EINVAL with a message
 * "<what is wrong>; <how to fix>" in `err` (BMT_META_ERROR_BYTES), or
 * -ENOMEM. */
int bmt_meta_parse(struct bmt_meta *m, const char *text, size_t len, char *err);

/* The stream class with id `id` (or the only one when `id` is absent:
 * has_id 0). NULL when there is none. */
const struct bmt_ctf_stream_class *bmt_meta_stream(const struct bmt_meta *m, int has_id,
                                                   uint64_t id);

/* The event class of stream class `sc` with id `id`, or NULL. */
static inline const struct bmt_ctf_event_class *
bmt_meta_event(const struct bmt_ctf_stream_class *sc, uint64_t id)
{
    if (id < sc->dense_count)
        return sc->by_id[id];
    uint32_t i = bmt_u64map_find(&sc->sparse, id);
    return i == UINT32_MAX ? NULL : sc->events[i];
}

/* Releases what bmt_meta_parse allocated. Safe on a zeroed struct. */
void bmt_meta_free(struct bmt_meta *m);

#endif
