/* `beamtrace report`: one self-contained HTML page (inline CSS and SVG,
 * one small inline script for the flame graph's zoom, nothing fetched)
 * with the trace summary, the latency histograms (send -> scheduled, GC
 * pauses, the top functions' call latency), the top functions with where
 * their time went, the processes, the flame graph (on-CPU time with
 * off-CPU frames), a timeline of when the busiest processes ran and the
 * counters of the samples option as line charts (counters.h).
 *
 * Everything comes from one pass that feeds every accumulator of
 * model/report.h (calls, sched, gc, procs, the timeline and the counters), under the same scope as the
 * other analyses (--begin, --end, --pid, --name); processes appear as
 * "<0.66.0> name".
 */
#include "args.h"
#include "out/report_html.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_opt(void *ctx, int code, const char *arg)
{
    if (code != 'o')
        return bmt_cli_usage_error("report", "unknown option");
    *(const char **)ctx = arg;
    return 0;
}

int bmt_cmd_report(int argc, char **argv)
{
    static const struct option extra[] = {
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("report", argc, argv, extra, "o:", parse_opt, &out, NULL, &scope,
                               &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    if (!out) {
        bmt_an_scope_free(&scope);
        return bmt_cli_usage_error("report", "no output file given (-o report.html)");
    }
    struct bmt_report r;
    struct bmt_reader rd;
    struct bmt_an_pass pass;
    int status = BMT_EXIT_FAIL;
    memset(&rd, 0, sizeof rd);
    if (bmt_report_init(&r, &scope) < 0) {
        bmt_cli_error("out of memory; free some memory");
        goto done;
    }
    rc = bmt_an_run(&rd, dir, &scope, bmt_report_feed, &r, &pass);
    if (rc == 0 && bmt_report_finish(&r, pass.end_ns) < 0) {
        rc = -ENOMEM;
        snprintf(rd.error, sizeof rd.error, "out of memory; free some memory");
    }
    if (rc < 0) {
        status = bmt_an_fail("report", dir, &rd, rc);
        goto done;
    }
    struct bmt_out o;
    if (bmt_an_out_open(&o, out) != 0)
        goto done;
    rc = bmt_report_html(&o, dir, &rd, &r, &scope, &pass);
    if (rc < 0)
        bmt_cli_error("out of memory; free some memory");
    status = bmt_an_out_close(&o, out);
    if (rc < 0)
        status = BMT_EXIT_FAIL;
done:
    bmt_report_free(&r);
    bmt_reader_close(&rd);
    bmt_an_scope_free(&scope);
    return status;
}
