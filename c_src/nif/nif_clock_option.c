/* The `clock' option of start_nif (contract in nif_clock_option.h): a
 * controller's clock estimate written into the trace's metadata, so that a
 * trace that is never copied back (streamed to a relayd) is aligned from
 * its start. Runs on the dirty I/O scheduler that runs start_nif.
 */
#include "nif_clock_option.h"

#include <stdio.h>
#include <string.h>

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
