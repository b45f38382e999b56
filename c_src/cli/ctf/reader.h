/* The trace reader shared by every CLI subcommand: CTF 1.8 trace
 * directories as beamtrace, LTTng (per-UID or per-PID, any session layout)
 * and babeltrace2's sink.ctf.fs write them, decoded as their metadata
 * declares (metadata.h, decode.h).
 *
 * Workload: traces of up to billions of events in a handful of stream
 * files (or one per CPU for LTTng). Each file is mapped read-only and
 * decoded in place: string values point into the mapping. Pages behind the
 * current packet are given back to the kernel as the reader moves on
 * (MADV_DONTNEED every RELEASE step), so resident memory stays bounded
 * whatever the trace's size. Two ways to iterate, not to be mixed on one
 * reader:
 *  - bmt_reader_next: every event of every stream in time order (a k-way
 *    merge over a binary heap of stream heads; ties go to the stream with
 *    the smaller stream_instance_id, then the earlier file);
 *  - bmt_reader_stream_next: one stream in file order (stats).
 *
 * Decoding: by default every field of every event is decoded by walking
 * its type tree (decode.h), and bmt_reader_values gives them all, slot by
 * slot, as `view` prints them. A caller that reads only some catalogue
 * fields says which (bmt_reader_select, field_set.h): each event class
 * then gets a compiled decoder (plan.h) that stores those fields and skips
 * the others by size, where its layout allows (beamtrace's and
 * LTTng-UST's always do); other layouts keep the type-tree walk. The
 * environment variable BEAMTRACE_READER=generic makes bmt_reader_select do
 * nothing (for checking the compiled decoders and the callers' field sets
 * against the walk of every field).
 *
 * What is checked, as babeltrace2 checks it: packet magic, uuid against the
 * metadata's, the stream class a packet names, content size <= packet size
 * and both within the file, decodable events with declared ids, and time
 * that never goes backwards within a stream (packet begin <= events <=
 * packet end <= next packet's begin). A malformed trace ends iteration
 * with an error and a message, never a crash. One exception on purpose: a
 * stream whose last packet is cut short (the recorder was killed while
 * writing it, or the copy is incomplete) is read up to that packet, with
 * one warning line naming the bytes skipped.
 *
 * Files: every regular file of a trace directory not starting with '.',
 * other than `metadata`; files whose first packets name the same stream
 * instance are one stream (LTTng's tracefile rotation), as babeltrace2
 * groups them. Directory: DIR itself when it holds `metadata`, else every
 * directory below it that does (an LTTng session's ust/uid/1000/64-bit,
 * babeltrace2's HOST/...), up to 8 levels down, merged in time order.
 * Symbolic links below DIR are never followed (traces are private, and a
 * link to `/` or to a parent would make the search endless): a symlinked
 * directory is not searched, a symlinked stream file is not read (with a
 * warning). Single-threaded.
 *
 * The subset of CTF 1.8 accepted (anything else is refused with one line
 * naming it, and usually "use babeltrace2"):
 *  - metadata: plain TSDL text starting with "/ * CTF 1.8", or LTTng's
 *    packetized metadata in either byte order, without compression,
 *    encryption or checksum (a cut-short last packet is read as far as it
 *    goes). CTF 2 (JSON) is refused with the lttng option that records 1.8.
 *  - TSDL: typealias, typedef, named and anonymous struct, enum and
 *    variant declarations; integer (1 to 64 bits, any power-of-two
 *    alignment, either byte order, signed or not, base, encoding, `map =
 *    clock.NAME.value`), floating_point (IEEE 754 32 and 64 bits only),
 *    string, enum (on an integer), struct with align(N), fixed arrays and
 *    sequences (their length an unsigned integer decoded before them, in
 *    any earlier scope), variants (their tag an enumeration decoded before
 *    them), nested up to 64 levels; the trace, env, clock, stream and event
 *    blocks (callsite and unknown attributes are skipped).
 *  - scopes: trace.packet.header (magic, uuid, stream_id,
 *    stream_instance_id), stream.packet.context (timestamp_begin/_end,
 *    content_size/packet_size in bits, events_discarded, packet_seq_num,
 *    cpu_id), stream.event.header (any layout whose id field is named `id`;
 *    LTTng's compact and large headers with their extended variants),
 *    stream.event.context, event.context, event.fields.
 *  - clocks: any number declared, but every stream's events and packet
 *    times map to one clock (frequency and offsets honoured); a stream
 *    without timestamps, or an event taking no bits, is refused.
 *  - several stream classes (stream_id), several stream instances, and
 *    tracefile rotation; dense event ids (sparse ids above 65535 work, on
 *    the type-tree walk).
 * Events named like catalogue tracepoints bind to beamtrace's analyses
 * when their fields match (metadata.h); every event prints in `view`.
 */
