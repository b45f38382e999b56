/* Call stack reconstruction (rules and contract in callstack.h). */
#include "callstack.h"
#include "run.h"
#include "acc.h"
#include "layouts.h"
#include "base/grow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bmt_callstack_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_callstack *cs = self;
    memset(cs, 0, sizeof *cs);
    cs->scope = scope;
    cs->max_nodes = BMT_CS_MAX_NODES;
    cs->value = BMT_CS_NONE;
    /* Tests lower the cap to see the pruning without millions of stacks. */
    const char *cap = getenv("BEAMTRACE_MAX_STACKS");
    if (cap && atol(cap) >= 16 && atol(cap) < BMT_CS_MAX_NODES)
        cs->max_nodes = (uint32_t)atol(cap);
    bmt_strtab_init(&cs->funcs);
    bmt_u64map_init(&cs->children);
    return 0;
}

uint64_t bmt_cs_node_ns(const struct bmt_cs_node *n, unsigned mask)
{
    uint64_t sum = 0;
    for (int k = 0; k < BMT_K_COUNT; k++)
        if (mask >> k & 1)
            sum += n->self[k];
    return sum;
}

static int64_t new_node(struct bmt_callstack *cs, uint32_t parent, uint32_t func, int is_proc)
{
    struct bmt_cs_node *nodes = bmt_grow(cs->nodes, &cs->node_cap, cs->node_count, sizeof *nodes);
    if (!nodes)
        return -ENOMEM;
    cs->nodes = nodes;
    uint32_t id = cs->node_count++;
    cs->nodes[id].parent = parent;
    cs->nodes[id].func = func;
    cs->nodes[id].is_proc = (uint8_t)is_proc;
    return id;
}

/* The child of `parent` for `func`; when the tree is full and it is new,
 * BMT_CS_NONE (the caller charges the time to the parent). */
static int64_t child_node(struct bmt_callstack *cs, uint32_t parent, uint32_t func, int is_proc)
{
    uint64_t key = ((uint64_t)parent << 32) | func;
    if (is_proc)
        key |= 1ull << 63; /* parent is the root (0) for process nodes */
    uint32_t found = bmt_u64map_find(&cs->children, key);
    if (found != UINT32_MAX)
        return found;
    if (cs->node_count >= cs->max_nodes)
        return BMT_CS_NONE;
    int created;
    uint32_t *slot = bmt_u64map_get(&cs->children, key, cs->node_count, &created);
    if (!slot)
        return -ENOMEM;
    return new_node(cs, parent, func, is_proc);
}

int64_t bmt_callstack_start(struct bmt_callstack *cs, int64_t id, uint64_t ts)
{
    uint32_t old = cs->proc_cap;
    struct bmt_proc *procs = bmt_grow(cs->procs, &cs->proc_cap, (uint32_t)id, sizeof *procs);
    if (!procs)
        return -ENOMEM;
    for (uint32_t i = old; i < cs->proc_cap; i++)
        procs[i].root = BMT_CS_NONE;
    cs->procs = procs;
    struct bmt_proc *p = &cs->procs[id];
    if (!p->tracked) {
        p->tracked = 1;
        bmt_pstate_init(&p->ps, ts);
    }
    return id;
}

/* The process of the pid in `v`, when the filter keeps it; -1 when not,
 * -ENOMEM. */
static inline __attribute__((always_inline)) int64_t
tracked(struct bmt_callstack *cs, const struct bmt_value *v, uint64_t ts)
{
    if (!bmt_an_keep(cs->scope, v->str, v->len))
        return -1;
    return bmt_callstack_proc(cs, v->str, v->len, ts);
}

/* Ends the top frame of process `pid` at end_ns; `then` is the process's
 * time by kind at end_ns when taken earlier (a settled tentative return),
 * non-zero in kinds `then_kinds` only, or NULL to take it now. */
