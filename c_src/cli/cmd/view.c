/* `beamtrace view`: prints a trace exactly as `babeltrace2 DIR` does
 * (sink.text.pretty defaults), optionally filtered by tracepoint and pid.
 *
 * Why byte-identical: users diff and grep babeltrace2 output in scripts;
 * `view` must be a faster drop-in. The line is
 *   [HH:MM:SS.nnnnnnnnn] (+S.nnnnnnnnn) HOST[:PROCNAME][:(VPID)] domain:name: { cpu_id = N }, ...
 * with every scope babeltrace2 prints (print_bt2.c), for any event the
 * metadata declares, from any of the layouts the reader reads (beamtrace,
 * LTTng, babeltrace2's own); in a cluster, the node where babeltrace2 prints
 * the host (nodes share hosts). Deltas are between printed lines. The
 * per-event-class constant text is built once; wall-clock text is
 * recomputed only when the second changes. A trace whose time goes
 * backwards is an error, as it is for babeltrace2, not a huge delta.
 */
#include "options.h"
#include "base/out.h"
#include "out/print_bt2.h"
#include "ctf/reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS_PER_S 1000000000LL

struct bmt_packet_text {
    int valid, printed;
    uint64_t offset;              /* packet it was printed for */
    unsigned file;
    size_t len;
    char text[256];
};

struct view {
    struct bmt_out out;
    struct bmt_packet_text *packets; /* per stream */
    const char *const *patterns;  /* -t patterns, or none */
    unsigned pattern_count;
    uint8_t *selected;            /* per event class (global index): print it */
    char **pids;                  /* normalised pid/port texts to match, or none */
    unsigned pid_count;
    int no_delta, gmt;
    int64_t last_wall_ns;         /* previous printed line, ns since the epoch */
    int have_last;
    int64_t cached_s;             /* second whose HH:MM:SS is in hms */
    int have_cache;
    char hms[16];
    char **prefix;                /* per event class (global index): "HOST domain:name: " */
    size_t *prefix_len;
    unsigned class_count;
};

