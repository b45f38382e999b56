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

__thread struct bmt_tls bmt_tls __attribute__((tls_model("initial-exec")));

int bmt_threads_init(struct bmt_threads *th, uint64_t instance, ERL_NIF_TERM nil,
                     const int counts[BMT_THREAD_KINDS], int by_kind)
{
    th->instance = instance;
    th->nil = nil;
    th->by_kind = by_kind;
    int total = 0;
    for (int k = 0; k < BMT_THREAD_KINDS; k++) {
        int n = counts[k] > 0 ? counts[k] : 0;
        if (n > BMT_MAX_THREADS - total)
            n = BMT_MAX_THREADS - total;
        th->first[k] = total;
        total += n;
        atomic_init(&th->next[k], 0);
    }
    th->first[BMT_THREAD_KINDS] = total;
    th->max_threads = total;
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

/* The kind of the calling thread (the VM says: enif_thread_type). */
static enum bmt_thread_kind thread_kind(void)
{
    switch (enif_thread_type()) {
    case ERL_NIF_THR_NORMAL_SCHEDULER:
        return BMT_THREAD_SCHEDULER;
    case ERL_NIF_THR_DIRTY_CPU_SCHEDULER:
        return BMT_THREAD_DIRTY_CPU;
    case ERL_NIF_THR_DIRTY_IO_SCHEDULER:
        return BMT_THREAD_DIRTY_IO;
    default:
        return BMT_THREAD_OTHER;
    }
}

/* A free slot in the range of the calling thread's kind, else in the other
 * threads' range, else -1. Each range hands its slots out in turn; a
 * counter past its range stays there (a thread takes a slot once). */
static int take_slot(struct bmt_threads *th)
{
    int kind = th->by_kind ? (int)thread_kind() : BMT_THREAD_OTHER;
    for (;;) {
        int i = atomic_fetch_add(&th->next[kind], 1);
        if (i < th->first[kind + 1] - th->first[kind])
            return th->first[kind] + i;
        if (kind == BMT_THREAD_OTHER)
            return -1;
        kind = BMT_THREAD_OTHER;
    }
}

struct thread_ctx *bmt_thread_ctx_slow(struct bmt_threads *th)
{
    intptr_t stored = (intptr_t)pthread_getspecific(th->slot_key);
    int slot;
    if (stored > 0) {
        slot = (int)stored - 1;
    } else {
        slot = take_slot(th);
        /* A thread past the table has no context: its events are counted
         * as dropped, never written into another thread's ring. */
        if (slot >= 0)
            pthread_setspecific(th->slot_key, (void *)(intptr_t)(slot + 1));
    }
    bmt_tls.instance = th->instance;
    bmt_tls.ctx = slot < 0 ? NULL : &th->ctx[slot];
    bmt_tls.words_epoch = 0; /* until enabled_* fills this context's words */
    if (slot >= 0) {
        th->ctx[slot].slot = slot;
        th->ctx[slot].rec_slot_offset = bmt_rec_slot_offset((unsigned)slot);
        th->ctx[slot].fmt.nil = th->nil;
        th->ctx[slot].fmt.last_tracee = &th->ctx[slot].fmt.text.ids.slot[0];
        th->ctx[slot].words_epoch = ~UINT64_C(0);
    }
    return bmt_tls.ctx;
}