static int pop_at(struct bmt_callstack *cs, uint32_t pid, uint64_t end_ns, unsigned flags,
                  const uint64_t *then, unsigned then_kinds)
{
    struct bmt_proc *p = &cs->procs[pid];
    struct bmt_frame *f = &p->frames[p->depth - 1];
    uint64_t now[BMT_K_COUNT], incl[BMT_K_COUNT] = {0};
    unsigned kinds = then_kinds;
    if (then)
        memcpy(now, then, sizeof now);
    else
        kinds = bmt_pstate_snapshot(&p->ps, end_ns, &cs->scope->window, now);
    /* A kind the process has no time in now has none in the frame: only
     * the others are added up (most frames have one or two). */
    for (unsigned m = kinds; m; m &= m - 1) {
        int k = __builtin_ctz(m);
        incl[k] = now[k] >= f->snap[k] ? now[k] - f->snap[k] : 0;
    }
    /* A sampled call's own time stands for `weight` calls' (the flame's
     * widths scaled back; its callees' already were, in f->child). */
    if (f->node != BMT_CS_NONE)
        for (unsigned m = kinds; m; m &= m - 1) {
            int k = __builtin_ctz(m);
            cs->nodes[f->node].self[k] +=
                (incl[k] - (f->child[k] < incl[k] ? f->child[k] : incl[k])) * f->weight;
        }
    if (f->start_ns < cs->scope->window.begin_ns)
        flags |= BMT_CS_CUT;
    if (end_ns > cs->scope->window.end_ns)
        flags |= BMT_CS_UNFINISHED;
    int rc = cs->on_leave ? cs->on_leave(cs->ctx, cs, pid, f, end_ns, flags, incl, kinds) : 0;
    p->depth--;
    if (p->depth && !bmt_wakers_empty(&f->wakers))
        bmt_wakers_merge(&p->frames[p->depth - 1].wakers, &f->wakers, 1);
    /* A sampled callee stands for `weight` calls: its caller's own time
     * is what those would leave (clamped at 0 where it is used). */
    uint64_t w = f->weight;
    if (p->depth)
        for (unsigned m = kinds; m; m &= m - 1) {
            int k = __builtin_ctz(m);
            p->frames[p->depth - 1].child[k] += w > 1 ? incl[k] * w : incl[k];
        }
    return rc;
}

static int pop(struct bmt_callstack *cs, uint32_t pid, uint64_t end_ns, unsigned flags)
{
    return pop_at(cs, pid, end_ns, flags, NULL, 0);
}

/* Confirms a tentative return: the top frame ended at its mark. */
static int settle_mark(struct bmt_callstack *cs, uint32_t pid)
{
    struct bmt_proc *p = &cs->procs[pid];
    if (!p->marked)
        return 0;
    p->marked = 0;
    return pop_at(cs, pid, p->mark_ns, 0, p->mark_snap, p->mark_kinds);
}

/* Index of the topmost frame running `func`, or -1. */
static int64_t find_frame(const struct bmt_proc *p, uint32_t func)
{
    for (int64_t i = (int64_t)p->depth - 1; i >= 0; i--)
        if (p->frames[i].func == func)
            return i;
    return -1;
}

/* The call-tree node a new frame of `func` goes to (the frames have room
 * for it). */
static int64_t frame_node(struct bmt_callstack *cs, uint32_t pid, uint32_t func)
{
    struct bmt_proc *p = &cs->procs[pid];
    if (cs->node_count == 0) {
        if (new_node(cs, BMT_CS_NONE, 0, 0) < 0 || new_node(cs, 0, 0, 1) < 0) /* root, others */
            return -ENOMEM;
    }
    uint32_t parent;
    if (p->depth) {
        parent = p->frames[p->depth - 1].node;
    } else if (cs->merge_processes) {
        parent = 0;
    } else {
        if (p->root == BMT_CS_NONE) {
            int64_t r = child_node(cs, 0, pid, 1);
            if (r < 0)
                return r;
            if (r == BMT_CS_NONE) {
                r = BMT_CS_OTHERS_NODE;
                cs->pruned_processes++;
            }
            p->root = (uint32_t)r;
        }
        parent = p->root;
    }
    /* A loop calls one function from one caller again and again: the node
     * of the frame last at this depth (its slot is kept, or zeroed) is
     * likely the one, and is when its parent and function are: a node is
     * its parent's only child of its function. No hash then. */
    const struct bmt_cs_node *last = &cs->nodes[p->frames[p->depth].node < cs->node_count
                                                    ? p->frames[p->depth].node : 0];
    if (last->parent == parent && last->func == func && !last->is_proc)
        return last - cs->nodes;
    int64_t n = child_node(cs, parent, func, 0);
    if (n == BMT_CS_NONE) {
        /* The tree is full: the call shares its caller's node (its time
         * becomes the caller's own time; a root call's goes to its process). */
        cs->pruned_calls++;
        n = parent;
    }
    return n;
}

