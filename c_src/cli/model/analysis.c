/* Shared helpers of the analysis subcommands (contract in analysis.h). */
#include "analysis.h"
#include "cmd/cli.h"
#include "elixir.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned field(int tp, const char *name)
{
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    for (unsigned i = 0; i < t->field_count; i++)
        if (strcmp(t->fields[i].name, name) == 0)
            return i;
    fprintf(stderr, "beamtrace: internal error: %s has no field %s\n", t->full_name, name);
    abort();
}

const struct bmt_an_fields *bmt_an_fields(void)
{
    static struct bmt_an_fields f;
    static int ready;
    if (ready)
        return &f;
    f.call_pid = field(BMT_TP_function_call, "pid");
    f.call_entry = field(BMT_TP_function_call, "entry");
    if (field(BMT_TP_function_return, "pid") != f.call_pid ||
        field(BMT_TP_function_return, "entry") != f.call_entry)
        abort();
    f.exc_pid = field(BMT_TP_function_exception, "pid");
    f.exc_entry = field(BMT_TP_function_exception, "entry");
    f.exc_class = field(BMT_TP_function_exception, "class");
    f.send_from = field(BMT_TP_message_send, "from");
    f.send_to = field(BMT_TP_message_send, "to");
    f.send_msg = field(BMT_TP_message_send, "message");
    f.recv_to = field(BMT_TP_message_receive, "to");
    f.recv_msg = field(BMT_TP_message_receive, "message");
    f.sched_pid = field(BMT_TP_process_scheduled, "pid");
    f.sched_entry = field(BMT_TP_process_scheduled, "entry");
    f.sched_type = field(BMT_TP_process_scheduled, "type");
    f.spawn_pid = field(BMT_TP_process_spawn, "pid");
    f.spawn_parent = field(BMT_TP_process_spawn, "parent");
    f.spawn_entry = field(BMT_TP_process_spawn, "entry");
    f.exit_pid = field(BMT_TP_process_exit, "pid");
    f.exit_reason = field(BMT_TP_process_exit, "reason");
    f.reg_pid = field(BMT_TP_process_register, "pid");
    f.reg_name = field(BMT_TP_process_register, "name");
    f.reg_type = field(BMT_TP_process_register, "type");
    f.gc_pid = field(BMT_TP_gc_minor_start, "pid");
    f.gc_need = field(BMT_TP_gc_minor_start, "need");
    f.gc_reclaimed = field(BMT_TP_gc_minor_end, "reclaimed");
    f.gc_heap = field(BMT_TP_gc_minor_end, "heap");
    f.gc_old_heap = field(BMT_TP_gc_minor_end, "old_heap");
    f.info_pid = field(BMT_TP_process_info, "pid");
    f.info_name = field(BMT_TP_process_info, "name");
    f.info_entry = field(BMT_TP_process_info, "entry");
    f.info_label = field(BMT_TP_process_info, "label");
    /* The four gc events share one layout; the analyses rely on it. */
    static const int gcs[] = {BMT_TP_gc_minor_start, BMT_TP_gc_major_start};
    for (unsigned i = 0; i < 2; i++)
        if (field(gcs[i], "pid") != f.gc_pid || field(gcs[i] + 1, "pid") != f.gc_pid ||
            field(gcs[i] + 1, "reclaimed") != f.gc_reclaimed ||
            field(gcs[i] + 1, "heap") != f.gc_heap ||
            field(gcs[i] + 1, "old_heap") != f.gc_old_heap)
            abort();
    ready = 1;
    return &f;
}

void bmt_an_scope_init(struct bmt_an_scope *s)
{
    memset(s, 0, sizeof *s);
    bmt_strtab_init(&s->kept);
    bmt_strtab_init(&s->own);
    bmt_names_init(&s->names);
    s->window.end_ns = UINT64_MAX;
}

void bmt_an_scope_free(struct bmt_an_scope *s)
{
    free(s->pids);
    free(s->patterns);
    free(s->paths);
    bmt_strtab_free(&s->kept);
    bmt_strtab_free(&s->own);
    bmt_names_free(&s->names);
}

