/* Parsing a command line as its declarations say (contract in options.h).
 *
 * One getopt_long table is built from the declarations of the command's
 * own options, the shared groups it uses and --help/--version; each value
 * is checked by its type and stored where its declaration says. Errors are
 * one line naming the option, the value and what is accepted.
 */
#include "options.h"
#include "model/scope.h"
#include "ctf/reader.h"
#include "base/units.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OPTS 64

static const struct bmt_opt builtin[] = {
    {.name = "help", .letter = 'h', .type = BMT_OPT_FLAG, .help = "show this help and exit"},
    {.name = "version", .type = BMT_OPT_FLAG, .help = "show the version and exit"},
    {0},
};

/* A command's options in --help order, each with its group's title. */
struct optset {
    const struct bmt_opt *o[MAX_OPTS];
    const char *group[MAX_OPTS];
    unsigned n;
};

static void add_group(struct optset *s, const struct bmt_opt *g, const char *title)
{
    for (; g && g->name && s->n < MAX_OPTS; g++) {
        s->group[s->n] = title;
        s->o[s->n++] = g;
    }
}

static void gather(const struct bmt_command *cmd, struct optset *s)
{
    s->n = 0;
    add_group(s, cmd->opts, "Options");
    if (cmd->uses & BMT_USES_OUTPUT)
        add_group(s, bmt_output_opt, "Options");
    if (cmd->uses & BMT_USES_FORMAT)
        add_group(s, bmt_format_opt, "Options");
    add_group(s, builtin, "Options");
    if (cmd->uses & BMT_USES_SCOPE)
        add_group(s, bmt_scope_opts, "Scope options");
}

/* The command line last parsed: its command, options and which were given. */
static const struct bmt_command *current;
static struct optset parsed;
static unsigned char given[MAX_OPTS];

static void collect(const struct bmt_command *cmd)
{
    current = cmd;
    gather(cmd, &parsed);
    memset(given, 0, sizeof given);
}

void bmt_opts_each(const struct bmt_command *cmd,
                   void (*fn)(void *ctx, const char *group, const struct bmt_opt *o), void *ctx)
{
    struct optset s;
    gather(cmd, &s);
    for (unsigned i = 0; i < s.n; i++)
        fn(ctx, s.group[i], s.o[i]);
}

static int find(const char *name)
{
    for (unsigned i = 0; i < parsed.n; i++)
        if (strcmp(parsed.o[i]->name, name) == 0)
            return (int)i;
    return -1;
}

int bmt_opts_given(const struct bmt_command *cmd, const char *name)
{
    if (cmd != current)
        return 0;
    int i = find(name);
    return i >= 0 && given[i];
}

int bmt_opts_bad_value(const struct bmt_command *cmd, const struct bmt_opt *o, const char *value,
                       const char *fmt, ...)
{
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bmt_cli_usage_error(cmd->name, "--%s %s: %s", o->name, value, msg);
}

/* "a, b or c" from a NULL-terminated list. */
static void join_values(const char *const *v, char *out, size_t size)
{
    size_t n = 0, len = 0;
    while (v[n])
        n++;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%s", i == 0 ? "" : i + 1 == n ? " or "
                                                                                     : ", ",
                                v[i]);
}

/* "1000", "64K", "64KiB", "10M", "1G" (powers of 1024). */
static int parse_size(const char *s, uint64_t *bytes)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-' || *s == '+')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10, end++; break;
    case 'm': case 'M': shift = 20, end++; break;
    case 'g': case 'G': shift = 30, end++; break;
    default: return -1;
    }
    if ((*end && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0) ||
        v > (UINT64_C(1) << 62) >> shift)
        return -1;
    *bytes = (uint64_t)v << shift;
    return 0;
}

static int parse_count(const struct bmt_opt *o, const char *s, uint64_t *v)
{
    int64_t max = o->max ? o->max : INT64_MAX;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] < '0' || s[0] > '9' || x > (unsigned long long)max ||
        (int64_t)x < o->min)
        return -1;
    *v = x;
    return 0;
}

static int check_list(const struct bmt_opt *o, const char *value, char *err, size_t size)
{
    if (!o->values)
        return 0;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", value);
    char *save = NULL;
    int items = 0;
    for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save), items++) {
        unsigned k = 0;
        while (o->values[k] && strcmp(o->values[k], it) != 0)
            k++;
        if (!o->values[k]) {
            char v[600];
            join_values(o->values, v, sizeof v);
            snprintf(err, size, "unknown item '%s': expected a comma-separated list of %s", it, v);
            return -1;
        }
    }
    if (!items) {
        snprintf(err, size, "expected a comma-separated list");
        return -1;
    }
    return 0;
}

/* Checks `v` as option `o`'s type and stores it. Returns 0, or the usage
 * error's status after its line. */
