/* State shared by the NIF's files: the atoms, the session table, and the
 * per-thread contexts. Lives in the library's priv_data; never in globals.
 *
 * Threads: the tracer callbacks run on any scheduler thread (normal or
 * dirty) at once; start/stop run on dirty I/O schedulers, serialised by
 * `control`; each running session has one consumer thread.
 *
 * A session core (struct session) is never freed while the library is
 * loaded: a stopped core is reused by a later start with a new generation.
 * Handles given to Erlang name (index, generation), so a stale handle or a
 * tracer state naming a stopped session is recognised without any lock.
 */
#ifndef BMT_NIF_PRIV_H
#define BMT_NIF_PRIV_H

#include "catalogue.h"
#include "event.h"
#include "ring.h"
#include "trace_dir.h"
#include "nif_term_text.h"

#include <erl_nif.h>
#include <pthread.h>
#include <stdatomic.h>

#define BMT_MAX_SESSIONS 16
#define BMT_MAX_THREADS BMT_MAX_STREAMS

/* Atoms made once at load. Tag atoms are the erl_tracer trace tags.
 * X(name) makes atom `name` in field `name`; Y(field, "text") where the text
 * is a C keyword. */
#define BMT_ATOMS(X, Y)                                                      \
    X(ok) X(error) Y(true_, "true") Y(false_, "false") X(undefined) X(badopt) \
    X(trace) X(discard) X(remove) X(trace_status) X(extra)                   \
    X(spawn) X(link) X(unlink) X(getting_linked) X(getting_unlinked)         \
    X(exit) Y(register_, "register") X(unregister) X(open) X(closed)         \
    X(in) X(out) X(in_exiting) X(out_exiting) X(out_exited)                  \
    X(call) X(return_from) X(return_to) X(exception_from)                    \
    X(gc_minor_start) X(gc_minor_end) X(gc_major_start) X(gc_major_end)      \
    X(wordsize) X(heap_block_size) X(old_heap_block_size)                    \
    X(dir) X(events) X(mode) X(overwrite) X(buffer_size) X(subbuffers)       \
    X(message_length) X(size_only) Y(default_, "default") X(not_running)     \
    X(too_many_sessions) X(discarded) X(overwritten) X(written_bytes) X(state) \
    X(running) X(failed) X(reason)                                           \
    X(erlang) X(hibernate) X(port_control) X(command) X(close) X(connect)    \
    X(recorder) X(lttng) X(usdt) X(unavailable) X(s1) X(i4s4) X(n)

struct bmt_atoms {
#define X(name) ERL_NIF_TERM name;
#define Y(field, text) ERL_NIF_TERM field;
    BMT_ATOMS(X, Y)
#undef X
#undef Y
};

enum session_state {
    SESSION_STOPPED = 0, /* free core, or a stopped session */
    SESSION_RUNNING,
    SESSION_FAILED,      /* the consumer could not write; waiting for stop */
    SESSION_STOPPING,
};

/* The session's message option: printed up to message_bytes, or only the
 * message's size in heap words. */
#define BMT_MESSAGE_SIZE_ONLY (-1)

/* One recording thread's ring in one session. `busy` brackets every write so
 * stop can wait for writers in flight (Dekker-style with `state`). */
struct slot {
    struct bmt_ring ring;
    _Alignas(BMT_CACHE_LINE) _Atomic int busy;
};

