/* The CTF 1.8 type model: what the TSDL parser builds, the decoder walks
 * and the babeltrace2-style printer prints.
 *
 * A type is a tree of nodes. The parser builds declarations (aliases,
 * named structs); placing one in a dynamic scope (packet header, event
 * payload, ...) deep-copies it, so every node of a scope tree is unique and
 * can carry what the decoder needs of that place: its value slot, its
 * resolved byte order and alignment, the node a sequence length or variant
 * tag refers to, its babeltrace2 "meaning" (magic, event id, packet size,
 * ...) and whether babeltrace2 shows it. Nodes live in the metadata's
 * arena. Immutable once bmt_ctf_finish_scope has run.
 */
#ifndef BMT_CLI_CTF_TYPE_H
#define BMT_CLI_CTF_TYPE_H

#include "base/arena.h"

#include <stdint.h>

enum bmt_ctf_kind {
    BMT_CTF_INT,
    BMT_CTF_ENUM,      /* an integer with labelled ranges */
    BMT_CTF_FLOAT,
    BMT_CTF_STRING,    /* NUL-terminated bytes */
    BMT_CTF_STRUCT,
    BMT_CTF_ARRAY,     /* fixed length */
    BMT_CTF_SEQUENCE,  /* length read from an earlier integer field */
    BMT_CTF_VARIANT,   /* option chosen by an earlier enumeration field */
};

enum bmt_ctf_byte_order { BMT_CTF_NATIVE, BMT_CTF_LE, BMT_CTF_BE };

/* babeltrace2's field meanings (by name, in the scopes where they apply):
 * the reader acts on them and babeltrace2 does not print them. */
enum bmt_ctf_meaning {
    BMT_M_NONE,
    BMT_M_MAGIC,               /* trace.packet.header magic */
    BMT_M_UUID,                /* trace.packet.header uuid (16 bytes) */
    BMT_M_STREAM_ID,           /* trace.packet.header stream_id */
    BMT_M_STREAM_INSTANCE_ID,  /* trace.packet.header stream_instance_id */
    BMT_M_TS_BEGIN,            /* stream.packet.context timestamp_begin */
    BMT_M_TS_END,              /* stream.packet.context timestamp_end */
    BMT_M_CONTENT_SIZE,        /* stream.packet.context content_size, bits */
    BMT_M_PACKET_SIZE,         /* stream.packet.context packet_size, bits */
    BMT_M_DISCARDED,           /* stream.packet.context events_discarded */
    BMT_M_SEQ_NUM,             /* stream.packet.context packet_seq_num */
    BMT_M_EVENT_ID,            /* stream.event.header id (any depth: the last one read wins) */
    BMT_M_COUNT
};

struct bmt_ctf_type;

struct bmt_ctf_member {
    const char *name;          /* without the leading '_' CTF readers strip */
    uint32_t name_len;         /* strlen(name): printers run per event */
    struct bmt_ctf_type *type;
};

struct bmt_ctf_range {
    const char *label;
    uint64_t lo, hi;           /* inclusive; signed enums compare as int64_t */
};

struct bmt_ctf_type {
    uint8_t kind;              /* enum bmt_ctf_kind */
    uint8_t is_signed;         /* int, enum */
    uint8_t byte_order;        /* enum bmt_ctf_byte_order; resolved in scopes */
    uint8_t base;              /* int, enum: 2, 8, 10 or 16 */
    uint8_t is_text;           /* int: 8-bit with an encoding; array, sequence: of text */
    uint8_t meaning;           /* enum bmt_ctf_meaning */
    uint8_t in_ir;             /* babeltrace2 prints it */
    uint8_t has_align;         /* align was written (struct: align(N)) */
    uint8_t needed;            /* a printed sequence or variant reads it */
    uint32_t align_bits;       /* resolved alignment, bits (power of two) */
    uint32_t size_bits;        /* int, enum, float */
    uint32_t mant_dig;         /* float: mantissa digits (24 or 53) */
    int32_t clock;             /* int, enum: index of the mapped clock, or -1 */
    const char *clock_name;    /* as written in `map = clock.NAME.value`, until resolved */
    uint32_t slot;             /* index of this node's value in the stream's value array */
    struct bmt_ctf_type *container;  /* enum: the integer type (parse time only) */
    struct bmt_ctf_range *ranges;    /* enum */
    uint32_t range_count;
    struct bmt_ctf_member *members;  /* struct, variant */
    uint32_t member_count;
    struct bmt_ctf_type *elem;       /* array, sequence */
    uint64_t length;                 /* array */
    const char *ref;                 /* sequence length / variant tag path, as written */
    const struct bmt_ctf_type *target; /* the integer node ref names (resolved) */
    const int32_t *range_option;     /* variant: for each range of the tag enumeration, in
                                      * order, the option (index in members) its label
                                      * selects, or -1: labels matched once, not per event */
    uint64_t min_bits;               /* smallest encoding of this node, bits (bounds checks) */
};

