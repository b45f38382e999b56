/* `beamtrace export --format chrome`: the trace as Chrome Trace Event JSON,
 * which Perfetto (ui.perfetto.dev, "Open trace file") and chrome://tracing
 * open.
 *
 * Layout: pid 1 ("BEAM calls and events") holds one thread per Erlang
 * process (tid = a number per pid, thread_name "<0.66.0> name") with its
 * function calls as complete ("X") slices, properly nested because they come
 * from the rebuilt stacks (callstack.c), instants for spawn, exit, register
 * and GC, and a 1 ns slice for each send and receive (flow ends need a
 * slice to bind to). pid 2 ("BEAM scheduling") has the same threads with
 * one slice per scheduled-in period (in -> out): those cannot share a track
 * with calls, since a call spans many schedulings and Perfetto requires
 * slices on one track to nest. Flow arrows (ph s -> f, bp "e") join each
 * message_send to the message_receive that matches it (same receiver and
 * message text, first in first out); both ends are written when the receive
 * is read. Traces recorded with links (message_*_link events) get one arrow
 * per certain link links.c makes instead, across nodes too (uncertain ones
 * are counted, not drawn).
 *
 * A cluster (several nodes' traces, processes node-qualified: nodes.h)
 * gets both groups per node, named "NODE: BEAM calls and events" and
 * "NODE: BEAM scheduling": pids 1 and 2 for the first node, then 5 and 6,
 * 7 and 8, ... (3 is the counters'). Timestamps are microseconds since the trace's first event (3
 * decimals: nanoseconds are kept). A receive is stamped on the sender's
 * thread while the receiver may be running a call elsewhere; should the
 * call end in that very nanosecond, the 1 ns slice would overlap it.
 *
 * Scope (analysis.h): only processes the filter keeps get tracks (a flow
 * needs both ends kept); with a window, only events inside it are written,
 * times count from its start, and slices cut by its edges are clipped to
 * it (args.end "cut"), so a few seconds of a busy node give a file a
 * browser opens. Function names are shown in Elixir's spelling for Elixir
 * modules; tracks are named "<0.66.0> name".
 *
 * File and ETS operations (the file_io and ets options) are instants on
 * the caller's track ("file read_file", "ets insert") with the path or
 * table, result, error, tag, bytes and latency as args.
 *
 * Counters (org_erlang_beamtrace:counter, the samples option of
 * beamtrace:start/1) go to pid 3 ("BEAM counters") as counter ("C")
 * events, one track per counter and unit ("scheduler_utilization (ppm)",
 * "NODE: memory (bytes)" in a cluster), one series per instance; they are not per process, so the process
 * filter does not apply to them, the window does.
 *
 * Streaming: events are written as the trace is read; state is per
 * process, plus unmatched sends (at most MAX_PENDING; further sends get no
 * arrow and are counted).
 */
#include "model/analyses.h"
#include "core/catalogue_fields.h"
#include "cli.h"
#include "model/links.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PENDING (1u << 20)

struct pend {
    uint32_t next;     /* next entry of the queue, or BMT_CS_NONE */
    uint32_t tid;
    uint64_t ts_ns;
};

struct queue {
    uint32_t head, tail; /* pend indices; head == NONE: free */
};

struct export {
    struct bmt_out *o;
    struct bmt_an_scope *scope;
    struct bmt_callstack cs;       /* stacks; its pid ids are the tids */
    uint8_t *used;                 /* per pid: has a track */
    uint64_t t0_ns;
    int started;
    uint64_t event_count;          /* JSON events written */
    uint64_t *in_ns;               /* per pid: scheduled-in time + 1, or 0 */
    uint32_t *in_entry;            /* per pid: function id when scheduled in */
    uint64_t *gc_ns;               /* per pid: open gc start + 1 (minor, major pairs) */
    uint32_t cap;
    struct bmt_u64map pending;     /* hash(receiver, message) -> queue index */
    struct pend *pends;
    struct queue *queues;
    uint32_t pend_count, pend_cap, pend_free, queue_count, queue_cap, queue_free;
    uint64_t flow_id;
    uint64_t dropped_flows;
    /* Cluster inputs: each node's processes in their own two groups. */
    struct bmt_strtab nodes;       /* node prefixes of pid texts ("" for none) */
    uint32_t *node_of;             /* per pid: index in nodes, or UINT32_MAX */
    /* Traces with message links: flows are the links bmt_links makes. */
    struct bmt_links links;
    struct bmt_reader *r;
    int links_ready;
    uint64_t uncertain_links;
    int error;
    int counters;                  /* a counter event was written: pid 3 named */
};

