/* A trace directory on disk: creates it privately, writes the metadata, and
 * appends whole packets to one stream file per ring (`channel0_<N>`, or
 * `channel0_<N>_<K>` when files rotate), opened on the stream's first packet.
 *
 * Safety: the directory is created (or an existing empty one of ours is
 * taken) with mode 0700 unless the caller widens it, and opened once with
 * O_DIRECTORY|O_NOFOLLOW; every file is created relative to that descriptor
 * with O_CREAT|O_EXCL|O_NOFOLLOW and fchmod'ed to the chosen mode, so the
 * umask cannot widen it, a planted symlink makes the open fail instead of
 * redirecting it, and nothing is ever written outside the directory.
 *
 * Whole packets only: when a write fails (ENOSPC, EIO, a short write) the
 * file is truncated back to the end of its last complete packet, the
 * packet's events are counted as lost, and the directory refuses further
 * packets. Every packet is written with its packet_seq_num renumbered
 * contiguously per stream and its events_discarded raised by the events the
 * disk never got, so readers see no sequence gap and exact loss counts. At
 * the end, bmt_trace_dir_seal_stream writes a header-only packet carrying
 * the stream's final loss count, sacrificing the last packet (counted) if
 * the disk has no room even for that.
 *
 * Incomplete until closed: create writes `channel0_incomplete` (before the
 * metadata, so a reader that sees the metadata and then no marker knows
 * the trace is complete), a stream of two header-only packets (stream instance
 * BMT_INCOMPLETE_STREAM) whose second events_discarded the owner keeps at
 * the number of events offered and not yet on disk
 * (bmt_trace_dir_set_unwritten).
 * Closing removes it. A process killed before its trace was closed leaves
 * it: both readers then report those events as discarded, and beamtrace
 * says the trace is incomplete, instead of reading an empty or short trace
 * as a complete one.
 *
 * Used by one thread at a time (a session's consumer, or whoever finishes
 * the session after the consumer stopped). Pure C and POSIX I/O.
 */
#ifndef BMT_TRACE_DIR_H
#define BMT_TRACE_DIR_H

#include "ctf.h"

#include <stddef.h>
#include <stdint.h>

#define BMT_MAX_STREAMS 1024

/* The incomplete marker's file and stream instance (beyond any ring's). */
#define BMT_INCOMPLETE_FILE "channel0_incomplete"
#define BMT_INCOMPLETE_STREAM UINT64_C(0xffffffff)

/* Mode of trace files unless the caller asks for another: private. */
#define BMT_TRACE_FILE_MODE 0600

struct bmt_stream_file {
    int fd;                      /* -1 until the stream's first packet */
    uint32_t file_index;         /* rotation: K of the open file channel0_<N>_<K> */
    uint64_t file_bytes;         /* complete packets in the open file, bytes */
    uint64_t next_seq;           /* packet_seq_num of the next packet on disk */
    uint64_t events;             /* events of this stream on disk */
    uint64_t lost_events;        /* events of this stream the disk never got */
    uint64_t stamped_discarded;  /* events_discarded of the last packet on disk */
    uint64_t last_ts_end_ns;     /* timestamp_end of the last packet on disk */
    uint64_t last_packet_offset; /* where the open file's last packet with events starts */
    uint32_t last_packet_events; /* its events (0: no packet to sacrifice) */
    uint64_t tail_offset;        /* where the open file's last packet starts */
    int direct;                  /* the open file takes O_DIRECT writes (aligned, padded) */
    uint64_t *file_events;       /* rotation: events in each kept file, by K % count */
    uint64_t rotated_events;     /* events in files rotation deleted (also in lost_events) */
};

struct bmt_trace_dir {
    char path[4096];
    int dirfd;                   /* the directory, O_DIRECTORY|O_NOFOLLOW; -1 when closed */
    int created;                 /* 1 when we made the directory (abandon removes it) */
    unsigned file_mode;          /* mode of every file, e.g. 0600 */
    uint8_t uuid[BMT_CTF_UUID_BYTES];
    uint64_t tracefile_size_bytes; /* rotate a stream's file past this; 0: never */
    uint32_t tracefile_count;    /* files kept per stream when rotating, <= 1024; 0: all */
    uint64_t bytes_on_disk;      /* metadata + stream files now, after rotation */
    uint64_t bytes_written;      /* every byte written since creation */
    int error;                   /* first errno of a failed write, 0 when healthy */
    int no_files;                /* nothing on disk: the session streams to a relayd
                                    only; packets are counted as if written */
    int no_direct;               /* the filesystem refused O_DIRECT: buffered writes */
    int incomplete_fd;           /* the incomplete marker, -1 once removed */
    uint64_t incomplete_begin_ns;/* its packet's timestamp_begin */
    uint64_t incomplete_events;  /* the count it holds now */
    struct bmt_stream_file streams[BMT_MAX_STREAMS];
};

/* Creates the trace directory `path` (absolute; missing parents are created
 * with the directory's mode) and writes the metadata for `info`. An empty
 * `path` makes a directory with no files (no_files): every call below
 * succeeds and keeps the counts (events, losses, packet numbers, bytes as
 * they would be), and nothing touches the disk. An existing
 * `path` is taken only if it is an empty directory owned by this user, not a
 * symlink. `file_mode` (0 = BMT_TRACE_FILE_MODE) is every file's mode; the
 * directory gets it plus x wherever it has r. Rotation: see the struct.
 * Returns 0, or a negative errno (-ENOTEMPTY for a directory holding
 * anything, -ELOOP for a symlink, -EPERM for someone else's directory); on
 * failure nothing stays open and nothing of ours stays on disk. */
