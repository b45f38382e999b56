/* Session control NIFs: start, stop, info, sessions, snapshot. Parses and
 * checks every argument, turns handles into (index, generation) and back,
 * and turns the recorder's results into terms; the recorder (c_src/recorder/)
 * does the work.
 *
 * All of these run on dirty I/O schedulers: they take the recorder's
 * control lock, which start and stop hold across disk I/O and thread joins.
 */
#define _GNU_SOURCE /* strerrorname_np */
#include "nif_clock_option.h"
#include "nif_control.h"
#include "nif_flight.h"
#include "nif_format.h"
#include "nif_sample.h"
#include "nif_session.h"
#include "nif_relayd.h"
#include "nif_state.h"

#include <errno.h>
#include <string.h>

#define MAX_BUFFER_BYTES (UINT64_C(1) << 30)
#define MIN_SUBBUF_BYTES 4096u
#define MIN_TRACEFILE_BYTES (64 * 1024u)

/* ---- results ---- */

static ERL_NIF_TERM posix_atom(ErlNifEnv *env, int err)
{
    /* Erlang's file errors use the lowercase errno name: enospc, eacces. */
    char name[32];
    const char *text = strerrorname_np(err);
    size_t i = 0;
    if (!text)
        text = "eio";
    for (; text[i] && i < sizeof name - 1; i++)
        name[i] = (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] + 32 : text[i]);
    name[i] = '\0';
    return enif_make_atom(env, name);
}

static ERL_NIF_TERM error_tuple(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM reason)
{
    return enif_make_tuple2(env, p->atom.error, reason);
}

static ERL_NIF_TERM binary_of(ErlNifEnv *env, const char *text)
{
    ERL_NIF_TERM bin;
    size_t len = strlen(text);
    memcpy(enif_make_new_binary(env, len, &bin), text, len);
    return bin;
}

/* {error, {Posix, Path}}: a directory error names the directory. */
static ERL_NIF_TERM path_error(struct priv *p, ErlNifEnv *env, int err, const char *path)
{
    return error_tuple(p, env, enif_make_tuple2(env, posix_atom(env, err), binary_of(env, path)));
}

/* The reason as a term: a write error is its errno's name. */
static ERL_NIF_TERM reason_term(ErlNifEnv *env, const struct bmt_rec_stats *st)
{
    if (st->reason == BMT_REASON_WRITE_ERROR)
        return posix_atom(env, st->error ? st->error : EIO);
    return enif_make_atom(env, bmt_rec_reason_name(st->reason));
}

/* The trace directory, or undefined for a session that only streams. */
static ERL_NIF_TERM dir_term(struct priv *p, ErlNifEnv *env, const char *dir)
{
    return dir[0] ? binary_of(env, dir) : p->atom.undefined;
}

/* Adds `relayd => #{...}` to `map` for a streaming session. */
static ERL_NIF_TERM with_relayd(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM map,
                                const struct bmt_rec_stats *st)
{
    if (st->has_relayd)
        enif_make_map_put(env, map, p->atom.relayd, bmt_nif_relayd_stats(p, env, &st->relayd),
                          &map);
    return map;
}

static ERL_NIF_TERM stats_map(struct priv *p, ErlNifEnv *env, const struct bmt_rec_stats *st,
                              const char *dir)
{
    ERL_NIF_TERM keys[] = {p->atom.dir, p->atom.events, p->atom.discarded, p->atom.after_stop,
                           p->atom.overwritten, p->atom.written_bytes, p->atom.reason};
    ERL_NIF_TERM values[] = {dir_term(p, env, dir), enif_make_uint64(env, st->events),
                             enif_make_uint64(env, st->discarded),
                             enif_make_uint64(env, st->after_stop),
                             enif_make_uint64(env, st->overwritten),
                             enif_make_uint64(env, st->bytes), reason_term(env, st)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, sizeof keys / sizeof keys[0], &map);
    if (st->flight)
        enif_make_map_put(env, map, p->atom.flight, bmt_flight_stats_map(p, env, &st->capture),
                          &map);
    if (st->sampled)
        enif_make_map_put(env, map, p->atom.sampling, bmt_sample_stats_map(p, env, st), &map);
    return with_relayd(p, env, map, st);
}

