/* Node tables and node-qualified process texts (contract in nodes.h).
 *
 * Why the reader rewrites texts rather than every analysis resolving
 * pids: every analysis keys its state by pid text (strtab.h); one rewrite
 * at the source gives all of them, and the exports, node-qualified
 * processes at once, and a process of node B seen from traces A and B gets
 * one key. The cost is one scan of the process fields of each event of a
 * cluster input (a few bytes each); single traces skip it.
 */
#include "nodes.h"
#include "core/catalogue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bmt_nodes_init(struct bmt_nodes *n, const char *const *node, unsigned trace_count)
{
    memset(n, 0, sizeof *n);
    bmt_strtab_init(&n->names);
    bmt_u64map_init(&n->index);
    n->trace_count = trace_count;
    if (!(n->trace_node = calloc(trace_count + 1, sizeof *n->trace_node)))
        return -ENOMEM;
    for (unsigned t = 0; t < trace_count; t++) {
        int64_t id = bmt_strtab_intern(&n->names, node[t], strlen(node[t]));
        if (id < 0)
            return -ENOMEM;
        n->trace_node[t] = (uint32_t)id;
    }
    return 0;
}

int64_t bmt_nodes_traced(const struct bmt_nodes *n, const char *name, size_t len)
{
    int64_t id = bmt_strtab_find(&n->names, name, len);
    for (unsigned t = 0; id >= 0 && t < n->trace_count; t++)
        if (n->trace_node[t] == (uint32_t)id)
            return id;
    return -1;
}

size_t bmt_nodes_prefix(const char *s, size_t len)
{
    if (!len || s[0] == '?' || s[0] == '<' || s[0] == '#')
        return 0;
    const char *slash = memchr(s, '/', len);
    if (!slash || (size_t)(slash - s) + 1 >= len)
        return 0;
    char c = slash[1];
    return c == '<' || c == '#' ? (size_t)(slash - s) : 0;
}

/* Splits OTP's text of a pid, port or reference ("<N.x.y>", "#Port<N.x>",
 * "#Ref<N.a.b.c>") into its prefix length (up to '<'), N, and the offset
 * of what follows N. Returns 0, or -1 when `s` is none of those. */
static int split_id(const char *s, size_t len, size_t *pre, uint64_t *num, size_t *rest)
{
    size_t i = 0;
    if (len > 6 && memcmp(s, "#Port<", 6) == 0)
        i = 6;
    else if (len > 5 && memcmp(s, "#Ref<", 5) == 0)
        i = 5;
    else if (len > 1 && s[0] == '<')
        i = 1;
    else
        return -1;
    *pre = i;
    uint64_t v = 0;
    size_t d = i;
    for (; d < len && s[d] >= '0' && s[d] <= '9' && d - i < 10; d++)
        v = v * 10 + (uint64_t)(s[d] - '0');
    if (d == i || d >= len || s[d] != '.' || s[len - 1] != '>')
        return -1;
    *num = v;
    *rest = d;
    return 0;
}

static int learn(struct bmt_nodes *n, unsigned trace, const struct bmt_value *v)
{
    uint64_t index = v[BMT_F_node_info_index].integer;
    const struct bmt_value *name = &v[BMT_F_node_info_node];
    if (index == 0 || index > UINT32_MAX || !name->len)
        return 0;
    int64_t id = bmt_strtab_intern(&n->names, name->str, name->len);
    if (id < 0)
        return -ENOMEM;
    int created;
    uint32_t *slot = bmt_u64map_get(&n->index, (uint64_t)trace << 32 | index, (uint32_t)id, &created);
    if (!slot)
        return -ENOMEM;
    *slot = (uint32_t)id; /* fixed for the VM's life: the latest says the same */
    return 0;
}

/* Writes the qualified form of `v` (trace `trace`) into slot `i`; leaves
 * anything that is not a pid, port or reference alone. */
static void qualify(struct bmt_nodes *n, unsigned trace, unsigned i, const struct bmt_value *v)
{
    size_t pre, rest;
    uint64_t num;
    n->vals[i] = *v;
    if (split_id(v->str, v->len, &pre, &num, &rest) < 0)
        return;
    uint32_t node = num == 0 ? n->trace_node[trace]
                             : bmt_u64map_find(&n->index, (uint64_t)trace << 32 | num);
    char *out = n->text[i];
    const char *tname;
    int w;
    if (node == UINT32_MAX) {
        n->unresolved_count++;
        tname = bmt_strtab_str(&n->names, n->trace_node[trace]);
        w = snprintf(out, BMT_NODES_TEXT_BYTES, "?%s/%.*s", tname, (int)v->len, v->str);
    } else {
        tname = bmt_strtab_str(&n->names, node);
        w = snprintf(out, BMT_NODES_TEXT_BYTES, "%s/%.*s0%.*s", tname, (int)pre, v->str,
                     (int)(v->len - rest), v->str + rest);
    }
    if (w < 0 || w >= BMT_NODES_TEXT_BYTES)
        return; /* cannot happen with atom-sized node names; keep OTP's text */
    n->vals[i].str = out;
    n->vals[i].len = (uint32_t)w;
}

const struct bmt_value *bmt_nodes_qualify(struct bmt_nodes *n, unsigned trace, uint16_t tp,
                                          const struct bmt_value *values, uint32_t fields)
{
    if (tp >= BMT_TP_COUNT || trace >= n->trace_count)
        return values;
    if (tp == BMT_TP_node_info && learn(n, trace, values) < 0)
        return NULL;
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    int sends = tp == BMT_TP_message_send || tp == BMT_TP_message_send_link;
    int changed = 0;
    for (unsigned i = 0; i < t->field_count; i++) {
        const struct bmt_field *f = &t->fields[i];
        if (f->type == BMT_FIELD_STRING && (fields >> i & 1) &&
            (f->kind == BMT_KIND_ID || (sends && strcmp(f->name, "to") == 0))) {
            qualify(n, trace, i, &values[i]);
            changed |= n->vals[i].str != values[i].str;
        } else {
            n->vals[i] = values[i];
        }
    }
    return changed ? n->vals : values;
}

void bmt_nodes_free(struct bmt_nodes *n)
{
    bmt_strtab_free(&n->names);
    bmt_u64map_free(&n->index);
    free(n->trace_node);
    n->trace_node = NULL;
    n->trace_count = 0;
}
