/* Matching sends to receipts (contract and rule in links.h and
 * docs/cluster.md; the reference is test/cluster/bmt_links.erl).
 *
 * Layout: sends live in one pool, threaded into per-(sender, receiver)
 * FIFO queues; each receiver heads a list of the queues to it, and each
 * node a list of the queues to its process aliases (a gen_server call
 * makes a new alias each time, so that list is pruned of empty queues as
 * it is walked). Receipts wait in a ring for BMT_LINKS_DELAY_NS.
 */
#include "links.h"
#include "core/catalogue.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct bmt_links_send {
    uint64_t ts_ns, fingerprint;
    uint32_t next;                  /* in its queue, or in the free list */
    uint32_t trace;
    uint32_t weight;                /* sends it stands for (bmt_links.weight when fed) */
};

struct bmt_links_queue {
    uint32_t head, tail;            /* sends, or NONE when empty */
    uint32_t sender, receiver;
    uint32_t next;                  /* next queue of the receiver's (or alias node's) list */
    uint8_t alias;                  /* to a process alias */
    uint8_t listed;                 /* in its receiver's (or alias node's) list */
};

struct bmt_links_receipt {
    uint64_t ts_ns, fingerprint;
    uint32_t receiver, sender;      /* sender: the receipt's `from`, or NONE */
    uint32_t from_node;             /* or NONE: from outside the cluster */
    uint32_t trace;
    uint32_t weight;                /* receipts it stands for (bmt_links.weight when fed) */
};

static uint32_t traced_nodes(const struct bmt_reader *r)
{
    return r->cluster ? r->trace_count : 1;
}

int bmt_links_init(struct bmt_links *l, const struct bmt_reader *r, const struct bmt_names *names)
{
    memset(l, 0, sizeof *l);
    l->weight = 1;
    l->r = r;
    l->names = names;
    bmt_strtab_init(&l->procs);
    bmt_u64map_init(&l->queue_of);
    bmt_u64map_init(&l->fp_count);
    l->send_free = BMT_LINKS_NONE;
    l->trace_count = r->trace_count;
    l->alias_queues = malloc(traced_nodes(r) * sizeof *l->alias_queues);
    l->trace_start_ns = calloc(r->trace_count + 1, sizeof *l->trace_start_ns);
    l->losses = calloc(r->trace_count + 1, sizeof *l->losses);
    l->loss_count = calloc(r->trace_count + 1, sizeof *l->loss_count);
    l->loss_cap = calloc(r->trace_count + 1, sizeof *l->loss_cap);
    if (!l->alias_queues || !l->trace_start_ns || !l->losses || !l->loss_count || !l->loss_cap)
        return -ENOMEM;
    for (uint32_t i = 0; i < traced_nodes(r); i++)
        l->alias_queues[i] = BMT_LINKS_NONE;
    return 0;
}

uint32_t bmt_links_node_count(const struct bmt_links *l)
{
    return traced_nodes(l->r);
}

const char *bmt_links_node_name(const struct bmt_links *l, uint32_t node)
{
    if (l->r->cluster)
        return node < l->r->nodes.names.count ? bmt_strtab_str(&l->r->nodes.names, node) : "?";
    return l->r->trace_count && l->r->traces[0].node ? l->r->traces[0].node : "";
}

/* The traced node a text belongs to (a process, alias or port), or NONE
 * when that node has no trace. `trace`: where the text was read. */
static uint32_t node_of(const struct bmt_links *l, const char *s, size_t len)
{
    if (!l->r->cluster) /* one trace: only its own <0.x.y> are its */
        return len > 3 && (memcmp(s, "<0.", 3) == 0 || memcmp(s, "#Ref<0.", 7 <= len ? 7 : len) == 0)
                   ? 0 : BMT_LINKS_NONE;
    size_t p = bmt_nodes_prefix(s, len);
    if (!p)
        return BMT_LINKS_NONE;
    int64_t id = bmt_nodes_traced(&l->r->nodes, s, p);
    return id < 0 ? BMT_LINKS_NONE : (uint32_t)id;
}

