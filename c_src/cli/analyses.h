/* The accumulators behind calls, sched, procs, gc and flame, shared with
 * `report`, which runs them all in one pass.
 *
 * Each is: init, a feed function for bmt_an_run (every event in time order;
 * events it does not use are skipped at the cost of one switch), finish at
 * the end of the trace, then the printers read the struct. Memory is per
 * process, per function, per distinct stack or per second of trace, never
 * per event. Single-threaded.
 */
#ifndef BMT_CLI_ANALYSES_H
#define BMT_CLI_ANALYSES_H

#include "analysis.h"
#include "callstack.h"
#include "histogram.h"
#include "strtab.h"

/* ---- calls (cmd_calls.c) ---- */

struct bmt_fstat {
    uint32_t func;              /* id in cs.funcs */
    uint32_t pid;               /* id in cs.pids, or BMT_CS_NONE when not by pid */
    uint64_t unfinished_count;  /* open at process exit or trace end (not in hist) */
    uint64_t exception_count;   /* ended by an exception (in hist) */
    uint64_t total_ns;          /* inclusive time, unfinished calls included */
    uint64_t own_ns;            /* exclusive of traced callees */
    struct bmt_hist hist;       /* latency of finished calls, ns */
};

struct bmt_calls {
    struct bmt_callstack cs;
    struct bmt_u64map index;    /* (pid + 1) << 32 | func, or func -> stats index */
    struct bmt_fstat *stats;
    uint32_t stat_count, stat_cap;
    int by_pid;
    uint64_t slower_ns;         /* list calls longer than this; 0: no listing */
    struct bmt_out *slow_out;   /* where slow calls are printed as found */
    int json;
    const struct bmt_reader *r;
    uint64_t slow_count;
};

/* Prepares `c` (set by_pid, slower_ns, slow_out, json, r, cs.tree after). */
void bmt_calls_init(struct bmt_calls *c);
int bmt_calls_feed(void *ctx, const struct bmt_record *rec);
/* Closes open frames at end_ns. Returns 0 or -ENOMEM. */
int bmt_calls_finish(struct bmt_calls *c, uint64_t end_ns);
/* Stats indices sorted by total time, largest first (malloc'd; NULL when
 * out of memory). */
uint32_t *bmt_calls_sorted(const struct bmt_calls *c);
void bmt_calls_free(struct bmt_calls *c);

/* ---- sched (cmd_sched.c) ---- */

struct bmt_sched {
    struct bmt_strtab pids, names;
    uint64_t *pending_ns;       /* per pid: earliest unconsumed send + 1, or 0 */
    uint32_t *name_pid;         /* per registered name: pid id + 1, or 0 */
    uint32_t pid_cap, name_cap;
    struct bmt_hist hist;       /* send -> scheduled in latency, ns */
    uint64_t send_count;        /* message_send events */
    uint64_t resolved_count;    /* ... whose receiver is a pid (or known name) */
};

void bmt_sched_init(struct bmt_sched *s);
int bmt_sched_feed(void *ctx, const struct bmt_record *rec);
void bmt_sched_free(struct bmt_sched *s);

/* ---- gc (cmd_gc.c) ---- */

struct bmt_gc_proc {
    uint64_t start_ns[2];       /* open collection (minor, major) start + 1, or 0 */
    uint64_t pause_ns;          /* total pause */
    uint64_t gc_count;
    uint64_t reclaimed_words;
};

struct bmt_gc {
    struct bmt_callstack names; /* pids and registered names */
    struct bmt_gc_proc *procs;
    uint32_t proc_cap;
    struct bmt_hist hist[2];    /* pause, ns: [0] minor, [1] major */
    uint64_t reclaimed_words[2];
    uint64_t unmatched_count;   /* end without start, or start never ended */
};

void bmt_gc_init(struct bmt_gc *g);
int bmt_gc_feed(void *ctx, const struct bmt_record *rec);
void bmt_gc_free(struct bmt_gc *g);

/* ---- procs (cmd_procs.c) ---- */

#define BMT_PROCS_TOP 10

struct bmt_life {
    uint32_t pid;               /* id in pids */
    uint64_t lifetime_ns;
};

struct bmt_procs {
    struct bmt_strtab pids, reasons;
    uint64_t *spawn_ns;         /* per pid: spawn time + 1, or 0 */
    uint32_t pid_cap;
    uint64_t *reason_counts;
    uint32_t reason_cap;
    uint64_t *spawns, *exits;   /* per second since the first event */
    uint64_t second_cap;
    uint64_t seconds;           /* seconds used */
    uint64_t first_ns;
    int started;
    uint64_t spawn_count, exit_count;
    uint64_t exit_unknown_count; /* exits of processes whose spawn is not traced */
    struct bmt_life longest[BMT_PROCS_TOP], shortest[BMT_PROCS_TOP];
    unsigned longest_count, shortest_count;
};

void bmt_procs_init(struct bmt_procs *p);
int bmt_procs_feed(void *ctx, const struct bmt_record *rec);
void bmt_procs_free(struct bmt_procs *p);

/* ---- flame (cmd_flame.c) ---- */

/* Appends folded stacks (root;...;leaf COUNT) of the call tree in `cs`
 * (built with cs->tree = 1), self time divided by `unit_ns` (rounded;
 * zero-count lines dropped). Returns 0 or -ENOMEM. */
int bmt_flame_folded(struct bmt_out *o, const struct bmt_callstack *cs, uint64_t unit_ns);

/* Appends an interactive flame graph <svg> (click to zoom, <title>
 * tooltips, inline script, no external resources) of `cs`'s call tree,
 * `width` pixels wide. `standalone` adds the XML prolog. Returns 0 or
 * -ENOMEM. */
int bmt_flame_svg(struct bmt_out *o, const struct bmt_callstack *cs, const char *title,
                  unsigned width, int standalone);

/* ---- svg helpers (svg.c) ---- */

/* Appends an inline <svg> bar chart of `h`'s power-of-two buckets (the
 * quantize rows), titled `title`, values in ns. */
void bmt_svg_quantize(struct bmt_out *o, const struct bmt_hist *h, const char *title);

#endif
