/* Shared helpers of the analysis subcommands (contract in analysis.h). */
#include "analysis.h"
#include "cli.h"

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

int bmt_an_run(struct bmt_reader *r, const char *dir,
               int (*feed)(void *ctx, const struct bmt_record *rec), void *ctx,
               struct bmt_an_pass *pass)
{
    memset(pass, 0, sizeof *pass);
    (void)bmt_an_fields();
    int rc = bmt_reader_open(r, dir);
    if (rc < 0)
        return rc;
    const struct bmt_record *rec;
    while ((rc = bmt_reader_next(r, &rec)) == 1) {
        if (pass->event_count++ == 0)
            pass->first_ns = rec->ts_ns;
        pass->last_ns = rec->ts_ns;
        rc = feed(ctx, rec);
        if (rc < 0) {
            if (rc == -ENOMEM)
                snprintf(r->error, sizeof r->error, "out of memory; free some memory");
            return rc;
        }
    }
    if (rc < 0)
        return rc;
    for (unsigned s = 0; s < r->stream_count; s++) {
        pass->discarded_count += r->streams[s].discarded_count;
        pass->lost_packet_count += r->streams[s].lost_packet_count;
    }
    return 0;
}

int bmt_an_fail(const char *dir, const struct bmt_reader *r)
{
    bmt_cli_error("%s: %s", dir, r->error[0] ? r->error : "cannot read the trace");
    return BMT_EXIT_FAIL;
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
                      void *ctx, int *json, const char **dir)
{
    struct option longopts[32];
    unsigned n = 0;
    for (; extra && extra[n].name && n < 28; n++)
        longopts[n] = extra[n];
    longopts[n++] = (struct option){"format", required_argument, NULL, 0x100};
    longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    char shorts[64];
    snprintf(shorts, sizeof shorts, ":h%s", shortopts ? shortopts : "");
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
    if (optind != argc - 1)
        return bmt_cli_usage_error(cmd, optind == argc ? "no trace directory given"
                                                       : "expected one trace directory, got %d",
                                   argc - optind);
    *dir = argv[optind];
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
