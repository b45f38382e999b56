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
 * process pair linked (a histogram each), and what links.h holds. Needs
 * events recorded with links (record --links).
 * In a sampled trace the send and receipt events, and the links per node
 * and process pair, are scaled back (model/messages.h says how); what each
 * send and receipt became is of the events kept, and says so.
 */
#include "analysis.h"
#include "model/messages.h"
#include "out/json.h"
#include "out/window.h"
#include "base/timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct messages_opts {
    struct bmt_common common;
    uint64_t top;
};

static const struct bmt_opt options[] = {
    {.name = "top", .type = BMT_OPT_COUNT, .arg = "N",
     .help = "process pairs and in-flight sends listed", .def = "10", .min = 0, .max = 100000,
     .offset = BMT_OPT_AT(struct messages_opts, top, uint64_t)},
    {0},
};

static void proc_label(const struct bmt_messages *m, uint32_t id, char *buf, size_t size)
{
    const struct bmt_strtab *p = &m->links.procs;
    bmt_names_label(&m->scope->names, bmt_strtab_str(p, id), bmt_strtab_len(p, id), buf, size);
}

static void signed_text(int64_t ns, char out[40])
{
    char d[32];
    bmt_duration_text(ns < 0 ? (uint64_t)-ns : (uint64_t)ns, d);
    snprintf(out, 40, "%s%s", ns < 0 ? "-" : "", d);
}

static void lat_text(struct bmt_out *o, const struct bmt_slat *s)
{
    static const double qs[] = {0.5, 0.9, 0.99, 1.0};
    char buf[64], t[40];
    for (unsigned i = 0; i < 4; i++) {
        signed_text(bmt_slat_quantile(s, qs[i]), t);
        snprintf(buf, sizeof buf, " %12s", t);
        bmt_out_str(o, buf);
    }
}

static void lat_json(struct bmt_out *o, const struct bmt_slat *s)
{
    static const double qs[] = {0.5, 0.9, 0.99, 0.999};
    static const char *const keys[] = {"p50_ns", "p90_ns", "p99_ns", "p999_ns"};
    char buf[64];
    bmt_out_str(o, "\"count\": ");
    bmt_out_u64(o, bmt_slat_count(s));
    snprintf(buf, sizeof buf, ", \"negative\": %llu", (unsigned long long)s->neg.count);
    bmt_out_str(o, buf);
    if (!bmt_slat_count(s))
        return;
    snprintf(buf, sizeof buf, ", \"min_ns\": %lld", (long long)bmt_slat_quantile(s, 1e-12));
    bmt_out_str(o, buf);
    for (unsigned i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, ", \"%s\": %lld", keys[i], (long long)bmt_slat_quantile(s, qs[i]));
        bmt_out_str(o, buf);
    }
    snprintf(buf, sizeof buf, ", \"max_ns\": %lld", (long long)bmt_slat_quantile(s, 1.0));
    bmt_out_str(o, buf);
}

static const struct bmt_msg_pair *sort_pairs;

static int by_links(const void *a, const void *b)
{
    uint64_t x = sort_pairs[*(const uint32_t *)a].links, y = sort_pairs[*(const uint32_t *)b].links;
    if (x != y)
        return x > y ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static const char *const kind_key[BMT_L_KIND_COUNT] = {
    "linked", "uncertain", "not_received", "in_flight", "receiver_not_traced", "dead",
    "unresolved", "external", "not_queued", "unmatched", "ambiguous", "external"};

/* What is printed: the analysis, and the process pairs to list. */
struct printing {
    const struct bmt_analysis *a;
    struct bmt_messages *m;
    const uint32_t *order;      /* pair indices, most links first */
    uint32_t shown;
    int json;
};

/* Sends to nodes that are traced, and the share of them linked. */
static uint64_t to_traced(const uint64_t *c)
{
    return c[BMT_L_LINKED] + c[BMT_L_NOT_RECEIVED] + c[BMT_L_IN_FLIGHT] + c[BMT_L_NOT_TRACED];
}

/* `"from": "A", "to": "B"` for processes `s` and `r`. */
static void json_pair(struct bmt_out *o, const struct bmt_messages *m, uint32_t s, uint32_t r)
{
    char a[700], b[700];
    proc_label(m, s, a, sizeof a);
    proc_label(m, r, b, sizeof b);
    bmt_out_str(o, "{\"from\": ");
    bmt_json_cstr(o, a);
    bmt_out_str(o, ", \"to\": ");
    bmt_json_cstr(o, b);
}

/* What each send and receipt became, and the coverage. */
static void json_counts(struct bmt_out *o, const struct bmt_messages *m)
{
    const uint64_t *c = m->links.count;
    uint64_t traced = to_traced(c);
    char buf[1024];
    snprintf(buf, sizeof buf, "], \"send_events\": %llu, \"receipt_events\": %llu, "
             "\"links\": %llu, \"send_events_kept\": %llu, \"receipt_events_kept\": %llu, "
             "\"outcomes\": \"%s\", \"sends\": {",
             (unsigned long long)m->links.link_send_scaled,
             (unsigned long long)m->links.link_receipt_scaled,
             (unsigned long long)m->links.linked_scaled,
             (unsigned long long)m->links.link_send_count,
             (unsigned long long)m->links.link_receipt_count,
             m->sampled ? "of the events kept" : "all");
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
             (unsigned long long)c[BMT_L_AMBIGUOUS], (unsigned long long)c[BMT_L_EXTERNAL_RECEIPT],
             (unsigned long long)traced, traced ? (double)c[BMT_L_LINKED] / (double)traced : 0.0);
    bmt_out_str(o, buf);
}

