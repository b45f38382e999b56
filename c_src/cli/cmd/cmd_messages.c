/* `beamtrace messages`: every traced send matched to its receipt (links.h,
 * the rule of docs/cluster.md), on one node or across a cluster's nodes:
 * what each send and receipt became (linked, uncertain, not received, in
 * flight at the end, ...), send -> receipt latency percentiles per node
 * pair and for the busiest process pairs, and the sends still in flight
 * at the end.
 *
 * Latency is the receipt's time minus the send's on the common timeline;
 * it can be negative (a remote send stamped after the message left, or
 * clocks within their error bounds): such links are kept and counted, and
 * percentiles are taken over signed values (two histograms, one per sign).
 * With --pid or --name, the tables (node pairs, process pairs, in flight)
 * hold only sends from or to the processes kept; the counts of what each
 * send and receipt became cover the whole trace. Memory: per node pair, per
 * process pair linked (a histogram each), and what links.h holds. Needs events recorded with links (record --links).
 */
#include "model/analyses.h"
#include "cli.h"
#include "model/links.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Signed latencies: magnitudes of negative ones and the others apart. */
struct slat {
    struct bmt_hist pos, neg;
};

struct pair {
    uint32_t sender, receiver;      /* process ids of links.procs */
    struct slat lat;
};

struct left {
    uint32_t sender, receiver;
    uint64_t send_ns;
};

struct messages {
    struct bmt_an_scope *scope;
    struct bmt_reader *r;
    struct bmt_links links;
    int ready, json;
    unsigned top;
    uint32_t nodes;                 /* traced nodes */
    struct slat *node_lat;          /* nodes x nodes, by sender node then receiver node */
    uint64_t *node_links, *node_uncertain, *node_left;
    struct bmt_u64map pair_of;      /* sender << 32 | receiver -> pairs index */
    struct pair *pairs;
    uint32_t pair_count, pair_cap;
    struct left *lefts;             /* the `top` oldest sends left, oldest first */
    unsigned left_count;
    int error;                      /* -ENOMEM from a callback */
};

static int slat_add(struct slat *s, uint64_t send_ns, uint64_t receipt_ns)
{
    return receipt_ns >= send_ns ? bmt_hist_add(&s->pos, receipt_ns - send_ns)
                                 : bmt_hist_add(&s->neg, send_ns - receipt_ns);
}

static uint64_t slat_count(const struct slat *s)
{
    return s->pos.count + s->neg.count;
}

/* The signed value at quantile q of both histograms. */
static int64_t slat_quantile(const struct slat *s, double q)
{
    uint64_t n = slat_count(s), neg = s->neg.count;
    if (!n)
        return 0;
    uint64_t k = (uint64_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k <= neg) /* the k-th smallest is the (neg - k + 1)-th largest magnitude */
        return -(int64_t)bmt_hist_quantile(&s->neg, (double)(neg - k + 1) / (double)neg);
    return (int64_t)bmt_hist_quantile(&s->pos, (double)(k - neg) / (double)s->pos.count);
}

static void slat_free(struct slat *s)
{
    bmt_hist_free(&s->pos);
    bmt_hist_free(&s->neg);
}

/* With --pid or --name: only pairs with a kept end go into the tables. */
static int kept(const struct messages *m, uint32_t sender, uint32_t receiver)
{
    const struct bmt_strtab *p = &m->links.procs;
    return bmt_an_keep(m->scope, bmt_strtab_str(p, sender), bmt_strtab_len(p, sender)) ||
           bmt_an_keep(m->scope, bmt_strtab_str(p, receiver), bmt_strtab_len(p, receiver));
}

static void on_link(void *ctx, const struct bmt_link *k)
{
    struct messages *m = ctx;
    if (!kept(m, k->sender, k->receiver))
        return;
    if (k->sender_node < m->nodes && k->receiver_node < m->nodes) {
        size_t i = (size_t)k->sender_node * m->nodes + k->receiver_node;
        m->node_links[i]++;
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
        if (m->pair_count == m->pair_cap) {
            uint32_t cap = m->pair_cap ? m->pair_cap * 2 : 256;
            struct pair *p = realloc(m->pairs, cap * sizeof *p);
            if (!p) {
                m->error = -ENOMEM;
                return;
            }
            m->pairs = p;
            m->pair_cap = cap;
        }
        struct pair *p = &m->pairs[m->pair_count++];
        memset(p, 0, sizeof *p);
        p->sender = k->sender;
        p->receiver = k->receiver;
        bmt_hist_init(&p->lat.pos);
        bmt_hist_init(&p->lat.neg);
    }
    if (slat_add(&m->pairs[*slot].lat, k->send_ns, k->receipt_ns) < 0)
        m->error = -ENOMEM;
}