/* The id of process text `s`, node `node`. -ENOMEM. */
static int64_t proc(struct bmt_links *l, const char *s, size_t len, uint32_t node)
{
    int64_t id = bmt_strtab_intern(&l->procs, s, len);
    if (id < 0 || (uint32_t)id < l->proc_cap)
        return id;
    uint32_t cap = l->proc_cap ? l->proc_cap * 2 : 256;
    while (cap <= (uint32_t)id)
        cap *= 2;
    uint32_t *pn = realloc(l->proc_node, cap * sizeof *pn);
    if (pn)
        l->proc_node = pn;
    uint32_t *pq = realloc(l->proc_queues, cap * sizeof *pq);
    if (pq)
        l->proc_queues = pq;
    uint8_t *pr = realloc(l->proc_receives, cap);
    if (pr)
        l->proc_receives = pr;
    if (!pn || !pq || !pr)
        return -ENOMEM;
    for (uint32_t i = l->proc_cap; i < cap; i++) {
        pn[i] = node;
        pq[i] = BMT_LINKS_NONE;
        pr[i] = 0;
    }
    l->proc_cap = cap;
    return id;
}

static int64_t proc_at(struct bmt_links *l, const char *s, size_t len, uint32_t node)
{
    int64_t id = proc(l, s, len, node);
    if (id >= 0)
        l->proc_node[id] = node;
    return id;
}

/* The queue of (sender, receiver), created (and listed) if new. */
static int64_t queue(struct bmt_links *l, uint32_t sender, uint32_t receiver, int alias)
{
    int created;
    uint32_t *slot = bmt_u64map_get(&l->queue_of, (uint64_t)sender << 32 | receiver,
                                    l->queue_count, &created);
    if (!slot)
        return -ENOMEM;
    uint32_t qi = *slot;
    if (created) {
        struct bmt_links_queue *queues = bmt_grow(l->queues, &l->queue_cap, l->queue_count,
                                                   sizeof *queues);
        if (!queues) {
            bmt_u64map_remove(&l->queue_of, (uint64_t)sender << 32 | receiver);
            return -ENOMEM;
        }
        l->queues = queues;
        l->queue_count++;
        struct bmt_links_queue *q = &l->queues[qi];
        q->head = q->tail = BMT_LINKS_NONE;
        q->sender = sender;
        q->receiver = receiver;
        q->alias = (uint8_t)alias;
    }
    /* Empty queues leave their list as it is walked (match): a receiver
     * that heard once from each of many processes, or the aliases of a
     * node, which are new with every gen_server call, keep short lists. */
    struct bmt_links_queue *q = &l->queues[qi];
    if (!q->listed) {
        uint32_t *head = q->alias ? &l->alias_queues[l->proc_node[receiver]]
                                  : &l->proc_queues[receiver];
        q->next = *head;
        *head = qi;
        q->listed = 1;
    }
    return qi;
}

/* How many sends with fingerprint `fp` queue `qi` holds, in one map over
 * every queue: a receipt skips the queues without its fingerprint (those
 * of the other senders to its receiver, which grow long while receipts
 * wait) in one lookup. Keys of two (queue, fingerprint) pairs may
 * coincide: the count is then their sum, which only costs a scan. */
static uint64_t fp_key(uint32_t qi, uint64_t fp)
{
    return fp ^ ((uint64_t)qi + 1) * 0x9e3779b97f4a7c15ull;
}

static int fp_add(struct bmt_links *l, uint32_t qi, uint64_t fp)
{
    int created;
    uint32_t *n = bmt_u64map_get(&l->fp_count, fp_key(qi, fp), 0, &created);
    if (!n)
        return -ENOMEM;
    (*n)++;
    return 0;
}

static void fp_del(struct bmt_links *l, uint32_t qi, uint64_t fp)
{
    int created;
    uint64_t key = fp_key(qi, fp);
    if (bmt_u64map_find(&l->fp_count, key) == UINT32_MAX)
        return;
    uint32_t *n = bmt_u64map_get(&l->fp_count, key, 0, &created);
    if (*n <= 1)
        bmt_u64map_remove(&l->fp_count, key);
    else
        (*n)--;
}

