/* The NIF library of module `beamtrace`: load, upgrade, unload, and the
 * function table (erl_tracer callbacks plus session control).
 *
 * Loading creates priv_data (atoms, the session-handle resource type, the
 * recorder, the per-thread contexts). A code upgrade that loads this
 * library again hands the same priv_data over (refs counts the holders), so
 * sessions keep recording across `l(beamtrace)`; the last unload stops every
 * session, draining it to disk, before freeing anything. A VM exit finishes
 * every session too (the recorder's exit hook).
 */
#include "nif_priv.h"
#include "nif_shared.h"
#include "sinks/sinks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

static void free_priv(struct priv *p)
{
    bmt_rec_destroy(&p->rec);
    for (int i = 0; i < BMT_MAX_SESSIONS; i++)
        if (p->handles[i])
            enif_release_resource(p->handles[i]);
    if (p->handles_lock)
        enif_mutex_destroy(p->handles_lock);
    if (p->magic == BMT_PRIV_MAGIC) {
        bmt_shared_forget(p);
        pthread_key_delete(p->slot_key);
    }
    p->magic = 0;
    if (p->lttng)
        bmt_lttng_unload(p->lttng);
    if (p->threads)
        munmap(p->threads, sizeof(struct thread_ctx) * BMT_MAX_THREADS);
    free(p);
}

static int open_types(ErlNifEnv *env, struct priv *p, ErlNifResourceFlags flags)
{
    p->session_type = enif_open_resource_type(env, NULL, "beamtrace_session", NULL, flags, NULL);
    return p->session_type ? 0 : -1;
}

/* load_info: {PrivDir, Threads}. The priv directory holds the optional
 * sink libraries; Threads is how many thread slots to keep (the VM's
 * scheduler threads and some more), at most BMT_MAX_THREADS. */
static void load_info_threads(ErlNifEnv *env, struct priv *p, ERL_NIF_TERM load_info)
{
    const ERL_NIF_TERM *info;
    int arity, threads;
    p->max_threads = 256;
    if (enif_get_tuple(env, load_info, &arity, &info) && arity == 2 &&
        enif_get_int(env, info[1], &threads) && threads > 0)
        p->max_threads = threads < BMT_MAX_THREADS ? threads : BMT_MAX_THREADS;
}

static void load_sinks(ErlNifEnv *env, struct priv *p, ERL_NIF_TERM load_info)
{
    char priv_dir[4096];
    ErlNifBinary bin;
    const ERL_NIF_TERM *info;
    int arity;
    if (!enif_get_tuple(env, load_info, &arity, &info) || arity != 2 ||
        !enif_inspect_iolist_as_binary(env, info[0], &bin) || bin.size >= sizeof priv_dir) {
        snprintf(p->lttng_why, sizeof p->lttng_why, "no priv directory given to the NIF");
        return;
    }
    memcpy(priv_dir, bin.data, bin.size);
    priv_dir[bin.size] = '\0';
    p->lttng = bmt_lttng_load(priv_dir, p->lttng_why, sizeof p->lttng_why);
}

static int load(ErlNifEnv *env, void **priv_data, ERL_NIF_TERM load_info)
{
    struct priv *p = calloc(1, sizeof *p);
    if (!p)
        return 1;
#define X(name) p->atom.name = enif_make_atom(env, #name);
#define Y(field, text) p->atom.field = enif_make_atom(env, text);
    BMT_ATOMS(X, Y)
#undef X
#undef Y
    p->nil = enif_make_list(env, 0);
    p->refs = 1;
    p->layout = BMT_PRIV_LAYOUT;
    if (getrandom(&p->instance, sizeof p->instance, 0) != (ssize_t)sizeof p->instance)
        p->instance = bmt_clock_ns() ^ (uintptr_t)p;
    p->instance |= 1; /* never 0, the value of a fresh thread's TLS */
    if (pthread_key_create(&p->slot_key, NULL) != 0) {
        free(p);
        return 1;
    }
    p->magic = BMT_PRIV_MAGIC;
    load_info_threads(env, p, load_info);
    atomic_init(&p->next_thread, 0);
    /* Thread contexts: address space for every possible thread; a page is
     * only backed once its thread traces. */
    p->threads = mmap(NULL, sizeof(struct thread_ctx) * BMT_MAX_THREADS, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p->threads == MAP_FAILED)
        p->threads = NULL;
    p->handles_lock = enif_mutex_create("beamtrace_handles");
    if (!p->threads || !p->handles_lock ||
        bmt_rec_init(&p->rec, p->max_threads, bmt_on_stopped, p) != 0 ||
        open_types(env, p, ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER) != 0 ||
        bmt_shared_remember(p) != 0) {
        free_priv(p);
        return 1;
    }
    load_sinks(env, p, load_info);
    *priv_data = p;
    return 0;
}