static void on_left(void *ctx, const struct bmt_left_send *s)
{
    struct messages *m = ctx;
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
    m->lefts[i] = (struct left){s->sender, s->receiver, s->send_ns};
}

static int ready(struct messages *m)
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

static void on_packet(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info)
{
    struct messages *m = ctx;
    if (ready(m) < 0 || bmt_links_packet(&m->links, r, stream, info) < 0)
        m->error = -ENOMEM;
}

static int feed(void *ctx, const struct bmt_record *rec)
{
    struct messages *m = ctx;
    int rc = ready(m);
    if (rc < 0 || m->error)
        return rc < 0 ? rc : m->error;
    if ((rec->tp == BMT_TP_message_send_link || rec->tp == BMT_TP_message_receive_link) &&
        rec->ts_ns < m->scope->window.begin_ns)
        return 0; /* before the window: not counted */
    rc = bmt_links_feed(&m->links, rec);
    return rc < 0 ? rc : m->error;
}

/* ---- output ---- */

static void proc_label(const struct messages *m, uint32_t id, char *buf, size_t size)
{
    const struct bmt_strtab *p = &m->links.procs;
    bmt_names_label(&m->scope->names, bmt_strtab_str(p, id), bmt_strtab_len(p, id), buf, size);
}

static void signed_text(int64_t ns, char out[40])
{
    char d[32];
    bmt_an_duration_text(ns < 0 ? (uint64_t)-ns : (uint64_t)ns, d);
    snprintf(out, 40, "%s%s", ns < 0 ? "-" : "", d);
}

static void lat_text(struct bmt_out *o, const struct slat *s)
{
    static const double qs[] = {0.5, 0.9, 0.99, 1.0};
    char buf[64], t[40];
    for (unsigned i = 0; i < 4; i++) {
        signed_text(slat_quantile(s, qs[i]), t);
        snprintf(buf, sizeof buf, " %12s", t);
        bmt_out_str(o, buf);
    }
}

static void lat_json(struct bmt_out *o, const struct slat *s)
{
    static const double qs[] = {0.5, 0.9, 0.99, 0.999};
    static const char *const keys[] = {"p50_ns", "p90_ns", "p99_ns", "p999_ns"};
    char buf[64];
    bmt_out_str(o, "\"count\": ");
    bmt_out_u64(o, slat_count(s));
    snprintf(buf, sizeof buf, ", \"negative\": %llu", (unsigned long long)s->neg.count);
    bmt_out_str(o, buf);
    if (!slat_count(s))
        return;
    snprintf(buf, sizeof buf, ", \"min_ns\": %lld", (long long)slat_quantile(s, 1e-12));
    bmt_out_str(o, buf);
    for (unsigned i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, ", \"%s\": %lld", keys[i], (long long)slat_quantile(s, qs[i]));
        bmt_out_str(o, buf);
    }
    snprintf(buf, sizeof buf, ", \"max_ns\": %lld", (long long)slat_quantile(s, 1.0));
    bmt_out_str(o, buf);
}

static const struct pair *sort_pairs;