/* beamtrace's own processes (analysis.h): learns one own_process event. */
static int own_learn(struct bmt_an_scope *s, const struct bmt_record *rec)
{
    const struct bmt_value *pid = &rec->values[BMT_F_own_process_pid],
                           *name = &rec->values[BMT_F_own_process_name];
    if (bmt_strtab_intern(&s->own, pid->str, pid->len) < 0)
        return -ENOMEM;
    if (name->len && !(name->len == 9 && memcmp(name->str, "undefined", 9) == 0) &&
        bmt_strtab_intern(&s->own, name->str, name->len) < 0)
        return -ENOMEM;
    return 0;
}

/* 1 when one of beamtrace's own processes takes part in `rec`: a process
 * field (kind ID) holds one, or a send goes to one (by pid or name). */
_Static_assert(BMT_F_message_send_to == BMT_F_message_send_link_to,
               "a send's destination is at one place in both send events");
static int own_involved(const struct bmt_an_scope *s, const struct bmt_record *rec)
{
    const struct bmt_tracepoint *t = &bmt_catalogue[rec->tp];
    for (unsigned i = 0; i < t->field_count; i++) {
        const struct bmt_value *v = &rec->values[i];
        if ((t->fields[i].kind == BMT_KIND_ID ||
             ((rec->tp == BMT_TP_message_send || rec->tp == BMT_TP_message_send_link) &&
              i == BMT_F_message_send_to)) &&
            bmt_strtab_find(&s->own, v->str, v->len) >= 0)
            return 1;
    }
    return 0;
}

int bmt_an_keep(const struct bmt_an_scope *s, const char *pid, size_t len)
{
    if (!s->filtering || bmt_strtab_find(&s->kept, pid, len) >= 0)
        return 1;
    /* A cluster's kv@h2/<0.66.0> is kept by --pid <0.66.0> too (that pid
     * on every node). */
    size_t p = bmt_nodes_prefix(pid, len);
    return p && bmt_strtab_find(&s->kept, pid + p + 1, len - p - 1) >= 0;
}

/* "<0.66.0>", "0.66.0", "#Port<0.7>", "kv@h2/<0.66.0>": a pid or port
 * rather than a name. */
static int pid_like(const char *s)
{
    if (s[0] == '#' || bmt_nodes_prefix(s, strlen(s)) || s[0] == '?')
        return 1;
    const char *p = s[0] == '<' ? s + 1 : s;
    int dots = 0;
    for (; *p && *p != '>'; p++) {
        if (*p == '.')
            dots++;
        else if (*p < '0' || *p > '9')
            return 0;
    }
    return dots == 2 && (s[0] != '<' || (*p == '>' && !p[1]));
}

/* The filter's pids: literal ones directly, names after a pass that reads
 * the trace's names. */
static int resolve_filter(struct bmt_reader *r, const char *dir, struct bmt_an_scope *s)
{
    int need_names = s->pattern_count > 0;
    for (unsigned i = 0; i < s->pid_count; i++) {
        const char *p = s->pids[i];
        if (!pid_like(p)) {
            need_names = 1;
            continue;
        }
        char buf[400];
        snprintf(buf, sizeof buf, p[0] == '<' || p[0] == '#' || strchr(p, '/') ? "%s" : "<%s>", p);
        if (bmt_strtab_intern(&s->kept, buf, strlen(buf)) < 0)
            return -ENOMEM;
    }
    if (!need_names)
        return 0;
    struct bmt_names names;
    bmt_names_init(&names);
    int rc = bmt_reader_open(r, s->paths, s->path_count);
    (void)dir;
    const struct bmt_record *rec;
    while (rc == 0 && (rc = bmt_reader_next(r, &rec)) == 1)
        rc = rec->tp == BMT_TP_process_info || rec->tp == BMT_TP_process_spawn ||
                     rec->tp == BMT_TP_process_register
                 ? bmt_names_feed(&names, rec) : 0;
    uint8_t *marks = rc == 0 ? calloc(names.pids.count + 1, 1) : NULL;
    if (rc == 0 && !marks)
        rc = -ENOMEM;
    for (unsigned i = 0; rc == 0 && i < s->pid_count; i++)
        if (!pid_like(s->pids[i]))
            rc = bmt_names_select(&names, s->pids[i], 0, marks);
    for (unsigned i = 0; rc == 0 && i < s->pattern_count; i++)
        rc = bmt_names_select(&names, s->patterns[i], 1, marks);
    for (uint32_t id = 0; rc == 0 && id < names.pids.count; id++)
        if (marks[id] && bmt_strtab_intern(&s->kept, bmt_strtab_str(&names.pids, id),
                                           bmt_strtab_len(&names.pids, id)) < 0)
            rc = -ENOMEM;
    free(marks);
    bmt_names_free(&names);
    if (rc == -ENOMEM)
        snprintf(r->error, sizeof r->error, "out of memory; free some memory");
    if (rc == 0)
        bmt_reader_close(r);
    return rc;
}

