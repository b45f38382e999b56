/*
 * Test NIF for c_src/nif/nif_term_text.c: compares bmt_term_text against the
 * oracle enif_snprintf("%T") and times both. Built and loaded by
 * bmt_term_text_SUITE (init_per_suite); never part of the product NIF.
 *
 * The caches are thread-local (one per scheduler thread), as the tracer
 * keeps them; a test process migrating between schedulers just meets
 * another cold or warm cache, which is itself worth exercising.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <erl_nif.h>

#include "nif/nif_term_text.h"

/* Bytes after the caller's size that must stay untouched. */
#define CANARY_BYTES 64
#define CANARY 0xA5
#define BUF_MAX_BYTES (1 << 20)

static __thread struct bmt_text_cache tls_cache;

static ERL_NIF_TERM am_ok, am_mismatch;

static ERL_NIF_TERM mk_bin(ErlNifEnv *env, const char *p, size_t n)
{
    ERL_NIF_TERM t;
    unsigned char *d = enif_make_new_binary(env, n, &t);
    memcpy(d, p, n);
    return t;
}

/* Returns a label when ours (written into b with `size`) breaks the
 * contract in a way the byte comparison would not show. */
static const char *check_frame(const unsigned char *b, size_t size, size_t n)
{
    size_t i;
    if (n > size - 1)
        return "length beyond size-1";
    if (b[n] != 0)
        return "no NUL after text";
    for (i = size; i < size + CANARY_BYTES; i++)
        if (b[i] != CANARY)
            return "wrote past size";
    return NULL;
}

/* compare(Term, Size) -> ok | {mismatch, Ours, Theirs}
 * Runs the uncached entry, the cached entry twice (cold then warm) and
 * bmt_id_text; every result must equal the oracle's bytes. */
static ERL_NIF_TERM compare(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    unsigned long size;
    unsigned char *theirs, *ours;
    size_t tn, on;
    int r, pass;
    const char *bad;
    ERL_NIF_TERM result = am_ok;

    (void)argc;
    if (!enif_get_ulong(env, argv[1], &size) || size < 1 || size > BUF_MAX_BYTES)
        return enif_make_badarg(env);
    theirs = malloc(size + CANARY_BYTES);
    ours = malloc(size + CANARY_BYTES);
    if (!theirs || !ours) {
        free(theirs);
        free(ours);
        return enif_raise_exception(env, enif_make_atom(env, "enomem"));
    }
    memset(theirs, CANARY, size + CANARY_BYTES);
    r = enif_snprintf((char *)theirs, size, "%T", argv[0]);
    tn = strnlen((char *)theirs, size);
    (void)r;

    for (pass = 0; pass < 4 && result == am_ok; pass++) {
        memset(ours, CANARY, size + CANARY_BYTES);
        switch (pass) {
        case 0: on = bmt_term_text(env, argv[0], (char *)ours, size); break;
        case 1:
        case 2: on = bmt_term_text_cached(&tls_cache, env, argv[0],
                                          (char *)ours, size); break;
        default: on = bmt_id_text(&tls_cache.ids, env, argv[0],
                                  (char *)ours, size); break;
        }
        bad = check_frame(ours, size, on);
        if (bad || on != tn || memcmp(ours, theirs, tn) != 0) {
            char label[64];
            size_t ln;
            static const char *const names[] = {
                "uncached", "cached-cold", "cached-warm", "id_text" };
            ln = (size_t)snprintf(label, sizeof label, "%s%s%s", names[pass],
                                  bad ? ": " : "", bad ? bad : "");
            result = enif_make_tuple3(env, am_mismatch,
                enif_make_tuple2(env, mk_bin(env, label, ln),
                                 mk_bin(env, (char *)ours,
                                        on < size ? on : size - 1)),
                mk_bin(env, (char *)theirs, tn));
        }
    }
    free(theirs);
    free(ours);
    return result;
}

/* theirs(Term, Size) -> binary(): the oracle's text. */
static ERL_NIF_TERM theirs(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    unsigned long size;
    char *b;
    ERL_NIF_TERM t;

    (void)argc;
    if (!enif_get_ulong(env, argv[1], &size) || size < 1 || size > BUF_MAX_BYTES)
        return enif_make_badarg(env);
    b = malloc(size);
    if (!b)
        return enif_raise_exception(env, enif_make_atom(env, "enomem"));
    enif_snprintf(b, size, "%T", argv[0]);
    t = mk_bin(env, b, strnlen(b, size));
    free(b);
    return t;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* bench(Term, N, Size) -> {OurNsPerCall, SnprintfNsPerCall}
 * Ours is the hot-path entry with a warm thread-local cache. */
static ERL_NIF_TERM bench(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    unsigned long n, size, i;
    static __thread char buf[1 << 16];
    double t0, t1, t2;
    volatile size_t sink = 0;

    (void)argc;
    if (!enif_get_ulong(env, argv[1], &n) || n < 1
        || !enif_get_ulong(env, argv[2], &size) || size < 1 || size > sizeof buf)
        return enif_make_badarg(env);
    bmt_term_text_cached(&tls_cache, env, argv[0], buf, size);
    t0 = now_ns();
    for (i = 0; i < n; i++)
        sink += bmt_term_text_cached(&tls_cache, env, argv[0], buf, size);
    t1 = now_ns();
    for (i = 0; i < n; i++)
        sink += (size_t)enif_snprintf(buf, size, "%T", argv[0]);
    t2 = now_ns();
    (void)sink;
    enif_consume_timeslice(env, 100);
    return enif_make_tuple2(env, enif_make_double(env, (t1 - t0) / (double)n),
                            enif_make_double(env, (t2 - t1) / (double)n));
}

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
    (void)priv;
    (void)info;
    am_ok = enif_make_atom(env, "ok");
    am_mismatch = enif_make_atom(env, "mismatch");
    return 0;
}

static ErlNifFunc funcs[] = {
    {"compare", 2, compare, 0},
    {"theirs", 2, theirs, 0},
    {"bench", 3, bench, 0},
};

ERL_NIF_INIT(bmt_term_text_SUITE, funcs, load, NULL, NULL, NULL)
