/* Command-line parsing and output files shared by the analysis commands
 * (contract in cli.h). */
#include "args.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int bmt_an_fail(const char *cmd, const char *dir, const struct bmt_reader *r, int rc)
{
    if (rc == BMT_AN_USAGE)
        return bmt_cli_usage_error(cmd, "%s", r->error);
    bmt_cli_error("%s: %s", dir, r->error[0] ? r->error : "cannot read the trace");
    return BMT_EXIT_FAIL;
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