static int resolve_window(struct bmt_reader *r, struct bmt_an_scope *s)
{
    s->window.begin_ns = 0;
    s->window.end_ns = UINT64_MAX;
    if (s->begin_text && bmt_an_parse_time(r, s->begin_text, s->first_ns, &s->window.begin_ns) < 0) {
        snprintf(r->error, sizeof r->error, "--begin '%s' is not a time: use HH:MM:SS[.nnn], "
                 "YYYY-MM-DD HH:MM:SS[.nnn] (local time; Z for UTC) or +DURATION after the first "
                 "event (e.g. +2s)", s->begin_text);
        return BMT_AN_USAGE;
    }
    if (s->end_text && bmt_an_parse_time(r, s->end_text, s->first_ns, &s->window.end_ns) < 0) {
        snprintf(r->error, sizeof r->error, "--end '%s' is not a time: use HH:MM:SS[.nnn], "
                 "YYYY-MM-DD HH:MM:SS[.nnn] (local time; Z for UTC) or +DURATION after the first "
                 "event (e.g. +2s)", s->end_text);
        return BMT_AN_USAGE;
    }
    if (s->window.end_ns <= s->window.begin_ns) {
        snprintf(r->error, sizeof r->error, "--end is not after --begin; give a window that "
                 "ends after it starts");
        return BMT_AN_USAGE;
    }
    s->valid_from_ns = r->overwritten ? r->complete_from_ns : 0;
    if (s->window.begin_ns < s->valid_from_ns)
        s->window.begin_ns = s->valid_from_ns;
    return 0;
}

/* More than this between the first and last events is no real recording. */
#define ODD_SPAN_NS (30ull * 86400 * 1000000000)

static void span_text(uint64_t ns, char out[48])
{
    double d = (double)ns / 1e9;
    if (d >= 365.25 * 86400)
        snprintf(out, 48, "%.1f years", d / (365.25 * 86400));
    else
        snprintf(out, 48, "%.1f days", d / 86400);
}

