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
    char *metadata = malloc(64 * 1024);
    int ret = -1;
    if (!rc || !metadata) {
        snprintf(why, why_size, "out of memory");
        goto out;
    }
    char url[1024];
    *bad = a->relayd;
    if (!get_text(env, v, url, sizeof url) ||
        bmt_relayd_url_parse(url, &rc->url, why, why_size) != 0)
        goto out;
    *bad = a->relayd_session;
    if (enif_get_map_value(env, opts, a->relayd_session, &v)) {
        if (!get_text(env, v, rc->session_name, sizeof rc->session_name) ||
            !bmt_relayd_name_ok(rc->session_name, sizeof rc->session_name))
            goto out;
        rc->name_is_final = 1;
    } else {
        snprintf(rc->session_name, sizeof rc->session_name, "beamtrace");
    }
    unsigned live_ms = 0;
    *bad = a->live;
    if (enif_get_map_value(env, opts, a->live, &v) && v != a->false_ &&
        (!enif_get_uint(env, v, &live_ms) || live_ms == 0 || live_ms > MAX_LIVE_MS))
        goto out;
    ErlNifUInt64 queue = 4u << 20;
    *bad = a->relayd_buffer;
    if (enif_get_map_value(env, opts, a->relayd_buffer, &v) &&
        (!enif_get_uint64(env, v, &queue) || queue < MIN_RELAYD_BUFFER || queue > (1u << 30)))
        goto out;
    /* At least two packets, so one can wait while one goes. */
    if (queue < 2 * cfg->subbuf_bytes)
        queue = 2 * cfg->subbuf_bytes;
    rc->queue_bytes = (size_t)queue;
    rc->live_timer_us = live_ms * 1000u;
    if (live_ms && cfg->flush_interval_ns > (uint64_t)live_ms * 1000000u)
        cfg->flush_interval_ns = (uint64_t)live_ms * 1000000u;

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
    long len = bmt_ctf_metadata(&cfg->info, metadata, 64 * 1024);
    if (len < 0) {
        snprintf(why, why_size, "the metadata does not fit 64 KiB");
        goto out;
    }
    rc->metadata = metadata;
    rc->metadata_bytes = (size_t)len;
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

/* Adds env entry beamtrace_clock_KEY (an integer, or a text when `text` is
 * set) to the trace's metadata. Returns 0, or -1 when the key is not
 * [a-z0-9_]{1,48} or the entries are full. */
static int env_entry(struct bmt_ctf_trace_info *info, const char *key, const char *text,
                     int64_t value)
{
    size_t key_len = strlen(key);
    if (key_len == 0 || key_len > 48)
        return -1;
    for (size_t i = 0; i < key_len; i++)
        if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9') || key[i] == '_'))
            return -1;
    char name[80];
    snprintf(name, sizeof name, "beamtrace_clock_%s", key);
    return (text ? bmt_ctf_env_add_text(info, name, text) : bmt_ctf_env_add_int(info, name, value))
               == 0 ? 0 : -1;
}

int bmt_nif_clock_option(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                         struct bmt_ctf_trace_info *info)
{
    ERL_NIF_TERM v, offset, list, head;
    ErlNifSInt64 total;
    if (!enif_get_map_value(env, opts, p->atom.clock, &v))
        return 0;
    if (!enif_get_map_value(env, v, p->atom.offset_ns, &offset) ||
        !enif_get_int64(env, offset, &total) ||
        !enif_get_map_value(env, v, p->atom.env, &list))
        return -1;
    /* What the node's own clock said, as beamtrace_clock records it when it
     * rewrites a copied-back trace. */
    if (env_entry(info, "own_offset_s", NULL, info->clock_offset_s) != 0 ||
        env_entry(info, "own_offset", NULL, info->clock_offset_ns) != 0)
        return -1;
    while (enif_get_list_cell(env, list, &head, &list)) {
        const ERL_NIF_TERM *kv;
        int arity;
        char key[64];
        ErlNifSInt64 n;
        ErlNifBinary text;
        if (!enif_get_tuple(env, head, &arity, &kv) || arity != 2 ||
            enif_get_atom(env, kv[0], key, sizeof key, ERL_NIF_LATIN1) <= 0)
            return -1;
        if (enif_get_int64(env, kv[1], &n)) {
            if (env_entry(info, key, NULL, n) != 0)
                return -1;
        } else if (enif_inspect_binary(env, kv[1], &text) && text.size < 256) {
            /* A text of printable characters (the metadata writer escapes
             * quotes and backslashes). */
            char value[256];
            for (size_t i = 0; i < text.size; i++)
                if (text.data[i] < 0x20)
                    return -1;
            memcpy(value, text.data, text.size);
            value[text.size] = '\0';
            if (env_entry(info, key, value, 0) != 0)
                return -1;
        } else {
            return -1;
        }
    }
    if (!enif_is_empty_list(env, list))
        return -1;
    /* The clock's offset to the epoch: the controller's. */
    int64_t s = total / 1000000000, ns = total % 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        s -= 1;
    }
    info->clock_offset_s = s;
    info->clock_offset_ns = ns;
    return 0;
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