/* ---- start ---- */

/* Reads an iolist path into `out` (NUL-terminated, no NUL inside). */
static int get_path(ErlNifEnv *env, ERL_NIF_TERM term, char *out, size_t size)
{
    ErlNifBinary bin;
    if (!enif_inspect_iolist_as_binary(env, term, &bin) || bin.size == 0 || bin.size >= size ||
        memchr(bin.data, 0, bin.size))
        return 0;
    memcpy(out, bin.data, bin.size);
    out[bin.size] = '\0';
    return 1;
}

/* Option `key` of map `opts` as a non-negative integer, `infinity` (0, for
 * limits where 0 means none) or missing (def). */
static int get_limit(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts, ERL_NIF_TERM key,
                     uint64_t def, uint64_t *out)
{
    ERL_NIF_TERM v;
    ErlNifUInt64 n;
    if (!enif_get_map_value(env, opts, key, &v)) {
        *out = def;
        return 1;
    }
    if (v == p->atom.infinity) {
        *out = 0;
        return 1;
    }
    if (!enif_get_uint64(env, v, &n) || n == 0)
        return 0;
    *out = n;
    return 1;
}

struct start_request {
    struct bmt_rec_config cfg;
    int message_bytes;
    int variants; /* BMT_FORMAT_LINKS, _RESULTS, _ARGS */
    int make_default;
};

/* start's options are read by the steps below, in this order (a later
 * step may check an earlier one's result). Each returns 0, or -1 with the
 * key at fault in *bad. */
typedef int start_step_fn(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                          struct start_request *req, ERL_NIF_TERM *bad);

/* events: LTTng-style patterns, each matching something. */
static int parse_events(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                        struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM list, head;
    *bad = a->events;
    if (!enif_get_map_value(env, opts, a->events, &list) || !enif_is_list(env, list))
        return -1;
    while (enif_get_list_cell(env, list, &head, &list)) {
        char pattern[256];
        if (!get_path(env, head, pattern, sizeof pattern) ||
            bmt_catalogue_match(pattern, &req->cfg.enable_mask) == 0) {
            *bad = enif_make_tuple2(env, a->events, head);
            return -1;
        }
    }
    if (!enif_is_empty_list(env, list) || req->cfg.enable_mask == 0)
        return -1;
    return 0;
}

/* mode, subbuffers, buffer_size: the rings. */
static int parse_rings(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                       struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    struct bmt_rec_config *cfg = &req->cfg;
    ERL_NIF_TERM v;
    *bad = a->mode;
    if (!enif_get_map_value(env, opts, a->mode, &v) || (v != a->discard && v != a->overwrite))
        return -1;
    cfg->mode = v == a->overwrite ? BMT_RING_OVERWRITE : BMT_RING_DISCARD;

    unsigned subbuffers;
    ErlNifUInt64 buffer_bytes;
    *bad = a->subbuffers;
    if (!enif_get_map_value(env, opts, a->subbuffers, &v) || !enif_get_uint(env, v, &subbuffers) ||
        subbuffers < 2 || subbuffers > 1024)
        return -1;
    *bad = a->buffer_size;
    if (!enif_get_map_value(env, opts, a->buffer_size, &v) ||
        !enif_get_uint64(env, v, &buffer_bytes) || buffer_bytes > MAX_BUFFER_BYTES ||
        buffer_bytes / subbuffers < MIN_SUBBUF_BYTES)
        return -1;
    cfg->subbuf_count = subbuffers;
    /* Whole 4 KiB blocks: a packet's memory is then page-aligned, so the
     * consumer can write it with O_DIRECT (trace_dir.h). */
    cfg->subbuf_bytes = (size_t)(buffer_bytes / subbuffers) & ~(size_t)(BMT_DIRECT_BLOCK - 1);
    return 0;
}

