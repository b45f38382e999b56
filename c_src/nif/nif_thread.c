/* Thread slots (contract in nif_thread.h).
 *
 * A thread's slot: the source of truth is the state's pthread key, which
 * every copy of this library sharing the state reads (after a code upgrade
 * from another file, or the dyntrace shim), so a thread has one slot per
 * state, not one per copy. This copy's TLS caches the context, tagged with
 * the state's random instance id so a slot of an earlier state is never
 * reused (bmt_thread_ctx reads it inline). initial-exec TLS: a direct
 * %fs-relative load on every event; 16 bytes fit the static TLS glibc
 * keeps for dlopen.
 */
#include "nif_thread.h"

#include <sys/mman.h>

__thread uint64_t bmt_tls_instance __attribute__((tls_model("initial-exec")));
__thread struct thread_ctx *bmt_tls_ctx __attribute__((tls_model("initial-exec")));

int bmt_threads_init(struct bmt_threads *th, uint64_t instance, ERL_NIF_TERM nil, int max_threads)
{
    th->instance = instance;
    th->nil = nil;
    th->max_threads = max_threads < BMT_MAX_THREADS ? max_threads : BMT_MAX_THREADS;
    atomic_init(&th->next_thread, 0);
    if (pthread_key_create(&th->slot_key, NULL) != 0)
        return -1;
    th->ctx = mmap(NULL, sizeof(struct thread_ctx) * BMT_MAX_THREADS, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (th->ctx == MAP_FAILED) {
        th->ctx = NULL;
        pthread_key_delete(th->slot_key);
        return -1;
    }
    return 0;
}

void bmt_threads_free(struct bmt_threads *th)
{
    if (!th->ctx)
        return;
    munmap(th->ctx, sizeof(struct thread_ctx) * BMT_MAX_THREADS);
    th->ctx = NULL;
    pthread_key_delete(th->slot_key);
}

struct thread_ctx *bmt_thread_ctx_slow(struct bmt_threads *th)
{
    intptr_t stored = (intptr_t)pthread_getspecific(th->slot_key);
    int slot;
    if (stored > 0) {
        slot = (int)stored - 1;
    } else {
        slot = atomic_fetch_add(&th->next_thread, 1);
        /* A thread past the table has no context: its events are counted
         * as dropped, never written into another thread's ring. */
        if (slot >= th->max_threads)
            slot = -1;
        else
            pthread_setspecific(th->slot_key, (void *)(intptr_t)(slot + 1));
    }
    bmt_tls_instance = th->instance;
    bmt_tls_ctx = slot < 0 ? NULL : &th->ctx[slot];
    if (slot >= 0) {
        th->ctx[slot].slot = slot;
        th->ctx[slot].fmt.nil = th->nil;
    }
    return bmt_tls_ctx;
}