int bmt_an_run(struct bmt_reader *r, const char *dir, struct bmt_an_scope *scope,
               int (*feed)(void *ctx, const struct bmt_record *rec), void *ctx,
               struct bmt_an_pass *pass)
{
    memset(pass, 0, sizeof *pass);
    (void)bmt_an_fields();
    scope->filtering = scope->pid_count + scope->pattern_count > 0;
    scope->windowed = scope->begin_text || scope->end_text;
    int rc = scope->filtering ? resolve_filter(r, dir, scope) : 0;
    if (rc < 0)
        return rc;
    if ((rc = bmt_reader_open(r, scope->paths, scope->path_count)) < 0)
        return rc;
    if (scope->on_packet) {
        r->on_packet = scope->on_packet;
        r->on_packet_ctx = ctx;
    }
    for (unsigned t = 0; t < r->trace_count; t++)
        if (r->traces[t].meta.warning)
            bmt_reader_warn(r, "%s: %s; analyses ignore its events", dir,
                            r->traces[t].meta.warning);
    const struct bmt_record *rec;
    rc = bmt_reader_next(r, &rec);
    if (rc < 0)
        return rc;
    scope->first_ns = rc == 1 ? rec->ts_ns : 0;
    int wrc = resolve_window(r, scope);
    if (wrc < 0)
        return wrc;
    if (r->overwritten) {
        char t[32];
        bmt_an_clock_text(r, r->complete_from_ns, t);
        bmt_reader_warn(r, "%s: a flight-recorder trace whose streams lost their oldest packets: "
                        "calls and intervals are counted from %s, where every stream has data",
                        dir, t);
    }
    int odd = 0, past_end = 0;
    for (; rc == 1; rc = bmt_reader_next(r, &rec)) {
        uint64_t ts = rec->ts_ns;
        if (ts > scope->window.end_ns) {
            past_end = 1; /* the trace goes on: open intervals close at the window's end */
            break;
        }
        if (pass->event_count++ == 0)
            pass->first_ns = ts;
        pass->last_ns = ts;
        if (!odd && ts - scope->first_ns > ODD_SPAN_NS) {
            char a[64], b[64], span[48];
            odd = 1;
            bmt_an_date_text(r, scope->first_ns, a);
            bmt_an_date_text(r, ts, b);
            span_text(ts - scope->first_ns, span);
            bmt_reader_warn(r, "%s: events %s apart (the first at %s, one at %s): a corrupt or "
                            "unusual trace; results may mean little", dir, span, a, b);
        }
        if (rec->tp == BMT_TP_NONE)
            continue;
        if (rec->tp == BMT_TP_own_process) {
            if ((rc = own_learn(scope, rec)) < 0)
                break;
            continue;
        }
        if (scope->own.count && own_involved(scope, rec)) {
            scope->own_hidden_count++;
            continue;
        }
        if ((rc = bmt_names_feed(&scope->names, rec)) < 0)
            break;
        if (ts >= scope->window.begin_ns) {
            switch (rec->tp) {
            case BMT_TP_process_scheduled: scope->sched_count++; break;
            case BMT_TP_message_receive: scope->receive_count++; break;
            case BMT_TP_gc_minor_start: case BMT_TP_gc_major_start: scope->gc_count++; break;
            case BMT_TP_function_call: scope->call_count++; break;
            default: break;
            }
        }
        if (!scope->keep_links && (rec->tp == BMT_TP_message_send_link ||
                                   rec->tp == BMT_TP_message_receive_link)) {
            /* Their first fields are OTP's, in OTP's order (catalogue.def). */
            struct bmt_record otp = *rec;
            otp.tp = rec->tp == BMT_TP_message_send_link ? BMT_TP_message_send
                                                         : BMT_TP_message_receive;
            if (otp.tp == BMT_TP_message_receive)
                scope->receive_count += ts >= scope->window.begin_ns;
            if ((rc = feed(ctx, &otp)) < 0)
                break;
            continue;
        }
        if ((rc = feed(ctx, rec)) < 0)
            break;
    }
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(r->error, sizeof r->error, "out of memory; free some memory");
        return rc;
    }
    pass->end_ns = past_end ? scope->window.end_ns : pass->last_ns;
    for (unsigned s = 0; s < r->stream_count; s++) {
        pass->discarded_count += r->streams[s].discarded_count;
        pass->lost_packet_count += r->streams[s].lost_packet_count;
    }
    if (pass->discarded_count)
        bmt_reader_warn(r, "%s: %llu events were discarded while recording; stacks and times "
                        "around the losses may be wrong", dir,
                        (unsigned long long)pass->discarded_count);
    return 0;
}

int bmt_an_fail(const char *cmd, const char *dir, const struct bmt_reader *r, int rc)
{
    if (rc == BMT_AN_USAGE)
        return bmt_cli_usage_error(cmd, "%s", r->error);
    bmt_cli_error("%s: %s", dir, r->error[0] ? r->error : "cannot read the trace");
    return BMT_EXIT_FAIL;
}

const char *bmt_an_function(const char *s, size_t len, char *buf, size_t size)
{
    return bmt_elixir_mfa(s, len, buf, size);
}