#ifndef BMT_CLI_READER_H
#define BMT_CLI_READER_H

#include "core/event.h"
#include "base/arena.h"
#include "field_set.h"
#include "metadata.h"
#include "nodes.h"
#include "base/progress.h"

#include <stddef.h>
#include <stdint.h>

/* One decoded event. Valid until the next call on the same stream (for
 * bmt_reader_next: until the next call). */
struct bmt_body_plan;

struct bmt_record {
    uint16_t tp;          /* catalogue id, or BMT_TP_NONE */
    unsigned trace;       /* index into bmt_reader.traces: in a cluster, the node */
    uint64_t ts_ns;       /* ns since the reader's origin (bmt_reader_wall_ns) */
    uint32_t cpu_id;      /* the packet context's cpu_id, or 0 */
    unsigned stream;      /* index into bmt_reader.streams */
    const struct bmt_ctf_event_class *ec;
    const struct bmt_value *values; /* catalogue fields, in catalogue order (tp != BMT_TP_NONE);
                                     * after bmt_reader_select, only the selected ones are valid */
    uint32_t bits;        /* what the event takes in its stream: header, fields, alignment */
};

/* Packet bookkeeping, passed to the on_packet hook before its events. */
struct bmt_packet_info {
    uint64_t ts_begin_ns, ts_end_ns; /* reader time; begin/end of the packet, or its neighbours' */
    uint64_t seq_num;
    uint64_t events_discarded;      /* the stream's free-running counter */
    uint64_t new_discarded_count;   /* increase since the previous packet */
    uint64_t lost_packet_count;     /* sequence numbers skipped before this one */
    uint64_t prev_ts_end_ns;        /* previous packet's end, or this begin if first */
    int first;                      /* the stream's first packet */
};

struct bmt_trace {
    char *dir;                      /* the directory holding `metadata`, owned */
    char **more_dirs;               /* the same trace's other directories (the relayd's
                                     * per-connection ones), NULL-terminated, owned; or NULL */
    struct bmt_meta meta;
    int64_t origin_ns;              /* ns since the epoch of the event clock's zero */
    uint64_t delta_ns;              /* origin_ns - reader origin */
    uint64_t freq_hz;               /* event clock frequency */
    uint32_t event_base;            /* index of its first event class over all traces */
    const char *node;               /* its node (env beamtrace_node), or NULL */
    char uuid_text[37];
    /* After bmt_reader_select: for each stream class (meta.streams[k]),
     * the compiled decoder of each event id below its dense_count, or NULL
     * (the type-tree walk for the whole class). */
    const struct bmt_fast_event *const *fast;
};

/* An event class and its compiled decoder (NULL: the type-tree walk). */
struct bmt_fast_event {
    const struct bmt_ctf_event_class *ec;
    const struct bmt_body_plan *plan;
};

/* One data stream file, mapped read-only. */
struct bmt_stream_file {
    char *path;                     /* "<trace dir>/<file>", owned */
    const uint8_t *map;             /* whole file, or NULL when empty */
    uint64_t size_bytes;
};

/* A stream: the packets of one stream instance, from one file or from
 * several (LTTng's tracefile rotation: channel0_0_0, channel0_0_1, ... share
 * a stream_instance_id), read in time order. */