/* The dynamic scopes, in decoding order. */
enum bmt_ctf_scope {
    BMT_SCOPE_PACKET_HEADER,
    BMT_SCOPE_PACKET_CONTEXT,
    BMT_SCOPE_EVENT_HEADER,
    BMT_SCOPE_EVENT_COMMON_CONTEXT,  /* stream.event.context */
    BMT_SCOPE_EVENT_CONTEXT,         /* event.context */
    BMT_SCOPE_EVENT_FIELDS,          /* event.fields */
    BMT_SCOPE_COUNT
};

/* A new node of kind `kind` (zeroed, clock -1). NULL when out of memory. */
struct bmt_ctf_type *bmt_ctf_type_new(struct bmt_arena *a, enum bmt_ctf_kind kind);

/* A deep copy of `t` (ranges and names shared: they are immutable). NULL
 * when out of memory. */
struct bmt_ctf_type *bmt_ctf_type_copy(struct bmt_arena *a, const struct bmt_ctf_type *t);

/* What a scope's finishing needs from the scopes decoded before it. */
struct bmt_ctf_scopes {
    struct bmt_ctf_type *root[BMT_SCOPE_COUNT];  /* NULL when absent */
    const char *const *clock_names;  /* the metadata's clocks, by index */
    unsigned clock_count;
    int big_endian;                  /* the trace's byte order */
};

/* Finishes scope `which` of `s` (s->root[which], already a private copy):
 * resolves byte orders, alignments and clock maps, assigns value slots from
 * *next_slot on (advanced), resolves sequence lengths and variant tags
 * (relative paths search the enclosing structs, absolute ones the earlier
 * scopes of `s`), sets meanings by name as babeltrace2 does and checks
 * what the decoder relies on. Returns 0, or -EINVAL with a message in
 * `err` (`err_bytes`), or -ENOMEM. */
int bmt_ctf_finish_scope(struct bmt_arena *a, struct bmt_ctf_scopes *s, enum bmt_ctf_scope which,
                         uint32_t *next_slot, char *err, size_t err_bytes);

/* Marks which nodes babeltrace2's text sink prints (its "in IR" rule: no
 * meaning and no clock, or needed by a printed sequence or variant), for
 * every scope of `s`, last scope first. */
void bmt_ctf_mark_printed(struct bmt_ctf_scopes *s);

/* The member of struct or variant `t` named `name`, or NULL. */
const struct bmt_ctf_member *bmt_ctf_member(const struct bmt_ctf_type *t, const char *name);

/* The labels of enumeration `t` that contain `v` (up to `cap`); returns how
 * many there are (may exceed cap). */
unsigned bmt_ctf_enum_labels(const struct bmt_ctf_type *t, uint64_t v, const char **labels,
                             unsigned cap);

/* A clock and an env entry as the metadata declares them: the parser
 * (tsdl.h) fills them, metadata.h's classes keep them. */
struct bmt_ctf_clock {
    const char *name;
    uint64_t freq_hz;          /* cycles per second (default 1 GHz) */
    int64_t offset_s;          /* seconds from the epoch to the clock's zero */
    int64_t offset_cycles;     /* and cycles on top of offset_s */
};

struct bmt_ctf_env {
    const char *key;
    const char *str;           /* string value, or NULL for an integer */
    int64_t integer;
};

#endif