static int fp_has(const struct bmt_links *l, uint32_t qi, uint64_t fp)
{
    return bmt_u64map_find(&l->fp_count, fp_key(qi, fp)) != UINT32_MAX;
}

static int push_send(struct bmt_links *l, uint32_t qi, uint64_t ts, uint64_t fp, uint32_t trace)
{
    uint32_t si;
    if (l->send_free != BMT_LINKS_NONE) {
        si = l->send_free;
        l->send_free = l->sends[si].next;
    } else {
        if (l->send_count >= BMT_LINKS_MAX_PENDING) {
            l->count[BMT_L_NOT_QUEUED]++;
            return 0;
        }
        struct bmt_links_send *sends = bmt_grow(l->sends, &l->send_cap, l->send_count,
                                                sizeof *sends);
        if (!sends)
            return -ENOMEM;
        l->sends = sends;
        si = l->send_count++;
    }
    if (fp_add(l, qi, fp) < 0) {
        l->sends[si].next = l->send_free;
        l->send_free = si;
        return -ENOMEM;
    }
    l->sends[si] = (struct bmt_links_send){ts, fp, BMT_LINKS_NONE, trace, l->weight};
    struct bmt_links_queue *q = &l->queues[qi];
    if (q->tail == BMT_LINKS_NONE)
        q->head = si;
    else
        l->sends[q->tail].next = si;
    q->tail = si;
    return 0;
}

/* 1 when `s` is a process alias: a reference, "#Ref<...>" or
 * "NODE/#Ref<...>" (unresolved "?NODE/..." texts are not). */
static int is_alias(const char *s, size_t len)
{
    size_t p = bmt_nodes_prefix(s, len);
    if (p) {
        s += p + 1;
        len -= p + 1;
    }
    return len > 5 && memcmp(s, "#Ref<", 5) == 0;
}

static int on_send(struct bmt_links *l, const struct bmt_record *rec)
{
    const struct bmt_value *v = rec->values;
    const struct bmt_value *from = &v[BMT_F_message_send_link_from],
                           *to = &v[BMT_F_message_send_link_to],
                           *type = &v[BMT_F_message_send_link_type];
    l->link_send_count++;
    l->link_send_scaled += l->weight;
    if (type->len != 4 || memcmp(type->str, "send", 4) != 0) {
        l->count[BMT_L_DEAD]++;
        return 0;
    }
    uint32_t snode = l->r->cluster ? l->r->nodes.trace_node[rec->trace] : 0;
    int alias = 0;
    const char *rs = to->str;
    size_t rlen = to->len;
    uint32_t rnode;
    if (bmt_names_is_pid(rs, rlen) || (alias = is_alias(rs, rlen))) {
        rnode = node_of(l, rs, rlen);
        if (rnode == BMT_LINKS_NONE) {
            l->count[BMT_L_EXTERNAL_SEND]++; /* a node without a trace */
            return 0;
        }
    } else if (rlen && (rs[0] == '?' || rs[0] == '#' || memchr(rs, '/', rlen) ||
                        (rs[0] == '<'))) {
        l->count[BMT_L_UNRESOLVED]++; /* a port, or a text the rule does not know */
        return 0;
    } else {
        /* A name, or {Name,Node}: the process registered so, now. */
        if (rlen > 4 && rs[0] == '{' && rs[rlen - 1] == '}') {
            const char *comma = memchr(rs, ',', rlen);
            const char *node = comma ? comma + 1 : rs;
            size_t nlen = comma ? (size_t)(rs + rlen - 1 - node) : 0;
            if (nlen > 2 && node[0] == '\'' && node[nlen - 1] == '\'')
                node++, nlen -= 2;
            const char *own = bmt_links_node_name(l, 0);
            int traced = l->r->cluster ? bmt_nodes_traced(&l->r->nodes, node, nlen) >= 0
                                       : strlen(own) == nlen && memcmp(own, node, nlen) == 0;
            if (!comma || !traced) {
                l->count[BMT_L_EXTERNAL_SEND]++;
                return 0;
            }
        }
        int64_t pid = bmt_names_holder(l->names, from->str, from->len, rs, rlen);
        if (pid < 0) {
            l->count[BMT_L_UNRESOLVED]++;
            return 0;
        }
        rs = bmt_strtab_str(&l->names->pids, (uint32_t)pid);
        rlen = bmt_strtab_len(&l->names->pids, (uint32_t)pid);
        rnode = node_of(l, rs, rlen);
        if (rnode == BMT_LINKS_NONE) {
            l->count[BMT_L_EXTERNAL_SEND]++;
            return 0;
        }
    }
    int64_t sid = proc_at(l, from->str, from->len, snode);
    if (sid < 0)
        return (int)sid;
    int64_t rid = proc_at(l, rs, rlen, rnode);
    if (rid < 0)
        return (int)rid;
    int64_t qi = queue(l, (uint32_t)sid, (uint32_t)rid, alias);
    if (qi < 0)
        return (int)qi;
    return push_send(l, (uint32_t)qi, rec->ts_ns, v[BMT_F_message_send_link_fingerprint].integer,
                     rec->trace);
}

