/* Reading a capture's trigger from its metadata (contract in capture_info.h). */
#include "capture_info.h"
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const struct bmt_ctf_env *env(const struct bmt_meta *m, const char *key)
{
    for (unsigned i = 0; i < m->env_count; i++)
        if (strcmp(m->env[i].key, key) == 0)
            return &m->env[i];
    return NULL;
}

static const char *env_str(const struct bmt_meta *m, const char *key)
{
    const struct bmt_ctf_env *e = env(m, key);
    return e && e->str ? e->str : "";
}

static int64_t env_int(const struct bmt_meta *m, const char *key)
{
    const struct bmt_ctf_env *e = env(m, key);
    return e && !e->str ? e->integer : 0;
}

int bmt_capture_info_read(const struct bmt_reader *r, const struct bmt_trace *t, struct bmt_capture_info *c)
{
    const struct bmt_meta *m = &t->meta;
    memset(c, 0, sizeof *c);
    const struct bmt_ctf_env *seq = env(m, "beamtrace_capture");
    if (!seq || seq->str || !env(m, "beamtrace_trigger_kind"))
        return 0;
    c->seq = (uint64_t)seq->integer;
    snprintf(c->kind, sizeof c->kind, "%s", env_str(m, "beamtrace_trigger_kind"));
    c->value = env_int(m, "beamtrace_trigger_value");
    c->bound = env_int(m, "beamtrace_trigger_bound");
    snprintf(c->unit, sizeof c->unit, "%s", env_str(m, "beamtrace_trigger_unit"));
    snprintf(c->pid, sizeof c->pid, "%s", env_str(m, "beamtrace_trigger_pid"));
    snprintf(c->function, sizeof c->function, "%s", env_str(m, "beamtrace_trigger_function"));
    c->window_ns = (uint64_t)env_int(m, "beamtrace_capture_window_ns");
    c->after_ns = (uint64_t)env_int(m, "beamtrace_capture_after_ns");
    /* The trigger's time is on the trace's own clock (ns, as its events'
     * at 1 GHz): shifted as the reader shifts every event of this trace. */
    uint64_t raw = (uint64_t)env_int(m, "beamtrace_trigger_ts");
    if (t->freq_hz != 1000000000)
        raw = (uint64_t)((unsigned __int128)raw * 1000000000 / t->freq_hz);
    c->trigger_ns = raw + t->delta_ns;
    if (c->trigger_ns > r->max_ts_ns)
        c->trigger_ns = r->max_ts_ns;
    c->trigger_wall_ns = bmt_reader_wall_ns(r, c->trigger_ns);
    return 1;
}

int bmt_capture_info_find(const struct bmt_reader *r, struct bmt_capture_info *c)
{
    for (unsigned i = 0; i < r->trace_count; i++)
        if (bmt_capture_info_read(r, &r->traces[i], c))
            return 1;
    return 0;
}

int bmt_capture_info_load(const char *const *paths, unsigned count, struct bmt_capture_info *c)
{
    struct bmt_reader r;
    int found = bmt_reader_open(&r, paths, count) == 0 && bmt_capture_info_find(&r, c);
    bmt_reader_close(&r);
    if (!found)
        memset(c, 0, sizeof *c);
    return found;
}

void bmt_capture_info_value_text(const struct bmt_capture_info *c, char *out, size_t size)
{
    char v[32], b[32];
    if (strcmp(c->unit, "ns") == 0) {
        bmt_duration_text((uint64_t)c->value, v);
        bmt_duration_text((uint64_t)c->bound, b);
    } else if (strcmp(c->unit, "ms") == 0) {
        bmt_duration_text((uint64_t)c->value * 1000000, v);
        bmt_duration_text((uint64_t)c->bound * 1000000, b);
    } else {
        snprintf(v, sizeof v, "%lld%s%s", (long long)c->value, c->unit[0] ? " " : "", c->unit);
        snprintf(b, sizeof b, "%lld%s%s", (long long)c->bound, c->unit[0] ? " " : "", c->unit);
    }
    if (c->bound > 0)
        snprintf(out, size, "%s > %s", v, b);
    else if (c->value > 0)
        snprintf(out, size, "%s", v);
    else
        snprintf(out, size, "-");
}

void bmt_capture_info_utc_text(int64_t wall_ns, char out[40])
{
    time_t secs = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char day[24];
    strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out, 40, "%s.%03d UTC", day, (int)(wall_ns % 1000000000 / 1000000));
}

void bmt_capture_info_text(const struct bmt_capture_info *c, char *out, size_t size)
{
    char when[40], value[96];
    bmt_capture_info_utc_text(c->trigger_wall_ns, when);
    bmt_capture_info_value_text(c, value, sizeof value);
    snprintf(out, size, "capture %llu, fired %s by %s%s%s%s%s%s%s", (unsigned long long)c->seq,
             when, c->kind, c->function[0] ? " " : "", c->function, c->pid[0] ? " in " : "",
             c->pid, strcmp(value, "-") ? ": " : "", strcmp(value, "-") ? value : "");
}
