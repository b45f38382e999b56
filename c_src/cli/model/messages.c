/* The messages analysis (contract in messages.h). */
#include "messages.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int slat_add(struct bmt_slat *s, uint64_t send_ns, uint64_t receipt_ns)
{
    return receipt_ns >= send_ns ? bmt_hist_add(&s->pos, receipt_ns - send_ns)
                                 : bmt_hist_add(&s->neg, send_ns - receipt_ns);
}

uint64_t bmt_slat_count(const struct bmt_slat *s)
{
    return s->pos.count + s->neg.count;
}

int64_t bmt_slat_quantile(const struct bmt_slat *s, double q)
{
    uint64_t n = bmt_slat_count(s), neg = s->neg.count;
    if (!n)
        return 0;
    uint64_t k = (uint64_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k <= neg) /* the k-th smallest is the (neg - k + 1)-th largest magnitude */
        return -(int64_t)bmt_hist_quantile(&s->neg, (double)(neg - k + 1) / (double)neg);
    return (int64_t)bmt_hist_quantile(&s->pos, (double)(k - neg) / (double)s->pos.count);
}

void bmt_slat_free(struct bmt_slat *s)
{
    bmt_hist_free(&s->pos);
    bmt_hist_free(&s->neg);
}

/* With --pid or --name: only pairs with a kept end go into the tables. */
static int kept(const struct bmt_messages *m, uint32_t sender, uint32_t receiver)
{
    const struct bmt_strtab *p = &m->links.procs;
    return bmt_an_keep(m->scope, bmt_strtab_str(p, sender), bmt_strtab_len(p, sender)) ||
           bmt_an_keep(m->scope, bmt_strtab_str(p, receiver), bmt_strtab_len(p, receiver));
}

static void on_link(void *ctx, const struct bmt_link *k)
{
    struct bmt_messages *m = ctx;
    if (!kept(m, k->sender, k->receiver))
        return;
    if (k->sender_node < m->nodes && k->receiver_node < m->nodes) {
        size_t i = (size_t)k->sender_node * m->nodes + k->receiver_node;
        m->node_links[i] += k->weight;
        m->node_uncertain[i] += (uint64_t)k->uncertain;
        if (slat_add(&m->node_lat[i], k->send_ns, k->receipt_ns) < 0)
            m->error = -ENOMEM;
    }
    int created;
    uint32_t *slot = bmt_u64map_get(&m->pair_of, (uint64_t)k->sender << 32 | k->receiver,
                                    m->pair_count, &created);
    if (!slot) {
        m->error = -ENOMEM;
        return;
    }
    if (created) {
        struct bmt_msg_pair *pairs = bmt_grow(m->pairs, &m->pair_cap, m->pair_count,
                                              sizeof *pairs);
        if (!pairs) {
            m->error = -ENOMEM;
            return;
        }
        m->pairs = pairs;
        struct bmt_msg_pair *p = &m->pairs[m->pair_count++];
        memset(p, 0, sizeof *p);
        p->sender = k->sender;
        p->receiver = k->receiver;
        bmt_hist_init(&p->lat.pos);
        bmt_hist_init(&p->lat.neg);
    }
    m->pairs[*slot].links += k->weight;
    if (slat_add(&m->pairs[*slot].lat, k->send_ns, k->receipt_ns) < 0)
        m->error = -ENOMEM;
}

static void on_left(void *ctx, const struct bmt_left_send *s)
{
    struct bmt_messages *m = ctx;
    if (!kept(m, s->sender, s->receiver))
        return;
    if (s->sender_node < m->nodes && s->receiver_node < m->nodes && s->kind == BMT_L_IN_FLIGHT)
        m->node_left[(size_t)s->sender_node * m->nodes + s->receiver_node]++;
    if (s->kind != BMT_L_IN_FLIGHT || !m->top)
        return;
    /* Keep the `top` oldest, in order (insertion: top is small). */
    unsigned i = m->left_count < m->top ? m->left_count++ : m->top;
    if (i == m->top) {
        if (s->send_ns >= m->lefts[m->top - 1].send_ns)
            return;
        i = m->top - 1;
    }
    while (i > 0 && m->lefts[i - 1].send_ns > s->send_ns) {
        m->lefts[i] = m->lefts[i - 1];
        i--;
    }
    m->lefts[i] = (struct bmt_msg_left){s->sender, s->receiver, s->send_ns};
}

