/* Process names (contract in names.h). */
#include "names.h"
#include "layouts.h"
#include "core/catalogue.h"
#include "elixir.h"
#include "base/grow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_names_init(struct bmt_names *n)
{
    memset(n, 0, sizeof *n);
    bmt_strtab_init(&n->pids);
    bmt_strtab_init(&n->text);
    bmt_u64map_init(&n->ever);
    bmt_u64map_init(&n->holder);
}

int64_t bmt_names_pid(struct bmt_names *n, const char *s, size_t len)
{
    int64_t id = bmt_strtab_intern(&n->pids, s, len);
    if (id < 0 || (uint32_t)id < n->cap)
        return id;
    uint32_t old = n->cap;
    struct bmt_pname *p = bmt_grow(n->procs, &n->cap, (uint32_t)id, sizeof *p);
    if (!p)
        return -ENOMEM;
    for (uint32_t i = old; i < n->cap; i++)
        p[i] = (struct bmt_pname){BMT_NAME_NONE, BMT_NAME_NONE, BMT_NAME_NONE};
    n->procs = p;
    return id;
}

/* A name or label, or BMT_NAME_NONE for an absent one: the recorder
 * writes "undefined", as Erlang says it (an empty string would print as
 * the previous event's value in babeltrace2 2.0); older traces wrote "". */
static int64_t text(struct bmt_names *n, const struct bmt_value *v)
{
    if (!v->len || (v->len == 9 && memcmp(v->str, "undefined", 9) == 0))
        return BMT_NAME_NONE;
    return bmt_strtab_intern(&n->text, v->str, v->len);
}

/* Process `pid` now holds registered name `t`. */
/* The holder map's key: registered name `t` on the node of process `pid`
 * (names are per node: every node of a cluster may have its `bmt_vnode`).
 * A pid text without a node prefix (one trace) is node 0. */
static int64_t holder_key(struct bmt_names *n, uint32_t pid, uint32_t t)
{
    const char *s = bmt_strtab_str(&n->pids, pid);
    size_t plen = bmt_nodes_prefix(s, bmt_strtab_len(&n->pids, pid));
    if (!plen)
        return t;
    int64_t node = bmt_strtab_intern(&n->text, s, plen);
    return node < 0 ? node : (int64_t)((uint64_t)(node + 1) << 32 | t);
}

static int hold(struct bmt_names *n, uint32_t pid, uint32_t t)
{
    int created;
    int64_t key = holder_key(n, pid, t);
    uint32_t *slot = key < 0 ? NULL : bmt_u64map_get(&n->holder, (uint64_t)key, pid, &created);
    if (!slot)
        return -ENOMEM;
    *slot = pid;
    return 0;
}

static void unhold(struct bmt_names *n, uint32_t pid, uint32_t t)
{
    int64_t key = holder_key(n, pid, t);
    if (key >= 0 && bmt_u64map_find(&n->holder, (uint64_t)key) == pid)
        bmt_u64map_remove(&n->holder, (uint64_t)key);
}

int64_t bmt_names_holder(const struct bmt_names *n, const char *sender, size_t sender_len,
                         const char *to, size_t len)
{
    const char *node = sender;
    size_t node_len = bmt_nodes_prefix(sender, sender_len);
    /* {Name,Node}: Name on Node. */
    if (len > 4 && to[0] == '{' && to[len - 1] == '}') {
        const char *comma = NULL;
        for (size_t i = len - 1; i > 0 && !comma; i--)
            if (to[i] == ',')
                comma = to + i;
        if (!comma)
            return -1;
        node = comma + 1;
        node_len = (size_t)(to + len - 1 - node);
        len = (size_t)(comma - to - 1);
        to++;
        if (node_len > 2 && node[0] == '\'' && node[node_len - 1] == '\'') {
            node++;
            node_len -= 2;
        }
    }
    int64_t t = bmt_strtab_find(&n->text, to, len);
    if (t < 0)
        return -1;
    uint64_t key = (uint64_t)t;
    if (node_len) {
        int64_t nt = bmt_strtab_find(&n->text, node, node_len);
        if (nt < 0)
            return -1;
        key |= (uint64_t)(nt + 1) << 32;
    }
    uint32_t pid = bmt_u64map_find(&n->holder, key);
    return pid == UINT32_MAX ? -1 : (int64_t)pid;
}