/* message_length, then the largest event against the packet size. */
static int parse_message_length(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                                struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    struct bmt_rec_config *cfg = &req->cfg;
    ERL_NIF_TERM v;
    *bad = a->message_length;
    if (!enif_get_map_value(env, opts, a->message_length, &v))
        return -1;
    if (v == a->size_only)
        req->message_bytes = BMT_MESSAGE_SIZE_ONLY;
    else if (!enif_get_int(env, v, &req->message_bytes) || req->message_bytes < 0 ||
             req->message_bytes > BMT_MSG_MAX_BYTES)
        return -1;
    /* "<N words>" or "<more than N words>" for size_only. */
    cfg->message_max_bytes = req->message_bytes > 0 ? (size_t)req->message_bytes : 47;

    /* The largest event this session can record must fit a packet, so that
     * no event is ever refused for its size alone. */
    *bad = a->buffer_size;
    for (int tp = 0; tp < BMT_TP_COUNT; tp++)
        if ((cfg->enable_mask >> tp & 1) &&
            cfg->subbuf_bytes < BMT_PKT_HEADER_BYTES + bmt_event_max_bytes(tp, cfg->message_max_bytes))
            return -1;
    return 0;
}

/* default, file_mode. */
static int parse_default_and_mode(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                                  struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM v;
    *bad = a->default_;
    if (!enif_get_map_value(env, opts, a->default_, &v) || (v != a->true_ && v != a->false_))
        return -1;
    req->make_default = v == a->true_;

    unsigned mode = 0;
    *bad = a->file_mode;
    if (enif_get_map_value(env, opts, a->file_mode, &v) &&
        (!enif_get_uint(env, v, &mode) || mode > 0777 || !(mode & 0600)))
        return -1;
    req->cfg.file_mode = mode;
    return 0;
}

/* max_bytes, max_events, max_rate, duration, flush_interval,
 * tracefile_size, tracefile_count: the limits. */
static int parse_limits(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                        struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    struct bmt_rec_config *cfg = &req->cfg;
    uint64_t ms;
    *bad = a->max_bytes;
    if (!get_limit(p, env, opts, a->max_bytes, 0, &cfg->max_bytes))
        return -1;
    *bad = a->max_events;
    if (!get_limit(p, env, opts, a->max_events, 0, &cfg->max_events))
        return -1;
    *bad = a->max_rate;
    if (!get_limit(p, env, opts, a->max_rate, 0, &cfg->max_rate))
        return -1;
    *bad = a->duration;
    if (!get_limit(p, env, opts, a->duration, 0, &ms) || ms > UINT64_MAX / 1000000)
        return -1;
    cfg->duration_ns = ms * 1000000;
    *bad = a->flush_interval;
    if (!get_limit(p, env, opts, a->flush_interval, 1000, &ms) || ms == 0 || ms > 3600 * 1000)
        return -1;
    cfg->flush_interval_ns = ms * 1000000;
    *bad = a->tracefile_size;
    if (!get_limit(p, env, opts, a->tracefile_size, 0, &cfg->tracefile_size_bytes) ||
        (cfg->tracefile_size_bytes && cfg->tracefile_size_bytes < MIN_TRACEFILE_BYTES))
        return -1;
    uint64_t count;
    *bad = a->tracefile_count;
    if (!get_limit(p, env, opts, a->tracefile_count, 0, &count) || count > 1024 ||
        (count && !cfg->tracefile_size_bytes))
        return -1;
    cfg->tracefile_count = (uint32_t)count;
    return 0;
}

/* notify: a process told when the session stops by itself. Kept in the
 * config, which the recorder hands back to bmt_on_stopped. */
static int parse_notify(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                        struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    struct bmt_rec_config *cfg = &req->cfg;
    ERL_NIF_TERM v;
    *bad = a->notify;
    if (enif_get_map_value(env, opts, a->notify, &v) && v != a->undefined) {
        ErlNifPid pid;
        if (!enif_get_local_pid(env, v, &pid))
            return -1;
        _Static_assert(sizeof pid <= sizeof cfg->owner, "a pid fits the owner bytes");
        memcpy(cfg->owner, &pid, sizeof pid);
        cfg->owner_bytes = sizeof pid;
    }
    return 0;
}

