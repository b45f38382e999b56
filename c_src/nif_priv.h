/* State shared by the NIF's files: the atoms, the recorder, the per-thread
 * contexts. Lives in the library's priv_data; never in globals.
 *
 * Threads: the tracer callbacks run on any scheduler thread (normal or
 * dirty) at once; start/stop/info/snapshot run on dirty I/O schedulers and
 * the recorder serialises them; each running session has a consumer thread
 * (recorder.c) that may call back into on_stopped (nif_control.c).
 *
 * Handles given to Erlang name (instance, index, generation), so a stale
 * handle, or a tracer state naming a stopped session, is recognised without
 * any lock, and a handle from an earlier load of the library names nothing.
 */
#ifndef BMT_NIF_PRIV_H
#define BMT_NIF_PRIV_H

#include "catalogue.h"
#include "event.h"
#include "recorder.h"
#include "nif_term_text.h"

#include <erl_nif.h>
#include <pthread.h>
#include <stdatomic.h>

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
    X(running) X(stopped) X(reason) X(infinity)                              \
    X(file_mode) X(max_bytes) X(max_events) X(duration) X(max_rate)          \
    X(tracefile_size) X(tracefile_count) X(flush_interval) X(notify)         \
    X(node) X(wakeups) X(not_flight_recorder) X(beamtrace)                   \
    X(erlang) X(hibernate) X(port_control) X(command) X(close) X(connect)    \
    X(recorder) X(lttng) X(usdt) X(unavailable) X(s1) X(i4s4) X(n)           \
    X(term)

struct bmt_atoms {
#define X(name) ERL_NIF_TERM name;
#define Y(field, text) ERL_NIF_TERM field;
    BMT_ATOMS(X, Y)
#undef X
#undef Y
};

/* The session's message option, as format_option: printed up to that many
 * bytes, or only the message's size in heap words. */
#define BMT_MESSAGE_SIZE_ONLY (-1)

/* What enabled_<flag>/3 decided, for the trace_<flag>/5 call the VM makes
 * next on the same thread for the same event (same tag and tracer state
 * words). Every sink checks again when it writes, so reusing it is safe. */
struct bmt_decision {
    ERL_NIF_TERM tag, state;    /* the enabled_* call's; tag 0 = none */
    int tp;                     /* tracepoint id */
    unsigned sinks;             /* BMT_SINK_* bits */
    struct bmt_session *session;
    uint64_t generation;
};

/* Per-thread scratch and caches; owned by exactly one thread. */
#define MFA_CACHE_SIZE 256
/* Longest MFA text the cache keeps; every entry is copied as a whole
 * fixed-size block (no length-dependent copy loop). */
#define MFA_CACHE_TEXT 64

struct mfa_cache_entry {
    ERL_NIF_TERM module, function;
    unsigned long arity;
    uint8_t len; /* 0: empty entry */
    char text[MFA_CACHE_TEXT];
};

struct thread_ctx {
    int slot;                   /* this thread's ring in every session */
    int in_use;                 /* re-entry guard */
    struct bmt_decision decision;
    uint64_t tsc_anchor;        /* TSC at the last clock anchor, ticks */
    uint64_t ns_anchor;         /* CLOCK_MONOTONIC at that anchor, ns */
    uint64_t last_ns;           /* last timestamp this thread gave, ns */
    struct bmt_event event;
    struct bmt_text_cache text; /* pids, ports and atoms */
    struct mfa_cache_entry mfas[MFA_CACHE_SIZE];
    /* Field text when no ring takes the event (LTTng or USDT only, user
     * probes): the largest event of any tracepoint, plus room for the
     * USDT-only arguments. */
    _Alignas(8) uint8_t scratch[BMT_EVENT_HEADER_MAX_BYTES + 4 * (BMT_MFA_MAX_BYTES + 1) +
                                BMT_MSG_MAX_BYTES + 1 + 6 * (BMT_USER_MAX_BYTES + 1)];
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
    ((UINT64_C(2) << 48) + (sizeof(struct priv) << 24) + (sizeof(struct bmt_session) << 8) + \
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
    struct bmt_tsc_clock clock;
    ErlNifResourceType *session_type;
    int refs;                   /* load + upgrades not yet unloaded */
    int max_threads;            /* thread slots: the VM's schedulers and then some */
    _Atomic int next_thread;    /* next free thread slot */
    struct thread_ctx *threads; /* BMT_MAX_THREADS, mmap'ed */
    /* One handle per session, kept (a resource reference) while the
     * session is known, so every term naming it is the same term (=:=):
     * start's, sessions()', the stop notification's. */
    ErlNifMutex *handles_lock;
    struct session_handle *handles[BMT_MAX_SESSIONS];
    struct bmt_recorder rec;
};

/* The resource handed to Erlang as a session handle. */
struct session_handle {
    uint64_t instance;          /* priv->instance of the state that made it */
    int index;
    uint64_t generation;
};

/* nif_control.c: session control NIFs. */
ERL_NIF_TERM bmt_nif_start(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_sessions(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_snapshot(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
/* The recorder's notify callback: tells a session's `notify` process. */
void bmt_on_stopped(void *ctx, int index, uint64_t generation, enum bmt_stop_reason reason);

/* Resolves a tracer state ([] = the default session, or a handle) to its
 * session core and the generation it must still have. NULL when the state
 * names no session. */
struct bmt_session *bmt_resolve_session(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM state,
                                        uint64_t *generation);

/* nif_tracer.c: the erl_tracer callbacks (their table is
 * c_src/tracer_callbacks.def). */
#define X(name, arity) ERL_NIF_TERM bmt_nif_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
#include "tracer_callbacks.def"
#undef X

/* nif_user.c: user probes. Labels of user_trace_n: 0..1023. */
#define BMT_USER_LABELS 1024
ERL_NIF_TERM bmt_nif_user_probe_wanted(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_s1(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_i4s4(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_user_trace_n(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bmt_nif_emit(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* nif_clock.c: calibrates `c` against CLOCK_MONOTONIC (about 20 ms; dirty
 * scheduler only); a no-op when done already or without an invariant TSC. */
void bmt_clock_calibrate(struct bmt_tsc_clock *c);
/* CLOCK_MONOTONIC ns for an event on the calling thread: monotonic per thread. */
uint64_t bmt_event_ns(const struct bmt_tsc_clock *c, struct thread_ctx *t);

/* nif_format.c */
/* The calling thread's context, or NULL when the slots are all taken. */
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
 * immediates, approximate where the NIF API hides the layout), walking at
 * most BMT_TERM_WORDS_BUDGET subterms: *complete is 0 when it gave up. */
#define BMT_TERM_WORDS_BUDGET 65536
size_t bmt_term_words(ErlNifEnv *env, ERL_NIF_TERM term, int *complete);

#endif
