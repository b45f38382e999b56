/* A fast reader of beamtrace trace directories (CTF 1.8 as laid out in
 * ctf.h), shared by every CLI subcommand.
 *
 * Workload: traces of up to billions of events in a handful of stream files;
 * the reader mmaps each file and decodes in place, so field values point
 * into the mapping and nothing is copied. Two ways to iterate, not to be
 * mixed on one reader:
 *  - bmt_reader_next: every event of every stream in timestamp order (a
 *    k-way merge over a binary heap of stream heads; ties go to the stream
 *    with the smaller stream_instance_id, then the earlier file position);
 *  - bmt_reader_stream_next: one stream in file order, for one-pass
 *    aggregations (stats) that do not need global order.
 * Every byte read is bounds-checked; a malformed trace ends iteration with
 * an error and a message, never a crash. Single-threaded: one reader per
 * thread.
 */
#ifndef BMT_CLI_READER_H
#define BMT_CLI_READER_H

#include "event.h"
#include "metadata.h"

#include <stddef.h>
#include <stdint.h>

/* One decoded event. Valid until the next call on the same stream. */
struct bmt_record {
    uint16_t tp;          /* catalogue id (enum bmt_tracepoint_id) */
    uint64_t ts_ns;       /* trace clock (CLOCK_MONOTONIC), nanoseconds */
    uint32_t cpu_id;      /* from the enclosing packet's context */
    unsigned stream;      /* index into bmt_reader.streams */
    struct bmt_value values[BMT_MAX_FIELDS]; /* strings point into the mapping */
};

/* Packet bookkeeping, passed to the on_packet hook before its events. */
struct bmt_packet_info {
    uint64_t ts_begin_ns, ts_end_ns;
    uint64_t seq_num;
    uint64_t events_discarded;      /* the stream's free-running counter */
    uint64_t new_discarded_count;   /* increase since the previous packet */
    uint64_t lost_packet_count;     /* sequence numbers skipped before this one */
    uint64_t prev_ts_end_ns;        /* previous packet's end, or this begin if first */
    int first;                      /* the stream's first packet */
};

struct bmt_reader_stream {
    char *path;                   /* "<dir>/<file>", owned */
    const char *file;             /* basename, inside path */
    const uint8_t *map;           /* whole file, read-only mapping */
    size_t size_bytes;
    size_t next_packet;           /* offset of the next packet header */
    size_t cursor;                /* offset of the next event in the current packet */
    size_t content_end;           /* end of the current packet's content */
    uint64_t stream_instance_id;  /* from the first packet */
    uint32_t cpu_id;              /* current packet's cpu_id */
    uint64_t packet_count;
    uint64_t discarded_count;     /* last packet's events_discarded (free-running) */
    uint64_t lost_packet_count;   /* packet_seq_num gaps, including before the first */
    uint64_t last_seq;
    uint64_t last_ts_end_ns;
    struct bmt_record head;       /* merge: this stream's next event */
};

struct bmt_reader {
    const char *dir;
    struct bmt_meta meta;
    struct bmt_reader_stream *streams;
    unsigned stream_count;
    unsigned *heap;               /* merge: stream indices, min timestamp on top */
    unsigned heap_count;
    int merge_started;
    int popped;                   /* merge: stream whose head was returned last, or -1 */
    int64_t wall_offset_ns;       /* add to a timestamp to get ns since the epoch */
    uint64_t max_ts_ns;           /* largest event timestamp whose wall time fits int64 */
    /* Optional: called when a packet is entered, before its events. */
    void (*on_packet)(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info);
    void *on_packet_ctx;
    char error[1024];             /* "<what is wrong>; <how to fix>" after a failure */
};

/* Opens the trace directory `dir` (kept by pointer: must outlive `r`):
 * parses the metadata and maps every stream file (every regular file not
 * starting with '.', other than `metadata`). Returns 0, or a negative errno
 * with r->error set; call bmt_reader_close in both cases. */
int bmt_reader_open(struct bmt_reader *r, const char *dir);

/* Nanoseconds since the epoch of trace-clock time `ts_ns`. Exact for every
 * event timestamp (the reader rejects events beyond r->max_ts_ns); packet
 * times from a corrupt file wrap instead of overflowing. */
static inline int64_t bmt_reader_wall_ns(const struct bmt_reader *r, uint64_t ts_ns)
{
    return (int64_t)((uint64_t)r->wall_offset_ns + ts_ns);
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

/* Next event in timestamp order across streams. Sets *rec (owned by the
 * reader, valid until the next call). Returns 1, 0 at the end, or -EINVAL
 * with r->error set when the trace is malformed. */
int bmt_reader_next(struct bmt_reader *r, const struct bmt_record **rec);

/* Next event of stream `stream` in file order; same returns as
 * bmt_reader_next. */
int bmt_reader_stream_next(struct bmt_reader *r, unsigned stream, const struct bmt_record **rec);

/* Unmaps and frees everything. Safe after a failed open, and twice. */
void bmt_reader_close(struct bmt_reader *r);

#endif