/* node, schedulers: the trace's environment. */
static int parse_environment(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                             struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    struct bmt_rec_config *cfg = &req->cfg;
    ERL_NIF_TERM v;
    /* node: the Erlang node name for the trace's environment. */
    *bad = a->node;
    ErlNifBinary node;
    if (enif_get_map_value(env, opts, a->node, &v)) {
        if (!enif_inspect_binary(env, v, &node) || node.size >= sizeof cfg->info.node ||
            memchr(node.data, 0, node.size))
            return -1;
        memcpy(cfg->info.node, node.data, node.size);
        cfg->info.node[node.size] = '\0';
    }
    /* schedulers: {Normal, DirtyCpu, DirtyIo} for the trace's environment
     * (erlang:system_info/1 has them; a NIF cannot ask for the dirty ones). */
    *bad = a->schedulers;
    if (enif_get_map_value(env, opts, a->schedulers, &v)) {
        const ERL_NIF_TERM *counts;
        int arity;
        unsigned n[3];
        if (!enif_get_tuple(env, v, &arity, &counts) || arity != 3)
            return -1;
        for (int i = 0; i < 3; i++)
            if (!enif_get_uint(env, counts[i], &n[i]) || n[i] > 1024 || (i == 0 && n[i] == 0))
                return -1;
        cfg->info.schedulers_count = n[0];
        cfg->info.dirty_cpu_schedulers_count = n[1];
        cfg->info.dirty_io_schedulers_count = n[2];
    }
    /* Which kind of thread wrote each stream: its slot's range. */
    const struct bmt_threads *th = &p->threads;
    if (th->by_kind && cfg->info.schedulers_count) {
        cfg->info.first_dirty_cpu_stream = (uint32_t)th->first[BMT_THREAD_DIRTY_CPU];
        cfg->info.first_dirty_io_stream = (uint32_t)th->first[BMT_THREAD_DIRTY_IO];
        cfg->info.first_other_stream = (uint32_t)th->first[BMT_THREAD_OTHER];
    }
    return 0;
}

/* links, results, args: events recorded as their variants
 * (message_*_link, function_result, function_call_args; beamtrace:start/1
 * also enables those tracepoints); wakeups. */
static int parse_variants(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                          struct start_request *req, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    struct bmt_rec_config *cfg = &req->cfg;
    ERL_NIF_TERM v;
    const struct {
        ERL_NIF_TERM key;
        int bit;
    } variants[] = {{a->links, BMT_FORMAT_LINKS},
                    {a->results, BMT_FORMAT_RESULTS},
                    {a->args, BMT_FORMAT_ARGS}};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        *bad = variants[i].key;
        if (enif_get_map_value(env, opts, variants[i].key, &v)) {
            if (v != a->true_ && v != a->false_)
                return -1;
            if (v == a->true_)
                req->variants |= variants[i].bit;
        }
    }
    *bad = a->wakeups;
    cfg->wake_on_publish = 1;
    if (enif_get_map_value(env, opts, a->wakeups, &v)) {
        if (v != a->true_ && v != a->false_)
            return -1;
        cfg->wake_on_publish = v == a->true_;
    }
    /* Overwrite rings are drained at the end: nobody to wake. */
    if (cfg->mode == BMT_RING_OVERWRITE)
        cfg->wake_on_publish = 0;
    return 0;
}

/* sample, on_max_rate (nif_sample.h); flight: captures (nif_flight.h),
 * which only an overwrite session makes. */
static int parse_sampling_and_flight(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                                     struct start_request *req, ERL_NIF_TERM *bad)
{
    struct bmt_rec_config *cfg = &req->cfg;
    if (bmt_sample_parse(p, env, opts, cfg, bad) != 0)
        return -1;
    if (bmt_flight_parse(p, env, opts, &cfg->capture, bad) != 0)
        return -1;
    *bad = p->atom.flight;
    if (cfg->capture.window_ns && cfg->mode != BMT_RING_OVERWRITE)
        return -1;
    return 0;
}