static void hms_text(int gmt, int64_t s, char out[16])
{
    struct tm tm;
    time_t t = (time_t)s;
    if (!(gmt ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)))
        memset(&tm, 0, sizeof tm);
    snprintf(out, 16, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void put_time(struct view *v, int64_t wall_ns)
{
    int64_t s, ns;
    bmt_wall_split(wall_ns, &s, &ns);
    if (!v->have_cache || s != v->cached_s) {
        hms_text(v->gmt, s, v->hms);
        v->cached_s = s;
        v->have_cache = 1;
    }
    bmt_out_char(&v->out, '[');
    bmt_out_mem(&v->out, v->hms, 8);
    bmt_out_char(&v->out, '.');
    bmt_out_u64_pad(&v->out, (uint64_t)ns, 9);
    bmt_out_mem(&v->out, "] ", 2);
}

static void put_delta(struct view *v, int64_t wall_ns)
{
    if (!v->have_last) {
        bmt_out_str(&v->out, "(+?.????????" "?) "); /* split: not a trigraph */
    } else {
        /* Merged order never goes back; as babeltrace2, the delta is unsigned. */
        uint64_t d = (uint64_t)wall_ns - (uint64_t)v->last_wall_ns;
        bmt_out_mem(&v->out, "(+", 2);
        bmt_out_u64(&v->out, d / NS_PER_S);
        bmt_out_char(&v->out, '.');
        bmt_out_u64_pad(&v->out, d % NS_PER_S, 9);
        bmt_out_mem(&v->out, ") ", 2);
    }
    v->last_wall_ns = wall_ns;
    v->have_last = 1;
}

/* A cluster's records carry node-qualified pids (nodes.h) while the line
 * prints OTP's text: -p matches either (kv@h2/<0.1.0>, or <0.1.0> on any
 * node). */
static int pid_matches(const struct view *v, const struct bmt_reader *r,
                       const struct bmt_record *rec)
{
    if (rec->tp == BMT_TP_NONE)
        return 0;
    const struct bmt_tracepoint *t = &bmt_catalogue[rec->tp];
    const struct bmt_value *raw = r->streams[rec->stream].head.values;
    for (unsigned f = 0; f < t->field_count; f++) {
        if (t->fields[f].kind != BMT_KIND_ID || t->fields[f].type != BMT_FIELD_STRING)
            continue;
        for (unsigned k = 0; k < 2; k++) {
            const struct bmt_value *val = k ? &raw[f] : &rec->values[f];
            for (unsigned i = 0; i < v->pid_count; i++)
                if (strlen(v->pids[i]) == val->len && memcmp(v->pids[i], val->str, val->len) == 0)
                    return 1;
        }
    }
    return 0;
}

static unsigned class_index(const struct bmt_reader *r, const struct bmt_record *rec)
{
    return r->streams[rec->stream].trace->event_base + rec->ec->index;
}

/* The packet context's text ("{ cpu_id = 0 }"), printed once per packet. */
static void packet_text(struct view *v, const struct bmt_reader *r, unsigned stream)
{
    const struct bmt_reader_stream *s = &r->streams[stream];
    struct bmt_packet_text *p = &v->packets[stream];
    if (p->valid && p->offset == s->packet && p->file == s->file_index)
        return;
    struct bmt_out tmp = {.fd = -1, .buf = p->text, .cap = sizeof p->text};
    p->printed = bmt_print_bt2_packet(&tmp, r, stream);
    /* A context too long for the cache (never from beamtrace or LTTng):
     * printed each time instead. */
    p->valid = tmp.len < sizeof p->text && !tmp.error;
    p->len = tmp.len;
    p->offset = s->packet;
    p->file = s->file_index;
}

static void print_event(struct view *v, const struct bmt_reader *r, const struct bmt_record *rec)
{
    struct bmt_out *o = &v->out;
    int64_t wall_ns = bmt_reader_wall_ns(r, rec->ts_ns);
    unsigned k = class_index(r, rec);
    put_time(v, wall_ns);
    if (!v->no_delta)
        put_delta(v, wall_ns);
    bmt_out_mem(o, v->prefix[k], v->prefix_len[k]);
    packet_text(v, r, rec->stream);
    const struct bmt_packet_text *p = &v->packets[rec->stream];
    if (p->valid) {
        bmt_out_mem(o, p->text, p->len);
        bmt_print_bt2_event(o, r, rec, p->printed);
    } else {
        bmt_print_bt2_fields(o, r, rec);
    }
    bmt_out_char(o, '\n');
}

static void warn_time(const struct view *v, const struct bmt_reader *r, uint64_t ts_ns,
                      char out[32])
{
    int64_t s, ns;
    char hms[16];
    bmt_wall_split(bmt_reader_wall_ns(r, ts_ns), &s, &ns);
    hms_text(v->gmt, s, hms);
    snprintf(out, 32, "%s.%09lld", hms, (long long)ns);
}

/* One of babeltrace2's warnings: `count` events or packets (`what`) lost
 * between times `from` and `to` in stream `stream`. */
static void warn_lost(const struct bmt_reader *r, unsigned stream, uint64_t count, const char *what,
                      const char *from, const char *to)
{
    const struct bmt_reader_stream *s = &r->streams[stream];
    const struct bmt_trace *t = s->trace;
    char abs[4096];
    /* babeltrace2 names the stream by its absolute path. */
    const char *path = realpath(s->path, abs) ? abs : s->path;
    fprintf(stderr,
            "WARNING: Tracer discarded %llu %s%s between [%s] and [%s] in trace \"%s\" "
            "(UUID: %s) within stream \"%s\" (stream class ID: %llu, stream ID: %llu).\n",
            (unsigned long long)count, what, count == 1 ? "" : "s", from, to,
            t->meta.hostname ? t->meta.hostname : "", t->uuid_text, path,
            (unsigned long long)s->sc->id, (unsigned long long)s->stream_instance_id);
}

/* Reports drops like babeltrace2's sink.text.pretty (same wording; its time
 * range choice for the first packet of a stream may differ). */
static void on_packet(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info)
{
    struct view *v = ctx;
    char t1[32], t2[32];
    warn_time(v, r, info->prev_ts_end_ns, t1);
    warn_time(v, r, info->ts_end_ns, t2);
    if (info->new_discarded_count)
        warn_lost(r, stream, info->new_discarded_count, "event", t1, t2);
    /* babeltrace2 reports a packet gap between the previous packet's end and
     * this one's beginning, and says nothing of packets lost before the first. */
    warn_time(v, r, info->ts_begin_ns, t2);
    if (info->lost_packet_count && !info->first)
        warn_lost(r, stream, info->lost_packet_count, "packet", t1, t2);
}

/* "<0.66.0>", "0.66.0" -> "<0.66.0>"; ports and other forms kept as given. */
static char *normalise_pid(const char *arg)
{
    size_t n = strlen(arg);
    char *p = malloc(n + 3);
    if (!p)
        return NULL;
    if (arg[0] == '<' || arg[0] == '#' || strchr(arg, '/'))
        memcpy(p, arg, n + 1);
    else
        snprintf(p, n + 3, "<%s>", arg);
    return p;
}

/* 1 when -t selects event class `ec` (every class without -t). A link
 * event of record --links is OTP's message_send or message_receive with
 * more fields (model/layouts.h): a pattern naming OTP's event selects it
 * too, as the analyses read it as OTP's. */
static int selects(const struct view *v, const struct bmt_ctf_event_class *ec)
{
    int tp = ec->tp == BMT_TP_message_send_link      ? BMT_TP_message_send
             : ec->tp == BMT_TP_message_receive_link ? BMT_TP_message_receive : -1;
    const char *otp = tp >= 0 ? bmt_catalogue[tp].full_name : NULL;
    for (unsigned i = 0; i < v->pattern_count; i++)
        if (bmt_glob_match(v->patterns[i], ec->name) ||
            (otp && bmt_glob_match(v->patterns[i], otp)))
            return 1;
    return v->pattern_count == 0;
}

/* The per-event-class text after the time: babeltrace2 prints the trace
 * environment's hostname, procname and vpid (joined by ':') when present.
 * In a cluster each trace is a node, and the node takes the host's place:
 * nodes on one host would otherwise print the same name on every line. */
static int build_prefixes(struct view *v, const struct bmt_reader *r)
{
    v->class_count = r->event_class_count;
    v->prefix = calloc(v->class_count + 1, sizeof *v->prefix);
    v->prefix_len = calloc(v->class_count + 1, sizeof *v->prefix_len);
    v->selected = calloc(v->class_count + 1, 1);
    if (!v->prefix || !v->prefix_len || !v->selected)
        return -1;
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        const char *host = r->cluster && r->traces[t].node ? r->traces[t].node : m->hostname;
        char env[600] = "";
        size_t n = 0;
        if (host)
            n += (size_t)snprintf(env + n, sizeof env - n, " %s", host);
        if (m->procname && n < sizeof env)
            n += (size_t)snprintf(env + n, sizeof env - n, "%s%s", n ? ":" : " ", m->procname);
        if (m->has_vpid && n < sizeof env)
            n += (size_t)snprintf(env + n, sizeof env - n, "%s(%lld)", n ? ":" : " ",
                                  (long long)m->vpid);
        for (unsigned e = 0; e < m->event_count; e++) {
            unsigned k = r->traces[t].event_base + e;
            const char *name = m->events[e]->name;
            size_t len = strlen(env) + strlen(name) + 4;
            if (!(v->prefix[k] = malloc(len)))
                return -1;
            /* The time's "] " or delta's ") " already ends in a space. */
            v->prefix_len[k] = (size_t)snprintf(v->prefix[k], len, "%s%s%s: ",
                                                env[0] ? env + 1 : "", env[0] ? " " : "", name);
            v->selected[k] = selects(v, m->events[e]);
        }
    }
    return 0;
}