static void json_node_pairs(struct bmt_out *o, const struct bmt_messages *m)
{
    char buf[300];
    int first = 1;
    bmt_out_str(o, ", \"node_pairs\": [");
    for (uint32_t s = 0; s < m->nodes; s++)
        for (uint32_t r = 0; r < m->nodes; r++) {
            size_t i = (size_t)s * m->nodes + r;
            if (!m->node_links[i] && !m->node_left[i])
                continue;
            bmt_out_str(o, first ? "\n  {\"from\": " : ",\n  {\"from\": ");
            first = 0;
            bmt_json_cstr(o, bmt_links_node_name(&m->links, s));
            bmt_out_str(o, ", \"to\": ");
            bmt_json_cstr(o, bmt_links_node_name(&m->links, r));
            snprintf(buf, sizeof buf, ", \"links\": %llu, \"uncertain\": %llu, \"in_flight\": "
                     "%llu, \"latency\": {", (unsigned long long)m->node_links[i],
                     (unsigned long long)m->node_uncertain[i], (unsigned long long)m->node_left[i]);
            bmt_out_str(o, buf);
            lat_json(o, &m->node_lat[i]);
            bmt_out_str(o, "}}");
        }
}

static void print_json(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_messages *m = p->m;
    char buf[100];
    bmt_out_str(o, "{\"trace\": ");
    bmt_json_cstr(o, p->a->dir);
    bmt_out_str(o, ", ");
    bmt_json_window(o, &p->a->r, &p->a->scope, &p->a->pass);
    bmt_out_str(o, ", \"nodes\": [");
    for (uint32_t i = 0; i < m->nodes; i++) {
        if (i)
            bmt_out_str(o, ", ");
        bmt_json_cstr(o, bmt_links_node_name(&m->links, i));
    }
    json_counts(o, m);
    json_node_pairs(o, m);
    bmt_out_str(o, "],\n \"process_pairs\": [");
    for (uint32_t k = 0; k < p->shown; k++) {
        const struct bmt_msg_pair *pair = &m->pairs[p->order[k]];
        bmt_out_str(o, k ? ",\n  " : "\n  ");
        json_pair(o, m, pair->sender, pair->receiver);
        bmt_out_str(o, ", \"links\": ");
        bmt_out_u64(o, pair->links);
        bmt_out_str(o, ", \"latency\": {");
        lat_json(o, &pair->lat);
        bmt_out_str(o, "}}");
    }
    bmt_out_str(o, "],\n \"in_flight_oldest\": [");
    for (unsigned k = 0; k < m->left_count; k++) {
        bmt_out_str(o, k ? ",\n  " : "\n  ");
        json_pair(o, m, m->lefts[k].sender, m->lefts[k].receiver);
        snprintf(buf, sizeof buf, ", \"send_unix_ns\": %lld}",
                 (long long)bmt_reader_wall_ns(m->r, m->lefts[k].send_ns));
        bmt_out_str(o, buf);
    }
    bmt_out_str(o, "]}\n");
}

/* What each send and receipt became, and the coverage, as text. */
static void text_counts(struct bmt_out *o, const struct bmt_messages *m)
{
    const uint64_t *c = m->links.count;
    uint64_t traced = to_traced(c);
    char buf[1024];
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
             (unsigned long long)c[BMT_L_LINKED], (unsigned long long)traced,
             traced ? 100.0 * (double)c[BMT_L_LINKED] / (double)traced : 0);
    bmt_out_str(o, buf);
}

static void text_node_pairs(struct bmt_out *o, const struct bmt_messages *m)
{
    char buf[400];
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
}

