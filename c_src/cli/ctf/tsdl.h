/* The TSDL parser: what a metadata text declares (trace, env, clocks,
 * streams, events, with their types), before metadata.c turns it into
 * finished stream and event classes.
 *
 * The grammar covered is CTF 1.8's as LTTng, babeltrace2's sink.ctf.fs and
 * beamtrace write it: typealias/typedef, named and anonymous struct, enum
 * and variant declarations, integer/floating_point/string specifiers with
 * their attributes, arrays and sequences (possibly nested), `align(N)`, and
 * the trace/env/clock/stream/event/callsite blocks (unknown attributes and
 * blocks are skipped). Everything lives in the caller's arena.
 */
#ifndef BMT_CLI_TSDL_H
#define BMT_CLI_TSDL_H

#include "base/arena.h"
#include "core/ctf.h"
#include "ctf_type.h"

#include <stddef.h>
#include <stdint.h>

struct bmt_tsdl_stream {
    uint64_t id;
    int has_id;
    struct bmt_ctf_type *packet_context, *event_header, *event_context; /* NULL if absent */
    struct bmt_tsdl_stream *next;
};

struct bmt_tsdl_event {
    const char *name;          /* NULL if absent */
    uint64_t id, stream_id;
    int has_id, has_stream_id;
    struct bmt_ctf_type *context, *fields;
    struct bmt_tsdl_event *next;
};

struct bmt_tsdl_clock {
    struct bmt_ctf_clock clock;
    struct bmt_tsdl_clock *next;
};

struct bmt_tsdl_env {
    struct bmt_ctf_env env;
    struct bmt_tsdl_env *next;
};

struct bmt_tsdl {
    int has_trace, has_byte_order, big_endian, has_uuid;
    uint8_t uuid[BMT_CTF_UUID_BYTES];
    uint64_t major, minor;
    struct bmt_ctf_type *packet_header;
    struct bmt_tsdl_stream *streams;   /* in declaration order */
    struct bmt_tsdl_event *events;
    struct bmt_tsdl_clock *clocks;
    struct bmt_tsdl_env *env;
};

/* Parses `len` bytes of TSDL text into `out` (zeroed by the caller),
 * allocating in `a`. Returns 0, -EINVAL with "<where>: <what>" in `err`
 * (`err_bytes`), or -ENOMEM. */
int bmt_tsdl_parse(struct bmt_arena *a, const char *text, size_t len, struct bmt_tsdl *out,
                   char *err, size_t err_bytes);

#endif
