/* Sampling's start options and figures (contract in nif_sample.h). */
#include "nif_sample.h"

/* The sample option's kinds, as atoms, in enum bmt_sample_kind order. */
static void kind_atoms(const struct bmt_atoms *a, ERL_NIF_TERM out[BMT_SAMPLE_KINDS])
{
    out[BMT_SAMPLE_CALL] = a->call;
    out[BMT_SAMPLE_SEND] = a->send;
    out[BMT_SAMPLE_RECEIVE] = a->receive_;
    out[BMT_SAMPLE_RUNNING] = a->running;
    out[BMT_SAMPLE_GC] = a->garbage_collection;
    out[BMT_SAMPLE_PROCS] = a->procs;
    out[BMT_SAMPLE_PORTS] = a->ports;
}

static int get_ratio(ErlNifEnv *env, ERL_NIF_TERM v, uint32_t *ratio)
{
    unsigned n;
    if (!enif_get_uint(env, v, &n) || n == 0 || n > BMT_SAMPLE_MAX_RATIO)
        return 0;
    *ratio = n;
    return 1;
}

int bmt_sample_parse(const struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                     struct bmt_rec_config *cfg, ERL_NIF_TERM *bad)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM v, kinds[BMT_SAMPLE_KINDS];
    kind_atoms(a, kinds);
    *bad = a->sample;
    if (enif_get_map_value(env, opts, a->sample, &v) && v != a->none) {
        uint32_t all;
        if (get_ratio(env, v, &all)) {
            /* sample => N: the kinds that come by the thousand. */
            for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
                cfg->sample_ratio[k] = k == BMT_SAMPLE_PROCS || k == BMT_SAMPLE_PORTS ? 1 : all;
        } else if (enif_is_map(env, v)) {
            ErlNifMapIterator it;
            ERL_NIF_TERM key, value;
            size_t size;
            if (!enif_get_map_size(env, v, &size) || size == 0)
                return -1;
            enif_map_iterator_create(env, v, &it, ERL_NIF_MAP_ITERATOR_FIRST);
            int ok = 1;
            while (ok && enif_map_iterator_get_pair(env, &it, &key, &value)) {
                int k = 0;
                while (k < BMT_SAMPLE_KINDS && kinds[k] != key)
                    k++;
                ok = k < BMT_SAMPLE_KINDS && get_ratio(env, value, &cfg->sample_ratio[k]);
                if (!ok)
                    *bad = enif_make_tuple2(env, a->sample, key);
                enif_map_iterator_next(env, &it);
            }
            enif_map_iterator_destroy(env, &it);
            if (!ok)
                return -1;
        } else {
            return -1;
        }
    }
    *bad = a->on_max_rate;
    cfg->on_max_rate = BMT_ON_MAX_RATE_STOP;
    if (enif_get_map_value(env, opts, a->on_max_rate, &v)) {
        if (v == a->sample)
            cfg->on_max_rate = BMT_ON_MAX_RATE_SAMPLE;
        else if (v != a->stop)
            return -1;
    }
    return 0;
}

ERL_NIF_TERM bmt_sample_stats_map(const struct priv *p, ErlNifEnv *env,
                                  const struct bmt_rec_stats *st)
{
    const struct bmt_atoms *a = &p->atom;
    ERL_NIF_TERM kinds[BMT_SAMPLE_KINDS], values[BMT_SAMPLE_KINDS], ratios, map;
    kind_atoms(a, kinds);
    for (int k = 0; k < BMT_SAMPLE_KINDS; k++)
        values[k] = enif_make_uint(env, st->sample_ratio[k]);
    enif_make_map_from_arrays(env, kinds, values, BMT_SAMPLE_KINDS, &ratios);
    ERL_NIF_TERM keys[] = {a->ratios, a->reactions};
    ERL_NIF_TERM vals[] = {ratios, enif_make_uint(env, st->sample_reactions)};
    enif_make_map_from_arrays(env, keys, vals, 2, &map);
    return map;
}
