/* The trace as tracks (contract in tracks.h). */
#include "tracks.h"
#include "layouts.h"
#include "run.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_tracks_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_tracks *t = self;
    memset(t, 0, sizeof *t);
    t->scope = scope;
    bmt_callstack_init(&t->cs, scope);
    bmt_flows_init(&t->flows);
    return 0;
}

void bmt_tracks_free(void *self)
{
    struct bmt_tracks *t = self;
    bmt_callstack_free(&t->cs);
    bmt_flows_free(&t->flows);
    free(t->in_ns);
    free(t->in_entry);
    free(t->in_kind);
    free(t->gc_ns);
    if (t->links_ready)
        bmt_links_free(&t->links);
}

static int emit(struct bmt_tracks *t, const struct bmt_track_event *ev)
{
    return t->sink->event(t->sink_ctx, ev);
}

/* The per-pid arrays hold pid id `id`. Returns id, or -ENOMEM. */
static int64_t grow_to(struct bmt_tracks *t, int64_t id)
{
    if (id < 0 || (uint32_t)id < t->cap)
        return id;
    uint32_t in_cap = t->cap, entry_cap = t->cap, gc_cap = t->cap, kind_cap = t->cap;
    uint64_t *in = bmt_grow(t->in_ns, &in_cap, (uint32_t)id, sizeof *in);
    if (in)
        t->in_ns = in;
    uint32_t *entry = bmt_grow(t->in_entry, &entry_cap, (uint32_t)id, sizeof *entry);
    if (entry)
        t->in_entry = entry;
    uint64_t(*gc)[2] = bmt_grow(t->gc_ns, &gc_cap, (uint32_t)id, sizeof *gc);
    if (gc)
        t->gc_ns = gc;
    uint8_t *kind = bmt_grow(t->in_kind, &kind_cap, (uint32_t)id, sizeof *kind);
    if (kind)
        t->in_kind = kind;
    if (!in || !entry || !gc || !kind)
        return -ENOMEM; /* the ones grown keep their room: the same next time */
    t->cap = in_cap;
    return id;
}

/* The pid id of process text `v` at `ts`: -1 when the filter drops it. */
static int64_t proc(struct bmt_tracks *t, const struct bmt_value *v, uint64_t ts)
{
    if (!bmt_an_keep(t->scope, v->str, v->len))
        return -1;
    return grow_to(t, bmt_callstack_proc(&t->cs, v->str, v->len, ts));
}

/* A frame ended: its call, clipped to the window. */
static int on_leave(void *ctx, struct bmt_callstack *cs, uint32_t pid, const struct bmt_frame *f,
                    uint64_t end_ns, unsigned flags, const uint64_t kinds[BMT_K_COUNT],
                    unsigned kind_mask)
{
    struct bmt_tracks *t = ctx;
    (void)cs;
    (void)kinds;
    (void)kind_mask;
    uint64_t begin = t->scope->window.begin_ns, start = f->start_ns > begin ? f->start_ns : begin;
    if (end_ns < begin)
        return 0; /* over before the window */
    if (grow_to(t, pid) < 0)
        return -ENOMEM;
    struct bmt_track_event ev = {BMT_TRACK_CALL, 0, pid, start, end_ns - start, f->func, NULL,
                                 NULL, 0, f->weight, NULL};
    if (flags & (BMT_CS_UNFINISHED | BMT_CS_CUT))
        ev.end = flags & BMT_CS_CUT ? "cut" : "unfinished";
    else if (flags & BMT_CS_EXCEPTION)
        ev.end = "exception";
    return emit(t, &ev);
}

/* Process `pid`'s scheduled-in period ends at end_ns; `end` says why when
 * not at an out or exit (the slice's args), or NULL. */
static int running_end(struct bmt_tracks *t, uint32_t pid, uint64_t end_ns, const char *end)
{
    uint64_t in = t->in_ns[pid] - 1, begin = t->scope->window.begin_ns;
    t->in_ns[pid] = 0;
    if (end_ns < begin)
        return 0;
    if (in < begin)
        in = begin;
    if (end_ns < in)
        end_ns = in;
    /* An in and its out are kept together: the ratio in force now. */
    static const char *const dirty[BMT_RUNS_POOLS] = {[BMT_RUNS_DIRTY_CPU] = "dirty_cpu",
                                                      [BMT_RUNS_DIRTY_IO] = "dirty_io"};
    struct bmt_track_event ev = {BMT_TRACK_RUNNING, BMT_TP_process_scheduled, pid, in, end_ns - in,
                                 t->in_entry[pid], end, NULL, 0,
                                 t->scope->sampled.weight[BMT_TP_process_scheduled],
                                 dirty[t->in_kind[pid] % BMT_RUNS_POOLS]};
    return emit(t, &ev);
}

