/* What the analysis commands share on the command line: parsing "CMD
 * [options] DIR...", the output file, and the error line of a failed pass.
 * Single-threaded. */
#ifndef BMT_CLI_ARGS_H
#define BMT_CLI_ARGS_H

#include "cli.h"
#include "model/run.h"
#include "base/out.h"

/* Prints the error line for a failed bmt_an_run ("beamtrace: DIR: ..." and
 * exit 1, or the usage line and exit 2 for BMT_AN_USAGE) and returns the
 * exit status. */
int bmt_an_fail(const char *cmd, const char *dir, const struct bmt_reader *r, int rc);

/* Common command-line parsing for "CMD [options] DIR...": handles --help,
 * --format (when `json` is non-NULL), --begin, --end, --pid, --name (into
 * `scope`, when non-NULL), and the positional directories (into
 * scope->paths: several, or a cluster directory, are read as one source;
 * *dir is then their label). Options specific
 * to the command are passed to `opt(ctx, code, arg)` (return 0 or a
 * usage-error status). `extra` is a getopt_long table of the command's
 * options terminated by a zero row; `shortopts` their short letters.
 * Returns 0 with *dir set, BMT_EXIT_OK after --help (*dir NULL), or the
 * usage error status. */
struct option;
int bmt_an_parse_args(const char *cmd, int argc, char **argv, const struct option *extra,
                      const char *shortopts, int (*opt)(void *ctx, int code, const char *arg),
                      void *ctx, int *json, struct bmt_an_scope *scope, const char **dir);

/* Opens stdout (or `path` when non-NULL, created/truncated) for output.
 * Returns 0, or prints the error line and returns BMT_EXIT_FAIL. */
int bmt_an_out_open(struct bmt_out *o, const char *path);

/* Closes `o` (and its file); prints the error line and returns
 * BMT_EXIT_FAIL on a write error, else BMT_EXIT_OK. */
int bmt_an_out_close(struct bmt_out *o, const char *what);

#endif
