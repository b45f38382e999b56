/* Progress on stderr for long reads: "beamtrace: reading DIR: 42% (512 of
 * 1210 MB)" rewritten in place, shown only when stderr is a terminal (or
 * BEAMTRACE_PROGRESS=1; BEAMTRACE_PROGRESS=0 turns it off) and only once
 * the work has taken more than a second (BEAMTRACE_PROGRESS=always: from
 * the start), then at most four times a second.
 * The line is erased when the work ends or before any other message.
 * Single-threaded.
 */
#ifndef BMT_CLI_PROGRESS_H
#define BMT_CLI_PROGRESS_H

#include <stdint.h>

struct bmt_progress {
    int enabled;
    int shown;              /* a progress line is on the terminal */
    int64_t start_ns;       /* CLOCK_MONOTONIC when the work started */
    int64_t next_ns;        /* no update before this time */
    const char *what;       /* "reading DIR" */
};

/* Starts timing work described by `what` (kept by pointer). */
void bmt_progress_start(struct bmt_progress *p, const char *what);

/* Reports `done` of `total` units (bytes); cheap when nothing is printed. */
void bmt_progress_update(struct bmt_progress *p, uint64_t done, uint64_t total);

/* Erases the line if one is shown (before other output on stderr, and at
 * the end). */
void bmt_progress_clear(struct bmt_progress *p);

#endif