static int set_value(const struct bmt_command *cmd, const struct bmt_opt *o, const char *v,
                     void *opts)
{
    void *f = (char *)opts + o->offset;
    char err[800], vals[600];
    switch (o->type) {
    case BMT_OPT_FLAG:
        *(int *)f = 1;
        return 0;
    case BMT_OPT_COUNT:
        if ((o->flags & BMT_OPT_INFINITY) && strcmp(v, "infinity") == 0) {
            *(uint64_t *)f = UINT64_MAX;
            return 0;
        }
        if (parse_count(o, v, f) == 0)
            return 0;
        if (!o->max)
            return bmt_opts_bad_value(cmd, o, v, "expected a whole number, %lld or more%s",
                                      (long long)o->min,
                                      o->flags & BMT_OPT_INFINITY ? ", or infinity" : "");
        return bmt_opts_bad_value(cmd, o, v, "expected a whole number from %lld to %lld",
                                  (long long)o->min, (long long)o->max);
    case BMT_OPT_DURATION:
        if ((o->flags & BMT_OPT_INFINITY) && strcmp(v, "infinity") == 0) {
            *(uint64_t *)f = UINT64_MAX;
            return 0;
        }
        if (bmt_parse_duration_ns(v, f) == 0 && (!(o->flags & BMT_OPT_NONZERO) || *(uint64_t *)f))
            break;
        return bmt_opts_bad_value(cmd, o, v, "expected a duration%s with its unit (%s), e.g. "
                                  "%s%s", o->flags & BMT_OPT_NONZERO ? " above 0" : "",
                                  BMT_DURATION_UNITS, o->example ? o->example : "250us",
                                  o->flags & BMT_OPT_INFINITY ? ", or infinity" : "");
    case BMT_OPT_SIZE:
        if (parse_size(v, f) == 0 && (!(o->flags & BMT_OPT_NONZERO) || *(uint64_t *)f))
            break;
        return bmt_opts_bad_value(cmd, o, v, "expected a size in bytes, or with K, M or G "
                                  "(powers of 1024), e.g. %s", o->example ? o->example : "100M");
    case BMT_OPT_ENUM:
        for (int k = 0; o->values[k]; k++)
            if (strcmp(o->values[k], v) == 0) {
                *(int *)f = k;
                return 0;
            }
        join_values(o->values, vals, sizeof vals);
        return bmt_opts_bad_value(cmd, o, v, "expected %s", vals);
    case BMT_OPT_PID:
        if (!bmt_pid_like(v))
            return bmt_opts_bad_value(cmd, o, v, "expected a pid (<0.66.0>, 0.66.0, "
                                      "NODE/<0.66.0>) or a port (#Port<0.7>)");
        break;
    case BMT_OPT_LIST:
        if (!o->check && check_list(o, v, err, sizeof err) != 0)
            return bmt_opts_bad_value(cmd, o, v, "%s", err);
        break;
    default:
        if (!v[0])
            return bmt_opts_bad_value(cmd, o, "''", "expected %s", o->arg ? o->arg : "a value");
        break;
    }
    if (o->check && o->check(v, err, sizeof err) != 0)
        return bmt_cli_usage_error(cmd->name, "%s", err);
    if (o->type == BMT_OPT_DURATION || o->type == BMT_OPT_SIZE)
        return 0;
    if (o->flags & BMT_OPT_REPEAT) {
        struct bmt_strs *s = f;
        s->v[s->n++] = v;
    } else {
        *(const char **)f = v;
    }
    return 0;
}

/* Defaults, then room for repeatable values (at most `argc`). */
static int prepare(const struct bmt_command *cmd, int argc, void *opts)
{
    memset(opts, 0, cmd->size);
    for (unsigned i = 0; i < parsed.n; i++) {
        const struct bmt_opt *o = parsed.o[i];
        if (o->flags & BMT_OPT_REPEAT) {
            struct bmt_strs *s = (struct bmt_strs *)((char *)opts + o->offset);
            if (!(s->v = calloc((size_t)argc + 1, sizeof *s->v)))
                return -ENOMEM;
        }
        if (o->def && set_value(cmd, o, o->def, opts) != 0) {
            bmt_cli_error("internal error: %s --%s: default '%s' is not a valid value", cmd->name,
                          o->name, o->def);
            return -EINVAL;
        }
    }
    return 0;
}

/* The getopt_long table and short letters of `all`. */
static void table(struct option *longopts, char *shorts)
{
    size_t s = 0;
    shorts[s++] = ':';
    for (unsigned i = 0; i < parsed.n; i++) {
        const struct bmt_opt *o = parsed.o[i];
        int has = o->type == BMT_OPT_FLAG ? no_argument
                  : o->flags & BMT_OPT_OPTIONAL_ARG ? optional_argument : required_argument;
        longopts[i] = (struct option){o->name, has, NULL, 256 + (int)i};
        if (o->letter) {
            shorts[s++] = o->letter;
            if (has != no_argument)
                shorts[s++] = ':';
            if (has == optional_argument)
                shorts[s++] = ':';
        }
    }
    longopts[parsed.n] = (struct option){NULL, 0, NULL, 0};
    shorts[s] = '\0';
}

