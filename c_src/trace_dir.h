/* A trace directory on disk: creates it, writes the metadata, and appends
 * packets to one stream file per ring (`channel0_<N>`, opened on the first
 * packet).
 *
 * Used by one thread at a time (the session's consumer thread, or the
 * stopping thread after the consumer has exited). Pure C and POSIX I/O.
 * Errors are sticky: after the first failed write the directory refuses
 * further packets and bmt_trace_dir_error() reports the errno.
 */
#ifndef BMT_TRACE_DIR_H
#define BMT_TRACE_DIR_H

#include "ctf.h"

#include <stddef.h>
#include <stdint.h>

#define BMT_MAX_STREAMS 1024

struct bmt_trace_dir {
    char path[4096];
    int fds[BMT_MAX_STREAMS];   /* -1 until the stream's first packet */
    int error;                  /* first errno seen, 0 when healthy */
    uint64_t bytes_written;
};

/* Creates `path` (and missing parents, mode 0755) if needed, refuses a
 * directory that already holds a `metadata` file (-EEXIST: never mix two
 * traces), and writes the metadata for `info`. Returns 0 or a negative errno;
 * on failure nothing stays open. */
int bmt_trace_dir_create(struct bmt_trace_dir *d, const char *path,
                         const struct bmt_ctf_trace_info *info);

/* Appends one packet of `bytes` bytes to stream `stream`. Returns 0 or a
 * negative errno (also remembered as the directory's error). */
int bmt_trace_dir_write_packet(struct bmt_trace_dir *d, unsigned stream, const uint8_t *pkt,
                               size_t bytes);

/* Flushes and closes every stream file. Returns 0 or the first error seen
 * during the directory's life. Safe to call twice. */
int bmt_trace_dir_close(struct bmt_trace_dir *d);

/* Closes the stream files and removes the metadata file: a directory whose
 * session never started holds no trace, so a retry can use it again. */
void bmt_trace_dir_abandon(struct bmt_trace_dir *d);

/* Fills `info` for the current process: random uuid, hostname, clock offset
 * of CLOCK_MONOTONIC to wall time, pid and process name. Returns 0 or a
 * negative errno. */
int bmt_ctf_trace_info_init(struct bmt_ctf_trace_info *info);

/* CLOCK_MONOTONIC in nanoseconds: the trace clock. */
uint64_t bmt_clock_ns(void);

#endif
