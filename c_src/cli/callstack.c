/* Call stack reconstruction (rules and contract in callstack.h). */
#include "callstack.h"
#include "analysis.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bmt_callstack_init(struct bmt_callstack *cs)
{
    memset(cs, 0, sizeof *cs);
    bmt_strtab_init(&cs->pids);
    bmt_strtab_init(&cs->funcs);
    bmt_strtab_init(&cs->names);
    bmt_u64map_init(&cs->children);
}

static int64_t new_node(struct bmt_callstack *cs, uint32_t parent, uint32_t func, int is_proc)
{
    if (cs->node_count == cs->node_cap) {
        uint32_t cap = cs->node_cap ? cs->node_cap * 2 : 256;
        struct bmt_cs_node *n = realloc(cs->nodes, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        cs->nodes = n;
        cs->node_cap = cap;
    }
    uint32_t id = cs->node_count++;
    cs->nodes[id] = (struct bmt_cs_node){parent, func, (uint8_t)is_proc, 0, 0};
    return id;
}

static int64_t child_node(struct bmt_callstack *cs, uint32_t parent, uint32_t func, int is_proc)
{
    uint64_t key = ((uint64_t)parent << 32) | func;
    if (is_proc)
        key |= 1ull << 63; /* parent is the root (0) for process nodes */
    int created;
    uint32_t *slot = bmt_u64map_get(&cs->children, key, cs->node_count, &created);
    if (!slot)
        return -ENOMEM;
    if (!created)
        return *slot;
    return new_node(cs, parent, func, is_proc);
}

int64_t bmt_callstack_proc(struct bmt_callstack *cs, const char *s, size_t len)
{
    int64_t id = bmt_strtab_intern(&cs->pids, s, len);
    if (id < 0)
        return id;
    if ((uint32_t)id >= cs->proc_cap) {
        uint32_t cap = cs->proc_cap ? cs->proc_cap * 2 : 64;
        while (cap <= (uint32_t)id)
            cap *= 2;
        struct bmt_proc *p = realloc(cs->procs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + cs->proc_cap, 0, (cap - cs->proc_cap) * sizeof *p);
        for (uint32_t i = cs->proc_cap; i < cap; i++)
            p[i].name = p[i].root = BMT_CS_NONE;
        cs->procs = p;
        cs->proc_cap = cap;
    }
    return id;
}

/* Ends the top frame of process `pid` at end_ns. */
static int pop(struct bmt_callstack *cs, uint32_t pid, uint64_t end_ns, unsigned flags)
{
    struct bmt_proc *p = &cs->procs[pid];
    struct bmt_frame *f = &p->frames[p->depth - 1];
    uint64_t dur = end_ns > f->start_ns ? end_ns - f->start_ns : 0;
    uint64_t child = f->child_ns < dur ? f->child_ns : dur;
    if (f->node != BMT_CS_NONE) {
        cs->nodes[f->node].total_ns += dur;
        cs->nodes[f->node].self_ns += dur - child;
    }
    int rc = cs->on_leave ? cs->on_leave(cs->ctx, cs, pid, f, end_ns, flags) : 0;
    p->depth--;
    if (p->depth)
        p->frames[p->depth - 1].child_ns += dur;
    return rc;
}

/* Confirms a tentative return: the top frame ended at its mark. */
static int settle_mark(struct bmt_callstack *cs, uint32_t pid)
{
    struct bmt_proc *p = &cs->procs[pid];
    if (!p->marked)
        return 0;
    p->marked = 0;
    return pop(cs, pid, p->mark_ns, 0);
}

/* Index of the topmost frame running `func`, or -1. */
static int64_t find_frame(const struct bmt_proc *p, uint32_t func)
{
    for (int64_t i = (int64_t)p->depth - 1; i >= 0; i--)
        if (p->frames[i].func == func)
            return i;
    return -1;
}

static int on_call(struct bmt_callstack *cs, uint32_t pid, uint32_t func, uint64_t ts)
{
    struct bmt_proc *p = &cs->procs[pid];
    p->marked = 0; /* the top was returned *to*: it keeps running */
    p->last_ret = 0;
    p->seen_call = 1;
    if (p->depth >= BMT_CS_MAX_DEPTH) {
        cs->overflow_count++;
        return 0;
    }
    if (p->depth == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 16;
        struct bmt_frame *f = realloc(p->frames, cap * sizeof *f);
        if (!f)
            return -ENOMEM;
        p->frames = f;
        p->cap = cap;
    }
    uint32_t node = BMT_CS_NONE;
    if (cs->tree) {
        uint32_t parent;
        if (cs->node_count == 0 && new_node(cs, BMT_CS_NONE, 0, 0) < 0)
            return -ENOMEM;
        if (p->depth) {
            parent = p->frames[p->depth - 1].node;
        } else if (cs->merge_processes) {
            parent = 0;
        } else {
            if (p->root == BMT_CS_NONE) {
                int64_t r = child_node(cs, 0, pid, 1);
                if (r < 0)
                    return (int)r;
                p->root = (uint32_t)r;
            }
            parent = p->root;
        }
        int64_t n = child_node(cs, parent, func, 0);
        if (n < 0)
            return (int)n;
        node = (uint32_t)n;
    }
    p->frames[p->depth++] = (struct bmt_frame){func, node, ts, 0};
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

int bmt_callstack_feed(struct bmt_callstack *cs, const struct bmt_record *rec)
{
    const struct bmt_an_fields *F = bmt_an_fields();
    const struct bmt_value *v = rec->values;
    int64_t pid, func;
    switch (rec->tp) {
    case BMT_TP_function_call:
    case BMT_TP_function_return:
    case BMT_TP_function_exception: {
        unsigned fp = rec->tp == BMT_TP_function_exception ? F->exc_pid : F->call_pid;
        unsigned fe = rec->tp == BMT_TP_function_exception ? F->exc_entry : F->call_entry;
        if ((pid = bmt_callstack_proc(cs, v[fp].str, v[fp].len)) < 0)
            return (int)pid;
        if ((func = bmt_strtab_intern(&cs->funcs, v[fe].str, v[fe].len)) < 0)
            return (int)func;
        if (rec->tp == BMT_TP_function_call)
            return on_call(cs, (uint32_t)pid, (uint32_t)func, rec->ts_ns);
        return on_return(cs, (uint32_t)pid, (uint32_t)func, rec->ts_ns,
                         rec->tp == BMT_TP_function_exception);
    }
    case BMT_TP_process_exit:
        pid = bmt_strtab_find(&cs->pids, v[F->exit_pid].str, v[F->exit_pid].len);
        return pid < 0 ? 0 : close_all(cs, (uint32_t)pid, rec->ts_ns);
    case BMT_TP_process_register: {
        if (v[F->reg_type].len != 8 || memcmp(v[F->reg_type].str, "register", 8) != 0)
            return 0; /* keep the last name through unregister: labels stay useful */
        if ((pid = bmt_callstack_proc(cs, v[F->reg_pid].str, v[F->reg_pid].len)) < 0)
            return (int)pid;
        int64_t name = bmt_strtab_intern(&cs->names, v[F->reg_name].str, v[F->reg_name].len);
        if (name < 0)
            return (int)name;
        cs->procs[pid].name = (uint32_t)name;
        return 0;
    }
    default:
        return 0;
    }
}

int bmt_callstack_finish(struct bmt_callstack *cs, uint64_t end_ns)
{
    for (uint32_t pid = 0; pid < cs->pids.count; pid++) {
        int rc = close_all(cs, pid, end_ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void bmt_callstack_label(const struct bmt_callstack *cs, uint32_t pid, char *buf, size_t size)
{
    const struct bmt_proc *p = &cs->procs[pid];
    if (p->name != BMT_CS_NONE)
        snprintf(buf, size, "%s %s", bmt_strtab_str(&cs->pids, pid),
                 bmt_strtab_str(&cs->names, p->name));
    else
        snprintf(buf, size, "%s", bmt_strtab_str(&cs->pids, pid));
}

void bmt_callstack_free(struct bmt_callstack *cs)
{
    for (uint32_t i = 0; i < cs->proc_cap; i++)
        free(cs->procs[i].frames);
    free(cs->procs);
    free(cs->nodes);
    bmt_u64map_free(&cs->children);
    bmt_strtab_free(&cs->pids);
    bmt_strtab_free(&cs->funcs);
    bmt_strtab_free(&cs->names);
    memset(cs, 0, sizeof *cs);
}