/* The first send of queue `qi` with fingerprint `fp` (and the one before
 * it, for unlinking), or NONE. */
static uint32_t find(const struct bmt_links *l, uint32_t qi, uint64_t fp, uint32_t *prev)
{
    uint32_t p = BMT_LINKS_NONE;
    for (uint32_t s = l->queues[qi].head; s != BMT_LINKS_NONE; p = s, s = l->sends[s].next)
        if (l->sends[s].fingerprint == fp) {
            *prev = p;
            return s;
        }
    return BMT_LINKS_NONE;
}

static int lost_between(const struct bmt_links *l, unsigned trace, uint64_t a, uint64_t b)
{
    for (unsigned i = 0; i < l->loss_count[trace]; i++)
        if (l->losses[trace][i].begin_ns <= b && l->losses[trace][i].end_ns >= a)
            return 1;
    return 0;
}

/* Links receipt `r` to send `si` of queue `qi`: the sends before it were
 * not received. */
static void link(struct bmt_links *l, const struct bmt_links_receipt *r, uint32_t qi, uint32_t si)
{
    struct bmt_links_queue *q = &l->queues[qi];
    while (q->head != si) {
        uint32_t s = q->head;
        q->head = l->sends[s].next;
        fp_del(l, qi, l->sends[s].fingerprint);
        l->sends[s].next = l->send_free;
        l->send_free = s;
        l->count[BMT_L_NOT_RECEIVED]++;
    }
    struct bmt_links_send s = l->sends[si];
    q->head = s.next;
    if (q->head == BMT_LINKS_NONE)
        q->tail = BMT_LINKS_NONE;
    l->sends[si].next = l->send_free;
    l->send_free = si;
    fp_del(l, qi, s.fingerprint);
    /* Sends before the linked one never have its fingerprint (it was the
     * first): any left is after it. */
    int twin = fp_has(l, qi, s.fingerprint);
    int uncertain = twin && (lost_between(l, s.trace, s.ts_ns, r->ts_ns) ||
                             lost_between(l, r->trace, s.ts_ns, r->ts_ns) ||
                             s.ts_ns + 1 < l->trace_start_ns[r->trace]);
    l->count[BMT_L_LINKED]++;
    l->count[BMT_L_UNCERTAIN] += (uint64_t)uncertain;
    /* Send and receipt are kept (or not) apart: the pair stands for both
     * ratios' product (each message's chance of having both kept). */
    uint64_t w = (uint64_t)s.weight * r->weight;
    l->linked_scaled += w;
    if (l->on_link) {
        struct bmt_link k = {q->sender, r->receiver, l->proc_node[q->sender],
                             l->proc_node[r->receiver], s.ts_ns, r->ts_ns, uncertain, w};
        l->on_link(l->ctx, &k);
    }
}