static start_step_fn *const start_steps[] = {
    parse_events, parse_rings, parse_message_length, parse_default_and_mode, parse_limits,
    parse_notify, parse_environment, parse_variants, parse_sampling_and_flight,
};

/* Parses start's options map into `req`. Returns 0, or the key at fault in
 * *bad. */
static int parse_start(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts, struct start_request *req,
                       ERL_NIF_TERM *bad)
{
    for (size_t i = 0; i < sizeof start_steps / sizeof start_steps[0]; i++)
        if (start_steps[i](p, env, opts, req, bad) != 0)
            return -1;
    return 0;
}

/* {error, {relayd, Posix, Why}}: the relayd could not be reached, refused,
 * or the URL is wrong; Why says so in one line. */
static ERL_NIF_TERM relayd_error(struct priv *p, ErlNifEnv *env, int err, const char *why)
{
    return error_tuple(p, env, enif_make_tuple3(env, p->atom.relayd, posix_atom(env, err),
                                                binary_of(env, why)));
}

/* start_nif(Dir | undefined, Opts) -> {ok, Handle} | {error, {badopt, Key}}
 *   | {error, {Posix, Dir}} | {error, too_many_sessions}
 *   | {error, {relayd, Posix, Why}}.
 * Opts holds every option (beamtrace:start/1 fills the defaults). Dir
 * undefined: no local copy (the session streams to its relayd only). */
ERL_NIF_TERM bmt_nif_start(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    struct start_request *req = enif_alloc(sizeof *req);
    if (!req)
        return error_tuple(p, env, posix_atom(env, ENOMEM));
    memset(req, 0, sizeof *req);
    ERL_NIF_TERM bad, result;
    char why[512];
    if (argv[0] != p->atom.undefined &&
        !get_path(env, argv[0], req->cfg.dir, sizeof req->cfg.dir - 64)) {
        result = error_tuple(p, env, enif_make_tuple2(env, p->atom.badopt, p->atom.dir));
        goto out;
    }
    if (!enif_is_map(env, argv[1]))
        goto badarg;
    int rc = bmt_ctf_trace_info_init(&req->cfg.info);
    if (rc == 0 && parse_start(p, env, argv[1], req, &bad) != 0) {
        result = error_tuple(p, env, enif_make_tuple2(env, p->atom.badopt, bad));
        goto out;
    }
    if (rc == 0 && bmt_nif_clock_option(p, env, argv[1], &req->cfg.info) != 0) {
        result = error_tuple(p, env, enif_make_tuple2(env, p->atom.badopt, p->atom.clock));
        goto out;
    }
    if (rc == 0) {
        int err = bmt_nif_relayd_options(p, env, argv[1], &req->cfg, &bad, why, sizeof why);
        if (err == -1 && !why[0]) {
            result = error_tuple(p, env, enif_make_tuple2(env, p->atom.badopt, bad));
            goto out;
        }
        if (err < 0) {
            result = relayd_error(p, env, err == -1 ? EINVAL : -err, why);
            goto out;
        }
        if (!req->cfg.relayd && !req->cfg.dir[0]) {
            result = error_tuple(p, env, enif_make_tuple2(env, p->atom.badopt, p->atom.dir));
            goto out;
        }
    }
    if (rc == 0) {
        /* The TSC clock is calibrated once, on this dirty scheduler. */
        bmt_clock_calibrate(&p->clock);
        int index;
        uint64_t generation;
        rc = bmt_rec_start(&p->rec, &req->cfg, bmt_format_pack(req->message_bytes, req->variants),
                           req->make_default, &index,
                           &generation);
        if (rc == 0) {
            req->cfg.relayd = NULL; /* the session's now */
            result = enif_make_tuple2(env, p->atom.ok, bmt_make_handle(&p->handles, env, index, generation));
            goto out;
        }
        if (req->cfg.relayd) {
            struct bmt_relayd_stats rs;
            bmt_relayd_stats_get(req->cfg.relayd, &rs);
            if (rs.error) {
                result = relayd_error(p, env, -rc, rs.error_text);
                goto out;
            }
        }
    }
    if (rc == -EBUSY)
        result = error_tuple(p, env, p->atom.too_many_sessions);
    else
        result = path_error(p, env, -rc, req->cfg.dir);
out:
    bmt_relayd_free(req->cfg.relayd);
    enif_free(req);
    return result;
badarg:
    enif_free(req);
    return enif_make_badarg(env);
}