static int on_call(struct bmt_callstack *cs, uint32_t pid, uint32_t func, uint64_t ts)
{
    struct bmt_proc *p = &cs->procs[pid];
    p->marked = 0; /* the top was returned *to*: it keeps running */
    p->last_ret = 0;
    if (p->depth >= BMT_CS_MAX_DEPTH) {
        cs->overflow_count++;
        return 0;
    }
    /* From 4 frames: 64 (7 KiB) per process was most of the memory of
     * traces with tens of thousands of processes. */
    struct bmt_frame *frames = bmt_grow_from(p->frames, &p->cap, p->depth, sizeof *frames, 4);
    if (!frames)
        return -ENOMEM;
    p->frames = frames;
    uint32_t node = BMT_CS_NONE;
    if (cs->tree) {
        int64_t n = frame_node(cs, pid, func);
        if (n < 0)
            return (int)n;
        node = (uint32_t)n;
    }
    struct bmt_frame *f = &p->frames[p->depth++];
    f->func = func;
    f->node = node;
    f->value = cs->value;
    f->start_ns = ts;
    f->weight = cs->scope->sampled.weight[BMT_TP_function_call];
    bmt_pstate_snapshot(&p->ps, ts, &cs->scope->window, f->snap);
    memset(f->child, 0, sizeof f->child);
    bmt_wakers_clear(&f->wakers);
    return 0;
}

static int on_return(struct bmt_callstack *cs, uint32_t pid, uint32_t func, uint64_t ts,
                     int exception)
{
    struct bmt_proc *p = &cs->procs[pid];
    unsigned flags = exception ? BMT_CS_EXCEPTION : 0;
    int rc;
    int after_ret = p->last_ret;
    p->last_ret = 1;
    if (p->marked) {
        if (p->frames[p->depth - 1].func == func) {
            p->marked = 0; /* the mark was a return_to; this is its return */
            if (!exception && cs->value != BMT_CS_NONE)
                p->frames[p->depth - 1].value = cs->value;
            return pop(cs, pid, ts, flags);
        }
        if ((rc = settle_mark(cs, pid)) < 0)
            return rc;
    }
    int64_t at = find_frame(p, func);
    if (at < 0) {
        if (p->depth && !exception)
            cs->return_to_seen = 1;
        cs->ignored_returns++;
        return 0;
    }
    if (!exception && cs->value != BMT_CS_NONE)
        p->frames[at].value = cs->value;
    if (exception) {
        while (p->depth > (uint32_t)at)
            if ((rc = pop(cs, pid, ts, flags)) < 0)
                return rc;
        return 0;
    }
    if ((uint32_t)at == p->depth - 1) {
        if (cs->return_to_seen && after_ret) {
            p->marked = 1;
            p->mark_ns = ts;
            p->mark_kinds =
                (uint8_t)bmt_pstate_snapshot(&p->ps, ts, &cs->scope->window, p->mark_snap);
            return 0;
        }
        return pop(cs, pid, ts, 0);
    }
    /* return_to a function below the top: the frames above it are done. */
    cs->return_to_seen = 1;
    while (p->depth > (uint32_t)at + 1)
        if ((rc = pop(cs, pid, ts, 0)) < 0)
            return rc;
    return 0;
}