/* A -t pattern must match a catalogue tracepoint or an event of the trace. */
static const char *unmatched_pattern(const struct view *v, const struct bmt_reader *r)
{
    for (unsigned i = 0; i < v->pattern_count; i++) {
        uint64_t mask = 0;
        int hit = bmt_catalogue_match(v->patterns[i], &mask) > 0;
        for (unsigned t = 0; !hit && t < r->trace_count; t++)
            for (unsigned e = 0; !hit && e < r->traces[t].meta.event_count; e++)
                hit = bmt_glob_match(v->patterns[i], r->traces[t].meta.events[e]->name);
        if (!hit)
            return v->patterns[i];
    }
    return NULL;
}

struct view_opts {
    struct bmt_common common;
    struct bmt_strs tracepoints, pids;
    int no_delta, gmt;
};

#define AT(field, T) BMT_OPT_AT(struct view_opts, field, T)

static const struct bmt_opt options[] = {
    {.name = "tracepoint", .letter = 't', .type = BMT_OPT_PATTERN, .arg = "PATTERN",
     .help = "only events whose domain:name matches PATTERN ('*' matches any run of "
             "characters; repeatable), e.g. 'org_erlang_dyntrace:process_*' or '*gc_*'; a "
             "pattern taking message_send or message_receive also takes their --links form",
     .flags = BMT_OPT_REPEAT, .example = "*process_*", .offset = AT(tracepoints, struct bmt_strs)},
    {.name = "pid", .letter = 'p', .type = BMT_OPT_PID, .arg = "PID",
     .help = "only events with a pid or port field equal to PID (<0.66.0>, 0.66.0 or "
             "#Port<0.7>; repeatable); in a cluster also kv@h2/<0.66.0> (lines keep OTP's text)",
     .flags = BMT_OPT_REPEAT, .offset = AT(pids, struct bmt_strs)},
    {.name = "no-delta", .type = BMT_OPT_FLAG,
     .help = "do not print the time since the previous line", .offset = AT(no_delta, int)},
    {.name = "gmt", .type = BMT_OPT_FLAG, .help = "print times in UTC instead of local time",
     .offset = AT(gmt, int)},
    {0},
};