/* An instant of `item` on process `pid`'s track. */
static int instant(struct bmt_tracks *t, enum bmt_track_item item, const struct bmt_record *rec,
                   uint32_t pid, const struct bmt_value *v)
{
    struct bmt_track_event ev = {item, rec->tp, pid, rec->ts_ns, 0, 0, NULL, v, rec->trace,
                                 t->scope->sampled.weight[rec->tp], NULL};
    return emit(t, &ev);
}

static int scheduled(struct bmt_tracks *t, const struct bmt_record *rec)
{
    const struct bmt_value *v = rec->values;
    const struct bmt_value *type = &v[BMT_F_process_scheduled_type];
    int is_in = type->len >= 2 && memcmp(type->str, "in", 2) == 0, rc;
    /* Runs this `in` ended (runs.h), its own process's included, whether
     * or not the filter keeps its process. */
    const struct bmt_runs *runs = &t->scope->runs;
    for (unsigned i = 0; is_in && i < runs->closed_n; i++) {
        uint32_t c = runs->closed[i].pid;
        if (c < t->cap && t->in_ns[c] &&
            (rc = running_end(t, c, runs->closed[i].end_ns, "last event")) < 0)
            return rc;
    }
    int64_t pid = proc(t, &v[BMT_F_process_scheduled_pid], rec->ts_ns);
    if (pid < 0)
        return pid == -1 ? 0 : (int)pid;
    rc = bmt_callstack_feed(&t->cs, rec);
    if (rc < 0 || !is_in)
        return rc < 0 || !t->in_ns[pid] ? rc : running_end(t, (uint32_t)pid, rec->ts_ns, NULL);
    if (t->in_ns[pid] && (rc = running_end(t, (uint32_t)pid, rec->ts_ns, NULL)) < 0)
        return rc;
    int64_t f = bmt_strtab_intern(&t->cs.funcs, v[BMT_F_process_scheduled_entry].str,
                                  v[BMT_F_process_scheduled_entry].len);
    if (f < 0)
        return (int)f;
    t->in_ns[pid] = rec->ts_ns + 1;
    t->in_entry[pid] = (uint32_t)f;
    t->in_kind[pid] = (uint8_t)bmt_runs_kind(&t->scope->runs, rec->trace, rec->cpu_id);
    return 0;
}

/* Forgets process `pid`'s open collection: a call, return or exit of the
 * process, or another collection's start, came between its start and its
 * end, which a collection does not allow (the process runs no code
 * meanwhile, and one collection ends before the next starts), so events
 * were lost and the end is given alone, as a zero-length collection at
 * its time. */
static void gc_broken(struct bmt_tracks *t, uint32_t pid)
{
    for (int major = 0; major < 2; major++)
        if (t->gc_ns[pid][major]) {
            t->gc_ns[pid][major] = 0;
            t->gc_open--;
        }
}

/* spawn (on the parent's track), exit, register: instants. */
static int lifecycle(struct bmt_tracks *t, const struct bmt_record *rec, int out)
{
    const struct bmt_value *v = rec->values;
    static const struct {
        uint16_t tp, pid_field;
        enum bmt_track_item item;
    } kinds[] = {
        {BMT_TP_process_spawn, BMT_F_process_spawn_parent, BMT_TRACK_SPAWN},
        {BMT_TP_process_exit, BMT_F_process_exit_pid, BMT_TRACK_EXIT},
        {BMT_TP_process_register, BMT_F_process_register_pid, BMT_TRACK_REGISTER},
    };
    unsigned k = rec->tp == BMT_TP_process_spawn ? 0 : rec->tp == BMT_TP_process_exit ? 1 : 2;
    int64_t pid = proc(t, &v[kinds[k].pid_field], rec->ts_ns);
    if (pid < 0)
        return pid == -1 ? 0 : (int)pid;
    int rc = out ? instant(t, kinds[k].item, rec, (uint32_t)pid, v) : 0;
    if (rc < 0 || rec->tp != BMT_TP_process_exit)
        return rc;
    if (t->in_ns[pid] && (rc = running_end(t, (uint32_t)pid, rec->ts_ns, NULL)) < 0)
        return rc;
    gc_broken(t, (uint32_t)pid);
    return bmt_callstack_feed(&t->cs, rec);
}