/* "  A -> B" */
static void text_pair(struct bmt_out *o, const struct bmt_messages *m, uint32_t s, uint32_t r)
{
    char a[700], b[700];
    proc_label(m, s, a, sizeof a);
    proc_label(m, r, b, sizeof b);
    bmt_out_str(o, a);
    bmt_out_str(o, " -> ");
    bmt_out_str(o, b);
    bmt_out_char(o, '\n');
}

static void print_text(struct bmt_out *o, const struct printing *p)
{
    const struct bmt_messages *m = p->m;
    char buf[300], t[32];
    if (m->sampled) {
        snprintf(buf, sizeof buf, "sampled   scaled back by the ratio in force at each: %llu sends, "
                 "%llu receipts, %llu links; what each send and receipt became is of the "
                 "events kept\n", (unsigned long long)m->links.link_send_scaled,
                 (unsigned long long)m->links.link_receipt_scaled,
                 (unsigned long long)m->links.linked_scaled);
        bmt_out_str(o, buf);
    }
    text_counts(o, m);
    if (!m->links.link_send_count && !m->links.link_receipt_count) {
        bmt_out_str(o, "\nthe trace has no message_send_link or message_receive_link events: "
                       "record with --links (and --events send,receive)\n");
        return;
    }
    text_node_pairs(o, m);
    snprintf(buf, sizeof buf, "\ntop %u process pairs by links\n", (unsigned)p->shown);
    bmt_out_str(o, buf);
    for (uint32_t k = 0; k < p->shown; k++) {
        const struct bmt_msg_pair *pair = &m->pairs[p->order[k]];
        snprintf(buf, sizeof buf, "%8llu", (unsigned long long)pair->links);
        bmt_out_str(o, buf);
        lat_text(o, &pair->lat);
        bmt_out_str(o, "  ");
        text_pair(o, m, pair->sender, pair->receiver);
    }
    if (!m->left_count)
        return;
    snprintf(buf, sizeof buf, "\nin flight at the end: %llu (the %u oldest%s)\n",
             (unsigned long long)m->links.count[BMT_L_IN_FLIGHT], m->left_count,
             m->scope->filtering ? " from or to the processes kept" : "");
    bmt_out_str(o, buf);
    for (unsigned k = 0; k < m->left_count; k++) {
        bmt_clock_text(bmt_reader_wall_ns(m->r, m->lefts[k].send_ns), t);
        bmt_out_str(o, "  ");
        bmt_out_str(o, t);
        bmt_out_str(o, "  ");
        text_pair(o, m, m->lefts[k].sender, m->lefts[k].receiver);
    }
}

static int print_messages(struct bmt_out *o, struct printing *p)
{
    struct bmt_messages *m = p->m;
    uint32_t *order = malloc((m->pair_count + 1) * sizeof *order);
    if (!order)
        return -ENOMEM;
    for (uint32_t i = 0; i < m->pair_count; i++)
        order[i] = i;
    sort_pairs = m->pairs;
    qsort(order, m->pair_count, sizeof *order, by_links);
    p->order = order;
    p->shown = m->pair_count < m->top ? m->pair_count : m->top;
    if (p->json)
        print_json(o, p);
    else
        print_text(o, p);
    free(order);
    return 0;
}

static int print(struct bmt_out *o, const struct bmt_analysis *a, void *self, const void *opts)
{
    struct printing p = {a, self, NULL, 0, ((const struct bmt_common *)opts)->format == 1};
    return print_messages(o, &p);
}

static void configure(void *self, const void *opts, struct bmt_analysis *a)
{
    struct bmt_messages *m = self;
    m->r = &a->r;
    m->top = (unsigned)((const struct messages_opts *)opts)->top;
}

const struct bmt_command bmt_cmd_messages = {
    .name = "messages",
    .summary = "send -> receipt links: latency per node and process pair, in flight",
    .description =
        "Matches every traced send to its receipt, on one node or across nodes, by the\n"
        "rule of docs/cluster.md (per sender and receiver, in order, by the message's\n"
        "fingerprint; never guessed). Prints what each send and receipt became\n"
        "(linked, uncertain around discarded events, not received, in flight at the\n"
        "end, to a receiver not traced, dead, external, unresolved; receipts\n"
        "unmatched or ambiguous), link coverage, send -> receipt latency p50/p90/p99/max\n"
        "per node pair and for the top process pairs (negative when a receipt is\n"
        "stamped before its send), and the oldest sends still in flight. Record with\n"
        "`beamtrace record --links --events send,receive` (message_*_link events).\n"
        "\n"
        "With --pid or --name, the tables hold only sends from or to those processes;\n"
        "the counts cover every send and receipt of the trace (in the window).",
    .opts = options, .uses = BMT_USES_ANALYSIS, .size = sizeof(struct messages_opts),
    .acc = &bmt_messages_acc, .state_size = sizeof(struct bmt_messages),
    .configure = configure, .print = print,
};