int bmt_an_parse_duration(const char *text, uint64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !(v >= 0))
        return -EINVAL;
    double mult;
    if (*end == '\0' || strcmp(end, "ns") == 0)
        mult = 1;
    else if (strcmp(end, "us") == 0 || strcmp(end, "\xc2\xb5s") == 0)
        mult = 1e3;
    else if (strcmp(end, "ms") == 0)
        mult = 1e6;
    else if (strcmp(end, "s") == 0)
        mult = 1e9;
    else
        return -EINVAL;
    v *= mult;
    if (v >= 1.8e19)
        return -EINVAL;
    *ns = (uint64_t)(v + 0.5);
    return 0;
}

int bmt_an_parse_time(const struct bmt_reader *r, const char *text, uint64_t first_ns,
                      uint64_t *ts)
{
    int64_t wall;
    if (text[0] == '+') {
        uint64_t d;
        if (bmt_an_parse_duration(text + 1, &d) < 0 || d > UINT64_MAX - first_ns)
            return -EINVAL;
        *ts = first_ns + d;
        return 0;
    }
    size_t n = strlen(text);
    int utc = n && (text[n - 1] == 'Z' || text[n - 1] == 'z');
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, used = 0;
    const char *frac = NULL;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (sscanf(text, "%4d-%2d-%2d%*1[ T]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) == 6) {
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
    } else if (sscanf(text, "%2d:%2d:%2d%n", &h, &mi, &sec, &used) == 3) {
        /* On the day of the first event (in the zone the time is given in). */
        int64_t s0, ns0;
        bmt_wall_split(bmt_reader_wall_ns(r, first_ns), &s0, &ns0);
        time_t t0 = (time_t)s0;
        if (!(utc ? gmtime_r(&t0, &tm) : localtime_r(&t0, &tm)))
            return -EINVAL;
    } else {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || *end || end == text || v > INT64_MAX)
            return -EINVAL;
        wall = (int64_t)v;
        goto have_wall;
    }
    if (h > 23 || mi > 59 || sec > 60 || mo > 12 || d > 31)
        return -EINVAL;
    frac = text + used;
    uint64_t frac_ns = 0;
    if (*frac == '.') {
        unsigned digits = 0;
        for (frac++; *frac >= '0' && *frac <= '9'; frac++, digits++)
            if (digits < 9)
                frac_ns = frac_ns * 10 + (uint64_t)(*frac - '0');
        for (; digits < 9; digits++)
            frac_ns *= 10;
    }
    if (*frac && !((*frac == 'Z' || *frac == 'z') && !frac[1]))
        return -EINVAL;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    tm.tm_isdst = -1;
    time_t t = utc ? timegm(&tm) : mktime(&tm);
    if (t == (time_t)-1)
        return -EINVAL;
    wall = (int64_t)t * 1000000000 + (int64_t)frac_ns;
    if (!y) {
        /* A time of day: the first such moment not more than 12 h before
         * the trace starts (a trace may run past midnight). */
        int64_t start = bmt_reader_wall_ns(r, first_ns);
        if (wall < start - 12 * 3600 * 1000000000LL)
            wall += 24 * 3600 * 1000000000LL;
    }
have_wall:
    *ts = wall > r->origin_ns ? (uint64_t)(wall - r->origin_ns) : 0;
    return 0;
}

void bmt_an_json_scope(struct bmt_out *o, const struct bmt_reader *r,
                       const struct bmt_an_scope *s, const struct bmt_an_pass *p)
{
    char buf[256];
    uint64_t b = s->window.begin_ns > p->first_ns ? s->window.begin_ns : p->first_ns;
    uint64_t e = p->end_ns;
    snprintf(buf, sizeof buf, "\"window\": {\"begin_unix_ns\": %lld, \"end_unix_ns\": %lld, "
             "\"duration_ns\": %llu, \"complete_from_unix_ns\": ",
             (long long)bmt_reader_wall_ns(r, b), (long long)bmt_reader_wall_ns(r, e),
             (unsigned long long)(e > b ? e - b : 0));
    bmt_out_str(o, buf);
    if (s->valid_from_ns)
        snprintf(buf, sizeof buf, "%lld", (long long)bmt_reader_wall_ns(r, s->valid_from_ns));
    else
        snprintf(buf, sizeof buf, "null");
    bmt_out_str(o, buf);
    bmt_out_str(o, ", \"processes\": ");
    if (!s->filtering) {
        bmt_out_str(o, "\"all\"}");
        return;
    }
    bmt_out_char(o, '[');
    for (uint32_t i = 0; i < s->kept.count; i++) {
        if (i)
            bmt_out_str(o, ", ");
        bmt_an_json_string(o, bmt_strtab_str(&s->kept, i), bmt_strtab_len(&s->kept, i));
    }
    bmt_out_str(o, "]}");
}

