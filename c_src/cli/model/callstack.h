/* Per-process call stacks rebuilt from function_call, function_return and
 * function_exception events, with where each call's time went (on CPU,
 * runnable, waiting, GC: proc_state.h), for calls, flame, export and report.
 *
 * What the VM emits (checked on OTP 25 with a small module, see
 * test/analyses/README.md): with {return_trace} in the match spec every traced
 * call gets a return event (return_trace keeps a frame, so even tail calls
 * return), strictly nested: the stack is exact. With the return_to flag
 * alone, function_return names the function execution returned *to* (an
 * untraced one, or "undefined", is possible) and tail-calling callers never
 * return. With both, each return_from X is usually followed by a return_to
 * its caller, which looks like a second return.
 *
 * The rules, per process:
 *  - call E: push E (a tentatively returned top, see below, was a return_to:
 *    it keeps running).
 *  - return E, E on top: pop it; but once return_to events have been seen
 *    in the trace (a return naming a function below the top, or one not on a
 *    non-empty stack), a return of the top right after another return is
 *    only *tentatively* the top's return: it is confirmed by the next event
 *    (a second return of E: E returns then; a return of a lower function:
 *    E returned at the tentative time; a call: it was a return_to).
 *  - return E, E below the top: return_to E; frames above E were left by tail
 *    calls or untraced returns and end now.
 *  - return E, E not on the stack: ignored (a return_to into untraced code,
 *    or a return from a call made before tracing started).
 *  - exception E: frames down to E's end with the exception flag; ignored if
 *    E is not on the stack.
 *  - process_exit, or the end of the trace (or window): open frames end
 *    there, flagged unfinished.
 *  - a message sent to a process alias (a reference: how gen_server:call's
 *    reply is sent from OTP 24 on) names no process: the send is kept in a
 *    small table by the alias's text (BMT_CS_ALIAS_SLOTS, direct-mapped, a
 *    newer send to a colliding alias overwrites it), and the receive whose
 *    message carries that alias ("[alias|#Ref<...>]") takes it as the
 *    message that woke the receiver (proc_state.h), as a send to its pid;
 *  - a wait ended by a message whose send the trace has (proc_state.h):
 *    its time goes to the top frame's tally by waker, handed to the caller's
 *    as each frame ends (a tentatively returned top's caller takes it: if
 *    the mark proves a return_to, the top misses that wait in its tally).
 * Scope (scope.h): processes the filter drops are not tracked; call
 * events before a flight recorder's complete start are ignored; a frame's
 * time counts inside the window only, and a frame that began before the
 * window is flagged BMT_CS_CUT.
 *
 * Bounds (memory grows with processes and distinct stacks, never with
 * events or time):
 *  - stacks deeper than BMT_CS_MAX_DEPTH frames (return_to-only traces of
 *    tail-recursive loops) stop growing: further calls are counted in
 *    overflow_count and ignored;
 *  - the call tree (flame graphs) keeps at most BMT_CS_MAX_NODES distinct
 *    stacks. Once full, a call whose stack is new is charged to its caller's
 *    frame (its time shows as the caller's own time), and a process not yet
 *    in the tree goes under one shared "[other processes]" root; both are
 *    counted (pruned_calls, pruned_processes) and said in the output.
 * Single-threaded.
 */
#ifndef BMT_CLI_CALLSTACK_H
#define BMT_CLI_CALLSTACK_H

#include "acc.h"
#include "scope.h"
#include "proc_state.h"
#include "wakers.h"
#include "ctf/reader.h"
#include "base/strtab.h"

#include <stdint.h>

#define BMT_CS_MAX_DEPTH 8192
#define BMT_CS_MAX_NODES (1u << 20)
#define BMT_CS_NONE UINT32_MAX
#define BMT_CS_OTHERS_NODE 1 /* the shared root of processes beyond the node cap */

enum {
    BMT_CS_EXCEPTION = 1,  /* ended by function_exception */
    BMT_CS_UNFINISHED = 2, /* still open at process exit, or at the trace's or window's end */
    BMT_CS_CUT = 4,        /* began before the window */
};

struct bmt_frame {
    uint32_t func;                   /* id in cs->funcs */
    uint32_t node;                   /* call-tree node (when cs->tree), else BMT_CS_NONE */
    uint32_t value;                  /* its value's id (cs->value: calls --group-by), else BMT_CS_NONE */
    uint64_t start_ns;               /* reader time of the call */
    uint32_t weight;                 /* calls it stands for: the call ratio in force (sampled.h) */
    uint64_t snap[BMT_K_COUNT];      /* the process's time by kind at the call */
    uint64_t child[BMT_K_COUNT];     /* traced callees' time by kind */
    struct bmt_wakers wakers;        /* its waiting time by the sender that ended each wait,
                                      * callees' included (wakers.h) */
};

struct bmt_proc {
    struct bmt_frame *frames;
    uint32_t depth, cap;
    uint32_t root;       /* call-tree node of the process, or BMT_CS_NONE */
    uint64_t mark_ns;    /* tentative return time of the top frame */
    uint64_t mark_snap[BMT_K_COUNT]; /* the process's time by kind at mark_ns */
    uint8_t mark_kinds;  /* the kinds mark_snap may be non-zero in (1 << BMT_K_*) */
    uint8_t marked;      /* top frame tentatively returned */
    uint8_t last_ret;    /* previous call event was a return or exception */
    uint8_t tracked;     /* the filter keeps it; state exists */
    struct bmt_pstate ps;
};

