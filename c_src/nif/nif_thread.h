/* Each thread's context: its ring slot in every session, the re-entry
 * guard, what enabled_* decided for the trace_* call that follows, its
 * clock anchor, its formatting caches and the scratch room an event is
 * decoded into when no ring takes it.
 *
 * A context is owned by exactly one thread (found through initial-exec TLS,
 * inline below; nif_thread.c gives a thread its slot the first time), so
 * nothing in it is locked or atomic. Contexts live in the state's mmap'ed
 * table, one page range per slot, backed only once its thread traces.
 */
#ifndef BMT_NIF_THREAD_H
#define BMT_NIF_THREAD_H

#include "core/clock.h"
#include "core/event.h"
#include "nif_format.h"
#include "recorder/recorder.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Sampling's per-thread state (nif_sample.h): the random sequence, and
 * the answer for the process now scheduled in and the collection now
 * running on this thread, until their out and end. */
struct bmt_sample_thread {
    uint64_t rng;
    ERL_NIF_TERM sched_pid, gc_pid;
    int sched_session, gc_session;
    int sched_keep, gc_keep;
};

/* What the USDT sink knows of the resume function of the process running
 * on this thread, for process-hibernate (nif_decode.c): set when the
 * process is scheduled in (where it was then) and by a call of
 * erlang:hibernate/3 the call flag traces (exactly where it resumes);
 * read when it is scheduled out hibernating. Kept only while a tracer listens to
 * process-hibernate. */
struct bmt_hibernation {
    ERL_NIF_TERM pid;           /* whose; 0: nobody's */
    int called;                 /* mfa is the erlang:hibernate/3 call's: the
                                 * process's next out is its hibernation */
    char mfa[BMT_MFA_MAX_BYTES + 1];
};

struct thread_ctx {
    int slot;                   /* this thread's ring in every session */
    int in_use;                 /* re-entry guard: inside an event */
    size_t rec_slot_offset;     /* bmt_rec_slot_offset(slot) */
    /* What enabled_<flag>/3 decided (nif_dispatch.h's decision word), for
     * the trace_<flag>/5 call the VM makes next on this thread for the same
     * event: the same tag and tracer state words. Every sink checks again
     * when it writes, so reusing it is safe. */
    ERL_NIF_TERM decided_tag;   /* 0: none */
    ERL_NIF_TERM decided_state;
    /* For a decided_state other than []: its handle identity
     * (nif_session.h), which the copy of it the VM hands trace_* when a
     * match spec runs shares; 0 for other states. */
    ERL_NIF_TERM decided_identity;
    uint64_t decision;
    /* The recorder's part of the decision word for tracer state [] of every
     * tracepoint (nif_dispatch.h), as of the recorder's epoch
     * `words_epoch`: enabled_* reads one word instead of the default
     * session, its state, masks and options. ~0: never filled. */
    uint64_t words_epoch;
    uint64_t default_words[BMT_TP_COUNT];
    /* The session handle last resolved on this thread (a tracer state
     * other than []; nif_dispatch.h's bmt_resolve_handle_cached): its
     * identity (nif_session.h; 0: none), the session it names and that
     * session's generation, as of the recorder's epoch `handle_epoch`. */
    ERL_NIF_TERM handle_identity;
    uint64_t handle_epoch;
    struct bmt_session *handle_session;
    uint64_t handle_generation;
    /* The recorder's part of the decision word for that session, of each
     * tracepoint whose bit is set in handle_words_valid (filled as asked,
     * emptied with the entry). */
    uint64_t handle_words_valid;
    uint64_t handle_words[BMT_TP_COUNT];
    struct bmt_sample_thread sample;
    ERL_NIF_TERM flight_pending; /* a flight trigger said `trace` to this pid's call
                                    (nif_flight_call.c): its trace_call is a no-op */
    ERL_NIF_TERM flight_pending_state; /* that trigger's tracer state */
    struct bmt_clock_thread clock;
    struct bmt_event event;
    struct bmt_format_cache fmt;
    struct bmt_hibernation hibernation;
    /* Field text when no ring takes the event (LTTng or USDT only, user
     * probes): the largest event of any tracepoint, plus room for the
     * USDT-only arguments. */
    _Alignas(8) uint8_t scratch[BMT_EVENT_HEADER_MAX_BYTES + 4 * (BMT_MFA_MAX_BYTES + 1) +
                                BMT_MSG_MAX_BYTES + 1 + 6 * (BMT_USER_MAX_BYTES + 1)];
};

