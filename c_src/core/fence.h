/* Asymmetric memory fences: a cheap side for the hot path, an expensive side
 * for the rare one (the urcu-memb pattern).
 *
 * The recorder's writers announce themselves with a store (`busy = 1`) and
 * then load a flag the other side may have set (session state, ring freeze).
 * The other side (stop, idle-ring flush, snapshot) stores its flag and then
 * loads `busy`. Store-then-load on both sides needs a full barrier on both
 * sides (Dekker). With membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) the
 * heavy side issues that barrier on every CPU running this process, so the
 * light side needs only a compiler barrier: if the heavy side then reads
 * busy == 0, the writer's later load of the flag comes after the
 * membarrier and sees it. A writer preempted between its store and its load
 * is covered too: a context switch is a full barrier.
 *
 * Where the kernel refuses membarrier (old kernels, seccomp filters) both
 * sides fall back to sequentially consistent fences; bmt_fence_init says
 * which applies, once per process, before any writer runs.
 */
#ifndef BMT_FENCE_H
#define BMT_FENCE_H

#include <stdatomic.h>

/* 1 once membarrier is registered for this process; never changes back.
 * Written once by bmt_fence_init (library load), read on every event.
 * Hidden: read PC-relative, not through the GOT, from a shared library. */
extern int bmt_fence_asymmetric __attribute__((visibility("hidden")));

/* Registers this process for private expedited membarrier. Idempotent and
 * thread-safe; returns 1 when the asymmetric fences are in use. */
int bmt_fence_init(void);

/* The writer's side: between its announcing store and its checking load. */
static inline void bmt_fence_light(void)
{
    if (__builtin_expect(bmt_fence_asymmetric, 1))
        atomic_signal_fence(memory_order_seq_cst); /* compiler barrier only */
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* The rare side: between its flag store and its load of the writers'
 * `busy` words. A system call (a few microseconds) when asymmetric. */
void bmt_fence_heavy(void);

#endif