static int remember(struct bmt_names *n, uint32_t pid, uint32_t t)
{
    uint64_t key = (uint64_t)pid << 32 | t;
    int created;
    if (!bmt_u64map_get(&n->ever, key, 0, &created))
        return -ENOMEM;
    if (!created)
        return 0;
    uint64_t *keys = bmt_grow(n->ever_keys, &n->ever_cap, n->ever_count, sizeof *keys);
    if (!keys)
        return -ENOMEM;
    n->ever_keys = keys;
    n->ever_keys[n->ever_count++] = key;
    return 0;
}

/* Initial calls that say nothing about the process. */
static int generic_entry(const char *s, size_t len)
{
    static const char *const generic[] = {"undefined", "proc_lib:init_p/5", "proc_lib:init_p/3",
                                           "erlang:apply/2", ""};
    for (unsigned i = 0; i < sizeof generic / sizeof generic[0]; i++)
        if (strlen(generic[i]) == len && memcmp(generic[i], s, len) == 0)
            return 1;
    return 0;
}

#define NAME_FIELD(tp, f) (UINT32_C(1) << BMT_F_##tp##_##f)
const struct bmt_field_set bmt_names_fields = {{
    [BMT_TP_process_info] = NAME_FIELD(process_info, pid) | NAME_FIELD(process_info, name) |
                            NAME_FIELD(process_info, entry) | NAME_FIELD(process_info, label),
    [BMT_TP_process_spawn] = NAME_FIELD(process_spawn, pid) | NAME_FIELD(process_spawn, entry),
    [BMT_TP_process_register] = NAME_FIELD(process_register, pid) |
                                NAME_FIELD(process_register, name) |
                                NAME_FIELD(process_register, type),
}};

int bmt_names_feed(struct bmt_names *n, const struct bmt_record *rec)
{
    const struct bmt_value *v = rec->values;
    int64_t pid, t;
#define PID(tp) bmt_names_pid(n, v[BMT_F_##tp##_pid].str, v[BMT_F_##tp##_pid].len)
    switch (rec->tp) {
    case BMT_TP_process_info: {
        n->dump_count++;
        if ((pid = PID(process_info)) < 0)
            return (int)pid;
        struct bmt_pname *p = &n->procs[pid];
        if ((t = text(n, &v[BMT_F_process_info_name])) < 0)
            return (int)t;
        if (t != BMT_NAME_NONE) {
            p->reg = (uint32_t)t;
            if (remember(n, (uint32_t)pid, (uint32_t)t) < 0 ||
                hold(n, (uint32_t)pid, (uint32_t)t) < 0)
                return -ENOMEM;
        }
        if ((t = text(n, &v[BMT_F_process_info_label])) < 0)
            return (int)t;
        if (t != BMT_NAME_NONE) {
            p->label = (uint32_t)t;
            if (remember(n, (uint32_t)pid, (uint32_t)t) < 0)
                return -ENOMEM;
        }
        if (!generic_entry(v[BMT_F_process_info_entry].str, v[BMT_F_process_info_entry].len)) {
            if ((t = text(n, &v[BMT_F_process_info_entry])) < 0)
                return (int)t;
            p->entry = (uint32_t)t;
        }
        return 0;
    }
    case BMT_TP_process_spawn:
        if ((pid = PID(process_spawn)) < 0)
            return (int)pid;
        if (n->procs[pid].entry == BMT_NAME_NONE &&
            !generic_entry(v[BMT_F_process_spawn_entry].str, v[BMT_F_process_spawn_entry].len)) {
            if ((t = text(n, &v[BMT_F_process_spawn_entry])) < 0)
                return (int)t;
            n->procs[pid].entry = (uint32_t)t;
        }
        return 0;
    case BMT_TP_process_register:
        if ((pid = PID(process_register)) < 0)
            return (int)pid;
        if ((t = text(n, &v[BMT_F_process_register_name])) < 0)
            return (int)t;
        if (t == BMT_NAME_NONE)
            return 0;
        if (!bmt_value_is(&v[BMT_F_process_register_type], "register")) {
            /* Sends to the name go nowhere now; the process keeps showing
             * it (its last name stays the most useful label). */
            unhold(n, (uint32_t)pid, (uint32_t)t);
            return 0;
        }
        n->procs[pid].reg = (uint32_t)t;
        if (hold(n, (uint32_t)pid, (uint32_t)t) < 0)
            return -ENOMEM;
        return remember(n, (uint32_t)pid, (uint32_t)t);
    default:
        return 0;
    }
#undef PID
}