/* The kinds of VM thread a slot may belong to (enif_thread_type): the
 * slots are laid out by kind, so that a stream's number (its slot) says
 * which kind of thread wrote it, and the command can count processes on
 * dirty schedulers apart from those on normal ones. */
enum bmt_thread_kind {
    BMT_THREAD_SCHEDULER,
    BMT_THREAD_DIRTY_CPU,
    BMT_THREAD_DIRTY_IO,
    BMT_THREAD_OTHER,           /* any other thread, or a kind's range full */
    BMT_THREAD_KINDS
};

/* The table of thread contexts, one per slot: part of the library's state
 * (shared by every copy of the library that uses that state). */
struct bmt_threads {
    uint64_t instance;          /* the state's random id (TLS tag, below) */
    ERL_NIF_TERM nil;           /* the word of [] */
    pthread_key_t slot_key;     /* each thread's slot + 1, shared by every copy
                                 * of the library that uses this state */
    int max_threads;            /* slots: the VM's schedulers and then some */
    /* Slots [first[k], first[k + 1]) are kind k's; by_kind is 0 when the
     * loader gave a total only (every slot is then BMT_THREAD_OTHER's). */
    int first[BMT_THREAD_KINDS + 1];
    int by_kind;
    _Atomic int next[BMT_THREAD_KINDS]; /* next free slot of each kind's, from its first */
    struct thread_ctx *ctx;     /* BMT_MAX_THREADS, mmap'ed */
};

/* Makes the table: counts[k] slots for threads of kind k (the VM's
 * schedulers of each kind, and some for its other threads), at most
 * BMT_MAX_THREADS in all; by_kind 0 when only the total is known (it is
 * then counts[BMT_THREAD_OTHER]). Address space for every slot, backed
 * only once its thread traces. Returns 0 or -1 (nothing left behind). */
int bmt_threads_init(struct bmt_threads *th, uint64_t instance, ERL_NIF_TERM nil,
                     const int counts[BMT_THREAD_KINDS], int by_kind);

/* Frees what bmt_threads_init made (no thread inside a context). */
void bmt_threads_free(struct bmt_threads *th);

/* This copy of the library's TLS cache of the calling thread's context,
 * tagged with the state's instance id (nif_thread.c says why). One
 * variable, so that reaching all three costs one look-up of its offset.
 * `words_epoch` is the recorder's epoch of the context's default words
 * (thread_ctx.words_epoch) once enabled_* filled them through this very
 * context, else 0: equal to the state's epoch, it says the context is
 * this state's, not NULL, and its words current, in one compare. Epochs
 * start at a random value of the state's (below 2^63, never 0: nif_state.c),
 * so another state's epoch does not match by chance. */
struct bmt_tls {
    uint64_t instance;
    struct thread_ctx *ctx;
    uint64_t words_epoch;
};
extern __thread struct bmt_tls bmt_tls __attribute__((tls_model("initial-exec")));

/* The calling thread's context the first time (or after a reload): gives
 * the thread a slot. NULL when the slots are all taken. */
struct thread_ctx *bmt_thread_ctx_slow(struct bmt_threads *th);

/* The calling thread's context, or NULL when the slots are all taken. */
static inline struct thread_ctx *bmt_thread_ctx(struct bmt_threads *th)
{
    if (__builtin_expect(bmt_tls.instance == th->instance, 1))
        return bmt_tls.ctx;
    return bmt_thread_ctx_slow(th);
}

/* Enters the calling thread's context for one event: NULL when the thread
 * has no slot, or is already inside an event (our own formatting re-entered
 * the tracer: never recurse). The caller counts what it then cannot record.
 * A non-NULL context must be left with bmt_thread_leave. */
static inline struct thread_ctx *bmt_thread_enter(struct thread_ctx *t)
{
    if (!t || t->in_use)
        return NULL;
    t->in_use = 1;
    return t;
}

static inline void bmt_thread_leave(struct thread_ctx *t)
{
    t->in_use = 0;
}

#endif
