/* The scope of an analysis (contract in scope.h). */
#include "scope.h"
#include "base/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bmt_an_scope_init(struct bmt_an_scope *s)
{
    memset(s, 0, sizeof *s);
    bmt_strtab_init(&s->kept);
    bmt_strtab_init(&s->own);
    bmt_runs_init(&s->runs);
    bmt_names_init(&s->names);
    s->window.end_ns = UINT64_MAX;
}

void bmt_an_scope_free(struct bmt_an_scope *s)
{
    bmt_strtab_free(&s->kept);
    bmt_strtab_free(&s->own);
    bmt_runs_free(&s->runs);
    bmt_names_free(&s->names);
}

int bmt_an_kept(const struct bmt_an_scope *s, const char *pid, size_t len)
{
    if (bmt_strtab_find(&s->kept, pid, len) >= 0)
        return 1;
    /* A cluster's kv@h2/<0.66.0> is kept by --pid <0.66.0> too (that pid
     * on every node). */
    size_t p = bmt_nodes_prefix(pid, len);
    return p && bmt_strtab_find(&s->kept, pid + p + 1, len - p - 1) >= 0;
}

int bmt_pid_like(const char *s)
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

/* A name or pattern that matches no process of the trace is an error: an
 * empty result would read as "the trace has no such events". */
static int matched(struct bmt_reader *r, const char *option, const char *value, int rc)
{
    if (rc != 0)
        return rc < 0 ? rc : 0;
    snprintf(r->error, sizeof r->error, "%s '%s' matches no process of the trace (no registered "
             "name%s it had); see the names with 'beamtrace calls --by pid' or "
             "'beamtrace procs'", option, value,
             option[2] == 'n' ? ", label or initial call" : " or label");
    return -ENOENT;
}

int bmt_an_scope_filter(struct bmt_an_scope *s, struct bmt_reader *r)
{
    int need_names = s->pattern_count > 0;
    for (unsigned i = 0; i < s->pid_count; i++) {
        const char *p = s->pids[i];
        if (!bmt_pid_like(p)) {
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
    if (rc == 0)
        rc = bmt_reader_select(r, &bmt_names_fields);
    const struct bmt_record *rec;
    while (rc == 0 && (rc = bmt_reader_next(r, &rec)) == 1) {
        bmt_names_event(&names);
        rc = rec->tp == BMT_TP_process_info || rec->tp == BMT_TP_process_spawn ||
                     rec->tp == BMT_TP_process_register
                 ? bmt_names_feed(&names, rec) : 0;
    }
    uint8_t *marks = rc == 0 ? calloc(names.pids.count + 1, 1) : NULL;
    if (rc == 0 && !marks)
        rc = -ENOMEM;
    for (unsigned i = 0; rc == 0 && i < s->pid_count; i++)
        if (!bmt_pid_like(s->pids[i]))
            rc = matched(r, "--pid", s->pids[i], bmt_names_select(&names, s->pids[i], 0, marks));
    for (unsigned i = 0; rc == 0 && i < s->pattern_count; i++)
        rc = matched(r, "--name", s->patterns[i],
                     bmt_names_select(&names, s->patterns[i], 1, marks));
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

int bmt_an_scope_window(struct bmt_an_scope *s, struct bmt_reader *r)
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

int bmt_an_parse_time(const struct bmt_reader *r, const char *text, uint64_t first_ns,
                      uint64_t *ts)
{
    int64_t wall;
    if (text[0] == '+') {
        uint64_t d;
        if (bmt_parse_duration_ns(text + 1, &d) < 0 || d > UINT64_MAX - first_ns)
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