/* The node (group) index of process `tid`; 0 when unknown (one trace). */
static uint32_t node_index(struct export *e, uint32_t tid)
{
    if (tid >= e->cap)
        return 0;
    if (e->node_of[tid] == UINT32_MAX) {
        const struct bmt_strtab *pids = &e->scope->names.pids;
        const char *s = bmt_strtab_str(pids, tid);
        int64_t k = bmt_strtab_intern(&e->nodes, s, bmt_nodes_prefix(s, bmt_strtab_len(pids, tid)));
        if (k < 0) {
            e->error = -ENOMEM;
            return 0;
        }
        e->node_of[tid] = (uint32_t)k;
    }
    return e->node_of[tid];
}

/* The Chrome pid of group `g` (1 calls and events, 2 scheduling) of node
 * `k`: 1 and 2 for the first (or only) node, 3 is the counters', then two
 * per node. */
static uint64_t group_pid(unsigned g, uint32_t k)
{
    return k ? 2 + 2 * (uint64_t)k + g : g;
}

static void ev_begin(struct export *e, const char *ph, const char *cat, uint32_t pid_group,
                     uint32_t tid, uint64_t ts_ns)
{
    struct bmt_out *o = e->o;
    bmt_out_str(o, e->event_count++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
    bmt_out_str(o, ph);
    bmt_out_str(o, "\",\"cat\":\"");
    bmt_out_str(o, cat);
    bmt_out_str(o, "\",\"pid\":");
    bmt_out_u64(o, group_pid(pid_group, node_index(e, tid)));
    bmt_out_str(o, ",\"tid\":");
    bmt_out_u64(o, tid + 1);
    bmt_out_str(o, ",\"ts\":");
    bmt_an_us3(o, ts_ns - e->t0_ns);
    e->used[tid] = 1;
}

static void name_str(struct export *e, const char *s, size_t len)
{
    bmt_out_str(e->o, ",\"name\":");
    bmt_an_json_string(e->o, s, len);
}

static void function_name(struct export *e, uint32_t func)
{
    char fn[600];
    bmt_an_function(bmt_strtab_str(&e->cs.funcs, func), bmt_strtab_len(&e->cs.funcs, func), fn,
                    sizeof fn);
    name_str(e, fn, strlen(fn));
}

static int64_t grow_to(struct export *e, int64_t id);

static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags, const uint64_t kinds[BMT_K_COUNT])
{
    struct export *e = ctx;
    (void)cs;
    (void)kinds;
    uint64_t begin = e->scope->window.begin_ns, start = f->start_ns > begin ? f->start_ns : begin;
    if (end_ns < begin)
        return 0; /* over before the window */
    if (grow_to(e, pid) < 0)
        return -ENOMEM;
    ev_begin(e, "X", "call", 1, pid, start);
    bmt_out_str(e->o, ",\"dur\":");
    bmt_an_us3(e->o, end_ns - start);
    function_name(e, f->func);
    if (flags & (BMT_CS_UNFINISHED | BMT_CS_CUT))
        bmt_out_str(e->o, flags & BMT_CS_CUT ? ",\"args\":{\"end\":\"cut\"}}"
                                             : ",\"args\":{\"end\":\"unfinished\"}}");
    else if (flags & BMT_CS_EXCEPTION)
        bmt_out_str(e->o, ",\"args\":{\"end\":\"exception\"}}");
    else
        bmt_out_char(e->o, '}');
    return 0;
}

/* The pid id of `v` (a process the filter keeps), growing the per-pid
 * arrays; -1 when the filter drops it; -ENOMEM. */