/* Looks for the receipt's send in queue `qi`; counts hits. */
static void try_queue(struct bmt_links *l, const struct bmt_links_receipt *r, uint32_t qi,
                      unsigned *hits, uint32_t *hit_q, uint32_t *hit_s)
{
    const struct bmt_links_queue *q = &l->queues[qi];
    if (q->head == BMT_LINKS_NONE || l->proc_node[q->sender] != r->from_node ||
        (r->sender != BMT_LINKS_NONE && q->sender != r->sender) ||
        !fp_has(l, qi, r->fingerprint))
        return;
    uint32_t prev, s = find(l, qi, r->fingerprint, &prev);
    if (s != BMT_LINKS_NONE) {
        if (++*hits == 1) {
            *hit_q = qi;
            *hit_s = s;
        }
    }
}

/* Tries every queue of the list at *head, unlinking the empty ones. */
static void walk(struct bmt_links *l, const struct bmt_links_receipt *r, uint32_t *head,
                 unsigned *hits, uint32_t *hit_q, uint32_t *hit_s)
{
    while (*head != BMT_LINKS_NONE) {
        struct bmt_links_queue *q = &l->queues[*head];
        if (q->head == BMT_LINKS_NONE) {
            q->listed = 0;
            *head = q->next;
            continue;
        }
        try_queue(l, r, *head, hits, hit_q, hit_s);
        head = &q->next;
    }
}

static void match(struct bmt_links *l, const struct bmt_links_receipt *r)
{
    unsigned hits = 0;
    uint32_t hq = 0, hs = 0;
    if (r->sender != BMT_LINKS_NONE) {
        uint32_t qi = bmt_u64map_find(&l->queue_of, (uint64_t)r->sender << 32 | r->receiver);
        if (qi != UINT32_MAX)
            try_queue(l, r, qi, &hits, &hq, &hs);
    } else {
        walk(l, r, &l->proc_queues[r->receiver], &hits, &hq, &hs);
    }
    /* Aliases of the receiver's node. */
    uint32_t node = l->proc_node[r->receiver];
    if (node < bmt_links_node_count(l))
        walk(l, r, &l->alias_queues[node], &hits, &hq, &hs);
    if (hits == 1)
        link(l, r, hq, hs);
    else
        l->count[hits ? BMT_L_AMBIGUOUS : BMT_L_UNMATCHED]++;
}

static void release(struct bmt_links *l, uint64_t now_ns, int all)
{
    while (l->held_count) {
        struct bmt_links_receipt *r = &l->held[l->held_head];
        if (!all && r->ts_ns + BMT_LINKS_DELAY_NS > now_ns)
            return;
        match(l, r);
        l->held_head = (l->held_head + 1) % l->held_cap;
        l->held_count--;
    }
}