struct session {
    _Atomic int state;          /* enum session_state */
    _Atomic uint64_t generation;/* bumped at each start of this core */
    /* Fixed while running; atomics because a stale writer may read them
     * while start rewrites a reused core (it then fails the live check). */
    _Atomic uint64_t enable_mask; /* bit per tracepoint id */
    _Atomic int message_bytes;  /* 0..BMT_MSG_MAX_BYTES, or BMT_MESSAGE_SIZE_ONLY */
    enum bmt_ring_mode mode;
    size_t subbuf_bytes;
    uint32_t subbuf_count;
    int ring_count;             /* rings: priv->max_threads */
    uint8_t *ring_mem;          /* ring_count rings, mmap'ed, pages touched lazily */
    size_t ring_mem_bytes;
    uint32_t *packet_meta;      /* per-ring packet_events and packet_bytes arrays */
    struct bmt_trace_dir dir;
    ErlNifTid consumer;
    _Atomic int consumer_stop;
    int wake_fd;                /* eventfd the consumer sleeps on */
    int wake_on_publish;        /* writers wake it when they publish a packet */
    _Atomic int wake_pending;   /* a wakeup is written and not yet consumed */
    /* Counters. */
    _Atomic uint64_t no_slot_drops;   /* events from threads past max_threads, or re-entered */
    _Atomic uint64_t write_lost;      /* events in packets the disk refused */
    _Atomic uint64_t written_events;  /* events in packets written to disk */
    _Atomic int error;                /* errno of the first write failure */
    struct slot slots[BMT_MAX_THREADS];
};

/* Per-thread scratch and caches; owned by exactly one thread. */
#define MFA_CACHE_SIZE 256
#define MFA_CACHE_TEXT 120

struct mfa_cache_entry {
    ERL_NIF_TERM module, function;
    unsigned long arity;
    uint8_t len; /* 0: empty entry */
    char text[MFA_CACHE_TEXT];
};

struct thread_ctx {
    int in_use;                 /* re-entry guard */
    uint64_t tsc_anchor;        /* TSC at the last clock anchor, ticks */
    uint64_t ns_anchor;         /* CLOCK_MONOTONIC at that anchor, ns */
    uint64_t last_ns;           /* last timestamp this thread gave, ns */
    struct bmt_event event;
    struct bmt_text_cache text; /* pids, ports and atoms */
    struct mfa_cache_entry mfas[MFA_CACHE_SIZE];
    /* Field text: the bounds of catalogue.h for every string field. */
    char scratch[4 * (BMT_MFA_MAX_BYTES + 1) + BMT_MSG_MAX_BYTES + 1];
};

struct bmt_lttng_provider;

/* The TSC-based event clock (nif_clock.c). */
struct bmt_tsc_clock {
    _Atomic int usable;         /* calibrated, invariant TSC */
    uint64_t mult;              /* ns per tick, 32.32 fixed point */
    uint64_t anchor_ticks;      /* ticks between a thread's re-anchors (1 ms) */
};

/* Layout of the shared state: a library built with another layout must not
 * take this state over (upgrade, dyntrace shim). The sizes catch most
 * changes; bump the version for the rest. */
#define BMT_PRIV_LAYOUT                                                              \
    ((UINT64_C(1) << 48) + (sizeof(struct priv) << 24) + (sizeof(struct session) << 8) + \
     sizeof(struct bmt_atoms) / 8)

struct priv {
    uint64_t magic;             /* BMT_PRIV_MAGIC while alive */
    uint64_t layout;            /* BMT_PRIV_LAYOUT of the library that made it */
    uint64_t instance;          /* random: tells this state from any earlier one */
    pthread_key_t slot_key;     /* each thread's slot + 1, shared by every copy
                                 * of the library that uses this state */
    struct bmt_atoms atom;
    const struct bmt_lttng_provider *lttng; /* NULL when LTTng-UST is absent */
    char lttng_why[160];        /* why it is absent */
    _Atomic uint64_t recorder_mask; /* OR of the running sessions' enable masks */
    struct bmt_tsc_clock clock;
    ErlNifResourceType *session_type;
    int refs;                   /* load + upgrades not yet unloaded */
    ErlNifMutex *control;       /* serialises start/stop */
    /* The default session as (generation << 8 | index + 1), 0 for none:
     * one word, so a reader gets an index and generation that belong
     * together. */
    _Atomic uint64_t default_session;
    int max_threads;            /* thread slots: the VM's schedulers and then some */
    _Atomic int next_thread;    /* next free thread slot */
    struct thread_ctx *threads; /* BMT_MAX_THREADS, mmap'ed */
    struct session *sessions;   /* BMT_MAX_SESSIONS */
};