struct bmt_reader_stream {
    struct bmt_trace *trace;
    unsigned trace_index;           /* trace - bmt_reader.traces */
    const struct bmt_ctf_stream_class *sc; /* of the current packet */
    const struct bmt_fast_event *fast; /* its compiled decoders by event id, or NULL */
    uint32_t fast_count;            /* entries in fast */
    struct bmt_stream_file *files;  /* in time order, owned */
    unsigned file_count, file_index;
    const char *path;               /* current file's path */
    const char *file;               /* its basename */
    const uint8_t *map;             /* its mapping */
    uint64_t size_bytes;
    uint64_t released_bytes;        /* mapping prefix handed back with MADV_DONTNEED */
    uint64_t next_packet;           /* offset of the next packet */
    uint64_t packet;                /* offset of the current packet */
    uint64_t pos_bits;              /* next event, bits from the packet's start */
    uint64_t content_bits;          /* current packet's content size */
    uint64_t largest_packet_bytes;  /* largest complete packet so far */
    struct bmt_value *vals;         /* decoded values of the current packet and event */
    struct bmt_value cat[BMT_MAX_FIELDS]; /* catalogue-ordered copy when the slots are not */
    uint64_t clock;                 /* the stream's clock, cycles */
    uint64_t last_ns;               /* latest time seen in this stream */
    uint64_t packet_end_ns;         /* current packet's timestamp_end, or UINT64_MAX */
    uint64_t first_packet_begin_ns; /* first packet's timestamp_begin (or its first event) */
    uint64_t first_seq;             /* first packet's packet_seq_num */
    uint64_t stream_instance_id;    /* from the first packet */
    uint32_t cpu_id;                /* current packet's cpu_id */
    uint64_t packet_count;
    uint64_t discarded_count;       /* last packet's events_discarded (free-running) */
    uint64_t lost_packet_count;     /* packet_seq_num gaps, including before the first */
    uint64_t last_seq;
    uint64_t last_ts_end_ns;
    uint64_t skipped_bytes;         /* bytes of a cut-short final packet, not read */
    int has_seq;                    /* packets carry packet_seq_num */
    int first_begin_pending;        /* first packet had no timestamp_begin: use its first event */
    int ended;                      /* no more packets (end of file or cut-short tail) */
    struct bmt_record head;         /* merge: this stream's next event */
};

struct bmt_reader {
    int quiet;                      /* warnings not printed (bmt_reader_open_quiet) */
    const char *dir;                /* as given */
    struct bmt_trace *traces;
    unsigned trace_count;
    struct bmt_reader_stream *streams;
    unsigned stream_count;
    unsigned event_class_count;     /* over every trace (record ec->index + trace event_base) */
    unsigned *heap;                 /* merge: stream indices, min timestamp on top */
    unsigned heap_count;
    int merge_started;
    int popped;                     /* merge: stream whose head was returned last, or -1 */
    uint64_t runner_up_ns;          /* merge: the earliest time of the top's children (the
                                     * next streams), UINT64_MAX when none */
    int64_t origin_ns;              /* ns since the epoch of reader time 0 */
    uint64_t max_ts_ns;             /* largest reader time whose wall time fits int64 */
    /* Flight-recorder traces: streams that lost their oldest packets hold
     * data only from their first packet on; from complete_from_ns every
     * stream has data. Set when the merge starts. */
    int overwritten;                /* some stream lost its first packets */
    uint64_t complete_from_ns;
    uint64_t total_bytes, done_bytes; /* stream file bytes, and those passed */
    struct bmt_progress progress;
    /* Optional: called when a packet is entered, before its events. */
    void (*on_packet)(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info);
    void *on_packet_ctx;
    /* A cluster: two or more beamtrace traces, each of its own node. Then
     * bmt_reader_next resolves every pid through its trace's node table
     * and returns node-qualified texts (nodes.h). */
    int cluster;
    struct bmt_nodes nodes;
    struct bmt_record qrec;         /* the record returned, rewritten */
    /* Field selection (bmt_reader_select). */
    int selected;
    struct bmt_field_set want;      /* the caller's fields, plus what a cluster needs */
    int compiled;                   /* the traces' `fast` tables are set */
    struct bmt_arena plan_arena;    /* the plans and their tables */
    char error[1024];               /* "<what is wrong>; <how to fix>" after a failure */
};

