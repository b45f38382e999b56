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

#include "core/catalogue.h"
#include "core/event.h"
#include "recorder/recorder.h"
#include "nif_term_text.h"

#include <erl_nif.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

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
    X(term) X(send) X(send_to_non_existing_process) X(match_spec_result)    \
    X(links) X(after_stop) X(schedulers)

struct bmt_atoms {
#define X(name) ERL_NIF_TERM name;
#define Y(field, text) ERL_NIF_TERM field;
    BMT_ATOMS(X, Y)
#undef X
#undef Y
};

/* The session's message option: printed up to that many bytes, or only
 * the message's size in heap words. */
#define BMT_MESSAGE_SIZE_ONLY (-1)

/* The session's tracer options, packed into the recorder's opaque
 * format_option: the message option in the low 16 bits (0xffff for
 * BMT_MESSAGE_SIZE_ONLY; BMT_MSG_MAX_BYTES fits), and BMT_FORMAT_LINKS when
 * message events are recorded as their link variants (message_send_link,
 * message_receive_link). */
#define BMT_FORMAT_LINKS 0x10000
_Static_assert(BMT_MSG_MAX_BYTES < 0xffff, "the message option fits 16 bits");
static inline int bmt_format_pack(int message_bytes, int links)
{
    return (message_bytes & 0xffff) | (links ? BMT_FORMAT_LINKS : 0);
}
static inline int bmt_format_message_bytes(int format_option)
{
    int bytes = format_option & 0xffff;
    return bytes == 0xffff ? BMT_MESSAGE_SIZE_ONLY : bytes;
}

/* What enabled_<flag>/3 decided, for the trace_<flag>/5 call the VM makes
 * next on the same thread for the same event (same tag and tracer state
 * words). Every sink checks again when it writes, so reusing it is safe. */
struct bmt_decision {
    ERL_NIF_TERM tag, state;    /* the enabled_* call's; tag 0 = none */
    int tp;                     /* tracepoint id */
    int rec_tp;                 /* what the recorder records: tp, or its link variant */
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
    ERL_NIF_TERM nil;           /* the word of [] (priv's, at hand) */
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
    ERL_NIF_TERM nil;           /* the word of [], a constant: compared, never called for */
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
struct bmt_session *bmt_resolve_handle(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM state,
                                       uint64_t *generation);
static inline struct bmt_session *bmt_resolve_session(struct priv *p, ErlNifEnv *env,
                                                      ERL_NIF_TERM state, uint64_t *generation)
{
    if (state == p->nil)
        return bmt_rec_default(&p->rec, generation);
    return bmt_resolve_handle(p, env, state, generation);
}

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
/* clock_ns() -> integer(): CLOCK_MONOTONIC now, ns: the clock of the
 * trace's timestamps (for estimating clock offsets between nodes). */
ERL_NIF_TERM bmt_nif_clock_ns(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* nif_format.c */
/* The calling thread's context, or NULL when the slots are all taken. */
extern __thread uint64_t bmt_tls_instance __attribute__((tls_model("initial-exec")));
extern __thread struct thread_ctx *bmt_tls_ctx __attribute__((tls_model("initial-exec")));
struct thread_ctx *bmt_thread_ctx_slow(struct priv *p);
static inline struct thread_ctx *bmt_thread_ctx(struct priv *p)
{
    if (__builtin_expect(bmt_tls_instance == p->instance, 1))
        return bmt_tls_ctx;
    return bmt_thread_ctx_slow(p);
}
/* Each writes text at `out` (room for its kind's bound plus NUL) and returns
 * its length in bytes. */
size_t bmt_format_id(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM term, char *out);
/* `vm_args`: the term's argument list (if any) was built by the VM for a
 * call, so it holds at most 255 elements. The cache hit is inline; a miss
 * (or anything odd) takes bmt_format_mfa_miss, which also fills the cache. */
size_t bmt_format_mfa_miss(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM term, char *out,
                           int vm_args);

static inline unsigned bmt_mfa_slot(ERL_NIF_TERM module, ERL_NIF_TERM function,
                                    unsigned long arity)
{
    uint64_t x = (uint64_t)module * UINT64_C(0x9E3779B97F4A7C15) ^
                 ((uint64_t)function + arity) * UINT64_C(0xbf58476d1ce4e5b9);
    return (unsigned)(x >> 56) % MFA_CACHE_SIZE;
}

/* The arity an MFA's third element says: [] is 0 (compared by its word, a
 * constant the thread context keeps); a list of arguments its length (the
 * VM's own walk when the VM built it for a call; else counted up to 256,
 * since no function takes more than 255); an integer itself (the `arity'
 * trace flag: the VM copies no arguments). Returns 0 for anything else. */
static inline int bmt_mfa_arity(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM args,
                                int vm_args, unsigned long *arity)
{
    unsigned len;
    if (args == t->nil) {
        *arity = 0;
        return 1;
    }
    if (vm_args) {
        if (enif_get_list_length(env, args, &len)) {
            *arity = len;
            return 1;
        }
    } else if (enif_is_list(env, args)) {
        ERL_NIF_TERM head;
        for (len = 0; len <= 255 && enif_get_list_cell(env, args, &head, &args);)
            len++;
        *arity = len;
        return len <= 255 && enif_is_empty_list(env, args);
    }
    return enif_get_ulong(env, args, arity);
}

static inline size_t bmt_format_mfa(struct thread_ctx *t, ErlNifEnv *env, ERL_NIF_TERM term,
                                    char *out, int vm_args)
{
    const ERL_NIF_TERM *mfa;
    int size;
    unsigned long arity;
    if (enif_get_tuple(env, term, &size, &mfa) && size == 3 &&
        bmt_mfa_arity(t, env, mfa[2], vm_args, &arity)) {
        const struct mfa_cache_entry *e = &t->mfas[bmt_mfa_slot(mfa[0], mfa[1], arity)];
        if (e->len && e->module == mfa[0] && e->function == mfa[1] && e->arity == arity) {
            memcpy(out, e->text, sizeof e->text);
            return e->len;
        }
    }
    return bmt_format_mfa_miss(t, env, term, out, vm_args);
}
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