static int64_t grow_to(struct export *e, int64_t id)
{
    if (id < 0 || (uint32_t)id < e->cap)
        return id;
    uint32_t cap = e->cap ? e->cap * 2 : 64;
    while (cap <= (uint32_t)id)
        cap *= 2;
    uint64_t *in = realloc(e->in_ns, cap * sizeof *in);
    if (in)
        e->in_ns = in;
    uint32_t *ent = realloc(e->in_entry, cap * sizeof *ent);
    if (ent)
        e->in_entry = ent;
    uint64_t *gc = realloc(e->gc_ns, 2 * (size_t)cap * sizeof *gc);
    if (gc)
        e->gc_ns = gc;
    uint8_t *used = realloc(e->used, cap);
    if (used)
        e->used = used;
    uint32_t *nodes = realloc(e->node_of, cap * sizeof *nodes);
    if (nodes)
        e->node_of = nodes;
    if (!in || !ent || !gc || !used || !nodes)
        return -ENOMEM;
    for (uint32_t i = e->cap; i < cap; i++)
        nodes[i] = UINT32_MAX;
    memset(in + e->cap, 0, (cap - e->cap) * sizeof *in);
    memset(gc + 2 * (size_t)e->cap, 0, 2 * (size_t)(cap - e->cap) * sizeof *gc);
    memset(used + e->cap, 0, cap - e->cap);
    e->cap = cap;
    return id;
}

static int64_t proc(struct export *e, const struct bmt_value *v, uint64_t ts)
{
    if (!bmt_an_keep(e->scope, v->str, v->len))
        return -1;
    return grow_to(e, bmt_callstack_proc(&e->cs, v->str, v->len, ts));
}

static void instant(struct export *e, uint32_t pid, uint64_t ts, const char *cat, const char *name)
{
    ev_begin(e, "i", cat, 1, pid, ts);
    bmt_out_str(e->o, ",\"s\":\"t\",\"name\":\"");
    bmt_out_str(e->o, name);
    bmt_out_str(e->o, "\",\"args\":{");
}

/* A 1 ns slice: flow ends bind to an enclosing slice (Perfetto drops flows
 * whose end has none, and an instant is not one), so each send and receive
 * is one, even outside traced calls. */
static void message_slice(struct export *e, uint32_t pid, uint64_t ts, const char *name)
{
    ev_begin(e, "X", "message", 1, pid, ts);
    bmt_out_str(e->o, ",\"dur\":0.001,\"name\":\"");
    bmt_out_str(e->o, name);
    bmt_out_str(e->o, "\",\"args\":{");
}

static void arg(struct export *e, int first, const char *key, const struct bmt_value *v)
{
    bmt_out_str(e->o, first ? "\"" : ",\"");
    bmt_out_str(e->o, key);
    bmt_out_str(e->o, "\":");
    bmt_an_json_string(e->o, v->str, v->len);
}

static uint64_t flow_key(const struct bmt_value *to_pid, const struct bmt_value *msg)
{
    return bmt_hash_bytes(msg->str, msg->len, bmt_hash_bytes(to_pid->str, to_pid->len, 1));
}

static int remember_send(struct export *e, uint32_t to, uint32_t tid, uint64_t ts,
                         const struct bmt_value *msg)
{
    if (e->pend_count >= MAX_PENDING && e->pend_free == BMT_CS_NONE) {
        e->dropped_flows++;
        return 0;
    }
    const struct bmt_strtab *pids = &e->scope->names.pids;
    struct bmt_value pidv = {bmt_strtab_str(pids, to), bmt_strtab_len(pids, to), 0};
    uint64_t key = flow_key(&pidv, msg);
    uint32_t pi;
    if (e->pend_free != BMT_CS_NONE) {
        pi = e->pend_free;
        e->pend_free = e->pends[pi].next;
    } else {
        if (e->pend_count == e->pend_cap) {
            uint32_t cap = e->pend_cap ? e->pend_cap * 2 : 1024;
            struct pend *p = realloc(e->pends, cap * sizeof *p);
            if (!p)
                return -ENOMEM;
            e->pends = p;
            e->pend_cap = cap;
        }
        pi = e->pend_count++;
    }
    e->pends[pi] = (struct pend){BMT_CS_NONE, tid, ts};
    uint32_t qi;
    if (e->queue_free != BMT_CS_NONE) {
        qi = e->queue_free;
    } else {
        if (e->queue_count == e->queue_cap) {
            uint32_t cap = e->queue_cap ? e->queue_cap * 2 : 1024;
            struct queue *q = realloc(e->queues, cap * sizeof *q);
            if (!q)
                return -ENOMEM;
            e->queues = q;
            e->queue_cap = cap;
        }
        qi = e->queue_count;
    }
    int created;
    uint32_t *slot = bmt_u64map_get(&e->pending, key, qi, &created);
    if (!slot)
        return -ENOMEM;
    if (created) {
        if (qi == e->queue_free)
            e->queue_free = e->queues[qi].tail; /* free list threads through tail */
        else
            e->queue_count++;
        e->queues[qi] = (struct queue){pi, pi};
    } else {
        struct queue *q = &e->queues[*slot];
        e->pends[q->tail].next = pi;
        q->tail = pi;
    }
    return 0;
}