void bmt_names_name(const struct bmt_names *n, uint32_t id, char *buf, size_t size)
{
    buf[0] = '\0';
    if (id >= n->pids.count)
        return;
    const struct bmt_pname *p = &n->procs[id];
    uint32_t t = p->reg != BMT_NAME_NONE ? p->reg : p->label;
    if (t != BMT_NAME_NONE)
        bmt_elixir_atom(bmt_strtab_str(&n->text, t), bmt_strtab_len(&n->text, t), buf, size);
    else if (p->entry != BMT_NAME_NONE)
        bmt_elixir_mfa(bmt_strtab_str(&n->text, p->entry), bmt_strtab_len(&n->text, p->entry), buf,
                       size);
}

void bmt_names_label(const struct bmt_names *n, const char *pid, size_t len, char *buf,
                     size_t size)
{
    char name[512];
    int64_t id = bmt_strtab_find(&n->pids, pid, len);
    name[0] = '\0';
    if (id >= 0)
        bmt_names_name(n, (uint32_t)id, name, sizeof name);
    if (name[0])
        snprintf(buf, size, "%.*s %s", (int)len, pid, name);
    else
        snprintf(buf, size, "%.*s", (int)len, pid);
}

static int text_matches(const struct bmt_names *n, uint32_t t, const char *name, int glob, int mfa)
{
    const char *raw = bmt_strtab_str(&n->text, t);
    char shown[512];
    if (mfa)
        bmt_elixir_mfa(raw, bmt_strtab_len(&n->text, t), shown, sizeof shown);
    else
        bmt_elixir_atom(raw, bmt_strtab_len(&n->text, t), shown, sizeof shown);
    if (glob)
        return bmt_glob_match(name, raw) || bmt_glob_match(name, shown);
    return strcmp(name, raw) == 0 || strcmp(name, shown) == 0;
}

int bmt_names_select(const struct bmt_names *n, const char *name, int glob, uint8_t *marks)
{
    uint8_t *hit = calloc(n->text.count + 1, 2); /* [2t] as a name, [2t+1] as a call */
    if (!hit)
        return -ENOMEM;
    for (uint32_t t = 0; t < n->text.count; t++) {
        hit[2 * t] = (uint8_t)text_matches(n, t, name, glob, 0);
        hit[2 * t + 1] = (uint8_t)(glob && text_matches(n, t, name, 1, 1));
    }
    int matched = 0;
    for (uint32_t i = 0; i < n->ever_count; i++)
        if (hit[2 * (uint32_t)n->ever_keys[i]])
            marks[n->ever_keys[i] >> 32] = 1, matched = 1;
    for (uint32_t id = 0; id < n->pids.count; id++)
        if (n->procs[id].entry != BMT_NAME_NONE && hit[2 * n->procs[id].entry + 1])
            marks[id] = 1, matched = 1;
    free(hit);
    return matched;
}

void bmt_names_free(struct bmt_names *n)
{
    bmt_strtab_free(&n->pids);
    bmt_strtab_free(&n->text);
    bmt_u64map_free(&n->ever);
    bmt_u64map_free(&n->holder);
    free(n->procs);
    free(n->ever_keys);
    memset(n, 0, sizeof *n);
}
