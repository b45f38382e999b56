/* The flight recorder's NIFs (contract in nif_flight.h). */
#include "nif_flight.h"
#include "nif_session.h"
#include "nif_state.h"

#include <string.h>

#define MS_NS UINT64_C(1000000)
/* Longest window and tail a flight recording takes: a day. */
#define MAX_WINDOW_MS (UINT64_C(24) * 3600 * 1000)

/* The trigger kind an atom names, or BMT_TRIGGER_NONE. */
static enum bmt_trigger_kind kind_of(const struct bmt_atoms *a, ERL_NIF_TERM atom)
{
    if (atom == a->call) return BMT_TRIGGER_CALL;
    if (atom == a->long_gc) return BMT_TRIGGER_LONG_GC;
    if (atom == a->long_schedule) return BMT_TRIGGER_LONG_SCHEDULE;
    if (atom == a->large_heap) return BMT_TRIGGER_LARGE_HEAP;
    if (atom == a->busy_port) return BMT_TRIGGER_BUSY_PORT;
    if (atom == a->busy_dist_port) return BMT_TRIGGER_BUSY_DIST_PORT;
    if (atom == a->long_message_queue) return BMT_TRIGGER_LONG_MESSAGE_QUEUE;
    if (atom == a->probe) return BMT_TRIGGER_PROBE;
    if (atom == a->message_queue) return BMT_TRIGGER_MESSAGE_QUEUE;
    return BMT_TRIGGER_NONE;
}

/* Reads a binary or an atom as text into `out` (NUL-terminated, no NUL
 * inside). */
static int get_text(ErlNifEnv *env, ERL_NIF_TERM term, char *out, size_t size)
{
    ErlNifBinary bin;
    if (enif_is_atom(env, term))
        return enif_get_atom(env, term, out, (unsigned)size, ERL_NIF_LATIN1) > 0;
    if (!enif_inspect_binary(env, term, &bin) || bin.size >= size ||
        memchr(bin.data, 0, bin.size))
        return 0;
    memcpy(out, bin.data, bin.size);
    out[bin.size] = '\0';
    return 1;
}

/* A map value in ms (a positive integer below MAX_WINDOW_MS), or `def`. */
static int get_ms(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key, uint64_t def, uint64_t *ns)
{
    ERL_NIF_TERM v;
    ErlNifUInt64 ms;
    if (!enif_get_map_value(env, map, key, &v)) {
        *ns = def * MS_NS;
        return 1;
    }
    if (!enif_get_uint64(env, v, &ms) || ms == 0 || ms > MAX_WINDOW_MS)
        return 0;
    *ns = ms * MS_NS;
    return 1;
}

/* One item of `triggers` into cfg. */
static int parse_trigger(const struct bmt_atoms *a, ErlNifEnv *env, ERL_NIF_TERM item,
                         struct bmt_capture_config *cfg)
{
    const ERL_NIF_TERM *t;
    int arity;
    enum bmt_trigger_kind kind;
    ErlNifUInt64 bound = 0;
    if (enif_is_atom(env, item)) {
        kind = kind_of(a, item);
        if (kind == BMT_TRIGGER_NONE || kind == BMT_TRIGGER_LONG_GC ||
            kind == BMT_TRIGGER_LONG_SCHEDULE || kind == BMT_TRIGGER_LARGE_HEAP ||
            kind == BMT_TRIGGER_MESSAGE_QUEUE)
            return 0; /* these need their bound */
    } else if (enif_get_tuple(env, item, &arity, &t) && arity == 2) {
        kind = kind_of(a, t[0]);
        if (kind == BMT_TRIGGER_PROBE) {
            if (!get_text(env, t[1], cfg->probe_label, sizeof cfg->probe_label) ||
                cfg->probe_label[0] == '\0')
                return 0;
        } else if (kind == BMT_TRIGGER_LONG_GC || kind == BMT_TRIGGER_LONG_SCHEDULE ||
                   kind == BMT_TRIGGER_LARGE_HEAP || kind == BMT_TRIGGER_MESSAGE_QUEUE) {
            if (!enif_get_uint64(env, t[1], &bound) || bound == 0)
                return 0;
        } else {
            return 0;
        }
    } else {
        return 0;
    }
    if (cfg->armed >> kind & 1)
        return 0; /* one trigger per kind */
    cfg->armed |= 1u << kind;
    cfg->bound[kind] = bound;
    return 1;
}

int bmt_flight_parse(const struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                     struct bmt_capture_config *cfg, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM map, v, list, head;
    memset(cfg, 0, sizeof *cfg);
    if (!enif_get_map_value(env, opts, a->flight, &map) || map == a->none)
        return 0;
    *bad = a->flight;
    if (!enif_is_map(env, map))
        return -1;
    *bad = enif_make_tuple2(env, a->flight, a->window);
    if (!enif_get_map_value(env, map, a->window, &v) || !get_ms(env, map, a->window, 0, &cfg->window_ns))
        return -1;
    *bad = enif_make_tuple2(env, a->flight, a->after);
    if (!get_ms(env, map, a->after, 1000, &cfg->after_ns))
        return -1;
    *bad = enif_make_tuple2(env, a->flight, a->max_captures);
    cfg->max_per_hour = 6;
    if (enif_get_map_value(env, map, a->max_captures, &v)) {
        unsigned n;
        if (v == a->infinity)
            cfg->max_per_hour = 0;
        else if (!enif_get_uint(env, v, &n) || n == 0 || n > 3600)
            return -1;
        else
            cfg->max_per_hour = n;
    }
    *bad = enif_make_tuple2(env, a->flight, a->triggers);
    if (!enif_get_map_value(env, map, a->triggers, &list) || !enif_is_list(env, list))
        return -1;
    while (enif_get_list_cell(env, list, &head, &list)) {
        if (!parse_trigger(a, env, head, cfg)) {
            *bad = enif_make_tuple2(env, a->flight, enif_make_tuple2(env, a->triggers, head));
            return -1;
        }
    }
    return 0;
}