void bmt_an_date_text(const struct bmt_reader *r, uint64_t ts_ns, char out[64])
{
    int64_t s, ns;
    bmt_wall_split(bmt_reader_wall_ns(r, ts_ns), &s, &ns);
    struct tm tm;
    time_t t = (time_t)s;
    char date[40];
    if (!localtime_r(&t, &tm) || strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        strcpy(date, "?");
    snprintf(out, 64, "%s.%09lld", date, (long long)ns);
}

void bmt_an_clock_text(const struct bmt_reader *r, uint64_t ts_ns, char out[32])
{
    int64_t s, ns;
    bmt_wall_split(bmt_reader_wall_ns(r, ts_ns), &s, &ns);
    struct tm tm;
    time_t t = (time_t)s;
    if (!localtime_r(&t, &tm))
        memset(&tm, 0, sizeof tm);
    snprintf(out, 32, "%02d:%02d:%02d.%09lld", tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)ns);
}

void bmt_an_duration_text(uint64_t ns, char out[32])
{
    if (ns < 1000)
        snprintf(out, 32, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(out, 32, "%.3f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(out, 32, "%.3f ms", (double)ns / 1e6);
    else
        snprintf(out, 32, "%.3f s", (double)ns / 1e9);
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void bmt_an_json_string(struct bmt_out *o, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    static const char hex[] = "0123456789abcdef";
    bmt_out_char(o, '"');
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        while (run < len && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            bmt_out_mem(o, s + i, run - i);
            i = run;
            continue;
        }
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            bmt_out_mem(o, e, 2);
            i++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            bmt_out_mem(o, e, 6);
            i++;
        } else {
            size_t n = utf8_len(s + i, len - i);
            if (n) {
                bmt_out_mem(o, s + i, n);
                i += n;
            } else {
                bmt_out_str(o, "\\ufffd");
                i++;
            }
        }
    }
    bmt_out_char(o, '"');
}

void bmt_an_html_string(struct bmt_out *o, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        if (c == '&')
            bmt_out_str(o, "&amp;");
        else if (c == '<')
            bmt_out_str(o, "&lt;");
        else if (c == '>')
            bmt_out_str(o, "&gt;");
        else if (c == '"')
            bmt_out_str(o, "&quot;");
        else if (c == '\'')
            bmt_out_str(o, "&#39;");
        else if (c < 0x20)
            bmt_out_char(o, ' ');
        else if (c >= 0x80) {
            size_t n = utf8_len(s + i, len - i);
            if (n) {
                bmt_out_mem(o, s + i, n);
                i += n;
                continue;
            }
            bmt_out_str(o, "\xef\xbf\xbd");
        } else
            bmt_out_char(o, (char)c);
        i++;
    }
}

void bmt_an_us3(struct bmt_out *o, uint64_t ns)
{
    bmt_out_u64(o, ns / 1000);
    bmt_out_char(o, '.');
    bmt_out_u64_pad(o, ns % 1000, 3);
}