/* The filters from the options; pids normalised. Returns 0 or -ENOMEM. */
static int view_init(struct view *v, const struct view_opts *op)
{
    memset(v, 0, sizeof *v);
    v->patterns = op->tracepoints.v;
    v->pattern_count = op->tracepoints.n;
    v->no_delta = op->no_delta;
    v->gmt = op->gmt;
    if (!(v->pids = calloc(op->pids.n + 1, sizeof *v->pids)))
        return -ENOMEM;
    for (; v->pid_count < op->pids.n; v->pid_count++)
        if (!(v->pids[v->pid_count] = normalise_pid(op->pids.v[v->pid_count])))
            return -ENOMEM;
    return 0;
}

static void view_free(struct view *v)
{
    for (unsigned i = 0; i < v->pid_count; i++)
        free(v->pids[i]);
    free(v->pids);
    for (unsigned i = 0; v->prefix && i < v->class_count; i++)
        free(v->prefix[i]);
    free(v->prefix);
    free(v->prefix_len);
    free(v->selected);
    free(v->packets);
}

/* Every selected event, in time order. Returns 0 or the reader's error. */
static int print_all(struct view *v, struct bmt_reader *r)
{
    const struct bmt_record *rec;
    int rc;
    r->on_packet = on_packet;
    r->on_packet_ctx = v;
    while ((rc = bmt_reader_next(r, &rec)) == 1) {
        if (!v->selected[class_index(r, rec)])
            continue;
        if (v->pid_count && !pid_matches(v, r, rec))
            continue;
        print_event(v, r, rec);
    }
    if (bmt_out_close(&v->out) < 0 && rc == 0) {
        snprintf(r->error, sizeof r->error, "cannot write the output: %s; check the disk or pipe",
                 strerror(v->out.error));
        rc = -1;
    }
    return rc;
}

static int run(void *opts_)
{
    const struct view_opts *op = opts_;
    const char *dir = op->common.label;
    struct view v;
    struct bmt_reader r;
    memset(&r, 0, sizeof r);
    int status = BMT_EXIT_FAIL;
    int rc = view_init(&v, op) < 0 ? -ENOMEM : bmt_reader_open(&r, op->common.dirs.v,
                                                                op->common.dirs.n);
    if (rc == 0 && (!(v.packets = calloc(r.stream_count + 1, sizeof *v.packets)) ||
                    build_prefixes(&v, &r) < 0 || bmt_out_open(&v.out, 1, 1 << 20) < 0))
        rc = -ENOMEM;
    if (rc == -ENOMEM)
        snprintf(r.error, sizeof r.error, "out of memory; free some memory");
    const char *bad = rc == 0 ? unmatched_pattern(&v, &r) : NULL;
    if (bad) {
        status = bmt_cli_usage_error("view", "tracepoint pattern '%s' matches no tracepoint of "
                                     "the catalogue or the trace (see 'beamtrace list')", bad);
        bmt_out_close(&v.out);
    } else if (rc == 0 && (rc = print_all(&v, &r)) == 0) {
        status = BMT_EXIT_OK;
    }
    if (rc < 0 && !bad)
        bmt_cli_error("%s: %s", dir, r.error);
    bmt_reader_close(&r);
    view_free(&v);
    return status;
}

const struct bmt_command bmt_cmd_view = {
    .name = "view",
    .summary = "print every event as babeltrace2 does",
    .description =
        "Prints the events of the trace in DIR in time order, one line each, exactly\n"
        "as `babeltrace2 DIR` does: beamtrace's traces, LTTng's (DIR may be the session\n"
        "directory) and babeltrace2's CTF output alike. Discarded events are reported\n"
        "on stderr; a last packet cut short is skipped with one warning. In a cluster\n"
        "(traces of several nodes), each line names its node where babeltrace2 prints\n"
        "the host.",
    .opts = options, .uses = BMT_USES_DIRS, .size = sizeof(struct view_opts),
    .run = run,
};