/* Call tree node: one per distinct (process?, stack). */
struct bmt_cs_node {
    uint32_t parent;     /* BMT_CS_NONE for the root (node 0) */
    uint32_t func : 31;  /* function id; for process nodes the pid id */
    uint32_t is_proc : 1; /* a bit, not a byte: 56 bytes a node instead of 64 */
    uint64_t self[BMT_K_COUNT]; /* time in this stack, excluding traced callees, by kind */
};

struct bmt_callstack;

#define BMT_CS_ALIAS_SLOTS 256

/* A message sent to a process alias, until the receive that takes it. */
struct bmt_alias_send {
    uint64_t key;                    /* the alias text's hash | 1; 0: an empty slot */
    uint64_t ts_ns;                  /* reader time of the send */
    uint32_t from;                   /* pid id of the sender */
};

/* Called when a frame ends, before it is popped: `f` is the frame, the
 * process's remaining frames are below it; `kinds` its time by kind
 * inside the window (their sum: its wall time inside the window), 0 but in
 * the kinds of `kind_mask` (1 << BMT_K_*): a sum by kind need only add
 * those. `flags`: BMT_CS_*. */
typedef int (*bmt_cs_leave_fn)(void *ctx, struct bmt_callstack *cs, uint32_t pid,
                               const struct bmt_frame *f, uint64_t end_ns, unsigned flags,
                               const uint64_t kinds[BMT_K_COUNT], unsigned kind_mask);

struct bmt_callstack {
    struct bmt_an_scope *scope;    /* window, filter; its names' pid ids index procs */
    struct bmt_strtab funcs;
    struct bmt_proc *procs;        /* indexed by pid id (scope->names.pids) */
    uint32_t proc_cap;
    int return_to_seen;            /* return_to semantics detected */
    uint64_t overflow_count;       /* calls ignored: stack too deep */
    uint64_t ignored_returns;      /* returns/exceptions of functions not on the stack */
    /* Call tree (flame): enabled by tree = 1 before the first event. */
    int tree;
    int merge_processes;           /* no per-process root node */
    struct bmt_cs_node *nodes;
    uint32_t node_count, node_cap;
    uint32_t max_nodes;            /* BMT_CS_MAX_NODES, or less from BEAMTRACE_MAX_STACKS (tests) */
    uint64_t pruned_calls;         /* calls charged to their caller: tree full */
    uint64_t pruned_processes;     /* processes under "[other processes]" */
    struct bmt_u64map children;    /* (parent << 32 | func, proc bit) -> node; freed by finish */
    bmt_cs_leave_fn on_leave;
    void *ctx;
    /* The value (an id of the feeder's) of the event being fed, or
     * BMT_CS_NONE: a call's frame takes it, and a return gives it to the
     * frame it returns from (calls --group-by). */
    uint32_t value;
    struct bmt_alias_send alias_sends[BMT_CS_ALIAS_SLOTS]; /* by key % slots */
};

/* Prepares `cs` for `scope` (tree off, no callback). */
int bmt_callstack_init(void *self, struct bmt_an_scope *scope);

/* Starts tracking the process of pid id `id` (its state starting at
 * `ts`): `id`, or -ENOMEM. */
int64_t bmt_callstack_start(struct bmt_callstack *cs, int64_t id, uint64_t ts);

/* The process of pid text `s`/`len` (created, its state starting at `ts`
 * if new): its pid id, or -ENOMEM. Inline: every event names one. */
static inline __attribute__((always_inline)) int64_t
bmt_callstack_proc(struct bmt_callstack *cs, const char *s, size_t len, uint64_t ts)
{
    int64_t id = bmt_names_pid(&cs->scope->names, s, len);
    if (id >= 0 && (uint32_t)id < cs->proc_cap && cs->procs[id].tracked)
        return id;
    return id < 0 ? id : bmt_callstack_start(cs, id, ts);
}

/* Applies one event: function_* events move stacks; process_scheduled,
 * message_send, message_receive, gc_* and the process's other events move
 * scheduling states (proc_state.h); process_exit closes them; others are
 * ignored. Returns 0, a negative value from the callback,
 * or -ENOMEM. */
int bmt_callstack_feed(void *self, const struct bmt_record *rec);

/* Ends every open frame at the pass's end (flagged unfinished) and frees
 * the tree's child index (no node is added after it). Returns 0 or the
 * callback's negative value. */
int bmt_callstack_finish(void *self, const struct bmt_an_pass *pass);

/* Writes "<0.66.0>" or "<0.66.0> name" for pid id `pid` into buf. */
void bmt_callstack_label(const struct bmt_callstack *cs, uint32_t pid, char *buf, size_t size);

/* The sum of a node's self times of the kinds in `mask` (1 << BMT_K_*). */
uint64_t bmt_cs_node_ns(const struct bmt_cs_node *n, unsigned mask);

void bmt_callstack_free(void *self);

/* As an accumulator (acc.h), and what it reads (calls and flame read the
 * same): set tree and merge_processes after init. */
extern const struct bmt_needs bmt_callstack_needs;
extern const struct bmt_acc bmt_callstack_acc;

#endif
