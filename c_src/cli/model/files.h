/* The `files` analysis: file I/O from org_erlang_beamtrace:file_op events
 * (session option file_io): count, errors, bytes and latency per operation
 * and per path, and error counts per reason.
 *
 * A file_op event is recorded when the session's helper handles the
 * return, with the latency the VM's timestamps measured in the caller; it
 * is counted when its own time lies inside the window and its pid passes
 * the filter. An operation on a file opened before the trace has no path
 * unless the node could name it (its io server's file): such operations
 * are counted (pathless_count), and the files the node had open when the
 * file_io source started (file_info events, the state dump of open files)
 * are kept by path, so the command can name them. Memory: per distinct
 * operation, path, open file and error reason, never per event.
 * Single-threaded.
 */
#ifndef BMT_CLI_FILES_H
#define BMT_CLI_FILES_H

#include "acc.h"
#include "scope.h"
#include "histogram.h"
#include "base/strtab.h"

/* One operation's or one path's figures. */
struct bmt_fstat_io {
    uint64_t bytes;         /* bytes read or written */
    uint64_t error_count;   /* result error */
    struct bmt_hist hist;   /* latency, ns */
};

/* Rows keyed by interned strings: rows[id] for the string with that id. */
struct bmt_io_table {
    struct bmt_strtab keys;
    struct bmt_fstat_io *rows;
    uint32_t cap;
};

struct bmt_files {
    struct bmt_an_scope *scope;
    struct bmt_io_table ops, paths;
    struct bmt_strtab errnos;
    uint64_t *errno_counts;     /* by errno id */
    uint32_t errno_cap;
    uint64_t op_count;
    uint64_t pathless_count;    /* operations without a path: files opened before the trace */
    struct bmt_strtab open_before; /* paths of file_info events (open when recording started) */
};

int bmt_files_init(void *self, struct bmt_an_scope *scope);
/* Takes file_op events. Returns 0 or -ENOMEM. */
int bmt_files_feed(void *ctx, const struct bmt_record *rec);
/* Ids of `t`'s rows sorted by total latency, largest first (at most `n`)
 * into *out (malloc'd); returns how many, or -ENOMEM. */
int64_t bmt_files_by_total(const struct bmt_io_table *t, uint32_t **out, uint64_t n);
void bmt_files_free(void *self);

/* As an accumulator (acc.h). */
extern const struct bmt_acc bmt_files_acc;

#endif