/* A send: its instant, and (without links) its place in the flows. */
static int send(struct bmt_tracks *t, const struct bmt_record *rec, int out, int linked)
{
    const struct bmt_value *v = rec->values, *to = &v[BMT_F_message_send_to];
    int64_t pid = proc(t, &v[BMT_F_message_send_from], rec->ts_ns), other;
    if (pid < 0 || !out)
        return pid == -1 || pid >= 0 ? 0 : (int)pid;
    int rc = instant(t, BMT_TRACK_SEND, rec, (uint32_t)pid, v);
    if (rc < 0 || linked)
        return rc; /* its arrow comes from the links */
    const struct bmt_names *n = &t->scope->names;
    if (bmt_names_is_pid(to->str, to->len)) {
        if ((other = proc(t, to, rec->ts_ns)) < 0)
            return other == -1 ? 0 : (int)other;
    } else {
        /* A registered name: the process that holds it now. */
        other = bmt_names_holder(n, v[BMT_F_message_send_from].str,
                                 v[BMT_F_message_send_from].len, to->str, to->len);
        if (other < 0 || !bmt_an_keep(t->scope, bmt_strtab_str(&n->pids, (uint32_t)other),
                                      bmt_strtab_len(&n->pids, (uint32_t)other)))
            return 0;
    }
    struct bmt_value pidv = {bmt_strtab_str(&n->pids, (uint32_t)other),
                             bmt_strtab_len(&n->pids, (uint32_t)other), 0};
    return bmt_flows_send(&t->flows, &pidv, (uint32_t)pid, rec->ts_ns,
                          &v[BMT_F_message_send_message]);
}

/* A receive: its instant, and (without links) the arrow of its send. */
static int receive(struct bmt_tracks *t, const struct bmt_record *rec, int out, int linked)
{
    const struct bmt_value *v = rec->values;
    int64_t pid = proc(t, &v[BMT_F_message_receive_to], rec->ts_ns);
    if (pid < 0)
        return pid == -1 ? 0 : (int)pid;
    int rc = bmt_callstack_feed(&t->cs, rec);
    if (rc < 0 || !out || (rc = instant(t, BMT_TRACK_RECEIVE, rec, (uint32_t)pid, v)) < 0 ||
        linked)
        return rc;
    uint32_t from;
    uint64_t sent;
    if (!bmt_flows_receive(&t->flows, &v[BMT_F_message_receive_to],
                           &v[BMT_F_message_receive_message], &from, &sent))
        return 0;
    return t->sink->flow(t->sink_ctx, from, sent, (uint32_t)pid, rec->ts_ns);
}

/* A call, return or exception: to the stacks, and it breaks the open
 * collections of its process (looked up only while any is open). */
static int function(struct bmt_tracks *t, const struct bmt_record *rec)
{
    int rc = bmt_callstack_feed(&t->cs, rec);
    if (rc < 0 || !t->gc_open)
        return rc;
    const struct bmt_value *v = &rec->values[BMT_FN_PID];
    int64_t pid = bmt_strtab_find(&t->scope->names.pids, v->str, v->len);
    if (pid >= 0 && (uint32_t)pid < t->cap)
        gc_broken(t, (uint32_t)pid);
    return 0;
}

/* gc_*_start opens a collection, gc_*_end gives it, from its start. */
static int gc(struct bmt_tracks *t, const struct bmt_record *rec, int out)
{
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    int64_t pid = proc(t, &v[BMT_GC_PID], ts);
    if (pid < 0)
        return pid == -1 ? 0 : (int)pid;
    int rc = bmt_callstack_feed(&t->cs, rec);
    if (rc < 0)
        return rc;
    int major = rec->tp == BMT_TP_gc_major_start || rec->tp == BMT_TP_gc_major_end;
    uint64_t *start = &t->gc_ns[pid][major];
    if (rec->tp == BMT_TP_gc_minor_start || rec->tp == BMT_TP_gc_major_start) {
        gc_broken(t, (uint32_t)pid); /* collections do not nest: one was lost */
        t->gc_open++;
        *start = ts + 1;
        return 0;
    }
    uint64_t began = *start ? *start - 1 : ts;
    t->gc_open -= !!*start;
    *start = 0;
    if (!out || began < t->scope->window.begin_ns)
        return 0;
    struct bmt_track_event ev = {BMT_TRACK_GC, rec->tp, (uint32_t)pid, began, ts - began, 0, NULL,
                                 v, rec->trace, t->scope->sampled.weight[rec->tp], NULL};
    return emit(t, &ev);
}