static int close_all(struct bmt_callstack *cs, uint32_t pid, uint64_t end_ns)
{
    struct bmt_proc *p = &cs->procs[pid];
    int rc = settle_mark(cs, pid);
    while (rc == 0 && p->depth)
        rc = pop(cs, pid, end_ns, BMT_CS_UNFINISHED);
    return rc;
}

static void state_event(struct bmt_callstack *cs, uint32_t pid, enum bmt_pstate_event e,
                        uint64_t ts)
{
    bmt_pstate_event(&cs->procs[pid].ps, e, ts, &cs->scope->window);
}

/* The process a message is sent to: a pid, or a name registered now. */
static int64_t receiver(struct bmt_callstack *cs, const struct bmt_value *from,
                        const struct bmt_value *to, uint64_t ts)
{
    if (bmt_names_is_pid(to->str, to->len))
        return tracked(cs, to, ts);
    int64_t pid = bmt_names_holder(&cs->scope->names, from->str, from->len, to->str, to->len);
    if (pid < 0 || (uint32_t)pid >= cs->proc_cap || !cs->procs[pid].tracked)
        return -1;
    return pid;
}

/* The wait process `pid` just had classified, ended by a message from
 * ps.woke_from: the open frames' time, tallied in the top one's (handed
 * down as frames end); a top tentatively returned ended before it. */
static void woken(struct bmt_callstack *cs, uint32_t pid)
{
    struct bmt_proc *p = &cs->procs[pid];
    uint32_t at = p->depth - (p->marked && p->depth);
    if (at)
        bmt_wakers_add(&p->frames[at - 1].wakers, p->ps.woke_from, p->ps.woke_ns);
    p->ps.woke_ns = 0;
}

/* The hash of alias text s/len ("#Ref<0.1.2.3>"), never 0 (FNV-1a). */
static uint64_t alias_key(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h | 1;
}

/* Process `ps` takes message text `m` after being out: when the message
 * carries an alias a message was sent to while it was out (a
 * gen_server:call reply), that send is the one that woke it. */
static void alias_woke(struct bmt_callstack *cs, struct bmt_pstate *ps, const struct bmt_value *m)
{
    const char *s = m->str, *end = m->str + m->len;
    while ((s = memchr(s, '#', (size_t)(end - s))) && end - s > 5 && memcmp(s, "#Ref<", 5) != 0)
        s++;
    if (!s || end - s <= 5)
        return;
    const char *close = memchr(s, '>', (size_t)(end - s));
    if (!close)
        return;
    uint64_t key = alias_key(s, (size_t)(close + 1 - s));
    const struct bmt_alias_send *a = &cs->alias_sends[key % BMT_CS_ALIAS_SLOTS];
    if (a->key == key)
        bmt_pstate_sent_before(ps, a->ts_ns, a->from);
}

/* A message from `from` (pid text) to `to` (pid or name) at ts: the
 * sender did something; the receiver, when scheduled out, may have been
 * woken by it (its sender kept: the first such message ends its wait). */
static int sent(struct bmt_callstack *cs, const struct bmt_value *from,
                const struct bmt_value *to, uint64_t ts)
{
    int64_t sender = tracked(cs, from, ts), pid;
    if (sender < -1)
        return (int)sender;
    if (sender >= 0)
        state_event(cs, (uint32_t)sender, BMT_PS_ACTIVITY, ts);
    if (to->len > 5 && to->str[0] == '#') {
        /* To an alias: its receiver shows when it takes the message. */
        if (sender < 0 && (sender = bmt_names_pid(&cs->scope->names, from->str, from->len)) < 0)
            return (int)sender;
        uint64_t key = alias_key(to->str, to->len);
        cs->alias_sends[key % BMT_CS_ALIAS_SLOTS] =
            (struct bmt_alias_send){key, ts, (uint32_t)sender};
        return 0;
    }
    if ((pid = receiver(cs, from, to, ts)) < 0)
        return pid == -1 ? 0 : (int)pid;
    struct bmt_pstate *ps = &cs->procs[pid].ps;
    if (ps->state != BMT_PSS_OUT || ps->sent_ns)
        return 0; /* nearly every send: nothing to keep */
    /* A sender the filter drops still woke it: named by its pid id. */
    if (sender < 0 && (sender = bmt_names_pid(&cs->scope->names, from->str, from->len)) < 0)
        return (int)sender;
    bmt_pstate_sent(ps, ts, (uint32_t)sender);
    return 0;
}

