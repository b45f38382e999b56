/* Run intervals (rules and contract in runs.h). */
#include "runs.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void bmt_runs_init(struct bmt_runs *r)
{
    memset(r, 0, sizeof *r);
}

void bmt_runs_free(struct bmt_runs *r)
{
    for (unsigned i = 0; i < r->trace_count * BMT_RUNS_POOLS; i++)
        free(r->pools[i].open);
    free(r->pools);
    free(r->last_ns);
    free(r->in_ns);
    free(r->slot);
    free(r->pool);
    free(r->mark);
    free(r->stream);
    free(r->on_stream);
    memset(r, 0, sizeof *r);
}

/* The integer env entry `key` of trace `t`, or 0. */
static int64_t env_int(const struct bmt_trace *t, const char *key)
{
    for (unsigned i = 0; i < t->meta.env_count; i++)
        if (!t->meta.env[i].str && strcmp(t->meta.env[i].key, key) == 0)
            return t->meta.env[i].integer;
    return 0;
}

int bmt_runs_open(struct bmt_runs *r, const struct bmt_reader *rd)
{
    r->pools = calloc((rd->trace_count ? rd->trace_count : 1) * BMT_RUNS_POOLS, sizeof *r->pools);
    if (!r->pools)
        return -ENOMEM;
    r->trace_count = rd->trace_count;
    for (unsigned t = 0; t < rd->trace_count; t++) {
        const struct bmt_trace *tr = &rd->traces[t];
        struct bmt_runs_pool *pool = &r->pools[t * BMT_RUNS_POOLS];
        int64_t n = env_int(tr, "beamtrace_schedulers");
        int64_t cpu = env_int(tr, "beamtrace_dirty_cpu_schedulers");
        int64_t io = env_int(tr, "beamtrace_dirty_io_schedulers");
        /* The recorder writes each at most 1024; anything else is no bound. */
        if (!(n > 0 && n <= 1024 && cpu >= 0 && cpu <= 1024 && io >= 0 && io <= 1024))
            continue;
        int64_t fc = env_int(tr, "beamtrace_first_dirty_cpu_stream");
        int64_t fi = env_int(tr, "beamtrace_first_dirty_io_stream");
        int64_t fo = env_int(tr, "beamtrace_first_other_stream");
        if (fc > 0 && fc <= fi && fi <= fo && fo <= 1024) {
            pool[BMT_RUNS_NORMAL].cap = (uint32_t)n;
            pool[BMT_RUNS_DIRTY_CPU].cap = (uint32_t)cpu;
            pool[BMT_RUNS_DIRTY_IO].cap = (uint32_t)io;
            pool->first_dirty_cpu = (uint32_t)fc;
            pool->first_dirty_io = (uint32_t)fi;
            pool->first_other = (uint32_t)fo;
            r->dirty_known = 1;
        } else {
            pool[BMT_RUNS_NORMAL].cap = (uint32_t)(n + cpu + io);
        }
    }
    return 0;
}

/* The pool of a run starting on the stream whose packets say `cpu_id` (a
 * beamtrace stream's number) in trace `trace`. */
static unsigned pool_of(const struct bmt_runs *r, unsigned trace, uint32_t cpu_id)
{
    const struct bmt_runs_pool *normal = &r->pools[trace * BMT_RUNS_POOLS];
    unsigned kind = BMT_RUNS_NORMAL;
    if (normal->first_other && cpu_id >= normal->first_dirty_cpu && cpu_id < normal->first_other)
        kind = cpu_id < normal->first_dirty_io ? BMT_RUNS_DIRTY_CPU : BMT_RUNS_DIRTY_IO;
    return trace * BMT_RUNS_POOLS + kind;
}

/* The process an event is about: its first process field (kind ID),
 * where it acts (caller, sender, receiver, collector, the new process of a
 * spawn). */
int bmt_runs_actor(uint16_t tp)
{
    if (tp >= BMT_TP_COUNT || (tp >= BMT_TP_port_open && tp <= BMT_TP_port_scheduled) ||
        tp == BMT_TP_own_process || tp == BMT_TP_node_info || tp == BMT_TP_counter)
        return -1;
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    for (unsigned i = 0; i < t->field_count; i++)
        if (t->fields[i].kind == BMT_KIND_ID)
            return (int)i;
    return -1;
}