/* A file or ETS operation on the caller's track. */
static int io(struct bmt_tracks *t, const struct bmt_record *rec, int out)
{
    const struct bmt_value *v = rec->values;
    int64_t pid = proc(t, &v[rec->tp == BMT_TP_file_op ? BMT_F_file_op_pid : BMT_F_ets_op_pid],
                       rec->ts_ns);
    if (pid < 0)
        return pid == -1 ? 0 : (int)pid;
    return out ? instant(t, BMT_TRACK_IO, rec, (uint32_t)pid, v) : 0;
}

/* One event (a link event as OTP's, `linked`). */
static int feed(struct bmt_tracks *t, const struct bmt_record *rec, int linked)
{
    if (!bmt_an_valid(t->scope, rec->ts_ns))
        return 0;
    int out = rec->ts_ns >= t->scope->window.begin_ns; /* given, not only state */
    switch (rec->tp) {
    case BMT_TP_function_call:
    case BMT_TP_function_return:
    case BMT_TP_function_exception: return function(t, rec);
    case BMT_TP_process_scheduled: return scheduled(t, rec);
    case BMT_TP_process_spawn:
    case BMT_TP_process_exit:
    case BMT_TP_process_register: return lifecycle(t, rec, out);
    case BMT_TP_message_send: return send(t, rec, out, linked);
    case BMT_TP_message_receive: return receive(t, rec, out, linked);
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_major_start:
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_end: return gc(t, rec, out);
    case BMT_TP_counter: return out ? instant(t, BMT_TRACK_COUNTER, rec, 0, rec->values) : 0;
    case BMT_TP_file_op:
    case BMT_TP_ets_op: return io(t, rec, out);
    default: return 0;
    }
}

/* ---- links (record --links) ---- */

/* A link made by links.c: one arrow (uncertain ones are counted, not drawn). */
static void on_link(void *ctx, const struct bmt_link *k)
{
    struct bmt_tracks *t = ctx;
    if (k->uncertain) {
        t->uncertain_links++;
        return;
    }
    const struct bmt_strtab *p = &t->links.procs;
    const char *ss = bmt_strtab_str(p, k->sender), *rs = bmt_strtab_str(p, k->receiver);
    size_t sl = bmt_strtab_len(p, k->sender), rl = bmt_strtab_len(p, k->receiver);
    if (k->send_ns < t->scope->window.begin_ns || k->receipt_ns < t->scope->window.begin_ns ||
        !bmt_an_keep(t->scope, ss, sl) || !bmt_an_keep(t->scope, rs, rl))
        return;
    int64_t s = grow_to(t, bmt_names_pid(&t->scope->names, ss, sl));
    int64_t r = grow_to(t, bmt_names_pid(&t->scope->names, rs, rl));
    if (s < 0 || r < 0 ||
        t->sink->flow(t->sink_ctx, (uint32_t)s, k->send_ns, (uint32_t)r, k->receipt_ns) < 0)
        t->error = -ENOMEM;
}

static int links_ready(struct bmt_tracks *t)
{
    if (t->links_ready)
        return 0;
    t->links_ready = 1;
    int rc = bmt_links_init(&t->links, t->r, &t->scope->names);
    t->links.on_link = on_link;
    t->links.ctx = t;
    return rc;
}

/* ---- as an accumulator (acc.h) ---- */

static int acc_init(void *self, struct bmt_an_scope *scope)
{
    bmt_tracks_init(self, scope);
    struct bmt_tracks *t = self;
    t->cs.on_leave = on_leave;
    t->cs.ctx = t;
    return 0;
}

static int acc_feed(void *self, const struct bmt_record *rec)
{
    struct bmt_tracks *t = self;
    if (!t->started) {
        t->started = 1;
        t->t0_ns = t->scope->window.begin_ns > rec->ts_ns ? t->scope->window.begin_ns : rec->ts_ns;
    }
    int rc = links_ready(t);
    if (rc < 0 || (rc = bmt_links_feed(&t->links, rec)) < 0 || t->error)
        return rc < 0 ? rc : t->error;
    if (rec->tp != BMT_TP_message_send_link && rec->tp != BMT_TP_message_receive_link)
        return feed(t, rec, 0);
    /* OTP's events with more fields (layouts.h): the same items. */
    struct bmt_record otp = *rec;
    otp.tp = rec->tp == BMT_TP_message_send_link ? BMT_TP_message_send : BMT_TP_message_receive;
    return feed(t, &otp, 1);
}