/* What getopt could not take: one line. */
static int getopt_error(const struct bmt_command *cmd, int c, const char *arg)
{
    if (c == ':')
        return bmt_cli_usage_error(cmd->name, "option '%s' needs a value", arg);
    if (optopt >= 256 && optopt < 256 + (int)parsed.n)
        return bmt_cli_usage_error(cmd->name, "option '--%s' takes no value",
                                   parsed.o[optopt - 256]->name);
    return bmt_cli_usage_error(cmd->name, "unknown option '%s'", arg);
}

/* --needs and --excludes, and required options. */
static int relations(const struct bmt_command *cmd)
{
    for (unsigned i = 0; i < parsed.n; i++) {
        const struct bmt_opt *o = parsed.o[i];
        if ((o->flags & BMT_OPT_REQUIRED) && !given[i])
            return bmt_cli_usage_error(cmd->name, "--%s %s is required", o->name,
                                       o->arg ? o->arg : "");
        if (!given[i])
            continue;
        if (o->needs && !bmt_opts_given(cmd, o->needs))
            return bmt_cli_usage_error(cmd->name, "--%s needs --%s", o->name, o->needs);
        if (o->excludes && bmt_opts_given(cmd, o->excludes))
            return bmt_cli_usage_error(cmd->name, "--%s and --%s exclude each other", o->name,
                                       o->excludes);
    }
    return 0;
}

/* 1 when `w` is one of the space-separated `words`. */
static int word_in(const char *words, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = words; *p;) {
        size_t k = strcspn(p, " ");
        if (k == n && memcmp(p, w, n) == 0)
            return 1;
        p += k;
        while (*p == ' ')
            p++;
    }
    return 0;
}

static int positionals(const struct bmt_command *cmd, int argc, char **argv, void *opts)
{
    struct bmt_common *c = opts;
    if (cmd->uses & BMT_USES_WORD) {
        if (argc - optind > 1)
            return bmt_cli_usage_error(cmd->name, "unexpected argument '%s'", argv[optind + 1]);
        if (optind < argc && cmd->words && !word_in(cmd->words, argv[optind]))
            return bmt_cli_usage_error(cmd->name, "unknown argument '%s' (expected %s)",
                                       argv[optind], cmd->words);
        c->dirs.v = (const char **)argv + optind;
        c->dirs.n = (unsigned)(argc - optind);
        return 0;
    }
    if (!(cmd->uses & BMT_USES_DIRS)) {
        if (optind < argc)
            return bmt_cli_usage_error(cmd->name, "unexpected argument '%s'", argv[optind]);
        return 0;
    }
    if (optind == argc)
        return bmt_cli_usage_error(cmd->name, "no trace directory given");
    c->dirs.v = (const char **)argv + optind;
    c->dirs.n = (unsigned)(argc - optind);
    bmt_reader_label(c->dirs.v, c->dirs.n, c->label, sizeof c->label);
    return 0;
}

int bmt_opts_parse(const struct bmt_command *cmd, int argc, char **argv, void *opts, int *done)
{
    struct option longopts[MAX_OPTS + 1];
    char shorts[3 * MAX_OPTS + 2];
    *done = 0;
    collect(cmd);
    int rc = prepare(cmd, argc, opts);
    if (rc < 0)
        return rc == -ENOMEM ? (bmt_cli_error("out of memory; free some memory"), BMT_EXIT_FAIL)
                             : BMT_EXIT_FAIL;
    table(longopts, shorts);
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        int i = c >= 256 ? c - 256 : -1;
        for (unsigned k = 0; i < 0 && k < parsed.n && c != '?' && c != ':'; k++)
            if (parsed.o[k]->letter == c)
                i = (int)k;
        if (i < 0)
            return getopt_error(cmd, c, argv[optind - 1]);
        const struct bmt_opt *o = parsed.o[i];
        given[i] = 1;
        if (o >= builtin && o < builtin + 2) {
            *done = 1;
            if (o == builtin)
                bmt_help_command(cmd);
            else
                bmt_help_version(cmd);
            return BMT_EXIT_OK;
        }
        if ((o->flags & BMT_OPT_OPTIONAL_ARG) && !optarg)
            *(const char **)((char *)opts + o->offset) = ""; /* given without its value */
        else if ((rc = set_value(cmd, o, optarg ? optarg : "", opts)) != 0)
            return rc;
    }
    if ((rc = relations(cmd)) != 0 || (rc = positionals(cmd, argc, argv, opts)) != 0)
        return rc;
    tzset();
    return 0;
}

void bmt_opts_free(const struct bmt_command *cmd, void *opts)
{
    struct optset s;
    gather(cmd, &s);
    for (unsigned i = 0; i < s.n; i++)
        if (s.o[i]->flags & BMT_OPT_REPEAT)
            free(((struct bmt_strs *)((char *)opts + s.o[i]->offset))->v);
}