static void match_receive(struct export *e, uint32_t to, uint64_t ts, const struct bmt_value *to_v,
                          const struct bmt_value *msg)
{
    uint64_t key = flow_key(to_v, msg);
    uint32_t qi = bmt_u64map_find(&e->pending, key);
    if (qi == UINT32_MAX)
        return;
    struct queue *q = &e->queues[qi];
    uint32_t pi = q->head;
    struct pend p = e->pends[pi];
    e->pends[pi].next = e->pend_free;
    e->pend_free = pi;
    if (p.next == BMT_CS_NONE) {
        bmt_u64map_remove(&e->pending, key);
        q->tail = e->queue_free;
        e->queue_free = qi;
    } else {
        q->head = p.next;
    }
    uint64_t id = ++e->flow_id;
    ev_begin(e, "s", "message", 1, p.tid, p.ts_ns);
    bmt_out_str(e->o, ",\"name\":\"message\",\"id\":");
    bmt_out_u64(e->o, id);
    bmt_out_char(e->o, '}');
    ev_begin(e, "f", "message", 1, to, ts);
    bmt_out_str(e->o, ",\"bp\":\"e\",\"name\":\"message\",\"id\":");
    bmt_out_u64(e->o, id);
    bmt_out_char(e->o, '}');
}

/* A link made by bmt_links: one flow arrow, sender's slice to receiver's
 * (uncertain links are not drawn: counted). */
static void on_link(void *ctx, const struct bmt_link *k)
{
    struct export *e = ctx;
    if (k->uncertain) {
        e->uncertain_links++;
        return;
    }
    const struct bmt_strtab *p = &e->links.procs;
    struct bmt_value sv = {bmt_strtab_str(p, k->sender), bmt_strtab_len(p, k->sender), 0};
    struct bmt_value rv = {bmt_strtab_str(p, k->receiver), bmt_strtab_len(p, k->receiver), 0};
    if (k->send_ns < e->scope->window.begin_ns || k->receipt_ns < e->scope->window.begin_ns ||
        !bmt_an_keep(e->scope, sv.str, sv.len) || !bmt_an_keep(e->scope, rv.str, rv.len))
        return;
    int64_t s = grow_to(e, bmt_names_pid(&e->scope->names, sv.str, sv.len));
    int64_t r = grow_to(e, bmt_names_pid(&e->scope->names, rv.str, rv.len));
    if (s < 0 || r < 0) {
        e->error = -ENOMEM;
        return;
    }
    uint64_t id = ++e->flow_id;
    ev_begin(e, "s", "message", 1, (uint32_t)s, k->send_ns);
    bmt_out_str(e->o, ",\"name\":\"message\",\"id\":");
    bmt_out_u64(e->o, id);
    bmt_out_char(e->o, '}');
    ev_begin(e, "f", "message", 1, (uint32_t)r, k->receipt_ns);
    bmt_out_str(e->o, ",\"bp\":\"e\",\"name\":\"message\",\"id\":");
    bmt_out_u64(e->o, id);
    bmt_out_char(e->o, '}');
}

static int links_ready(struct export *e)
{
    if (e->links_ready)
        return 0;
    e->links_ready = 1;
    int rc = bmt_links_init(&e->links, e->r, &e->scope->names);
    e->links.on_link = on_link;
    e->links.ctx = e;
    return rc;
}

/* Losses make links uncertain (links.h). */
static void on_packet(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info)
{
    struct export *e = ctx;
    if (links_ready(e) < 0 || bmt_links_packet(&e->links, r, stream, info) < 0)
        e->error = -ENOMEM;
}

static void running_slice(struct export *e, uint32_t pid, uint64_t end_ns, int unfinished)
{
    uint64_t in = e->in_ns[pid] - 1, begin = e->scope->window.begin_ns;
    e->in_ns[pid] = 0;
    if (end_ns < begin)
        return;
    if (in < begin)
        in = begin;
    ev_begin(e, "X", "running", 2, pid, in);
    bmt_out_str(e->o, ",\"dur\":");
    bmt_an_us3(e->o, end_ns - in);
    function_name(e, e->in_entry[pid]);
    bmt_out_str(e->o, unfinished ? ",\"args\":{\"end\":\"unfinished\"}}" : "}");
}