/* Losses make links uncertain (links.h). */
static void acc_packet(void *self, const struct bmt_reader *r, unsigned stream,
                       const struct bmt_packet_info *info)
{
    struct bmt_tracks *t = self;
    if (links_ready(t) < 0 || bmt_links_packet(&t->links, r, stream, info) < 0)
        t->error = -ENOMEM;
}

/* Open calls end at the pass's end, unfinished; scheduled-in periods at
 * their process's last event (runs.h). */
static int acc_finish(void *self, const struct bmt_an_pass *pass)
{
    struct bmt_tracks *t = self;
    int rc = bmt_callstack_finish(&t->cs, pass);
    if (rc == 0 && t->links_ready && (rc = bmt_links_finish(&t->links)) == 0)
        rc = t->error;
    for (uint32_t pid = 0; rc == 0 && pid < t->cap; pid++)
        if (t->in_ns[pid]) {
            uint64_t last = bmt_runs_last_ns(&t->scope->runs, pid, pass->end_ns);
            rc = running_end(t, pid, last < pass->end_ns ? last : pass->end_ns, "last event");
        }
    return rc;
}

#define F(tp, f) BMT_FIELD(tp, f)

static const struct bmt_needs needs = {{
    BMT_NEED(function_call, F(function_call, pid) | F(function_call, entry)),
    BMT_NEED(function_return, F(function_return, pid) | F(function_return, entry)),
    BMT_NEED(function_exception, F(function_exception, pid) | F(function_exception, entry)),
    BMT_NEED(process_scheduled, F(process_scheduled, pid) | F(process_scheduled, entry) |
                                    F(process_scheduled, type)),
    BMT_NEED(process_spawn, F(process_spawn, pid) | F(process_spawn, parent) |
                                F(process_spawn, entry)),
    BMT_NEED(process_exit, F(process_exit, pid) | F(process_exit, reason)),
    BMT_NEED(process_register, F(process_register, pid) | F(process_register, name) |
                                   F(process_register, type)),
    BMT_NEED(message_send, F(message_send, from) | F(message_send, to) | F(message_send, message)),
    BMT_NEED(message_receive, F(message_receive, to) | F(message_receive, message)),
    BMT_NEED(message_send_link, F(message_send_link, from) | F(message_send_link, to) |
                                    F(message_send_link, message) | F(message_send_link, type) |
                                    F(message_send_link, fingerprint)),
    BMT_NEED(message_receive_link, F(message_receive_link, to) |
                                       F(message_receive_link, message) |
                                       F(message_receive_link, from) |
                                       F(message_receive_link, from_node) |
                                       F(message_receive_link, fingerprint)),
    BMT_NEED(gc_minor_start, F(gc_minor_start, pid)),
    BMT_NEED(gc_major_start, F(gc_major_start, pid)),
    BMT_NEED(gc_minor_end, F(gc_minor_end, pid) | F(gc_minor_end, reclaimed) |
                               F(gc_minor_end, heap)),
    BMT_NEED(gc_major_end, F(gc_major_end, pid) | F(gc_major_end, reclaimed) |
                               F(gc_major_end, heap)),
    BMT_NEED(counter, F(counter, counter) | F(counter, instance) | F(counter, value) |
                          F(counter, unit)),
    BMT_NEED(file_op, F(file_op, pid) | F(file_op, op) | F(file_op, path) | F(file_op, path2) |
                          F(file_op, bytes) | F(file_op, result) | F(file_op, error) |
                          F(file_op, latency_ns) | F(file_op, tag)),
    BMT_NEED(ets_op, F(ets_op, pid) | F(ets_op, table) | F(ets_op, op) | F(ets_op, result) |
                         F(ets_op, error) | F(ets_op, latency_ns) | F(ets_op, tag)),
}, 1};

const struct bmt_acc bmt_tracks_acc = {
    "tracks", acc_init, acc_feed, acc_packet, acc_finish, bmt_tracks_free, &needs,
    BMT_SCALES /* each item carries the events it stands for (its weight) */};
