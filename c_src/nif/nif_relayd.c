/* Streaming options of start_nif and the relayd's figures as terms: the
 * VM side of c_src/recorder/relayd_client.h.
 *
 * Options (beamtrace:start/1 checks and fills them; the NIF checks again):
 *   relayd          net://HOST[:CONTROL_PORT[:DATA_PORT]][/PATH] (iodata)
 *   live            live timer, ms (absent: not live)
 *   relayd_session  the session's name on the relayd, taken as its
 *                   directory (absent: "beamtrace", the relayd appending
 *                   -<datetime>)
 *   relayd_buffer   bytes of packets held while the network lags
 * Runs on the dirty I/O scheduler that runs start_nif (the host is resolved
 * here, blocking).
 */
#include "nif_relayd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_RELAYD_BUFFER (256 * 1024u)
#define MAX_LIVE_MS (3600 * 1000u)
#define METADATA_MAX_BYTES (64 * 1024)

static ERL_NIF_TERM binary_of(ErlNifEnv *env, const char *text)
{
    ERL_NIF_TERM bin;
    size_t len = strlen(text);
    memcpy(enif_make_new_binary(env, len, &bin), text, len);
    return bin;
}

/* An iodata option as a NUL-terminated string of at most size-1 bytes. */
static int get_text(ErlNifEnv *env, ERL_NIF_TERM term, char *out, size_t size)
{
    ErlNifBinary bin;
    if (!enif_inspect_iolist_as_binary(env, term, &bin) || bin.size == 0 || bin.size >= size ||
        memchr(bin.data, 0, bin.size))
        return 0;
    memcpy(out, bin.data, bin.size);
    out[bin.size] = '\0';
    return 1;
}

/* Reads the user's streaming options (the relayd's URL, session name,
 * live period, send queue) into rc, and shortens cfg's flush interval to
 * the live period. Returns 0, or -1 with the bad key in *bad (maybe a
 * reason in `why`). */
static int read_options(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts, ERL_NIF_TERM url_term,
                        struct bmt_rec_config *cfg, struct bmt_relayd_config *rc,
                        ERL_NIF_TERM *bad, char *why, size_t why_size)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM v;
    char url[1024];
    *bad = a->relayd;
    if (!get_text(env, url_term, url, sizeof url) ||
        bmt_relayd_url_parse(url, &rc->url, why, why_size) != 0)
        return -1;
    *bad = a->relayd_session;
    if (enif_get_map_value(env, opts, a->relayd_session, &v)) {
        if (!get_text(env, v, rc->session_name, sizeof rc->session_name) ||
            !bmt_relayd_name_ok(rc->session_name, sizeof rc->session_name))
            return -1;
        rc->name_is_final = 1;
    } else {
        snprintf(rc->session_name, sizeof rc->session_name, "beamtrace");
    }
    unsigned live_ms = 0;
    *bad = a->live;
    if (enif_get_map_value(env, opts, a->live, &v) && v != a->false_ &&
        (!enif_get_uint(env, v, &live_ms) || live_ms == 0 || live_ms > MAX_LIVE_MS))
        return -1;
    ErlNifUInt64 queue = 4u << 20;
    *bad = a->relayd_buffer;
    if (enif_get_map_value(env, opts, a->relayd_buffer, &v) &&
        (!enif_get_uint64(env, v, &queue) || queue < MIN_RELAYD_BUFFER || queue > (1u << 30)))
        return -1;
    /* At least two packets, so one can wait while one goes. */
    if (queue < 2 * cfg->subbuf_bytes)
        queue = 2 * cfg->subbuf_bytes;
    rc->queue_bytes = (size_t)queue;
    rc->live_timer_us = live_ms * 1000u;
    if (live_ms && cfg->flush_interval_ns > (uint64_t)live_ms * 1000000u)
        cfg->flush_interval_ns = (uint64_t)live_ms * 1000000u;
    return 0;
}

