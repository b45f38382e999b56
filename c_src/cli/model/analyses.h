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
#include "base/strtab.h"

/* ---- calls (cmd/calls.c) ---- */

struct bmt_fstat {
    uint32_t func;              /* id in cs.funcs */
    uint32_t pid;               /* pid id, or BMT_CS_NONE when not by pid */
    uint64_t unfinished_count;  /* cut by the window, or open at process exit or trace end */
    uint64_t exception_count;   /* ended by an exception */
    uint64_t total_ns;          /* inclusive time inside the window */
    uint64_t incl[BMT_K_COUNT]; /* total_ns by kind */
    uint64_t own[BMT_K_COUNT];  /* exclusive of traced callees, by kind */
    struct bmt_hist hist;       /* latency of calls inside the window, ns */
    struct bmt_hist khist[BMT_K_COUNT]; /* their time by kind (with breakdown) */
};

struct bmt_slow_call {
    uint32_t pid, func;
    uint64_t start_ns, duration_ns;
    uint64_t kinds[BMT_K_COUNT];
};

struct bmt_calls {
    struct bmt_callstack cs;
    struct bmt_u64map index;    /* (pid + 1) << 32 | func, or func -> stats index */
    struct bmt_fstat *stats;
    uint32_t stat_count, stat_cap;
    int by_pid;
    int label_width;            /* text: the process column's width */
    int breakdown;              /* per-call histograms by kind */
    struct bmt_slow_call *slowest; /* slowest_cap entries, longest first */
    unsigned slowest_count, slowest_cap;
    uint64_t slower_ns;         /* list calls longer than this; 0: no listing */
    struct bmt_out *slow_out;   /* where slow calls are printed as found */
    int json;
    const struct bmt_reader *r;
    uint64_t slow_count;
};

/* Prepares `c` for `scope` (then set by_pid, breakdown, slowest, slower_ns,
 * slow_out, json, r, cs.tree). */
void bmt_calls_init(struct bmt_calls *c, struct bmt_an_scope *scope);
int bmt_calls_feed(void *ctx, const struct bmt_record *rec);
/* Closes open frames at end_ns. Returns 0 or -ENOMEM. */
int bmt_calls_finish(struct bmt_calls *c, uint64_t end_ns);
/* Stats indices sorted by total time, largest first (malloc'd; NULL when
 * out of memory). */
uint32_t *bmt_calls_sorted(const struct bmt_calls *c);
/* 1 when the OWN column is on-CPU time (the trace has scheduling events),
 * 0 when it is wall time; and that OWN value of a row: its own time minus
 * the time its process was seen off CPU (runnable or waiting). */
int bmt_calls_own_is_cpu(const struct bmt_calls *c);
uint64_t bmt_calls_own_ns(const struct bmt_calls *c, const struct bmt_fstat *s);
void bmt_calls_free(struct bmt_calls *c);

/* ---- sched (cmd/sched.c) ---- */

struct bmt_sched {
    struct bmt_an_scope *scope;
    int from_last;              /* latency from the latest unconsumed send (the D script) */
    uint64_t *pending_ns;       /* per pid id: the send latencies count from, + 1, or 0 */
    uint32_t pid_cap;
    struct bmt_hist hist;       /* send -> scheduled in latency, ns */
    uint64_t send_count;        /* message_send events in the window */
    uint64_t resolved_count;    /* ... whose receiver is a known pid the filter keeps */
    uint64_t cut_count;         /* latencies cut by the window's edges, not counted */
};

void bmt_sched_init(struct bmt_sched *s, struct bmt_an_scope *scope);
int bmt_sched_feed(void *ctx, const struct bmt_record *rec);
void bmt_sched_free(struct bmt_sched *s);

/* ---- gc (cmd/gc.c) ---- */

struct bmt_gc_proc {
    uint64_t start_ns[2];       /* open collection (minor, major) start + 1, or 0 */
    uint64_t pause_ns;          /* total pause inside the window */
    uint64_t gc_count;
    uint64_t reclaimed_words;
};

struct bmt_gc {
    struct bmt_an_scope *scope;
    struct bmt_gc_proc *procs;  /* by pid id */
    uint32_t proc_cap;
    struct bmt_hist hist[2];    /* pause, ns: [0] minor, [1] major */
    uint64_t reclaimed_words[2];
    uint64_t unmatched_count;   /* end without start, or start never ended */
    uint64_t cut_count;         /* pauses cut by the window's edges */
};