/* Opens the trace(s) at the `count` paths (each a trace directory or a
 * directory above traces, such as a cluster directory; kept by pointer:
 * must outlive `r`) as one source merged in time order, each trace's
 * timestamps shifted by its own clock offset: parses each metadata and maps
 * every stream file (every regular file not starting with '.', other than
 * `metadata`). Two beamtrace traces of one node are an error, as is a path
 * holding no trace. Returns 0, or a negative errno with r->error set; call
 * bmt_reader_close in both cases. */
int bmt_reader_open(struct bmt_reader *r, const char *const *paths, unsigned count);
/* The same for a second pass over traces already warned about: the
 * warnings of opening (said already) and of reading are not printed. */
int bmt_reader_open_quiet(struct bmt_reader *r, const char *const *paths, unsigned count);

/* Writes how error lines name the input: the path, or "PATH (and N more)"
 * for several. */
void bmt_reader_label(const char *const *paths, unsigned count, char *buf, size_t size);

/* Nanoseconds since the epoch of reader time `ts_ns`. Exact for every
 * event timestamp (the reader rejects events beyond r->max_ts_ns); packet
 * times from a corrupt file wrap instead of overflowing. */
static inline int64_t bmt_reader_wall_ns(const struct bmt_reader *r, uint64_t ts_ns)
{
    return (int64_t)((uint64_t)r->origin_ns + ts_ns);
}

/* Splits ns since the epoch into whole seconds (floored) and 0..999999999
 * nanoseconds, so times before 1970 print like babeltrace2's. */
static inline void bmt_wall_split(int64_t wall_ns, int64_t *s, int64_t *ns)
{
    *s = wall_ns / 1000000000;
    *ns = wall_ns % 1000000000;
    if (*ns < 0) {
        *ns += 1000000000;
        (*s)--;
    }
}

/* Next event in time order across streams. Sets *rec (owned by the reader,
 * valid until the next call). Returns 1, 0 at the end, or -EINVAL with
 * r->error set when the trace is malformed. */
int bmt_reader_next(struct bmt_reader *r, const struct bmt_record **rec);

/* Next event of stream `stream` in file order; same returns as
 * bmt_reader_next. */
int bmt_reader_stream_next(struct bmt_reader *r, unsigned stream, const struct bmt_record **rec);

/* Decode only the catalogue fields in `want` (field_set.h) from now on:
 * compiles a decoder per event class of every trace, which skips every
 * other field by its size. Call after bmt_reader_open and before the first
 * event. Afterwards record values outside `want` are not valid (a build
 * with -DBMT_READER_POISON makes them NULL strings of length 0xffffffff
 * and integers 0xbadbadbadbadbad0, so a missing bit fails a test), events
 * outside the catalogue are only sized, and bmt_reader_values no longer
 * applies. In a cluster the reader adds what node tables need (every
 * node_info field). Returns 0, -EBUSY (events were read already) or
 * -ENOMEM, with r->error set. */
int bmt_reader_select(struct bmt_reader *r, const struct bmt_field_set *want);

/* The decoded values of the event `rec` (of stream rec->stream), for
 * printing every field of any event (print_bt2.h); not after
 * bmt_reader_select. */
static inline const struct bmt_value *bmt_reader_values(const struct bmt_reader *r,
                                                        const struct bmt_record *rec)
{
    return r->streams[rec->stream].vals;
}

/* Prints "beamtrace: warning: <message>" on stderr (clearing a progress
 * line first). */
void bmt_reader_warn(struct bmt_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Unmaps and frees everything. Safe after a failed open, and twice. */
void bmt_reader_close(struct bmt_reader *r);

#endif
