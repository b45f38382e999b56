/* `beamtrace flame`: where time goes per call stack, as folded stacks or
 * an interactive SVG flame graph (out/flame.h says how it is drawn,
 * model/flame.h what the widths are).
 *
 * By default a function's frame is as wide as the time it ran on a CPU,
 * and its process's time off CPU or collecting garbage while in it is
 * drawn as [runnable], [waiting] and [gc] frames on top; --on-cpu leaves
 * the off-CPU frames out, --off-cpu keeps only them. The root frame is the
 * process unless --merge-processes (pools of identical workers).
 */
#include "args.h"
#include "out/flame.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the command ---- */

static int feed(void *ctx, const struct bmt_record *rec)
{
    return bmt_callstack_feed(ctx, rec);
}

struct opts {
    int folded, merge;
    enum bmt_flame_mode mode;
    uint64_t unit_ns;
    const char *out, *title;
    unsigned width;
};

static int parse_opt(void *ctx, int code, const char *arg)
{
    struct opts *o = ctx;
    switch (code) {
    case 'F': o->folded = 1; return 0;
    case 'm': o->merge = 1; return 0;
    case 'o': o->out = arg; return 0;
    case 't': o->title = arg; return 0;
    case 'C':
    case 'O':
        if (o->mode != BMT_FLAME_ALL)
            return bmt_cli_usage_error("flame", "--on-cpu and --off-cpu exclude each other");
        o->mode = code == 'C' ? BMT_FLAME_ON_CPU : BMT_FLAME_OFF_CPU;
        return 0;
    case 'u':
        if (strcmp(arg, "us") == 0)
            o->unit_ns = 1000;
        else if (strcmp(arg, "ns") == 0)
            o->unit_ns = 1;
        else
            return bmt_cli_usage_error("flame", "--unit takes us or ns, not '%s'", arg);
        return 0;
    case 'w': {
        char *end;
        long w = strtol(arg, &end, 10);
        if (*end || w < 200 || w > 100000)
            return bmt_cli_usage_error("flame", "--width takes 200..100000 pixels, not '%s'", arg);
        o->width = (unsigned)w;
        return 0;
    }
    default:
        return bmt_cli_usage_error("flame", "unknown option");
    }
}

int bmt_cmd_flame(int argc, char **argv)
{
    static const struct option extra[] = {
        {"folded", no_argument, NULL, 'F'},
        {"merge-processes", no_argument, NULL, 'm'},
        {"on-cpu", no_argument, NULL, 'C'},
        {"off-cpu", no_argument, NULL, 'O'},
        {"unit", required_argument, NULL, 'u'},
        {"output", required_argument, NULL, 'o'},
        {"title", required_argument, NULL, 't'},
        {"width", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    struct opts opts = {0, 0, BMT_FLAME_ALL, 1000, NULL, NULL, 1200};
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("flame", argc, argv, extra, "o:", parse_opt, &opts, NULL, &scope,
                               &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_reader r;
    struct bmt_callstack cs;
    struct bmt_an_pass pass;
    bmt_callstack_init(&cs, &scope);
    cs.tree = 1;
    cs.merge_processes = opts.merge;
    int status = BMT_EXIT_FAIL;
    rc = bmt_an_run(&r, dir, &scope, feed, &cs, &pass);
    if (rc == 0 && bmt_callstack_finish(&cs, pass.end_ns) < 0) {
        rc = -ENOMEM;
        snprintf(r.error, sizeof r.error, "out of memory; free some memory");
    }
    struct bmt_out o;
    if (rc < 0) {
        status = bmt_an_fail("flame", dir, &r, rc);
    } else if (opts.mode != BMT_FLAME_ALL && !scope.sched_count) {
        status = bmt_cli_usage_error("flame", "%s needs process_scheduled events, which %s lacks "
                                     "(record with the running flag)",
                                     opts.mode == BMT_FLAME_ON_CPU ? "--on-cpu" : "--off-cpu", dir);
    } else if (bmt_an_out_open(&o, opts.out) == 0) {
        char title[600], sub[200];
        bmt_flame_subtitle(&cs, opts.mode, sub, sizeof sub);
        snprintf(title, sizeof title, "%s: %s", opts.title ? opts.title : "Flame graph", sub);
        rc = opts.folded ? bmt_flame_folded(&o, &cs, opts.unit_ns, opts.mode)
                         : bmt_flame_svg(&o, &cs, title, opts.width, 1, opts.mode);
        if (rc < 0)
            bmt_cli_error("out of memory; free some memory");
        status = bmt_an_out_close(&o, opts.out ? opts.out : "flame");
        if (rc < 0)
            status = BMT_EXIT_FAIL;
        if (scope.call_count == 0)
            bmt_reader_warn(&r, "%s: no function_call events%s: the flame graph is empty (trace "
                            "with the call flag and erlang:trace_pattern/3, return_trace in the "
                            "match spec)", dir, scope.windowed || scope.filtering ? " in the chosen "
                            "window and processes" : "");
        if (cs.pruned_calls || cs.pruned_processes)
            bmt_reader_warn(&r, "%s: the call tree reached %u stacks: %llu calls in new stacks were "
                            "charged to their callers, %llu processes drawn as [other processes]",
                            dir, cs.max_nodes, (unsigned long long)cs.pruned_calls,
                            (unsigned long long)cs.pruned_processes);
    }
    bmt_callstack_free(&cs);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status;
}
