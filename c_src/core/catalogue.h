/* The tracepoint catalogue as C data, expanded from catalogue.def.
 *
 * Everything that names a tracepoint or a field (the recorder's encoder, the
 * CTF metadata, the viewer, `beamtrace list`, the docs table) reads these
 * tables; nothing else spells a tracepoint name. Pure C: no erl_nif.h, shared
 * by the NIF and the CLI. Immutable after compile time, so safe from any
 * thread.
 */
#ifndef BMT_CATALOGUE_H
#define BMT_CATALOGUE_H

#include <stddef.h>
#include <stdint.h>

/* Field storage types, as recorded in CTF. */
enum bmt_field_type {
    BMT_FIELD_STRING, /* NUL-terminated bytes */
    BMT_FIELD_U32,
    BMT_FIELD_U64,
    BMT_FIELD_S64, /* two's complement, stored in bmt_value.integer */
};

/* What a string field holds; decides its size bound. */
enum bmt_field_kind {
    BMT_KIND_ID,   /* pid or port: never cut */
    BMT_KIND_MFA,  /* m:f/a or a callback atom */
    BMT_KIND_TERM, /* printed term, up to BMT_TERM_MAX_BYTES */
    BMT_KIND_MSG,  /* printed message, bounded by the session's message_length */
    BMT_KIND_WORD, /* a short fixed word */
    BMT_KIND_USER, /* a user probe's string or tag, up to BMT_USER_MAX_BYTES */
    BMT_KIND_INT,  /* integer fields */
};

/* Largest visible length of each bounded string kind, in bytes (NUL not
 * included). IDs: the longest pid or port the VM prints is well under this.
 * MFA: two quoted 255-character atoms would exceed it; they are truncated. */
#define BMT_ID_MAX_BYTES 47
#define BMT_MFA_MAX_BYTES 511
#define BMT_WORD_MAX_BYTES 15
/* Printed terms other than messages (reasons, names, drivers): OTP's
 * LTTng buffers held 256 bytes with the NUL. */
#define BMT_TERM_MAX_BYTES 255
/* User probe strings and tags: OTP rejected (probes) or dropped (tags)
 * anything longer than 1024 bytes. */
#define BMT_USER_MAX_BYTES 1024
/* Upper bound accepted for the message_length option, in bytes. */
#define BMT_MSG_MAX_BYTES 16384

#define BMT_MAX_FIELDS 12

struct bmt_field {
    const char *name;
    enum bmt_field_type type;
    enum bmt_field_kind kind;
    const char *doc;
};

struct bmt_tracepoint {
    const char *domain;    /* LTTng provider name, e.g. "org_erlang_dyntrace" */
    const char *name;      /* event name inside the domain, e.g. "process_spawn" */
    const char *full_name; /* "domain:name", as LTTng and babeltrace2 print it */
    const char *flag;      /* erlang:trace/3 flag that produces it */
    const char *summary;
    unsigned field_count;
    const struct bmt_field *fields;
};

/* Event ids: row order of catalogue.def. */
enum bmt_tracepoint_id {
#define TRACEPOINT(domain, name, flag, summary, fields) BMT_TP_##name,
#include "catalogue.def"
#undef TRACEPOINT
    BMT_TP_COUNT
};

/* Field positions by name (generated: tools/gen_catalogue.c), except while
 * generating them. */
#ifndef BMT_GENERATING_CATALOGUE
#include "catalogue_fields.h"
#endif

/* Enable masks are one uint64_t: one bit per tracepoint. */
_Static_assert(BMT_TP_COUNT <= 64, "enable masks hold 64 tracepoints");

extern const struct bmt_tracepoint bmt_catalogue[BMT_TP_COUNT];

/* Largest encoded size of an event of tracepoint `tp`, in bytes, when its
 * message fields (kind MSG) hold at most `message_bytes` bytes. */
size_t bmt_event_max_bytes(int tp, size_t message_bytes);

/* Returns the id of the tracepoint whose full name is `full_name`, or -1. */
int bmt_catalogue_find(const char *full_name);

/* Sets bit i of *mask for every tracepoint i whose full name matches the
 * LTTng-style pattern (a '*' matches any run of characters, anywhere).
 * Returns the number of tracepoints matched (0 means the pattern matched
 * nothing: a caller mistake worth reporting). */
int bmt_catalogue_match(const char *pattern, uint64_t *mask);

/* Returns 1 when `text` matches the glob `pattern` ('*' only), 0 otherwise. */
int bmt_glob_match(const char *pattern, const char *text);

#endif
