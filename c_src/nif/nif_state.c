/* Making and freeing the library's state (contract in nif_state.h).
 *
 * Runs only in the NIF's load, upgrade and unload callbacks, which the VM
 * serialises with all code loading; the state is then shared read-mostly
 * by every scheduler thread.
 */
#include "nif_state.h"
#include "nif_flight_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* ---- the registry of live states, for the dyntrace library ----
 *
 * The sibling library asks for a state by its instance id (nif_shared.h),
 * and an id is all Erlang ever sees, so no caller can hand a forged address
 * to native code. */

#define MAX_STATES 8

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct priv *registry[MAX_STATES];

static int registry_add(struct priv *p)
{
    int rc = -1;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_STATES; i++) {
        if (!registry[i]) {
            registry[i] = p;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

static void registry_remove(struct priv *p)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_STATES; i++)
        if (registry[i] == p)
            registry[i] = NULL;
    pthread_mutex_unlock(&registry_lock);
}

void *bmt_priv_retain(uint64_t instance)
{
    struct priv *found = NULL;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_STATES; i++) {
        struct priv *p = registry[i];
        if (p && p->instance == instance && p->magic == BMT_PRIV_MAGIC &&
            p->layout == BMT_PRIV_LAYOUT) {
            p->refs++;
            found = p;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

static void free_priv(struct priv *p)
{
    bmt_rec_destroy(&p->rec);
    bmt_handles_free(&p->handles);
    if (p->flight_calls)
        bmt_flight_slots_drop(p->flight_calls);
    registry_remove(p);
    p->magic = 0;
    if (p->lttng)
        bmt_lttng_unload(p->lttng);
    bmt_threads_free(&p->threads);
    bmt_clock_destroy(&p->clock);
    free(p);
}

/* The thread slots from load_info's second element: {Schedulers,
 * DirtyCpu, DirtyIo, Others}, slots laid out by kind; or a total (an
 * older loader), or nothing: 256 slots of no kind. Sets counts and returns
 * by_kind (bmt_threads_init). */
static int load_info_threads(ErlNifEnv *env, ERL_NIF_TERM load_info,
                             int counts[BMT_THREAD_KINDS])
{
    const ERL_NIF_TERM *info, *kinds;
    int arity, n, total = 0;
    memset(counts, 0, sizeof(int) * BMT_THREAD_KINDS);
    counts[BMT_THREAD_OTHER] = 256;
    if (!enif_get_tuple(env, load_info, &arity, &info) || arity != 2)
        return 0;
    if (enif_get_int(env, info[1], &n) && n > 0) {
        counts[BMT_THREAD_OTHER] = n;
        return 0;
    }
    if (!enif_get_tuple(env, info[1], &arity, &kinds) || arity != BMT_THREAD_KINDS)
        return 0;
    int given[BMT_THREAD_KINDS];
    for (int k = 0; k < BMT_THREAD_KINDS; k++) {
        if (!enif_get_int(env, kinds[k], &given[k]) || given[k] < 0 ||
            given[k] > BMT_MAX_THREADS)
            return 0;
        total += given[k];
    }
    if (given[BMT_THREAD_SCHEDULER] == 0)
        return 0;
    if (total > BMT_MAX_THREADS) {
        counts[BMT_THREAD_OTHER] = BMT_MAX_THREADS; /* a huge VM: slots of no kind */
        return 0;
    }
    memcpy(counts, given, sizeof given);
    return 1;
}

/* The optional sinks from PrivDir of load_info. */
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

/* Never enabled: where p->lttng_enabled points without LTTng. */
static const int lttng_absent = 0;

static void fill_lttng_enabled(struct priv *p)
{
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        p->lttng_enabled[tp] = p->lttng ? p->lttng->state[tp] : &lttng_absent;
}

/* ---- make and free ---- */

struct priv *bmt_priv_new(ErlNifEnv *env, ERL_NIF_TERM load_info, bmt_rec_notify_fn *notify)
{
    struct priv *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    fill_lttng_enabled(p); /* never NULL, even before the sinks load */
#define X(name) p->atom.name = enif_make_atom(env, #name);
#define Y(field, text) p->atom.field = enif_make_atom(env, text);
    BMT_ATOMS(X, Y)
#undef X
#undef Y
    p->nil = enif_make_list(env, 0);
    bmt_clock_init(&p->clock);
    p->refs = 1;
    p->layout = BMT_PRIV_LAYOUT;
    if (getrandom(&p->instance, sizeof p->instance, 0) != (ssize_t)sizeof p->instance)
        p->instance = bmt_clock_ns() ^ (uintptr_t)p;
    p->instance |= 1; /* never 0, the value of a fresh thread's TLS */
    p->magic = BMT_PRIV_MAGIC;
    int counts[BMT_THREAD_KINDS];
    int by_kind = load_info_threads(env, load_info, counts);
    if (bmt_threads_init(&p->threads, p->instance, p->nil, counts, by_kind) != 0) {
        bmt_clock_destroy(&p->clock);
        free(p);
        return NULL;
    }
    if (bmt_handles_init(&p->handles, p->instance, p->nil, p->atom.undefined, &p->rec) != 0 ||
        bmt_rec_init(&p->rec, p->threads.max_threads, notify, p) != 0 ||
        bmt_handles_open_type(&p->handles, env, ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER) != 0 ||
        registry_add(p) != 0) {
        free_priv(p);
        return NULL;
    }
    /* The recorder's epoch starts at a value of this state's own, in
     * [1, 2^63): a thread's TLS tag of another state (a reload) never
     * matches it, and no number of bumps wraps it to 0, a fresh thread's
     * tag (nif_thread.h). */
    atomic_store(&p->rec.epoch, (p->instance >> 1) | 1);
    load_sinks(env, p, load_info);
    fill_lttng_enabled(p);
    return p;
}

void bmt_priv_release(void *state)
{
    struct priv *p = state;
    if (--p->refs > 0)
        return;
    free_priv(p);
}