/* Applies state event `e` to the process of pid text `v`, if kept. */
static int state_of(struct bmt_callstack *cs, const struct bmt_value *v, enum bmt_pstate_event e,
                    uint64_t ts)
{
    int64_t pid = tracked(cs, v, ts);
    if (pid < 0)
        return pid == -1 ? 0 : (int)pid;
    state_event(cs, (uint32_t)pid, e, ts);
    return 0;
}

int bmt_callstack_feed(void *self, const struct bmt_record *rec)
{
    struct bmt_callstack *cs = self;
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    int64_t pid, func;
    if (!bmt_an_valid(cs->scope, ts))
        return 0; /* a flight recorder's incomplete start: nothing to build on */
    switch (rec->tp) {
    case BMT_TP_function_call:
    case BMT_TP_function_return:
    case BMT_TP_function_exception: {
        if ((pid = tracked(cs, &v[BMT_FN_PID], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        if ((func = bmt_strtab_intern(&cs->funcs, v[BMT_FN_ENTRY].str, v[BMT_FN_ENTRY].len)) < 0)
            return (int)func;
        state_event(cs, (uint32_t)pid, BMT_PS_ACTIVITY, ts);
        if (rec->tp == BMT_TP_function_call)
            return on_call(cs, (uint32_t)pid, (uint32_t)func, ts);
        return on_return(cs, (uint32_t)pid, (uint32_t)func, ts,
                         rec->tp == BMT_TP_function_exception);
    }
    case BMT_TP_process_scheduled: {
        const struct bmt_value *type = &v[BMT_F_process_scheduled_type];
        int in = type->len >= 2 && memcmp(type->str, "in", 2) == 0;
        /* Runs this `in` ended at their process's last event (runs.h). */
        const struct bmt_runs *runs = &cs->scope->runs;
        for (unsigned i = 0; in && i < runs->closed_n; i++) {
            uint32_t c = runs->closed[i].pid;
            if (c < cs->proc_cap && cs->procs[c].tracked)
                state_event(cs, c, BMT_PS_LOST, runs->closed[i].end_ns);
        }
        return state_of(cs, &v[BMT_F_process_scheduled_pid], in ? BMT_PS_IN : BMT_PS_OUT, ts);
    }
    case BMT_TP_message_receive: {
        const struct bmt_value *m = &v[BMT_F_message_receive_message];
        int timeout = bmt_value_is(m, "timeout");
        if ((pid = tracked(cs, &v[BMT_F_message_receive_to], ts)) < 0)
            return pid == -1 ? 0 : (int)pid;
        if (!timeout && cs->procs[pid].ps.state == BMT_PSS_IN_PENDING)
            alias_woke(cs, &cs->procs[pid].ps, m);
        state_event(cs, (uint32_t)pid, timeout ? BMT_PS_TIMEOUT : BMT_PS_RECEIVE, ts);
        if (cs->procs[pid].ps.woke_ns)
            woken(cs, (uint32_t)pid);
        return 0;
    }
    case BMT_TP_message_send:
        return sent(cs, &v[BMT_F_message_send_from], &v[BMT_F_message_send_to], ts);
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_major_start:
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_end:
        return state_of(cs, &v[BMT_GC_PID],
                        rec->tp == BMT_TP_gc_minor_start || rec->tp == BMT_TP_gc_major_start
                            ? BMT_PS_GC_START : BMT_PS_GC_END, ts);
    case BMT_TP_process_spawn:
        return state_of(cs, &v[BMT_F_process_spawn_parent], BMT_PS_ACTIVITY, ts);
    case BMT_TP_process_register:
        return state_of(cs, &v[BMT_F_process_register_pid], BMT_PS_ACTIVITY, ts);
    case BMT_TP_process_exit: {
        const struct bmt_value *exited = &v[BMT_F_process_exit_pid];
        int64_t id = bmt_strtab_find(&cs->scope->names.pids, exited->str, exited->len);
        if (id < 0 || (uint32_t)id >= cs->proc_cap || !cs->procs[id].tracked)
            return 0;
        state_event(cs, (uint32_t)id, BMT_PS_ACTIVITY, ts); /* it ran to exit */
        int rc = close_all(cs, (uint32_t)id, ts);
        state_event(cs, (uint32_t)id, BMT_PS_EXIT, ts);
        /* An exited process keeps its small record (names, tree root), not
         * its frames. */
        free(cs->procs[id].frames);
        cs->procs[id].frames = NULL;
        cs->procs[id].cap = 0;
        return rc;
    }
    default:
        return 0;
    }
}

int bmt_callstack_finish(void *self, const struct bmt_an_pass *pass)
{
    struct bmt_callstack *cs = self;
    uint64_t end_ns = pass->end_ns;
    for (uint32_t pid = 0; pid < cs->proc_cap; pid++) {
        if (!cs->procs[pid].tracked)
            continue;
        int rc = close_all(cs, pid, end_ns);
        if (rc < 0)
            return rc;
    }
    /* No node is made after the pass: the index (a quarter of a full
     * tree's memory) is handed back before the output is laid out. */
    bmt_u64map_free(&cs->children);
    return 0;
}

void bmt_callstack_label(const struct bmt_callstack *cs, uint32_t pid, char *buf, size_t size)
{
    const struct bmt_names *n = &cs->scope->names;
    bmt_names_label(n, bmt_strtab_str(&n->pids, pid), bmt_strtab_len(&n->pids, pid), buf, size);
}

void bmt_callstack_free(void *self)
{
    struct bmt_callstack *cs = self;
    for (uint32_t i = 0; i < cs->proc_cap; i++)
        free(cs->procs[i].frames);
    free(cs->procs);
    free(cs->nodes);
    bmt_u64map_free(&cs->children);
    bmt_strtab_free(&cs->funcs);
    memset(cs, 0, sizeof *cs);
}

/* ---- as an accumulator (acc.h) ---- */

const struct bmt_needs bmt_callstack_needs = {{
    BMT_NEED(function_call, BMT_FIELD(function_call, pid) | BMT_FIELD(function_call, entry)),
    BMT_NEED(function_return, BMT_FIELD(function_return, pid) | BMT_FIELD(function_return, entry)),
    BMT_NEED(function_exception, BMT_FIELD(function_exception, pid) |
                                     BMT_FIELD(function_exception, entry)),
    BMT_NEED(process_scheduled, BMT_FIELD(process_scheduled, pid) |
                                    BMT_FIELD(process_scheduled, type)),
    BMT_NEED(message_receive, BMT_FIELD(message_receive, to) |
                                  BMT_FIELD(message_receive, message)),
    BMT_NEED(message_send, BMT_FIELD(message_send, from) | BMT_FIELD(message_send, to)),
    BMT_NEED(gc_minor_start, BMT_FIELD(gc_minor_start, pid)),
    BMT_NEED(gc_major_start, BMT_FIELD(gc_major_start, pid)),
    BMT_NEED(gc_minor_end, BMT_FIELD(gc_minor_end, pid)),
    BMT_NEED(gc_major_end, BMT_FIELD(gc_major_end, pid)),
    BMT_NEED(process_spawn, BMT_FIELD(process_spawn, parent)),
    BMT_NEED(process_register, BMT_FIELD(process_register, pid)),
    BMT_NEED(process_exit, BMT_FIELD(process_exit, pid)),
}, 0};

const struct bmt_acc bmt_callstack_acc = {
    "callstack", bmt_callstack_init, bmt_callstack_feed, NULL, bmt_callstack_finish,
    bmt_callstack_free, &bmt_callstack_needs, 1};
