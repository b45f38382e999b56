/* What a function's time breakdown (calls.h: incl[] by kind, computed once
 * by the calls accumulator) says, for the report's first section: the
 * slowest functions by p99, each function's shares as shown (on CPU,
 * runnable, waiting, GC, and unknown; one off-CPU share when the trace has
 * no message_receive events, no GC share without gc events; all unknown
 * without scheduling events), and
 * one plain line reading them ("mostly runnable: the schedulers were
 * saturated"; for waiting, who ended the waits when the trace has their
 * sends: "mostly waiting on messages from rabbit_channel (<0.812.0>), 83%
 * of the wait"). Pure functions of a finished bmt_calls. Single-threaded.
 */
#ifndef BMT_CLI_CALLS_READING_H
#define BMT_CLI_CALLS_READING_H

#include "calls.h"

#include <stddef.h>

/* One share of a function's time. */
struct bmt_share {
    const char *key;    /* a CSS class: on-cpu, runnable, waiting, off-cpu, gc, unknown */
    const char *label;  /* words: "on CPU", "runnable", ... */
    uint64_t ns;        /* time of that kind, inside the window */
};

#define BMT_SHARES_MAX 5

/* The shares of `f`'s inclusive time, in display order, into out; returns
 * how many (kinds the trace cannot tell apart are merged, zero shares kept
 * so the columns line up; unknown only when some time is unknown). */
unsigned bmt_calls_shares(const struct bmt_calls *c, const struct bmt_fstat *f,
                          struct bmt_share out[BMT_SHARES_MAX]);

/* The plain line reading `f`'s shares, NUL-terminated into buf (size
 * bytes): the dominant share's meaning when one is over half the time,
 * else the two largest shares with their percentages. Mostly waiting, and
 * some of the wait ended by a known sender (f->wakers): the one that ended
 * over half of it with its share, else the two that ended most with
 * theirs (shares of the function's waiting time). */
void bmt_calls_reading(const struct bmt_calls *c, const struct bmt_fstat *f, char *buf,
                       size_t size);

/* Who sent the messages that ended waits, as the report names processes:
 * "NAME (<0.812.0>)", NAME its registered name, else its label or initial
 * call (names.h); just the pid when the trace names it no way. pid: a pid
 * id; NUL-terminated into buf (size bytes). */
void bmt_calls_waker_label(const struct bmt_calls *c, uint32_t pid, char *buf, size_t size);

/* Up to `max` stats indices of functions with calls that ended inside the
 * window, slowest p99 first (ties: larger total first) into order; returns
 * how many. */
uint32_t bmt_calls_slowest_funcs(const struct bmt_calls *c, uint32_t *order, uint32_t max);

#endif
