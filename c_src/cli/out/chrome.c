/* Chrome Trace Event JSON from the tracks (contract in chrome.h). */
#include "chrome.h"
#include "json.h"
#include "model/elixir.h"
#include "model/layouts.h"
#include "base/grow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_chrome_begin(struct bmt_chrome *c, struct bmt_out *o, const struct bmt_tracks *t,
                      const struct bmt_reader *r, const char *label)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    c->t = t;
    c->r = r;
    bmt_strtab_init(&c->nodes);
    bmt_out_str(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"trace\":");
    bmt_json_cstr(o, label);
    bmt_out_str(o, ",\"producer\":\"beamtrace export\"},\"traceEvents\":[");
}

void bmt_chrome_free(struct bmt_chrome *c)
{
    free(c->used);
    free(c->node_of);
    bmt_strtab_free(&c->nodes);
}

/* The per-pid arrays hold pid id `tid`. */
static int grow_to(struct bmt_chrome *c, uint32_t tid)
{
    if (tid < c->cap)
        return 0;
    uint32_t used_cap = c->cap, node_cap = c->cap;
    uint8_t *used = bmt_grow(c->used, &used_cap, tid, 1);
    if (used)
        c->used = used;
    uint32_t *nodes = bmt_grow(c->node_of, &node_cap, tid, sizeof *nodes);
    if (nodes)
        c->node_of = nodes;
    if (!used || !nodes)
        return -ENOMEM;
    c->cap = used_cap;
    return 0;
}

/* The node (group) index of process `tid`: 0 for one trace. */
static int64_t node_index(struct bmt_chrome *c, uint32_t tid)
{
    if (!c->node_of[tid]) {
        const struct bmt_strtab *pids = &c->t->scope->names.pids;
        const char *s = bmt_strtab_str(pids, tid);
        int64_t k = bmt_strtab_intern(&c->nodes, s, bmt_nodes_prefix(s, bmt_strtab_len(pids, tid)));
        if (k < 0)
            return k;
        c->node_of[tid] = (uint32_t)k + 1;
    }
    return c->node_of[tid] - 1;
}

/* The Chrome pid of group `g` (1 calls and events, 2 scheduling) of node
 * `k`: 1 and 2 for the first (or only) node, 3 is the counters', then two
 * per node. */
static uint64_t group_pid(unsigned g, uint32_t k)
{
    return k ? 2 + 2 * (uint64_t)k + g : g;
}

/* `{"ph":..,"cat":..,"pid":..,"tid":..,"ts":..` of an event on `tid`'s
 * track of group `g`. Returns 0 or -ENOMEM. */