/* Fills what the client takes from the session rather than the user: the
 * names the relayd lays the trace out by, the trace's identity and
 * metadata (written into `metadata`, 64 KiB, which rc then points to).
 * Returns 0, or -1 with a reason in `why`. */
static int describe_session(struct priv *p, const struct bmt_rec_config *cfg,
                            struct bmt_relayd_config *rc, char *metadata, char *why,
                            size_t why_size)
{
    /* The host as the relayd names its directory: no domain part, as
     * lttng-sessiond sends it (gethostname). */
    snprintf(rc->hostname, sizeof rc->hostname, "%.*s", (int)sizeof rc->hostname - 1,
             cfg->info.hostname);
    if (!bmt_relayd_name_ok(rc->hostname, sizeof rc->hostname))
        snprintf(rc->hostname, sizeof rc->hostname, "localhost");
    snprintf(rc->procname, sizeof rc->procname, "%s", cfg->info.procname);
    rc->vpid = cfg->info.vpid;
    rc->start_time_s = (uint64_t)time(NULL);
    rc->start_ns = bmt_clock_ns();
    memcpy(rc->uuid, cfg->info.uuid, sizeof rc->uuid);
    rc->stream_count = (unsigned)p->rec.max_threads;
    long len = bmt_ctf_metadata(&cfg->info, metadata, METADATA_MAX_BYTES);
    if (len < 0) {
        snprintf(why, why_size, "the metadata does not fit 64 KiB");
        return -1;
    }
    rc->metadata = metadata;
    rc->metadata_bytes = (size_t)len;
    return 0;
}

int bmt_nif_relayd_options(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                           struct bmt_rec_config *cfg, ERL_NIF_TERM *bad, char *why,
                           size_t why_size)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM v;
    why[0] = '\0';
    if (!enif_get_map_value(env, opts, a->relayd, &v) || v == a->undefined) {
        /* Not streaming: its options make no sense. */
        *bad = a->live;
        if (enif_get_map_value(env, opts, a->live, &v) && v != a->false_)
            return -1;
        return 0;
    }
    struct bmt_relayd_config *rc = calloc(1, sizeof *rc);
    char *metadata = malloc(METADATA_MAX_BYTES);
    int ret = -1;
    if (!rc || !metadata) {
        snprintf(why, why_size, "out of memory");
        goto out;
    }
    if (read_options(p, env, opts, v, cfg, rc, bad, why, why_size) != 0 ||
        describe_session(p, cfg, rc, metadata, why, why_size) != 0)
        goto out;
    int err = bmt_relayd_resolve(rc, why, why_size);
    if (err < 0) {
        ret = err;
        goto out;
    }
    cfg->relayd = bmt_relayd_new(rc);
    if (!cfg->relayd) {
        snprintf(why, why_size, "out of memory");
        ret = -ENOMEM;
        goto out;
    }
    ret = 0;
out:
    free(metadata);
    free(rc);
    return ret;
}

ERL_NIF_TERM bmt_nif_relayd_stats(struct priv *p, ErlNifEnv *env,
                                  const struct bmt_relayd_stats *st)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM keys[] = {a->url, a->state, a->path, a->events, a->lost, a->unconfirmed,
                           a->written_bytes, a->queued_bytes, a->connections,
                           a->disconnections, a->error};
    ERL_NIF_TERM values[] = {
        binary_of(env, st->url),
        enif_make_atom(env, bmt_relayd_state_name(st->state)),
        st->path[0] ? binary_of(env, st->path) : a->undefined,
        enif_make_uint64(env, st->events),
        enif_make_uint64(env, st->lost),
        enif_make_uint64(env, st->unconfirmed),
        enif_make_uint64(env, st->bytes),
        enif_make_uint64(env, st->queued_bytes),
        enif_make_uint(env, st->connections),
        enif_make_uint(env, st->disconnections),
        st->error_text[0] ? binary_of(env, st->error_text) : a->undefined,
    };
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, sizeof keys / sizeof keys[0], &map);
    return map;
}