static int by_links(const void *a, const void *b)
{
    uint64_t x = slat_count(&sort_pairs[*(const uint32_t *)a].lat),
             y = slat_count(&sort_pairs[*(const uint32_t *)b].lat);
    if (x != y)
        return x > y ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static const char *const kind_key[BMT_L_KIND_COUNT] = {
    "linked", "uncertain", "not_received", "in_flight", "receiver_not_traced", "dead",
    "unresolved", "external", "not_queued", "unmatched", "ambiguous", "external"};

static void report(struct messages *m, struct bmt_out *o, const char *dir, const uint32_t *order,
                   uint32_t shown, const struct bmt_an_pass *pass)
{
    const uint64_t *c = m->links.count;
    uint64_t to_traced = c[BMT_L_LINKED] + c[BMT_L_NOT_RECEIVED] + c[BMT_L_IN_FLIGHT] +
                         c[BMT_L_NOT_TRACED];
    double coverage = to_traced ? 100.0 * (double)c[BMT_L_LINKED] / (double)to_traced : 0;
    char buf[1024], a[700], b[700], t[32];
    if (m->json) {
        bmt_out_str(o, "{\"trace\": ");
        bmt_an_json_string(o, dir, strlen(dir));
        bmt_out_str(o, ", ");
        bmt_an_json_scope(o, m->r, m->scope, pass);
        bmt_out_str(o, ", \"nodes\": [");
        for (uint32_t i = 0; i < m->nodes; i++) {
            if (i)
                bmt_out_str(o, ", ");
            const char *n = bmt_links_node_name(&m->links, i);
            bmt_an_json_string(o, n, strlen(n));
        }
        snprintf(buf, sizeof buf, "], \"send_events\": %llu, \"receipt_events\": %llu, \"sends\": {",
                 (unsigned long long)m->links.link_send_count,
                 (unsigned long long)m->links.link_receipt_count);
        bmt_out_str(o, buf);
        for (unsigned k = BMT_L_LINKED; k <= BMT_L_NOT_QUEUED; k++) {
            snprintf(buf, sizeof buf, "%s\"%s\": %llu", k ? ", " : "", kind_key[k],
                     (unsigned long long)c[k]);
            bmt_out_str(o, buf);
        }
        bmt_out_str(o, "}, \"receipts\": {");
        snprintf(buf, sizeof buf, "\"linked\": %llu, \"unmatched\": %llu, \"ambiguous\": %llu, "
                 "\"external\": %llu}, \"sends_to_traced_nodes\": %llu, \"coverage\": %.4f",
                 (unsigned long long)c[BMT_L_LINKED], (unsigned long long)c[BMT_L_UNMATCHED],
                 (unsigned long long)c[BMT_L_AMBIGUOUS],
                 (unsigned long long)c[BMT_L_EXTERNAL_RECEIPT], (unsigned long long)to_traced,
                 to_traced ? (double)c[BMT_L_LINKED] / (double)to_traced : 0.0);
        bmt_out_str(o, buf);
        bmt_out_str(o, ", \"node_pairs\": [");
        int first = 1;
        for (uint32_t s = 0; s < m->nodes; s++)
            for (uint32_t r = 0; r < m->nodes; r++) {
                size_t i = (size_t)s * m->nodes + r;
                if (!m->node_links[i] && !m->node_left[i])
                    continue;
                bmt_out_str(o, first ? "\n  {\"from\": " : ",\n  {\"from\": ");
                first = 0;
                const char *sn = bmt_links_node_name(&m->links, s),
                           *rn = bmt_links_node_name(&m->links, r);
                bmt_an_json_string(o, sn, strlen(sn));
                bmt_out_str(o, ", \"to\": ");
                bmt_an_json_string(o, rn, strlen(rn));
                snprintf(buf, sizeof buf, ", \"links\": %llu, \"uncertain\": %llu, \"in_flight\": "
                         "%llu, \"latency\": {", (unsigned long long)m->node_links[i],
                         (unsigned long long)m->node_uncertain[i],
                         (unsigned long long)m->node_left[i]);
                bmt_out_str(o, buf);
                lat_json(o, &m->node_lat[i]);
                bmt_out_str(o, "}}");
            }
        bmt_out_str(o, "],\n \"process_pairs\": [");
        for (uint32_t k = 0; k < shown; k++) {
            const struct pair *p = &m->pairs[order[k]];
            proc_label(m, p->sender, a, sizeof a);
            proc_label(m, p->receiver, b, sizeof b);
            bmt_out_str(o, k ? ",\n  {\"from\": " : "\n  {\"from\": ");
            bmt_an_json_string(o, a, strlen(a));
            bmt_out_str(o, ", \"to\": ");
            bmt_an_json_string(o, b, strlen(b));
            bmt_out_str(o, ", \"latency\": {");
            lat_json(o, &p->lat);
            bmt_out_str(o, "}}");
        }
        bmt_out_str(o, "],\n \"in_flight_oldest\": [");
        for (unsigned k = 0; k < m->left_count; k++) {
            proc_label(m, m->lefts[k].sender, a, sizeof a);
            proc_label(m, m->lefts[k].receiver, b, sizeof b);
            bmt_out_str(o, k ? ",\n  {\"from\": " : "\n  {\"from\": ");
            bmt_an_json_string(o, a, strlen(a));
            bmt_out_str(o, ", \"to\": ");
            bmt_an_json_string(o, b, strlen(b));
            snprintf(buf, sizeof buf, ", \"send_unix_ns\": %lld}",
                     (long long)bmt_reader_wall_ns(m->r, m->lefts[k].send_ns));
            bmt_out_str(o, buf);
        }
        bmt_out_str(o, "]}\n");
        return;
    }
    snprintf(buf, sizeof buf, "sends     %llu traced: %llu linked (%llu uncertain), %llu not "
             "received, %llu in flight at the end, %llu to receivers not traced, %llu dead, "
             "%llu external, %llu unresolved\n",
             (unsigned long long)m->links.link_send_count, (unsigned long long)c[BMT_L_LINKED],
             (unsigned long long)c[BMT_L_UNCERTAIN], (unsigned long long)c[BMT_L_NOT_RECEIVED],
             (unsigned long long)c[BMT_L_IN_FLIGHT], (unsigned long long)c[BMT_L_NOT_TRACED],
             (unsigned long long)c[BMT_L_DEAD], (unsigned long long)c[BMT_L_EXTERNAL_SEND],
             (unsigned long long)c[BMT_L_UNRESOLVED]);
    bmt_out_str(o, buf);
    if (c[BMT_L_NOT_QUEUED]) {
        snprintf(buf, sizeof buf, "          %llu sends not matched: more than %u pending at once "
                 "(their receipts count as unmatched)\n",
                 (unsigned long long)c[BMT_L_NOT_QUEUED], BMT_LINKS_MAX_PENDING);
        bmt_out_str(o, buf);
    }
    snprintf(buf, sizeof buf, "receipts  %llu traced: %llu linked, %llu unmatched, %llu "
             "ambiguous, %llu from outside the trace\n",
             (unsigned long long)m->links.link_receipt_count, (unsigned long long)c[BMT_L_LINKED],
             (unsigned long long)c[BMT_L_UNMATCHED], (unsigned long long)c[BMT_L_AMBIGUOUS],
             (unsigned long long)c[BMT_L_EXTERNAL_RECEIPT]);
    bmt_out_str(o, buf);
    snprintf(buf, sizeof buf, "coverage  %llu of %llu sends to traced nodes linked (%.1f%%)\n",
             (unsigned long long)c[BMT_L_LINKED], (unsigned long long)to_traced, coverage);
    bmt_out_str(o, buf);
    if (!m->links.link_send_count && !m->links.link_receipt_count) {
        bmt_out_str(o, "\nthe trace has no message_send_link or message_receive_link events: "
                       "record with --links (and --events send,receive)\n");
        return;
    }
    bmt_out_str(o, "\nsend -> receipt latency per node pair (negative: stamped before the send)\n");
    snprintf(buf, sizeof buf, "%-28s %-28s %8s %9s %8s %12s %12s %12s %12s\n", "FROM", "TO",
             "LINKS", "IN FLIGHT", "NEGATIVE", "p50", "p90", "p99", "max");
    bmt_out_str(o, buf);
    for (uint32_t s = 0; s < m->nodes; s++)
        for (uint32_t r = 0; r < m->nodes; r++) {
            size_t i = (size_t)s * m->nodes + r;
            if (!m->node_links[i] && !m->node_left[i])
                continue;
            snprintf(buf, sizeof buf, "%-28s %-28s %8llu %9llu %8llu",
                     bmt_links_node_name(&m->links, s), bmt_links_node_name(&m->links, r),
                     (unsigned long long)m->node_links[i], (unsigned long long)m->node_left[i],
                     (unsigned long long)m->node_lat[i].neg.count);
            bmt_out_str(o, buf);
            lat_text(o, &m->node_lat[i]);
            bmt_out_char(o, '\n');
        }
    snprintf(buf, sizeof buf, "\ntop %u process pairs by links\n", (unsigned)shown);
    bmt_out_str(o, buf);
    for (uint32_t k = 0; k < shown; k++) {
        const struct pair *p = &m->pairs[order[k]];
        proc_label(m, p->sender, a, sizeof a);
        proc_label(m, p->receiver, b, sizeof b);
        snprintf(buf, sizeof buf, "%8llu", (unsigned long long)slat_count(&p->lat));
        bmt_out_str(o, buf);
        lat_text(o, &p->lat);
        bmt_out_str(o, "  ");
        bmt_out_str(o, a);
        bmt_out_str(o, " -> ");
        bmt_out_str(o, b);
        bmt_out_char(o, '\n');
    }
    if (m->left_count) {
        snprintf(buf, sizeof buf, "\nin flight at the end: %llu (the %u oldest%s)\n",
                 (unsigned long long)c[BMT_L_IN_FLIGHT], m->left_count,
                 m->scope->filtering ? " from or to the processes kept" : "");
        bmt_out_str(o, buf);
        for (unsigned k = 0; k < m->left_count; k++) {
            proc_label(m, m->lefts[k].sender, a, sizeof a);
            proc_label(m, m->lefts[k].receiver, b, sizeof b);
            bmt_an_clock_text(m->r, m->lefts[k].send_ns, t);
            bmt_out_str(o, "  ");
            bmt_out_str(o, t);
            bmt_out_str(o, "  ");
            bmt_out_str(o, a);
            bmt_out_str(o, " -> ");
            bmt_out_str(o, b);
            bmt_out_char(o, '\n');
        }
    }
}

struct opts {
    unsigned top;
};

static int parse_opt(void *ctx, int code, const char *arg)
{
    struct opts *o = ctx;
    if (code == 'n') {
        char *end;
        unsigned long v = strtoul(arg, &end, 10);
        if (*end || end == arg || v > 100000)
            return bmt_cli_usage_error("messages", "--top '%s' is not a count of 0 to 100000", arg);
        o->top = (unsigned)v;
        return 0;
    }
    return bmt_cli_usage_error("messages", "unknown option");
}

int bmt_cmd_messages(int argc, char **argv)
{
    static const struct option extra[] = {
        {"top", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    struct opts opts = {10};
    int json = 0;
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("messages", argc, argv, extra, "", parse_opt, &opts, &json, &scope,
                               &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_reader r;
    struct messages m;
    memset(&m, 0, sizeof m);
    m.scope = &scope;
    m.r = &r;
    m.json = json;
    m.top = opts.top;
    bmt_u64map_init(&m.pair_of);
    scope.keep_links = 1;
    scope.on_packet = on_packet;
    struct bmt_an_pass pass;
    int status = BMT_EXIT_FAIL;
    bmt_an_reads(&scope, &bmt_fields_links);
    rc = bmt_an_run(&r, dir, &scope, feed, &m, &pass);
    if (rc == 0 && (rc = ready(&m)) == 0 && (rc = bmt_links_finish(&m.links)) == 0)
        rc = m.error;
    uint32_t *order = NULL, shown = 0;
    if (rc == 0) {
        order = malloc((m.pair_count + 1) * sizeof *order);
        if (!order)
            rc = -ENOMEM;
    }
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(r.error, sizeof r.error, "out of memory; free some memory");
        status = bmt_an_fail("messages", dir, &r, rc);
    } else {
        for (uint32_t i = 0; i < m.pair_count; i++)
            order[i] = i;
        sort_pairs = m.pairs;
        qsort(order, m.pair_count, sizeof *order, by_links);
        shown = m.pair_count < m.top ? m.pair_count : m.top;
        struct bmt_out o;
        if (bmt_an_out_open(&o, NULL) == 0) {
            report(&m, &o, dir, order, shown, &pass);
            status = bmt_an_out_close(&o, "messages");
        }
    }
    free(order);
    for (size_t i = 0; m.node_lat && i < (size_t)m.nodes * m.nodes; i++)
        slat_free(&m.node_lat[i]);
    for (uint32_t i = 0; i < m.pair_count; i++)
        slat_free(&m.pairs[i].lat);
    free(m.node_lat);
    free(m.node_links);
    free(m.node_uncertain);
    free(m.node_left);
    free(m.pairs);
    free(m.lefts);
    bmt_u64map_free(&m.pair_of);
    if (m.ready)
        bmt_links_free(&m.links);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status;
}