/* ---- stop, info, sessions, snapshot ---- */

static int reason_is_failure(enum bmt_stop_reason reason)
{
    return reason == BMT_REASON_WRITE_ERROR || reason == BMT_REASON_DIR_REMOVED;
}

/* stop(Handle | []) -> {ok, Stats} | {error, {Reason, Stats}} | {error, not_running} */
ERL_NIF_TERM bmt_nif_stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    struct session_handle *h;
    int index;
    uint64_t generation;
    if (!enif_is_empty_list(env, argv[0]) &&
        !enif_get_resource(env, argv[0], p->handles.type, (void **)&h))
        return enif_make_badarg(env);
    if (!bmt_get_handle(&p->handles, env, argv[0], &index, &generation))
        return error_tuple(p, env, p->atom.not_running);
    char dir[4096];
    struct bmt_rec_stats st;
    int state;
    if (bmt_rec_info(&p->rec, index, generation, &state, &st, dir, sizeof dir) != 0 ||
        bmt_rec_stop(&p->rec, index, generation, &st) != 0)
        return error_tuple(p, env, p->atom.not_running);
    bmt_forget_handle(&p->handles, index, generation);
    ERL_NIF_TERM map = stats_map(p, env, &st, dir);
    if (reason_is_failure(st.reason))
        return error_tuple(p, env, enif_make_tuple2(env, reason_term(env, &st), map));
    return enif_make_tuple2(env, p->atom.ok, map);
}

/* info(Handle | []) -> #{state, dir, events, discarded, after_stop,
 * written_bytes, default, reason} | {error, not_running}. */
ERL_NIF_TERM bmt_nif_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    int index, state;
    uint64_t generation;
    char dir[4096];
    struct bmt_rec_stats st;
    if (!bmt_get_handle(&p->handles, env, argv[0], &index, &generation) ||
        bmt_rec_info(&p->rec, index, generation, &state, &st, dir, sizeof dir) != 0)
        return error_tuple(p, env, p->atom.not_running);
    uint64_t packed = atomic_load(&p->rec.default_session);
    ERL_NIF_TERM keys[] = {p->atom.state, p->atom.dir, p->atom.events, p->atom.discarded,
                           p->atom.after_stop, p->atom.written_bytes, p->atom.default_,
                           p->atom.reason};
    ERL_NIF_TERM values[] = {
        state == BMT_SESSION_RUNNING ? p->atom.running : p->atom.stopped,
        dir_term(p, env, dir),
        enif_make_uint64(env, st.events),
        enif_make_uint64(env, st.discarded),
        enif_make_uint64(env, st.after_stop),
        enif_make_uint64(env, st.bytes),
        packed == (generation << 8 | (uint64_t)(index + 1)) ? p->atom.true_ : p->atom.false_,
        state == BMT_SESSION_RUNNING ? p->atom.undefined : reason_term(env, &st)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, sizeof keys / sizeof keys[0], &map);
    return with_relayd(p, env, map, &st);
}

/* sessions() -> [Handle]: every running session, and every session that
 * stopped by itself and was not collected by stop/1 yet. */
ERL_NIF_TERM bmt_nif_sessions(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    struct priv *p = enif_priv_data(env);
    int index[BMT_MAX_SESSIONS];
    uint64_t generation[BMT_MAX_SESSIONS];
    int n = bmt_rec_sessions(&p->rec, index, generation);
    ERL_NIF_TERM list = enif_make_list(env, 0);
    while (n-- > 0)
        list = enif_make_list_cell(env, bmt_make_handle(&p->handles, env, index[n], generation[n]), list);
    return list;
}

/* snapshot(Handle | [], Dir) -> {ok, #{dir, events, discarded, written_bytes}}
 *   | {error, {Posix, Dir}} | {error, not_running} | {error, not_flight_recorder} */