static int ev_begin(struct bmt_chrome *c, const char *ph, const char *cat, unsigned g, uint32_t tid,
                    uint64_t ts_ns)
{
    int64_t k;
    if (grow_to(c, tid) < 0 || (k = node_index(c, tid)) < 0)
        return -ENOMEM;
    struct bmt_out *o = c->o;
    bmt_out_str(o, c->event_count++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
    bmt_out_str(o, ph);
    bmt_out_str(o, "\",\"cat\":\"");
    bmt_out_str(o, cat);
    bmt_out_str(o, "\",\"pid\":");
    bmt_out_u64(o, group_pid(g, (uint32_t)k));
    bmt_out_str(o, ",\"tid\":");
    bmt_out_u64(o, tid + 1);
    bmt_out_str(o, ",\"ts\":");
    bmt_out_us3(o, ts_ns - c->t->t0_ns);
    c->used[tid] = 1;
    return 0;
}

static void name_str(struct bmt_chrome *c, const char *s, size_t len)
{
    bmt_out_str(c->o, ",\"name\":");
    bmt_json_string(c->o, s, len);
}

static void arg(struct bmt_chrome *c, int first, const char *key, const struct bmt_value *v)
{
    bmt_out_str(c->o, first ? "\"" : ",\"");
    bmt_out_str(c->o, key);
    bmt_out_str(c->o, "\":");
    bmt_json_string(c->o, v->str, v->len);
}

/* In a sampled trace, `"stands_for":N` (after an arg unless `first`):
 * the events this one stands for, the ratio in force at it, by which a
 * viewer's counts and sums scale back (SUM(dur * stands_for) in
 * Perfetto's SQL). Nothing when it stands for itself. */
static void weight_arg(struct bmt_chrome *c, int first, const struct bmt_track_event *ev)
{
    if (ev->weight <= 1)
        return;
    bmt_out_str(c->o, first ? "\"stands_for\":" : ",\"stands_for\":");
    bmt_out_u64(c->o, ev->weight);
    if (ev->weight > c->weight_max)
        c->weight_max = ev->weight;
}

/* A call or a scheduled-in period: a slice named by its function. */
static int slice(struct bmt_chrome *c, const struct bmt_track_event *ev)
{
    int call = ev->item == BMT_TRACK_CALL;
    if (ev_begin(c, "X", call ? "call" : "running", call ? 1 : 2, ev->pid, ev->ts_ns) < 0)
        return -ENOMEM;
    const struct bmt_strtab *funcs = &c->t->cs.funcs;
    char fn[600];
    bmt_out_str(c->o, ",\"dur\":");
    bmt_out_us3(c->o, ev->dur_ns);
    bmt_elixir_mfa(bmt_strtab_str(funcs, ev->func), bmt_strtab_len(funcs, ev->func), fn, sizeof fn);
    name_str(c, fn, strlen(fn));
    if (!ev->end && !ev->scheduler && ev->weight <= 1) {
        bmt_out_char(c->o, '}');
        return 0;
    }
    bmt_out_str(c->o, ",\"args\":{");
    if (ev->end) {
        bmt_out_str(c->o, "\"end\":\"");
        bmt_out_str(c->o, ev->end);
        bmt_out_char(c->o, '"');
    }
    /* A run on a dirty scheduler says so: it is not one of the node's
     * normal schedulers' (runs.h). */
    if (ev->scheduler) {
        bmt_out_str(c->o, ev->end ? ",\"scheduler\":\"" : "\"scheduler\":\"");
        bmt_out_str(c->o, ev->scheduler);
        bmt_out_char(c->o, '"');
    }
    weight_arg(c, !ev->end && !ev->scheduler, ev);
    bmt_out_str(c->o, "}}");
    return 0;
}

/* spawn, exit, register: instants with the event's fields as args. */
static int lifecycle(struct bmt_chrome *c, const struct bmt_track_event *ev)
{
    static const char *const names[] = {[BMT_TRACK_SPAWN] = "spawn", [BMT_TRACK_EXIT] = "exit",
                                        [BMT_TRACK_REGISTER] = "register"};
    const struct bmt_value *v = ev->v;
    if (ev_begin(c, "i", "procs", 1, ev->pid, ev->ts_ns) < 0)
        return -ENOMEM;
    bmt_out_str(c->o, ",\"s\":\"t\",\"name\":\"");
    bmt_out_str(c->o, names[ev->item]);
    bmt_out_str(c->o, "\",\"args\":{");
    if (ev->item == BMT_TRACK_SPAWN) {
        arg(c, 1, "pid", &v[BMT_F_process_spawn_pid]);
        arg(c, 0, "entry", &v[BMT_F_process_spawn_entry]);
    } else if (ev->item == BMT_TRACK_EXIT) {
        arg(c, 1, "reason", &v[BMT_F_process_exit_reason]);
    } else {
        arg(c, 1, "name", &v[BMT_F_process_register_name]);
        arg(c, 0, "type", &v[BMT_F_process_register_type]);
    }
    weight_arg(c, 0, ev);
    bmt_out_str(c->o, "}}");
    return 0;
}

/* A 1 ns slice: flow ends bind to an enclosing slice (Perfetto drops flows
 * whose end has none, and an instant is not one), so each send and receive
 * is one, even outside traced calls. */
static int message(struct bmt_chrome *c, const struct bmt_track_event *ev)
{
    int send = ev->item == BMT_TRACK_SEND;
    if (ev_begin(c, "X", "message", 1, ev->pid, ev->ts_ns) < 0)
        return -ENOMEM;
    bmt_out_str(c->o, send ? ",\"dur\":0.001,\"name\":\"send\",\"args\":{"
                           : ",\"dur\":0.001,\"name\":\"receive\",\"args\":{");
    if (send) {
        arg(c, 1, "to", &ev->v[BMT_F_message_send_to]);
        arg(c, 0, "message", &ev->v[BMT_F_message_send_message]);
    } else {
        arg(c, 1, "message", &ev->v[BMT_F_message_receive_message]);
    }
    weight_arg(c, 0, ev);
    bmt_out_str(c->o, "}}");
    return 0;
}

/* A collection as a slice from its start for its pause: the process runs
 * no code meanwhile, so it nests in the calls of its track. */
static int gc(struct bmt_chrome *c, const struct bmt_track_event *ev)
{
    int major = ev->tp == BMT_TP_gc_major_end;
    char buf[128];
    if (ev_begin(c, "X", "gc", 1, ev->pid, ev->ts_ns) < 0)
        return -ENOMEM;
    bmt_out_str(c->o, ",\"dur\":");
    bmt_out_us3(c->o, ev->dur_ns);
    bmt_out_str(c->o, major ? ",\"name\":\"gc major\",\"args\":{"
                            : ",\"name\":\"gc minor\",\"args\":{");
    snprintf(buf, sizeof buf, "\"pause_ns\":%llu,\"reclaimed_words\":%llu,\"heap_words\":%llu",
             (unsigned long long)ev->dur_ns, (unsigned long long)ev->v[BMT_GC_RECLAIMED].integer,
             (unsigned long long)ev->v[BMT_GC_HEAP].integer);
    bmt_out_str(c->o, buf);
    weight_arg(c, 0, ev);
    bmt_out_str(c->o, "}}");
    return 0;
}

/* A file or ETS operation as an instant on the caller's track, named
 * "file read_file" or "ets insert", its figures as args. An instant, not a
 * slice: the event is stamped when the session's helper records it, after
 * the call returned, so a slice of its latency would not nest in the
 * caller's calls. */
static int io(struct bmt_chrome *c, const struct bmt_track_event *ev)
{
    const struct bmt_value *v = ev->v;
    int file = ev->tp == BMT_TP_file_op;
    const struct bmt_value *op = &v[file ? BMT_F_file_op_op : BMT_F_ets_op_op];
    char name[BMT_WORD_MAX_BYTES + 8], buf[96];
    snprintf(name, sizeof name, "%s %.*s", file ? "file" : "ets", (int)op->len, op->str);
    if (ev_begin(c, "i", file ? "file" : "ets", 1, ev->pid, ev->ts_ns) < 0)
        return -ENOMEM;
    bmt_out_str(c->o, ",\"s\":\"t\"");
    name_str(c, name, strlen(name));
    bmt_out_str(c->o, ",\"args\":{");
    if (file) {
        arg(c, 1, "path", &v[BMT_F_file_op_path]);
        if (v[BMT_F_file_op_path2].len)
            arg(c, 0, "path2", &v[BMT_F_file_op_path2]);
        arg(c, 0, "result", &v[BMT_F_file_op_result]);
    } else {
        arg(c, 1, "table", &v[BMT_F_ets_op_table]);
        arg(c, 0, "result", &v[BMT_F_ets_op_result]);
    }
    const struct bmt_value *err = &v[file ? BMT_F_file_op_error : BMT_F_ets_op_error];
    const struct bmt_value *tag = &v[file ? BMT_F_file_op_tag : BMT_F_ets_op_tag];
    if (err->len)
        arg(c, 0, "error", err);
    if (tag->len)
        arg(c, 0, "tag", tag);
    if (file)
        snprintf(buf, sizeof buf, ",\"bytes\":%llu,\"latency_ns\":%llu}}",
                 (unsigned long long)v[BMT_F_file_op_bytes].integer,
                 (unsigned long long)v[BMT_F_file_op_latency_ns].integer);
    else
        snprintf(buf, sizeof buf, ",\"latency_ns\":%llu}}",
                 (unsigned long long)v[BMT_F_ets_op_latency_ns].integer);
    bmt_out_str(c->o, buf);
    return 0;
}

/* One sample as a counter event: track "counter (unit)", series instance;
 * "NODE: counter (unit)" for a cluster's traces, whose counters would
 * otherwise share tracks. */
static int counter(struct bmt_chrome *c, const struct bmt_track_event *ev)
{
    const struct bmt_value *v = ev->v;
    const struct bmt_value *cn = &v[BMT_F_counter_counter], *u = &v[BMT_F_counter_unit];
    const char *node = c->r && c->r->trace_count > 1 && ev->trace < c->r->trace_count
                           ? c->r->traces[ev->trace].node : NULL;
    char name[256 + BMT_TERM_MAX_BYTES + BMT_WORD_MAX_BYTES + 8], num[24];
    snprintf(name, sizeof name, "%s%s%.*s (%.*s)", node ? node : "", node ? ": " : "",
             (int)cn->len, cn->str, (int)u->len, u->str);
    bmt_out_str(c->o, c->event_count++ ? ",\n{\"ph\":\"C\",\"cat\":\"counter\",\"pid\":3,\"ts\":"
                                       : "\n{\"ph\":\"C\",\"cat\":\"counter\",\"pid\":3,\"ts\":");
    bmt_out_us3(c->o, ev->ts_ns - c->t->t0_ns);
    name_str(c, name, strlen(name));
    bmt_out_str(c->o, ",\"args\":{");
    bmt_json_string(c->o, v[BMT_F_counter_instance].str, v[BMT_F_counter_instance].len);
    bmt_out_char(c->o, ':');
    snprintf(num, sizeof num, "%lld", (long long)(int64_t)v[BMT_F_counter_value].integer);
    bmt_out_str(c->o, num);
    bmt_out_str(c->o, "}}");
    c->counters = 1;
    return 0;
}

static int event(void *ctx, const struct bmt_track_event *ev)
{
    struct bmt_chrome *c = ctx;
    switch (ev->item) {
    case BMT_TRACK_CALL:
    case BMT_TRACK_RUNNING: return slice(c, ev);
    case BMT_TRACK_SPAWN:
    case BMT_TRACK_EXIT:
    case BMT_TRACK_REGISTER: return lifecycle(c, ev);
    case BMT_TRACK_SEND:
    case BMT_TRACK_RECEIVE: return message(c, ev);
    case BMT_TRACK_GC: return gc(c, ev);
    case BMT_TRACK_IO: return io(c, ev);
    case BMT_TRACK_COUNTER: return counter(c, ev);
    }
    return 0;
}

static int flow(void *ctx, uint32_t from, uint64_t from_ns, uint32_t to, uint64_t to_ns)
{
    struct bmt_chrome *c = ctx;
    uint64_t id = ++c->flow_id;
    if (ev_begin(c, "s", "message", 1, from, from_ns) < 0)
        return -ENOMEM;
    bmt_out_str(c->o, ",\"name\":\"message\",\"id\":");
    bmt_out_u64(c->o, id);
    bmt_out_char(c->o, '}');
    if (ev_begin(c, "f", "message", 1, to, to_ns) < 0)
        return -ENOMEM;
    bmt_out_str(c->o, ",\"bp\":\"e\",\"name\":\"message\",\"id\":");
    bmt_out_u64(c->o, id);
    bmt_out_char(c->o, '}');
    return 0;
}

const struct bmt_tracks_sink bmt_chrome_sink = {event, flow};

/* ---- the names, at the end ---- */

/* A metadata event `kind` ("process_name", "thread_sort_index", ...) of
 * Chrome pid `group`, thread `tid` (0: the group's), `key` its value. */
static void meta(struct bmt_chrome *c, const char *kind, uint64_t group, uint64_t tid,
                 const char *key, const char *text, uint64_t number)
{
    struct bmt_out *o = c->o;
    bmt_out_str(o, c->event_count++ ? ",\n{\"ph\":\"M\",\"name\":\"" : "\n{\"ph\":\"M\",\"name\":\"");
    bmt_out_str(o, kind);
    bmt_out_str(o, "\",\"pid\":");
    bmt_out_u64(o, group);
    bmt_out_str(o, ",\"tid\":");
    bmt_out_u64(o, tid);
    bmt_out_str(o, ",\"args\":{\"");
    bmt_out_str(o, key);
    bmt_out_str(o, "\":");
    if (text)
        bmt_json_cstr(o, text);
    else
        bmt_out_u64(o, number);
    bmt_out_str(o, "}}");
}

/* Group `g` of node `k`: its name, its order, its threads. */
static int group(struct bmt_chrome *c, uint32_t k, unsigned g)
{
    static const char *const groups[] = {"BEAM calls and events", "BEAM scheduling"};
    const char *node = k < c->nodes.count ? bmt_strtab_str(&c->nodes, k) : "";
    uint64_t gp = group_pid(g, k);
    char label[700];
    snprintf(label, sizeof label, "%s%s%s", node, node[0] ? ": " : "", groups[g - 1]);
    meta(c, "process_name", gp, 0, "name", label, 0);
    if (c->weight_max > 1) { /* said where the viewer shows the group */
        char note[160];
        snprintf(note, sizeof note, "sampled (up to 1 in %u): an event's args.stands_for is "
                 "how many it stands for", c->weight_max);
        meta(c, "process_labels", gp, 0, "labels", note, 0);
    }
    if (node[0]) /* nodes in order, each node's two groups together */
        meta(c, "process_sort_index", gp, 0, "sort_index", NULL, gp);
    for (uint32_t pid = 0; pid < c->cap; pid++) {
        int64_t pk;
        if (!c->used[pid])
            continue;
        if ((pk = node_index(c, pid)) < 0)
            return -ENOMEM;
        if ((uint32_t)pk != k)
            continue;
        bmt_callstack_label(&c->t->cs, pid, label, sizeof label);
        meta(c, "thread_name", gp, pid + 1, "name", label, 0);
        meta(c, "thread_sort_index", gp, pid + 1, "sort_index", NULL, pid + 1);
    }
    return 0;
}

int bmt_chrome_end(struct bmt_chrome *c)
{
    if (c->counters)
        meta(c, "process_name", 3, 0, "name", "BEAM counters", 0);
    uint32_t node_count = c->nodes.count ? c->nodes.count : 1;
    for (uint32_t k = 0; k < node_count; k++)
        for (unsigned g = 1; g <= 2; g++)
            if (group(c, k, g) < 0)
                return -ENOMEM;
    bmt_out_str(c->o, "\n]}\n");
    return 0;
}