/* The resource handed to Erlang as a session handle. */
struct session_handle {
    uint64_t instance;          /* priv->instance of the state that made it */
    int index;
    uint64_t generation;
};

/* nif_session.c */
ERL_NIF_TERM bmt_nif_start(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_sessions(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
/* Stops every running session, draining it to disk (unload path). */
void bmt_sessions_stop_all(struct priv *p);

/* Resolves a tracer state ([] = the default session, or a handle) to its
 * session core and the generation it must still have. NULL when the state
 * names no session. */
struct session *bmt_resolve_session(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM state,
                                    uint64_t *generation);

/* Wakes the consumer of `s` (non-blocking; at most one write per wakeup). */
void bmt_session_wake(struct session *s);

/* Returns 1 when `s` records with `generation`. A session whose disk
 * failed still takes events: the consumer counts them as lost, so every
 * event offered is recorded or counted until stop. */
static inline int bmt_session_live(struct session *s, uint64_t generation)
{
    int state = atomic_load(&s->state);
    return (state == SESSION_RUNNING || state == SESSION_FAILED) &&
           atomic_load_explicit(&s->generation, memory_order_relaxed) == generation;
}

/* 1 when `s` records tracepoint `tp` (the mask is read relaxed: a stale
 * value only matters to a writer that then fails the live check). */
static inline int bmt_session_wants(const struct session *s, int tp)
{
    return atomic_load_explicit(&s->enable_mask, memory_order_relaxed) >> tp & 1;
}

/* Counts an event `s` wanted but could not take from this thread (no
 * thread slot, or a re-entered callback). */
static inline void bmt_session_drop(struct session *s)
{
    atomic_fetch_add_explicit(&s->no_slot_drops, 1, memory_order_relaxed);
}

/* nif_tracer.c: the erl_tracer callbacks are listed in nif_main.c's table. */
#define BMT_TRACER_NIFS(X)                                                       \
    X(enabled, 3) X(trace, 5)                                                    \
    X(enabled_procs, 3) X(trace_procs, 5)                                        \
    X(enabled_ports, 3) X(trace_ports, 5)                                        \
    X(enabled_running_procs, 3) X(trace_running_procs, 5)                        \
    X(enabled_running_ports, 3) X(trace_running_ports, 5)                        \
    X(enabled_call, 3) X(trace_call, 5)                                          \
    X(enabled_send, 3) X(trace_send, 5)                                          \
    X(enabled_receive, 3) X(trace_receive, 5)                                    \
    X(enabled_garbage_collection, 3) X(trace_garbage_collection, 5)

#define X(name, arity) ERL_NIF_TERM bmt_nif_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
BMT_TRACER_NIFS(X)
#undef X

/* nif_user.c: user probes. Labels of user_trace_n: 0..1023. */
#define BMT_USER_LABELS 1024
ERL_NIF_TERM bmt_nif_user_probe_wanted(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_s1(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_i4s4(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_n(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* nif_clock.c: calibrates `c` against CLOCK_MONOTONIC (about 20 ms; dirty
 * scheduler only); a no-op when done already or without an invariant TSC. */
void bmt_clock_calibrate(struct bmt_tsc_clock *c);
/* CLOCK_MONOTONIC ns for an event on the calling thread: monotonic per thread. */
uint64_t bmt_event_ns(const struct bmt_tsc_clock *c, struct thread_ctx *t);

/* nif_format.c */
struct thread_ctx *bmt_thread_ctx(struct priv *p);
/* Each writes text at `out` (room for its kind's bound plus NUL) and returns
 * its length in bytes. */
size_t bmt_format_id(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM term, char *out);
size_t bmt_format_mfa(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM term, char *out);
size_t bmt_format_term(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM term, char *out,
                       size_t room);
size_t bmt_format_message(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM term,
                          int message_bytes, char *out);
/* Heap words the VM would copy for `term` (exact for tuples, lists and
 * immediates, approximate where the NIF API hides the layout). */
size_t bmt_term_words(ErlNifEnv *env, ERL_NIF_TERM term);

#endif