int bmt_an_parse_args(const char *cmd, int argc, char **argv, const struct option *extra,
                      const char *shortopts, int (*opt)(void *ctx, int code, const char *arg),
                      void *ctx, int *json, struct bmt_an_scope *scope, const char **dir)
{
    struct option longopts[40];
    unsigned n = 0;
    for (; extra && extra[n].name && n < 32; n++)
        longopts[n] = extra[n];
    longopts[n++] = (struct option){"format", required_argument, NULL, 0x100};
    longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    if (scope) {
        longopts[n++] = (struct option){"begin", required_argument, NULL, 0x101};
        longopts[n++] = (struct option){"end", required_argument, NULL, 0x102};
        longopts[n++] = (struct option){"pid", required_argument, NULL, 0x103};
        longopts[n++] = (struct option){"name", required_argument, NULL, 0x104};
        free(scope->pids);
        free(scope->patterns);
        scope->pids = calloc((size_t)argc + 1, sizeof *scope->pids);
        scope->patterns = calloc((size_t)argc + 1, sizeof *scope->patterns);
        if (!scope->pids || !scope->patterns) {
            bmt_cli_error("out of memory; free some memory");
            return BMT_EXIT_FAIL;
        }
    }
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    char shorts[64];
    snprintf(shorts, sizeof shorts, ":h%s%s", shortopts ? shortopts : "", scope ? "p:" : "");
    *dir = NULL;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        if (c == 'h') {
            bmt_cli_print_usage(cmd);
            return BMT_EXIT_OK;
        } else if (c == 0x100) {
            int j = 0;
            if (!json)
                return bmt_cli_usage_error(cmd, "unknown option '--format'");
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0 && opt) {
                int rc = opt(ctx, 0x100, optarg); /* a command-specific format (export) */
                if (rc == 0)
                    continue;
                if (rc != 1)
                    return rc;
            }
            if (bmt_cli_parse_format(cmd, optarg, &j) != 0)
                return BMT_EXIT_USAGE;
            *json = j;
        } else if (scope && c == 0x101) {
            scope->begin_text = optarg;
        } else if (scope && c == 0x102) {
            scope->end_text = optarg;
        } else if (scope && (c == 0x103 || c == 'p')) {
            if (!optarg[0])
                return bmt_cli_usage_error(cmd, "--pid needs a pid or a name");
            scope->pids[scope->pid_count++] = optarg;
        } else if (scope && c == 0x104) {
            if (!optarg[0])
                return bmt_cli_usage_error(cmd, "--name needs a name or a pattern");
            scope->patterns[scope->pattern_count++] = optarg;
        } else if (c == ':') {
            return bmt_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        } else if (c == '?' || !opt) {
            return bmt_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        } else {
            int rc = opt(ctx, c, optarg);
            if (rc != 0)
                return rc;
        }
    }
    if (optind == argc)
        return bmt_cli_usage_error(cmd, "no trace directory given");
    if (!scope)
        return bmt_cli_usage_error(cmd, "expected one trace directory, got %d", argc - optind);
    free(scope->paths);
    if (!(scope->paths = calloc((size_t)(argc - optind), sizeof *scope->paths))) {
        bmt_cli_error("out of memory; free some memory");
        return BMT_EXIT_FAIL;
    }
    for (int i = optind; i < argc; i++)
        scope->paths[scope->path_count++] = argv[i];
    bmt_reader_label(scope->paths, scope->path_count, scope->label, sizeof scope->label);
    *dir = scope->label;
    tzset();
    return 0;
}

int bmt_an_out_open(struct bmt_out *o, const char *path)
{
    int fd = 1;
    if (path) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            bmt_cli_error("%s: cannot create: %s; check the path and permissions", path,
                          strerror(errno));
            return BMT_EXIT_FAIL;
        }
    }
    if (bmt_out_open(o, fd, 1 << 16) < 0) {
        if (path)
            close(fd);
        bmt_cli_error("out of memory; free some memory");
        return BMT_EXIT_FAIL;
    }
    return 0;
}

int bmt_an_out_close(struct bmt_out *o, const char *what)
{
    int fd = o->fd;
    int rc = bmt_out_close(o);
    if (fd > 2 && close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc < 0) {
        bmt_cli_error("%s: cannot write the output: %s; check the disk or pipe", what,
                      strerror(-rc));
        return BMT_EXIT_FAIL;
    }
    return BMT_EXIT_OK;
}