int bmt_trace_dir_create(struct bmt_trace_dir *d, const char *path, unsigned file_mode,
                         const struct bmt_ctf_trace_info *info, uint64_t tracefile_size_bytes,
                         uint32_t tracefile_count);

/* Appends the packet `pkt` (`content_bytes` long, `events` events) to
 * stream `stream`, after renumbering its packet_seq_num and adding the
 * stream's lost events to its events_discarded (in place: the caller owns
 * the packet memory). `capacity_bytes` is how much memory the packet has
 * from `pkt`: when the packet is page-aligned and that leaves room, it is
 * padded with zeros to a whole number of 4 KiB blocks (packet_size says so)
 * and written with O_DIRECT: no copy through the page cache, which is most
 * of the consumer's CPU. Filesystems without O_DIRECT (tmpfs) get buffered
 * writes of the content alone. Returns 0; or a negative errno, the file
 * truncated back to its last complete packet, this packet's events counted
 * as lost, and the error remembered (later packets are refused and
 * counted). */
#define BMT_DIRECT_BLOCK 4096
int bmt_trace_dir_write_packet(struct bmt_trace_dir *d, unsigned stream, uint8_t *pkt,
                               size_t content_bytes, size_t capacity_bytes, uint32_t events);

/* How many bytes bmt_trace_dir_write_packet would put on disk for that
 * packet now (its content, or whole 4 KiB blocks): what caps compare. */
size_t bmt_trace_dir_packet_bytes(const struct bmt_trace_dir *d, unsigned stream,
                                  const uint8_t *pkt, size_t content_bytes, size_t capacity_bytes);

/* Leaves `packets` packet sequence numbers of stream `stream` unused: the
 * next packet written shows a gap readers report as lost packets (whose
 * events nobody can count: a flight capture's packets a writer reclaimed
 * before they were copied). */
void bmt_trace_dir_skip_packets(struct bmt_trace_dir *d, unsigned stream, uint64_t packets);

/* Counts `events` of stream `stream` as lost without writing them (a cap
 * was reached, or the directory failed before). */
void bmt_trace_dir_lose(struct bmt_trace_dir *d, unsigned stream, uint64_t events);

/* Ends stream `stream`: if the trace does not yet say that
 * `ring_discarded` + its lost events were discarded, appends a header-only
 * packet stamped `ts_ns` that says so (when even that does not fit, the last
 * packet is cut off and counted first). A stream with nothing written and
 * nothing lost stays absent. Works after a write failure too. Returns 0 or
 * a negative errno. */
int bmt_trace_dir_seal_stream(struct bmt_trace_dir *d, unsigned stream, uint64_t ring_discarded,
                              uint64_t ts_ns);

/* Appends to stream `stream` (which has a file) a header-only packet
 * stamped `ts_ns` with the loss count it already states: readers then see
 * the stream recorded until `ts_ns`, events or not (a flight capture's
 * tail). Returns 0 or a negative errno. */
int bmt_trace_dir_end_stream(struct bmt_trace_dir *d, unsigned stream, uint64_t ts_ns);

/* Raises the loss count of stream `stream` by `events` in its last packet
 * on disk (an 8-byte rewrite in place: works on a full disk), or writes a
 * header-only packet saying so when the stream has no file yet. For events
 * offered after the trace was sealed. Returns 0 or a negative errno. */
int bmt_trace_dir_add_discarded(struct bmt_trace_dir *d, unsigned stream, uint64_t events,
                                uint64_t ts_ns);

/* Sets the incomplete marker's count to `events` (offered, not on disk)
 * as of `ts_ns`: one 168-byte rewrite in place, when the count changed. A
 * failure is returned but not remembered (the trace itself is unharmed).
 * Returns 0 or a negative errno; 0 once the marker is gone. */
int bmt_trace_dir_set_unwritten(struct bmt_trace_dir *d, uint64_t events, uint64_t ts_ns);

/* Removes the incomplete marker: everything the trace will hold is on disk
 * and every loss is counted in it. Also done by close. */
void bmt_trace_dir_mark_complete(struct bmt_trace_dir *d);

/* 1 when the directory was removed (or renamed away and deleted) since it
 * was created. */
int bmt_trace_dir_removed(const struct bmt_trace_dir *d);

/* Removes the incomplete marker, closes every file and the directory.
 * Returns 0 or the first error seen during the directory's life. Safe to
 * call twice. */
int bmt_trace_dir_close(struct bmt_trace_dir *d);

/* For a session that never started: closes everything and removes what
 * create made (the metadata, the incomplete marker, and the directory if it
 * made it), so a retry with the same path works. */
void bmt_trace_dir_abandon(struct bmt_trace_dir *d);

/* Fills `info` for the current process: random uuid, hostname, clock offset
 * of CLOCK_MONOTONIC to wall time, pid and process name. Returns 0 or a
 * negative errno. */
int bmt_ctf_trace_info_init(struct bmt_ctf_trace_info *info);

#endif