void bmt_gc_init(struct bmt_gc *g, struct bmt_an_scope *scope);
int bmt_gc_feed(void *ctx, const struct bmt_record *rec);
void bmt_gc_free(struct bmt_gc *g);

/* ---- procs (cmd/procs.c) ---- */

#define BMT_PROCS_TOP 10

struct bmt_life {
    uint32_t pid;               /* pid id */
    uint64_t lifetime_ns;
};

/* Spawns and exits in one second that had some (seconds without any are
 * not stored: memory follows the events, not the trace's time span). */
struct bmt_second {
    uint64_t second;            /* since the window's (or trace's) start */
    uint64_t spawns, exits;
};

struct bmt_procs {
    struct bmt_an_scope *scope;
    struct bmt_strtab reasons;
    uint64_t *spawn_ns;         /* per pid id: spawn time + 1, or 0 */
    uint32_t pid_cap;
    uint64_t *reason_counts;
    uint32_t reason_cap;
    struct bmt_second *seconds; /* in time order */
    uint64_t second_count, second_cap;
    uint64_t first_ns;          /* second 0 starts here */
    int started;
    uint64_t spawn_count, exit_count;
    uint64_t exit_unknown_count; /* exits of processes whose spawn is not traced */
    struct bmt_life longest[BMT_PROCS_TOP], shortest[BMT_PROCS_TOP];
    unsigned longest_count, shortest_count;
};

void bmt_procs_init(struct bmt_procs *p, struct bmt_an_scope *scope);
int bmt_procs_feed(void *ctx, const struct bmt_record *rec);
void bmt_procs_free(struct bmt_procs *p);

/* ---- flame (cmd/flame.c) ---- */

/* What a flame graph's widths are. */
enum bmt_flame_mode {
    BMT_FLAME_ALL,      /* on-CPU time per function, off-CPU and GC time as
                         * [runnable] [waiting] [gc] frames above it */
    BMT_FLAME_ON_CPU,   /* on-CPU time only (with [gc] frames) */
    BMT_FLAME_OFF_CPU,  /* off-CPU time only: [runnable] and [waiting] frames */
};

/* Appends folded stacks (root;...;leaf COUNT) of the call tree in `cs`
 * (built with cs->tree = 1) in `mode`, divided by `unit_ns` (rounded;
 * zero-count lines dropped). Returns 0 or -ENOMEM. */
int bmt_flame_folded(struct bmt_out *o, const struct bmt_callstack *cs, uint64_t unit_ns,
                     enum bmt_flame_mode mode);

/* Appends an interactive flame graph <svg> (click to zoom, <title>
 * tooltips, inline script, no external resources) of `cs`'s call tree in
 * `mode`, `width` pixels wide. `standalone` adds the XML prolog. Returns 0
 * or -ENOMEM. */
int bmt_flame_svg(struct bmt_out *o, const struct bmt_callstack *cs, const char *title,
                  unsigned width, int standalone, enum bmt_flame_mode mode);

/* What a flame graph of `cs` in `mode` shows, for its title. */
void bmt_flame_subtitle(const struct bmt_callstack *cs, enum bmt_flame_mode mode, char *buf,
                        size_t size);

/* ---- svg helpers (svg.c) ---- */

/* Estimated widths of one character, px: at 11px, and at 13px bold. Text
 * widths err on the side of room (svg.c's header). */
#define CHAR_PX_11 7.0
#define CHAR_PX_13B 8.4

/* "524 µs", "1.05 ms", "12 ns": three significant digits. */
void bmt_svg_short_duration(uint64_t ns, char out[32]);

/* Characters of a UTF-8 string (for width estimates). */
size_t bmt_svg_chars(const char *s);

/* Appends `s` HTML-escaped, cut to `max_chars` characters (UTF-8 safe)
 * with an ellipsis. */
void bmt_svg_cut_text(struct bmt_out *o, const char *s, size_t max_chars);

/* Appends an inline <svg> bar chart of `h`'s power-of-two buckets (the
 * quantize rows), titled `title`, values in ns. */
void bmt_svg_quantize(struct bmt_out *o, const struct bmt_hist *h, const char *title);

#endif
