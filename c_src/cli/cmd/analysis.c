/* What the analysis commands share (contract in analysis.h). */
#include "analysis.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void bmt_cmd_scope(const struct bmt_common *c, struct bmt_an_scope *s)
{
    bmt_an_scope_init(s);
    s->begin_text = c->begin;
    s->end_text = c->end;
    s->pids = c->pids.v;
    s->pid_count = c->pids.n;
    s->patterns = c->names.v;
    s->pattern_count = c->names.n;
    s->paths = c->dirs.v;
    s->path_count = c->dirs.n;
    snprintf(s->label, sizeof s->label, "%s", c->label);
}

void bmt_analysis_begin(struct bmt_analysis *a, const char *cmd, const struct bmt_common *c)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->dir = c->label;
    bmt_cmd_scope(c, &a->scope);
}

int bmt_analysis_run(struct bmt_analysis *a, const struct bmt_an_sub *subs, unsigned n)
{
    int rc = bmt_an_run(&a->r, &a->scope, subs, n, &a->pass);
    if (rc == -ENOMEM)
        snprintf(a->r.error, sizeof a->r.error, "out of memory; free some memory");
    return rc < 0 ? bmt_an_fail(a->cmd, a->dir, &a->r, rc) : 0;
}

int bmt_analysis_print(struct bmt_analysis *a, const char *path,
                       int (*print)(struct bmt_out *o, void *ctx), void *ctx)
{
    struct bmt_out o;
    if (bmt_an_out_open(&o, path) != 0)
        return BMT_EXIT_FAIL;
    int rc = print(&o, ctx);
    if (rc < 0)
        o.len = 0; /* nothing half-written */
    int status = bmt_an_out_close(&o, path ? path : a->cmd);
    if (rc < 0) {
        bmt_cli_error("out of memory; free some memory");
        return BMT_EXIT_FAIL;
    }
    return status;
}

struct one_print {
    const struct bmt_analysis_one *one;
    const struct bmt_analysis *a;
    const void *opts;
};

static int print_one(struct bmt_out *o, void *ctx)
{
    const struct one_print *p = ctx;
    return p->one->print(o, p->a, p->one->self, p->opts);
}

int bmt_analysis_main(const struct bmt_analysis_one *one, const void *opts)
{
    struct bmt_analysis a;
    int status = BMT_EXIT_FAIL;
    bmt_analysis_begin(&a, one->cmd, opts);
    if (one->acc->init(one->self, &a.scope) < 0) {
        bmt_cli_error("out of memory; free some memory");
    } else {
        if (one->configure)
            one->configure(one->self, opts, &a);
        struct bmt_an_sub sub = {one->acc, one->self};
        struct one_print p = {one, &a, opts};
        if ((status = bmt_analysis_run(&a, &sub, 1)) == 0)
            status = bmt_analysis_print(&a, NULL, print_one, &p);
    }
    one->acc->free(one->self);
    bmt_analysis_end(&a);
    return status;
}

int bmt_analysis_command(const struct bmt_command *cmd, const void *opts)
{
    void *state = calloc(1, cmd->state_size);
    if (!state) {
        bmt_cli_error("out of memory; free some memory");
        return BMT_EXIT_FAIL;
    }
    const struct bmt_analysis_one one = {cmd->name, cmd->acc, state, cmd->configure, cmd->print};
    int status = bmt_analysis_main(&one, opts);
    free(state);
    return status;
}

void bmt_analysis_end(struct bmt_analysis *a)
{
    bmt_reader_close(&a->r);
    bmt_an_scope_free(&a->scope);
}

int bmt_an_fail(const char *cmd, const char *dir, const struct bmt_reader *r, int rc)
{
    if (rc == BMT_AN_USAGE)
        return bmt_cli_usage_error(cmd, "%s", r->error);
    bmt_cli_error("%s: %s", dir, r->error[0] ? r->error : "cannot read the trace");
    return BMT_EXIT_FAIL;
}

int bmt_an_out_open(struct bmt_out *o, const char *path)
{
    int fd = 1;
    int created = 0;
    if (path && strcmp(path, "-") != 0) {
        /* Made here, or an existing file, fifo or device (-o /dev/null)
         * opened as it is: bmt_an_out_discard removes only the former.
         * Private, as the trace it comes from (it holds the same message
         * contents and names); never through a symlink, which someone
         * else may have planted where the output goes (/tmp). */
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0)
            created = 1;
        else if (errno == EEXIST)
            fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ELOOP) {
            bmt_cli_error("%s: is a symbolic link, which beamtrace does not write through; give "
                          "the path of the file itself (for standard output, -o - or no -o)",
                          path);
            return BMT_EXIT_FAIL;
        }
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
    o->created = created;
    return 0;
}

void bmt_an_out_discard(const struct bmt_out *o, const char *path)
{
    if (path && o->created)
        unlink(path);
}

int bmt_an_out_close(struct bmt_out *o, const char *what)
{
    int fd = o->fd;
    int rc = bmt_out_close(o);
    if (fd > 2 && close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc < 0) {
        bmt_cli_error("%s: cannot write the output: %s; check the disk or pipe",
                      strcmp(what, "-") == 0 ? "standard output" : what, strerror(-rc));
        return BMT_EXIT_FAIL;
    }
    return BMT_EXIT_OK;
}
