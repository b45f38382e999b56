/* Who ended a function's waits: its waiting time (proc_state.h) by the
 * process whose message woke it (the first message sent to it while it was
 * scheduled out), for the report's reading ("mostly waiting on messages
 * from rabbit_channel (<0.812.0>), 83% of the wait").
 *
 * A tally is a fixed BMT_WAKERS_MAX senders plus one "other" sum, so a
 * frame or a function costs the same whatever number of processes wake it:
 * a sender not in a full tally either replaces the smallest one when it
 * brings more (that one's time folds into other) or folds into other
 * itself. Heavy senders stay; a sender whose time arrived in many small
 * pieces among more than BMT_WAKERS_MAX others may be undercounted (its
 * early pieces in other), never overcounted: a named sender's figure is at
 * most its true time. Waits ended by a timeout, or by a message whose send
 * the trace lacks, are in no tally. Single-threaded.
 */
#ifndef BMT_CLI_WAKERS_H
#define BMT_CLI_WAKERS_H

#include <stdint.h>

#define BMT_WAKERS_MAX 4

struct bmt_wakers {
    uint32_t pid[BMT_WAKERS_MAX];  /* pid ids (names.h) of the senders */
    uint64_t ns[BMT_WAKERS_MAX];   /* waiting time each ended, ns */
    uint64_t other_ns;             /* waiting time ended by senders folded out */
    uint8_t count;                 /* slots in use */
};

/* An empty tally (two stores: a frame makes one per call). */
static inline void bmt_wakers_clear(struct bmt_wakers *t)
{
    t->count = 0;
    t->other_ns = 0;
}

/* 1 when the tally holds no time. */
static inline int bmt_wakers_empty(const struct bmt_wakers *t)
{
    return !t->count && !t->other_ns;
}

/* Adds `ns` of waiting ended by a message from pid id `pid`. */
void bmt_wakers_add(struct bmt_wakers *t, uint32_t pid, uint64_t ns);

/* Adds `from` to `into`, each figure times `weight` (a sampled call
 * stands for `weight` calls, sampled.h). */
void bmt_wakers_merge(struct bmt_wakers *into, const struct bmt_wakers *from, uint64_t weight);

/* The waiting time the tally holds, other included. */
uint64_t bmt_wakers_total(const struct bmt_wakers *t);

/* Slot indices of the senders, most time first (ties: lower pid id first),
 * into order[BMT_WAKERS_MAX]; returns how many. */
unsigned bmt_wakers_order(const struct bmt_wakers *t, unsigned order[BMT_WAKERS_MAX]);

#endif