static int hold(struct bmt_links *l, const struct bmt_links_receipt *r)
{
    if (l->held_count == l->held_cap) {
        uint32_t cap = l->held_cap ? l->held_cap * 2 : 1024;
        struct bmt_links_receipt *h = malloc(cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        for (uint32_t i = 0; i < l->held_count; i++)
            h[i] = l->held[(l->held_head + i) % l->held_cap];
        free(l->held);
        l->held = h;
        l->held_head = 0;
        l->held_cap = cap;
    }
    l->held[(l->held_head + l->held_count++) % l->held_cap] = *r;
    return 0;
}

static int on_receipt(struct bmt_links *l, const struct bmt_record *rec)
{
    const struct bmt_value *v = rec->values;
    const struct bmt_value *to = &v[BMT_F_message_receive_link_to],
                           *from = &v[BMT_F_message_receive_link_from],
                           *fnode = &v[BMT_F_message_receive_link_from_node];
    l->link_receipt_count++;
    l->link_receipt_scaled += l->weight;
    uint32_t rnode = l->r->cluster ? l->r->nodes.trace_node[rec->trace] : 0;
    int64_t rid = proc_at(l, to->str, to->len, rnode);
    if (rid < 0)
        return (int)rid;
    l->proc_receives[rid] = 1;
    struct bmt_links_receipt r = {rec->ts_ns, v[BMT_F_message_receive_link_fingerprint].integer,
                                  (uint32_t)rid, BMT_LINKS_NONE, BMT_LINKS_NONE, rec->trace,
                                  l->weight};
    if (l->r->cluster) {
        int64_t n = bmt_nodes_traced(&l->r->nodes, fnode->str, fnode->len);
        if (n >= 0)
            r.from_node = (uint32_t)n;
    } else {
        const char *own = bmt_links_node_name(l, 0);
        if (!own[0] || (strlen(own) == fnode->len && memcmp(own, fnode->str, fnode->len) == 0))
            r.from_node = 0;
    }
    if (r.from_node == BMT_LINKS_NONE) {
        l->count[BMT_L_EXTERNAL_RECEIPT]++;
        return 0;
    }
    if (!(from->len == 9 && memcmp(from->str, "undefined", 9) == 0)) {
        int64_t sid = proc_at(l, from->str, from->len, r.from_node);
        if (sid < 0)
            return (int)sid;
        r.sender = (uint32_t)sid;
    }
    return hold(l, &r);
}

int bmt_links_feed(struct bmt_links *l, const struct bmt_record *rec)
{
    if (rec->trace < l->trace_count && !l->trace_start_ns[rec->trace])
        l->trace_start_ns[rec->trace] = rec->ts_ns + 1;
    release(l, rec->ts_ns, 0);
    if (rec->tp == BMT_TP_message_send_link)
        return on_send(l, rec);
    if (rec->tp == BMT_TP_message_receive_link)
        return on_receipt(l, rec);
    return 0;
}

int bmt_links_loss(struct bmt_links *l, unsigned trace, uint64_t from_ns, uint64_t to_ns)
{
    if (trace >= l->trace_count)
        return 0;
    unsigned n = l->loss_count[trace];
    struct bmt_window *w = l->losses[trace];
    if (n && w[n - 1].end_ns + 1 >= from_ns) { /* adjacent to the last: extend it */
        if (to_ns > w[n - 1].end_ns)
            w[n - 1].end_ns = to_ns;
        return 0;
    }
    if (n == l->loss_cap[trace]) {
        unsigned cap = n ? n * 2 : 16;
        if (!(w = realloc(w, cap * sizeof *w)))
            return -ENOMEM;
        l->losses[trace] = w;
        l->loss_cap[trace] = cap;
    }
    w[n].begin_ns = from_ns;
    w[n].end_ns = to_ns;
    l->loss_count[trace] = n + 1;
    return 0;
}

int bmt_links_packet(struct bmt_links *l, const struct bmt_reader *r, unsigned stream,
                     const struct bmt_packet_info *info)
{
    if (!info->new_discarded_count && !info->lost_packet_count)
        return 0;
    unsigned trace = (unsigned)(r->streams[stream].trace - r->traces);
    return bmt_links_loss(l, trace, info->prev_ts_end_ns, info->ts_begin_ns);
}

int bmt_links_finish(struct bmt_links *l)
{
    release(l, 0, 1);
    for (uint32_t qi = 0; qi < l->queue_count; qi++) {
        struct bmt_links_queue *q = &l->queues[qi];
        for (uint32_t s = q->head; s != BMT_LINKS_NONE; s = l->sends[s].next) {
            /* A receiver with no receipt at all is not traced; an alias
             * (its owner unknown) is in flight. */
            enum bmt_links_kind k = q->alias || l->proc_receives[q->receiver] ? BMT_L_IN_FLIGHT
                                                                               : BMT_L_NOT_TRACED;
            l->count[k]++;
            if (l->on_left) {
                struct bmt_left_send ls = {q->sender, q->receiver, l->proc_node[q->sender],
                                           l->proc_node[q->receiver], l->sends[s].ts_ns, k};
                l->on_left(l->ctx, &ls);
            }
        }
    }
    return 0;
}

void bmt_links_free(struct bmt_links *l)
{
    bmt_strtab_free(&l->procs);
    bmt_u64map_free(&l->queue_of);
    bmt_u64map_free(&l->fp_count);
    free(l->proc_node);
    free(l->proc_queues);
    free(l->proc_receives);
    free(l->sends);
    free(l->queues);
    free(l->alias_queues);
    free(l->held);
    free(l->trace_start_ns);
    for (unsigned t = 0; l->losses && t < l->trace_count; t++)
        free(l->losses[t]);
    free(l->losses);
    free(l->loss_count);
    free(l->loss_cap);
    memset(l, 0, sizeof *l);
}