/* ---- offers ---- */

/* Text of a pid, port or atom (or "" for undefined). */
static void who_text(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM who, char *out, size_t size)
{
    out[0] = '\0';
    if (who == p->atom.undefined)
        return;
    if (enif_is_pid(env, who) || enif_is_port(env, who) || enif_is_atom(env, who))
        enif_snprintf(out, size, "%T", who);
}

/* Text of {M, F, A} ("m:f/a"), an atom or a binary; "" otherwise. */
static void where_text(ErlNifEnv *env, ERL_NIF_TERM where, char *out, size_t size)
{
    const ERL_NIF_TERM *t;
    int arity;
    out[0] = '\0';
    if (enif_get_tuple(env, where, &arity, &t) && arity == 3 && enif_is_atom(env, t[0]) &&
        enif_is_atom(env, t[1]))
        enif_snprintf(out, size, "%T:%T/%T", t[0], t[1], t[2]);
    else if (!get_text(env, where, out, size) || strcmp(out, "undefined") == 0)
        out[0] = '\0';
}

static ERL_NIF_TERM offer_result(struct priv *p, int rc)
{
    switch (rc) {
    case 1: return p->atom.started;
    case 2: return p->atom.extended;
    case 0: return p->atom.skipped;
    default: return p->atom.false_;
    }
}

ERL_NIF_TERM bmt_nif_flight_offer(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    enum bmt_trigger_kind kind = kind_of(&p->atom, argv[1]);
    ErlNifUInt64 value;
    if (kind == BMT_TRIGGER_NONE || kind == BMT_TRIGGER_CALL ||
        !enif_get_uint64(env, argv[2], &value))
        return enif_make_badarg(env);
    uint64_t gen;
    struct bmt_session *s = bmt_resolve_session(&p->handles, env, argv[0], &gen);
    if (!s || !bmt_rec_live(s, gen) || !(s->cfg.capture.armed >> kind & 1))
        return p->atom.false_;
    char who[64], where[256];
    who_text(p, env, argv[3], who, sizeof who);
    where_text(env, argv[4], where, sizeof where);
    return offer_result(p, bmt_rec_offer_trigger(s, gen, kind, value, who, where, bmt_clock_ns()));
}

ERL_NIF_TERM bmt_nif_trigger(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    /* The cost when no flight recording listens: this load. */
    unsigned sessions = atomic_load_explicit(&p->rec.probe_sessions, memory_order_relaxed);
    if (!sessions)
        return p->atom.false_;
    char label[256], who[64] = "";
    where_text(env, argv[0], label, sizeof label);
    if (label[0] == '\0')
        enif_snprintf(label, sizeof label, "%T", argv[0]);
    ErlNifPid self;
    if (enif_self(env, &self))
        enif_snprintf(who, sizeof who, "%T", enif_make_pid(env, &self));
    uint64_t now = bmt_clock_ns();
    int taken = 0;
    for (int i = 0; sessions; i++, sessions >>= 1) {
        if (!(sessions & 1))
            continue;
        struct bmt_session *s = &p->rec.sessions[i];
        uint64_t gen = atomic_load_explicit(&s->generation, memory_order_relaxed);
        if (bmt_rec_offer_trigger(s, gen, BMT_TRIGGER_PROBE, 1, who, label, now) > 0)
            taken = 1;
    }
    return taken ? p->atom.true_ : p->atom.false_;
}

ERL_NIF_TERM bmt_flight_stats_map(struct priv *p, ErlNifEnv *env,
                                  const struct bmt_capture_stats *st)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM keys[] = {a->captures, a->fired, a->absorbed, a->skipped_rate, a->skipped_long,
                           a->skipped_bytes, a->lost_packets, a->capture_bytes, a->open,
                           a->capture_error};
    ERL_NIF_TERM values[] = {enif_make_uint64(env, st->captures), enif_make_uint64(env, st->fired),
                             enif_make_uint64(env, st->absorbed),
                             enif_make_uint64(env, st->skipped_rate),
                             enif_make_uint64(env, st->skipped_long),
                             enif_make_uint64(env, st->skipped_bytes),
                             enif_make_uint64(env, st->lost_packets),
                             enif_make_uint64(env, st->bytes), st->open ? a->true_ : a->false_,
                             enif_make_int(env, st->error)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, values, sizeof keys / sizeof keys[0], &map);
    return map;
}

ERL_NIF_TERM bmt_nif_flight_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    struct priv *p = enif_priv_data(env);
    int index;
    uint64_t generation;
    struct bmt_capture_stats st;
    if (!bmt_get_handle(&p->handles, env, argv[0], &index, &generation) ||
        bmt_rec_capture_stats(&p->rec, index, generation, &st) != 0)
        return enif_make_tuple2(env, p->atom.error, p->atom.not_running);
    return bmt_flight_stats_map(p, env, &st);
}