/* One sample as a counter event: track "counter (unit)", series instance;
 * "NODE: counter (unit)" for a cluster's traces, whose counters would
 * otherwise share tracks. */
static void counter(struct export *e, const struct bmt_value *v, uint64_t ts, unsigned trace)
{
    const struct bmt_value *c = &v[BMT_F_counter_counter], *u = &v[BMT_F_counter_unit];
    const char *node = e->r && e->r->trace_count > 1 && trace < e->r->trace_count
                           ? e->r->traces[trace].node : NULL;
    char name[256 + BMT_TERM_MAX_BYTES + BMT_WORD_MAX_BYTES + 8];
    snprintf(name, sizeof name, "%s%s%.*s (%.*s)", node ? node : "", node ? ": " : "",
             (int)c->len, c->str, (int)u->len, u->str);
    bmt_out_str(e->o, e->event_count++ ? ",\n{\"ph\":\"C\",\"cat\":\"counter\",\"pid\":3,\"ts\":"
                                       : "\n{\"ph\":\"C\",\"cat\":\"counter\",\"pid\":3,\"ts\":");
    bmt_an_us3(e->o, ts - e->t0_ns);
    name_str(e, name, strlen(name));
    bmt_out_str(e->o, ",\"args\":{");
    bmt_an_json_string(e->o, v[BMT_F_counter_instance].str, v[BMT_F_counter_instance].len);
    bmt_out_char(e->o, ':');
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)(int64_t)v[BMT_F_counter_value].integer);
    bmt_out_str(e->o, num);
    bmt_out_str(e->o, "}}");
    e->counters = 1;
}

/* A file or ETS operation (session options file_io, ets) as an instant on
 * the caller's track, named "file read_file" or "ets insert", its figures
 * as args. An instant, not a slice: the event is stamped when the
 * session's helper records it, after the call returned, so a slice of its
 * latency would not nest in the caller's calls. */
static int io_op(struct export *e, uint16_t tp, const struct bmt_value *v, uint64_t ts, int out)
{
    int file = tp == BMT_TP_file_op;
    int64_t pid = proc(e, &v[file ? BMT_F_file_op_pid : BMT_F_ets_op_pid], ts);
    if (pid < 0)
        return pid == -1 ? 0 : (int)pid;
    if (!out)
        return 0;
    const struct bmt_value *op = &v[file ? BMT_F_file_op_op : BMT_F_ets_op_op];
    char name[BMT_WORD_MAX_BYTES + 8];
    snprintf(name, sizeof name, "%s %.*s", file ? "file" : "ets", (int)op->len, op->str);
    ev_begin(e, "i", file ? "file" : "ets", 1, (uint32_t)pid, ts);
    bmt_out_str(e->o, ",\"s\":\"t\"");
    name_str(e, name, strlen(name));
    bmt_out_str(e->o, ",\"args\":{");
    if (file) {
        arg(e, 1, "path", &v[BMT_F_file_op_path]);
        if (v[BMT_F_file_op_path2].len)
            arg(e, 0, "path2", &v[BMT_F_file_op_path2]);
        arg(e, 0, "result", &v[BMT_F_file_op_result]);
    } else {
        arg(e, 1, "table", &v[BMT_F_ets_op_table]);
        arg(e, 0, "result", &v[BMT_F_ets_op_result]);
    }
    const struct bmt_value *err = &v[file ? BMT_F_file_op_error : BMT_F_ets_op_error];
    const struct bmt_value *tag = &v[file ? BMT_F_file_op_tag : BMT_F_ets_op_tag];
    if (err->len)
        arg(e, 0, "error", err);
    if (tag->len)
        arg(e, 0, "tag", tag);
    char buf[96];
    if (file)
        snprintf(buf, sizeof buf, ",\"bytes\":%llu,\"latency_ns\":%llu}}",
                 (unsigned long long)v[BMT_F_file_op_bytes].integer,
                 (unsigned long long)v[BMT_F_file_op_latency_ns].integer);
    else
        snprintf(buf, sizeof buf, ",\"latency_ns\":%llu}}",
                 (unsigned long long)v[BMT_F_ets_op_latency_ns].integer);
    bmt_out_str(e->o, buf);
    return 0;
}