static int upgrade(ErlNifEnv *env, void **priv_data, void **old_priv_data, ERL_NIF_TERM load_info)
{
    (void)load_info;
    struct priv *p = *old_priv_data;
    /* Another build's state has another layout: taking it over would read
     * every field at the wrong place. Stop the sessions and load afresh. */
    if (!p || p->magic != BMT_PRIV_MAGIC || p->layout != BMT_PRIV_LAYOUT)
        return 1;
    if (open_types(env, p, ERL_NIF_RT_TAKEOVER) != 0)
        return 1;
    p->refs++;
    *priv_data = p;
    return 0;
}

void bmt_priv_release(void *state)
{
    struct priv *p = state;
    if (--p->refs > 0)
        return;
    free_priv(p);
}

static void unload(ErlNifEnv *env, void *priv_data)
{
    (void)env;
    bmt_priv_release(priv_data);
}

/* sinks() -> #{recorder => true, lttng => true | {unavailable, Why},
 * usdt => true | {unavailable, Why}}: which sinks this node has. */
static ERL_NIF_TERM bmt_nif_sinks(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    struct priv *p = enif_priv_data(env);
    static const char usdt_why[] = "compiled out: sys/sdt.h was absent when this library was "
                                   "built (install systemtap-sdt-dev and rebuild)";
    ERL_NIF_TERM why, usdt;
    size_t len = strlen(p->lttng_why);
    memcpy(enif_make_new_binary(env, len, &why), p->lttng_why, len);
    if (bmt_usdt_built()) {
        usdt = p->atom.true_;
    } else {
        memcpy(enif_make_new_binary(env, sizeof usdt_why - 1, &usdt), usdt_why, sizeof usdt_why - 1);
        usdt = enif_make_tuple2(env, p->atom.unavailable, usdt);
    }
    ERL_NIF_TERM keys[] = {p->atom.recorder, p->atom.lttng, p->atom.usdt};
    ERL_NIF_TERM values[] = {p->atom.true_,
                             p->lttng ? p->atom.true_
                                      : enif_make_tuple2(env, p->atom.unavailable, why),
                             usdt};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, 3, &map);
    return map;
}

static ErlNifFunc nif_funcs[] = {
#define X(name, arity) {#name, arity, bmt_nif_##name, 0},
#include "tracer_callbacks.def"
#undef X
    {"start_nif", 2, bmt_nif_start, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"stop_nif", 1, bmt_nif_stop, ERL_NIF_DIRTY_JOB_IO_BOUND},
    /* Dirty: they take the recorder's control lock, which start and stop
     * hold across disk I/O. */
    {"info_nif", 1, bmt_nif_info, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"sessions_nif", 0, bmt_nif_sessions, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"snapshot_nif", 2, bmt_nif_snapshot, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"sinks_nif", 0, bmt_nif_sinks, 0},
    {"$shared_state", 0, bmt_nif_shared_state, 0},
    {"user_probe_wanted", 2, bmt_nif_user_probe_wanted, 0},
    {"user_trace_s1_nif", 2, bmt_nif_user_trace_s1, 0},
    {"user_trace_i4s4_nif", 9, bmt_nif_user_trace_i4s4, 0},
    {"user_trace_n_nif", 10, bmt_nif_user_trace_n, 0},
    {"emit_nif", 3, bmt_nif_emit, 0},
    {"clock_ns", 0, bmt_nif_clock_ns, 0},
};

ERL_NIF_INIT(beamtrace, nif_funcs, load, NULL, upgrade, unload)