uint16_t bmt_runs_fields(uint16_t tp)
{
    int f = bmt_runs_actor(tp);
    uint16_t bits = f < 0 ? 0 : (uint16_t)(1u << f);
    if (tp == BMT_TP_process_scheduled)
        bits |= (uint16_t)(1u << BMT_F_process_scheduled_type);
    return bits;
}

static int grow(struct bmt_runs *r, uint32_t pid)
{
    if (pid < r->pid_cap)
        return 0;
    uint32_t cap = r->pid_cap, c2 = r->pid_cap, c3 = r->pid_cap, c4 = r->pid_cap, c5 = r->pid_cap,
             c6 = r->pid_cap;
    uint64_t *last = bmt_grow(r->last_ns, &cap, pid, sizeof *last);
    if (!last)
        return -ENOMEM;
    r->last_ns = last;
    uint64_t *in = bmt_grow(r->in_ns, &c2, pid, sizeof *in);
    if (!in)
        return -ENOMEM;
    r->in_ns = in;
    uint32_t *slot = bmt_grow(r->slot, &c3, pid, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    r->slot = slot;
    uint32_t *pool = bmt_grow(r->pool, &c4, pid, sizeof *pool);
    if (!pool)
        return -ENOMEM;
    r->pool = pool;
    uint8_t *mark = bmt_grow(r->mark, &c5, pid, sizeof *mark);
    if (!mark)
        return -ENOMEM;
    r->mark = mark;
    uint32_t *stream = bmt_grow(r->stream, &c6, pid, sizeof *stream);
    if (!stream)
        return -ENOMEM;
    r->stream = stream;
    r->pid_cap = cap;
    return 0;
}

/* Counts fingerprint `m` as one more (add 1) or one fewer (add -1) open
 * run's process. */
static void mark_count(struct bmt_runs *r, unsigned m, int add)
{
    uint32_t c = r->mark_count[m] += (uint32_t)add;
    uint64_t bit = UINT64_C(1) << (m & 63);
    r->marks[m >> 6] = c ? r->marks[m >> 6] | bit : r->marks[m >> 6] & ~bit;
}

/* Takes `pid`'s open run off its trace's list. */
static void unlist(struct bmt_runs *r, uint32_t pid)
{
    mark_count(r, r->mark[pid], -1);
    struct bmt_runs_pool *t = &r->pools[r->pool[pid]];
    uint32_t i = r->slot[pid], last = t->open[--t->open_count];
    t->open[i] = last;
    r->slot[last] = i;
    r->in_ns[pid] = 0;
}

/* Ends `pid`'s open run at its last event, but no later than `limit_ns`,
 * for the accumulators. */
static void close_early(struct bmt_runs *r, uint32_t pid, int capped, uint64_t limit_ns)
{
    uint64_t end = r->last_ns[pid] - 1;
    if (r->closed_n < BMT_RUNS_CLOSED_MAX)
        r->closed[r->closed_n++] = (struct bmt_runs_closed){pid, end < limit_ns ? end : limit_ns};
    unlist(r, pid);
    r->closed_count++;
    r->capped_count += (uint64_t)capped;
}

/* A thread runs one process at a time (runs.h, fourth rule): the run
 * still open on `stream` ends, and `pid` is the stream's now. */
static int stream_takes(struct bmt_runs *r, unsigned stream, uint32_t pid, uint64_t ts)
{
    if (stream >= r->stream_cap) {
        uint32_t cap = r->stream_cap;
        uint32_t *on = bmt_grow(r->on_stream, &cap, stream, sizeof *on);
        if (!on)
            return -ENOMEM;
        r->on_stream = on;
        r->stream_cap = cap;
    }
    uint32_t q = r->on_stream[stream];
    if (q && q - 1 != pid && r->in_ns[q - 1] && r->stream[q - 1] == stream)
        close_early(r, q - 1, 0, ts);
    r->on_stream[stream] = pid + 1;
    r->stream[pid] = stream;
    return 0;
}

unsigned bmt_runs_kind(const struct bmt_runs *r, unsigned trace, uint32_t cpu_id)
{
    return trace < r->trace_count ? pool_of(r, trace, cpu_id) % BMT_RUNS_POOLS : BMT_RUNS_NORMAL;
}

/* Runs open at once on trace `trace`'s dirty schedulers, both kinds. */
static uint32_t dirty_open(const struct bmt_runs *r, unsigned trace)
{
    const struct bmt_runs_pool *p = &r->pools[trace * BMT_RUNS_POOLS];
    return p[BMT_RUNS_DIRTY_CPU].open_count + p[BMT_RUNS_DIRTY_IO].open_count;
}

static int scheduled_in(struct bmt_runs *r, uint32_t pid, unsigned mark, const struct bmt_record *rec)
{
    uint64_t ts = rec->ts_ns;
    if (r->in_ns[pid])
        close_early(r, pid, 0, ts); /* in again with no out between: the out was lost */
    if (rec->trace >= r->trace_count)
        return 0;
    unsigned pool = pool_of(r, rec->trace, rec->cpu_id);
    struct bmt_runs_pool *t = &r->pools[pool];
    /* The per-stream rule holds where the bound does: beamtrace's traces. */
    if (r->pools[rec->trace * BMT_RUNS_POOLS].cap && stream_takes(r, rec->stream, pid, ts) < 0)
        return -ENOMEM;
    if (t->cap && t->open_count >= t->cap) {
        /* One more than the pool can run: the run whose process was heard
         * of longest ago ends, at its last event. */
        uint32_t victim = t->open[0];
        for (uint32_t i = 1; i < t->open_count; i++)
            if (r->last_ns[t->open[i]] < r->last_ns[victim])
                victim = t->open[i];
        close_early(r, victim, 1, ts);
    }
    if (t->open_count == t->open_cap) {
        uint32_t cap = t->open_cap;
        uint32_t *open = bmt_grow(t->open, &cap, t->open_count, sizeof *open);
        if (!open)
            return -ENOMEM;
        t->open = open;
        t->open_cap = cap;
    }
    r->slot[pid] = t->open_count;
    r->pool[pid] = pool;
    t->open[t->open_count++] = pid;
    r->in_ns[pid] = ts + 1;
    r->mark[pid] = (uint8_t)mark;
    mark_count(r, mark, 1);
    if (pool % BMT_RUNS_POOLS == BMT_RUNS_NORMAL) {
        if (t->open_count > r->max_running)
            r->max_running = t->open_count;
    } else if (dirty_open(r, rec->trace) > r->max_dirty_running) {
        r->max_dirty_running = dirty_open(r, rec->trace);
    }
    return 0;
}

int bmt_runs_take(struct bmt_runs *r, struct bmt_names *names, const struct bmt_record *rec,
                  const struct bmt_value *v, unsigned mark)
{
    if (!bmt_names_is_pid(v->str, v->len))
        return 0;
    int64_t id = bmt_names_pid(names, v->str, v->len);
    if (id < 0)
        return (int)id;
    uint32_t pid = (uint32_t)id;
    if (grow(r, pid) < 0)
        return -ENOMEM;
    uint64_t ts = rec->ts_ns;
    int rc = 0;
    if (rec->tp == BMT_TP_process_scheduled) {
        const struct bmt_value *type = &rec->values[BMT_F_process_scheduled_type];
        if (type->len >= 2 && memcmp(type->str, "in", 2) == 0)
            rc = scheduled_in(r, pid, mark, rec);
        else if (r->in_ns[pid])
            unlist(r, pid);
    } else if (rec->tp == BMT_TP_process_exit && r->in_ns[pid]) {
        unlist(r, pid);
    }
    r->last_ns[pid] = ts + 1;
    return rc;
}

void bmt_runs_finish(struct bmt_runs *r)
{
    for (unsigned i = 0; i < r->trace_count * BMT_RUNS_POOLS; i++) {
        r->closed_count += r->pools[i].open_count;
        r->pools[i].open_count = 0;
    }
}