static int feed(void *ctx, const struct bmt_record *rec, int linked)
{
    struct export *e = ctx;
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    int64_t pid, other;
    char buf[128];
    if (!bmt_an_valid(e->scope, ts))
        return 0;
    int out = ts >= e->scope->window.begin_ns; /* written, not only state */
    switch (rec->tp) {
    case BMT_TP_function_call:
    case BMT_TP_function_return:
    case BMT_TP_function_exception:
        return bmt_callstack_feed(&e->cs, rec);
    case BMT_TP_process_scheduled: {
        if ((pid = proc(e, &v[F->sched_pid], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        int rc = bmt_callstack_feed(&e->cs, rec);
        if (rc < 0)
            return rc;
        const struct bmt_value *type = &v[F->sched_type];
        if (type->len >= 2 && memcmp(type->str, "in", 2) == 0) {
            if (e->in_ns[pid])
                running_slice(e, (uint32_t)pid, ts, 0);
            int64_t f = bmt_strtab_intern(&e->cs.funcs, v[F->sched_entry].str,
                                          v[F->sched_entry].len);
            if (f < 0)
                return (int)f;
            e->in_ns[pid] = ts + 1;
            e->in_entry[pid] = (uint32_t)f;
        } else if (e->in_ns[pid]) {
            running_slice(e, (uint32_t)pid, ts, 0);
        }
        return 0;
    }
    case BMT_TP_process_spawn:
        if ((pid = proc(e, &v[F->spawn_parent], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        if (out) {
            instant(e, (uint32_t)pid, ts, "procs", "spawn");
            arg(e, 1, "pid", &v[F->spawn_pid]);
            arg(e, 0, "entry", &v[F->spawn_entry]);
            bmt_out_str(e->o, "}}");
        }
        return 0;
    case BMT_TP_process_exit: {
        if ((pid = proc(e, &v[F->exit_pid], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        if (out) {
            instant(e, (uint32_t)pid, ts, "procs", "exit");
            arg(e, 1, "reason", &v[F->exit_reason]);
            bmt_out_str(e->o, "}}");
        }
        if (e->in_ns[pid])
            running_slice(e, (uint32_t)pid, ts, 0);
        return bmt_callstack_feed(&e->cs, rec);
    }
    case BMT_TP_process_register: {
        if ((pid = proc(e, &v[F->reg_pid], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        if (out) {
            instant(e, (uint32_t)pid, ts, "procs", "register");
            arg(e, 1, "name", &v[F->reg_name]);
            arg(e, 0, "type", &v[F->reg_type]);
            bmt_out_str(e->o, "}}");
        }
        return 0;
    }
    case BMT_TP_message_send: {
        if ((pid = proc(e, &v[F->send_from], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        if (!out)
            return 0;
        message_slice(e, (uint32_t)pid, ts, "send");
        arg(e, 1, "to", &v[F->send_to]);
        arg(e, 0, "message", &v[F->send_msg]);
        bmt_out_str(e->o, "}}");
        if (linked)
            return 0; /* its flow comes from bmt_links */
        const struct bmt_value *to = &v[F->send_to];
        if (bmt_names_is_pid(to->str, to->len)) {
            if ((other = proc(e, to, ts)) < 0)
                return other == -1 ? 0 : (int)other;
        } else {
            /* A registered name: the process that holds it now. */
            const struct bmt_names *n = &e->scope->names;
            other = bmt_names_holder(n, v[F->send_from].str, v[F->send_from].len, to->str,
                                     to->len);
            if (other < 0 || !bmt_an_keep(e->scope, bmt_strtab_str(&n->pids, (uint32_t)other),
                                          bmt_strtab_len(&n->pids, (uint32_t)other)))
                return 0;
        }
        return remember_send(e, (uint32_t)other, (uint32_t)pid, ts, &v[F->send_msg]);
    }
    case BMT_TP_message_receive: {
        if ((pid = proc(e, &v[F->recv_to], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        int rc = bmt_callstack_feed(&e->cs, rec);
        if (rc < 0 || !out)
            return rc;
        message_slice(e, (uint32_t)pid, ts, "receive");
        arg(e, 1, "message", &v[F->recv_msg]);
        bmt_out_str(e->o, "}}");
        if (!linked)
            match_receive(e, (uint32_t)pid, ts, &v[F->recv_to], &v[F->recv_msg]);
        return 0;
    }
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_major_start:
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_end: {
        if ((pid = proc(e, &v[F->gc_pid], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        int rc = bmt_callstack_feed(&e->cs, rec);
        if (rc < 0)
            return rc;
        int major = rec->tp == BMT_TP_gc_major_start || rec->tp == BMT_TP_gc_major_end;
        uint64_t *start = &e->gc_ns[2 * pid + major];
        if (rec->tp == BMT_TP_gc_minor_start || rec->tp == BMT_TP_gc_major_start) {
            *start = ts + 1;
            return 0;
        }
        uint64_t began = *start ? *start - 1 : ts;
        *start = 0;
        if (!out || began < e->scope->window.begin_ns)
            return 0;
        instant(e, (uint32_t)pid, began, "gc", major ? "gc major" : "gc minor");
        snprintf(buf, sizeof buf, "\"pause_ns\":%llu,\"reclaimed_words\":%llu,\"heap_words\":%llu}}",
                 (unsigned long long)(ts - began), (unsigned long long)v[F->gc_reclaimed].integer,
                 (unsigned long long)v[F->gc_heap].integer);
        bmt_out_str(e->o, buf);
        return 0;
    }
    case BMT_TP_counter:
        if (out)
            counter(e, v, ts, rec->trace);
        return 0;
    case BMT_TP_file_op:
    case BMT_TP_ets_op:
        return io_op(e, rec->tp, v, ts, out);
    default:
        return 0;
    }
}

static int export_feed(void *ctx, const struct bmt_record *rec)
{
    struct export *e = ctx;
    if (!e->started) {
        e->started = 1;
        e->t0_ns = e->scope->window.begin_ns > rec->ts_ns ? e->scope->window.begin_ns : rec->ts_ns;
    }
    int rc = links_ready(e);
    if (rc < 0 || (rc = bmt_links_feed(&e->links, rec)) < 0 || e->error)
        return rc < 0 ? rc : e->error;
    if (rec->tp == BMT_TP_message_send_link || rec->tp == BMT_TP_message_receive_link) {
        /* OTP's events with more fields: the same slices (catalogue.def). */
        struct bmt_record otp = *rec;
        otp.tp = rec->tp == BMT_TP_message_send_link ? BMT_TP_message_send : BMT_TP_message_receive;
        return feed(ctx, &otp, 1);
    }
    return feed(ctx, rec, 0);
}

static void metadata(struct export *e)
{
    static const char *const groups[] = {"BEAM calls and events", "BEAM scheduling"};
    char label[700];
    if (e->counters) {
        bmt_out_str(e->o, e->event_count++ ? ",\n" : "\n");
        bmt_out_str(e->o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":3,\"tid\":0,"
                          "\"args\":{\"name\":\"BEAM counters\"}}");
    }
    uint32_t node_count = e->nodes.count ? e->nodes.count : 1;
    for (uint32_t k = 0; k < node_count; k++) {
        const char *node = k < e->nodes.count ? bmt_strtab_str(&e->nodes, k) : "";
        for (unsigned g = 1; g <= 2; g++) {
            uint64_t group = group_pid(g, k);
            bmt_out_str(e->o, e->event_count++ ? ",\n" : "\n");
            bmt_out_str(e->o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
            bmt_out_u64(e->o, group);
            bmt_out_str(e->o, ",\"tid\":0,\"args\":{\"name\":");
            snprintf(label, sizeof label, "%s%s%s", node, node[0] ? ": " : "", groups[g - 1]);
            bmt_an_json_string(e->o, label, strlen(label));
            bmt_out_str(e->o, "}}");
            if (node[0]) { /* nodes in order, each node's two groups together */
                bmt_out_str(e->o, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
                bmt_out_u64(e->o, group);
                bmt_out_str(e->o, ",\"tid\":0,\"args\":{\"sort_index\":");
                bmt_out_u64(e->o, group);
                bmt_out_str(e->o, "}}");
            }
            for (uint32_t pid = 0; pid < e->cap; pid++) {
                if (!e->used[pid] || node_index(e, pid) != k)
                    continue;
                bmt_callstack_label(&e->cs, pid, label, sizeof label);
                bmt_out_str(e->o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
                bmt_out_u64(e->o, group);
                bmt_out_str(e->o, ",\"tid\":");
                bmt_out_u64(e->o, pid + 1);
                bmt_out_str(e->o, ",\"args\":{\"name\":");
                bmt_an_json_string(e->o, label, strlen(label));
                bmt_out_str(e->o, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":");
                bmt_out_u64(e->o, group);
                bmt_out_str(e->o, ",\"tid\":");
                bmt_out_u64(e->o, pid + 1);
                bmt_out_str(e->o, ",\"args\":{\"sort_index\":");
                bmt_out_u64(e->o, pid + 1);
                bmt_out_str(e->o, "}}");
            }
        }
    }
}

struct opts {
    const char *out;
};

static int parse_opt(void *ctx, int code, const char *arg)
{
    struct opts *o = ctx;
    if (code == 'o') {
        o->out = arg;
        return 0;
    }
    if (code == 0x100 && strcmp(arg, "chrome") == 0)
        return 0;
    if (code == 0x100)
        return bmt_cli_usage_error("export", "unknown format '%s' (expected chrome)", arg);
    return bmt_cli_usage_error("export", "unknown option");
}

int bmt_cmd_export(int argc, char **argv)
{
    static const struct option extra[] = {
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    struct opts opts = {NULL};
    int json = -1;
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("export", argc, argv, extra, "o:", parse_opt, &opts, &json, &scope,
                               &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    if (json == 0) {
        bmt_an_scope_free(&scope);
        return bmt_cli_usage_error("export", "unknown format 'text' (expected chrome)");
    }
    struct bmt_out o;
    if (bmt_an_out_open(&o, opts.out) != 0) {
        bmt_an_scope_free(&scope);
        return BMT_EXIT_FAIL;
    }
    struct export e;
    struct bmt_reader r;
    memset(&e, 0, sizeof e);
    e.o = &o;
    e.scope = &scope;
    bmt_callstack_init(&e.cs, &scope);
    e.cs.on_leave = on_leave;
    e.cs.ctx = &e;
    bmt_u64map_init(&e.pending);
    bmt_strtab_init(&e.nodes);
    e.pend_free = e.queue_free = BMT_CS_NONE;
    e.r = &r;
    scope.keep_links = 1;
    scope.on_packet = on_packet;
    bmt_out_str(&o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"trace\":");
    bmt_an_json_string(&o, dir, strlen(dir));
    bmt_out_str(&o, ",\"producer\":\"beamtrace export\"},\"traceEvents\":[");
    struct bmt_an_pass pass;
    int status = BMT_EXIT_FAIL;
    bmt_an_reads(&scope, &bmt_fields_callstack);
    bmt_an_reads(&scope, &bmt_fields_links);
    bmt_an_reads(&scope, &bmt_fields_export);
    rc = bmt_an_run(&r, dir, &scope, export_feed, &e, &pass);
    if (rc == 0)
        rc = bmt_callstack_finish(&e.cs, pass.end_ns);
    if (rc == 0 && e.links_ready && (rc = bmt_links_finish(&e.links)) == 0)
        rc = e.error;
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(r.error, sizeof r.error, "out of memory; free some memory");
        status = bmt_an_fail("export", dir, &r, rc);
    } else {
        for (uint32_t pid = 0; pid < e.cap; pid++)
            if (e.in_ns[pid])
                running_slice(&e, pid, pass.end_ns, 1);
        metadata(&e);
        bmt_out_str(&o, "\n]}\n");
        if (e.dropped_flows)
            bmt_cli_error("warning: %llu sends were never received within %u pending; they have "
                          "no flow arrow", (unsigned long long)e.dropped_flows, MAX_PENDING);
        if (e.uncertain_links)
            bmt_cli_error("warning: %llu message links are uncertain (equal messages pending "
                          "around discarded events) and have no flow arrow; see 'beamtrace "
                          "messages'", (unsigned long long)e.uncertain_links);
        status = BMT_EXIT_OK;
    }
    int out_status = bmt_an_out_close(&o, opts.out ? opts.out : "export");
    bmt_callstack_free(&e.cs);
    bmt_u64map_free(&e.pending);
    free(e.pends);
    free(e.queues);
    free(e.in_ns);
    free(e.in_entry);
    free(e.gc_ns);
    free(e.used);
    free(e.node_of);
    bmt_strtab_free(&e.nodes);
    if (e.links_ready)
        bmt_links_free(&e.links);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status == BMT_EXIT_OK ? out_status : status;
}