int bmt_messages_ready(struct bmt_messages *m)
{
    if (m->ready)
        return 0;
    int rc = bmt_links_init(&m->links, m->r, &m->scope->names);
    m->ready = 1;
    if (rc < 0)
        return rc;
    m->links.on_link = on_link;
    m->links.on_left = on_left;
    m->links.ctx = m;
    m->nodes = bmt_links_node_count(&m->links);
    size_t nn = (size_t)m->nodes * m->nodes;
    m->node_lat = calloc(nn, sizeof *m->node_lat);
    m->node_links = calloc(nn, sizeof *m->node_links);
    m->node_uncertain = calloc(nn, sizeof *m->node_uncertain);
    m->node_left = calloc(nn, sizeof *m->node_left);
    m->lefts = calloc(m->top + 1, sizeof *m->lefts);
    if (!m->node_lat || !m->node_links || !m->node_uncertain || !m->node_left || !m->lefts)
        return -ENOMEM;
    for (size_t i = 0; i < nn; i++) {
        bmt_hist_init(&m->node_lat[i].pos);
        bmt_hist_init(&m->node_lat[i].neg);
    }
    return 0;
}

void bmt_messages_packet(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info)
{
    struct bmt_messages *m = ctx;
    if (bmt_messages_ready(m) < 0 || bmt_links_packet(&m->links, r, stream, info) < 0)
        m->error = -ENOMEM;
}

int bmt_messages_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_messages *m = ctx;
    int rc = bmt_messages_ready(m);
    if (rc < 0 || m->error)
        return rc < 0 ? rc : m->error;
    int link = rec->tp == BMT_TP_message_send_link || rec->tp == BMT_TP_message_receive_link;
    if (link && rec->ts_ns < m->scope->window.begin_ns)
        return 0; /* before the window: not counted */
    /* Sampled (send, receive kinds): the event stands for the ratio in force. */
    m->links.weight = link ? m->scope->sampled.weight[rec->tp] : 1;
    m->sampled |= m->links.weight > 1;
    rc = bmt_links_feed(&m->links, rec);
    return rc < 0 ? rc : m->error;
}

int bmt_messages_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_messages *m = self;
    memset(m, 0, sizeof *m);
    m->scope = scope;
    m->top = 10;
    bmt_u64map_init(&m->pair_of);
    return 0;
}

void bmt_messages_free(void *self)
{
    struct bmt_messages *m = self;
    for (size_t i = 0; m->node_lat && i < (size_t)m->nodes * m->nodes; i++)
        bmt_slat_free(&m->node_lat[i]);
    for (uint32_t i = 0; i < m->pair_count; i++)
        bmt_slat_free(&m->pairs[i].lat);
    free(m->node_lat);
    free(m->node_links);
    free(m->node_uncertain);
    free(m->node_left);
    free(m->pairs);
    free(m->lefts);
    bmt_u64map_free(&m->pair_of);
    if (m->ready)
        bmt_links_free(&m->links);
}

/* ---- as an accumulator (acc.h) ---- */

/* Every event: links.c holds receipts back by trace time, and notes each
 * trace's first event. */
static const struct bmt_needs needs = {{
    BMT_NEED(message_send_link, BMT_FIELD(message_send_link, from) |
                                    BMT_FIELD(message_send_link, to) |
                                    BMT_FIELD(message_send_link, type) |
                                    BMT_FIELD(message_send_link, fingerprint)),
    BMT_NEED(message_receive_link, BMT_FIELD(message_receive_link, to) |
                                       BMT_FIELD(message_receive_link, from) |
                                       BMT_FIELD(message_receive_link, from_node) |
                                       BMT_FIELD(message_receive_link, fingerprint)),
}, 1};

/* Matches every receipt still held, classifies the sends left. */
static int acc_finish(void *self, const struct bmt_an_pass *pass)
{
    struct bmt_messages *m = self;
    (void)pass;
    int rc = bmt_messages_ready(m);
    if (rc == 0 && (rc = bmt_links_finish(&m->links)) == 0)
        rc = m->error;
    return rc;
}

const struct bmt_acc bmt_messages_acc = {
    "messages", bmt_messages_init, bmt_messages_feed, bmt_messages_packet, acc_finish,
    bmt_messages_free, &needs, 1};