ERL_NIF_TERM bmt_nif_snapshot(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    int index;
    uint64_t generation;
    char dir[4096];
    if (!get_path(env, argv[1], dir, sizeof dir - 64))
        return enif_make_badarg(env);
    if (!bmt_get_handle(&p->handles, env, argv[0], &index, &generation))
        return error_tuple(p, env, p->atom.not_running);
    struct bmt_rec_stats st;
    int rc = bmt_rec_snapshot(&p->rec, index, generation, dir, &st);
    if (rc == -ESRCH)
        return error_tuple(p, env, p->atom.not_running);
    if (rc == -EINVAL)
        return error_tuple(p, env, p->atom.not_flight_recorder);
    if (rc < 0)
        return path_error(p, env, -rc, dir);
    ERL_NIF_TERM keys[] = {p->atom.dir, p->atom.events, p->atom.discarded, p->atom.written_bytes};
    ERL_NIF_TERM values[] = {binary_of(env, dir), enif_make_uint64(env, st.events),
                             enif_make_uint64(env, st.discarded), enif_make_uint64(env, st.bytes)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, sizeof keys / sizeof keys[0], &map);
    return enif_make_tuple2(env, p->atom.ok, map);
}

/* ---- notification ---- */

void bmt_on_stopped(void *ctx, int index, uint64_t generation, enum bmt_stop_reason reason)
{
    struct priv *p = ctx;
    const struct bmt_rec_config *cfg = &p->rec.sessions[index].cfg;
    ErlNifPid pid;
    if (cfg->owner_bytes != sizeof pid)
        return;
    memcpy(&pid, cfg->owner, sizeof pid);
    ErlNifEnv *env = enif_alloc_env();
    if (!env)
        return;
    struct bmt_rec_stats st = {0};
    st.reason = reason;
    st.error = atomic_load(&p->rec.sessions[index].error);
    /* {beamtrace_stopped, Session, Reason}; stop/1 gives the figures. */
    ERL_NIF_TERM msg = enif_make_tuple3(env, enif_make_atom(env, "beamtrace_stopped"),
                                        bmt_make_handle(&p->handles, env, index, generation),
                                        reason_term(env, &st));
    enif_send(NULL, &pid, env, msg);
    enif_free_env(env);
}

/* ---- sinks ---- */

/* sinks() -> #{recorder => true, lttng => true | {unavailable, Why},
 * usdt => true | {unavailable, Why}, clock => tsc | {clock_gettime, Why}}:
 * which sinks this node has, and what stamps the events (calibrating the
 * clock if no session did yet: a dirty scheduler's job). */
ERL_NIF_TERM bmt_nif_sinks(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    struct priv *p = enif_priv_data(env);
    char clock_why[200];
    bmt_clock_calibrate(&p->clock);
    ERL_NIF_TERM clock = bmt_clock_describe(&p->clock, clock_why, sizeof clock_why)
                             ? p->atom.tsc
                             : enif_make_tuple2(env, p->atom.clock_gettime, binary_of(env, clock_why));
    static const char usdt_why[] = "compiled out: sys/sdt.h was absent when this library was "
                                   "built (install systemtap-sdt-dev and rebuild)";
    ERL_NIF_TERM why, usdt;
    memcpy(enif_make_new_binary(env, strlen(p->lttng_why), &why), p->lttng_why,
           strlen(p->lttng_why));
    if (bmt_usdt_built()) {
        usdt = p->atom.true_;
    } else {
        usdt = enif_make_tuple2(env, p->atom.unavailable, binary_of(env, usdt_why));
    }
    ERL_NIF_TERM keys[] = {p->atom.recorder, p->atom.lttng, p->atom.usdt, p->atom.clock};
    ERL_NIF_TERM values[] = {p->atom.true_,
                             p->lttng ? p->atom.true_
                                      : enif_make_tuple2(env, p->atom.unavailable, why),
                             usdt, clock};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, sizeof keys / sizeof keys[0], &map);
    return map;
}
