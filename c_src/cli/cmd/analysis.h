/* What the analysis commands share once their options are parsed
 * (options.h): the scope from the common options, the output file, and
 * the error line of a failed pass. Single-threaded. */
#ifndef BMT_CLI_ANALYSIS_H
#define BMT_CLI_ANALYSIS_H

#include "options.h"
#include "model/run.h"
#include "base/out.h"

/* One analysis command's pass: its scope, the reader and the pass's
 * summary. */
struct bmt_analysis {
    const char *cmd;
    const char *dir;            /* how error lines name the input */
    struct bmt_an_scope scope;
    struct bmt_reader r;
    struct bmt_an_pass pass;
};

/* Prepares `a` for command `cmd` with the common options `c`. */
void bmt_analysis_begin(struct bmt_analysis *a, const char *cmd, const struct bmt_common *c);

/* Reads the trace once, giving each of the `n` accumulators `subs` the
 * events it declared (model/acc.h), then finishing them. Returns 0, or the
 * exit status after the error line. */
int bmt_analysis_run(struct bmt_analysis *a, const struct bmt_an_sub *subs, unsigned n);

/* Opens stdout (or `path`), calls print(o, ctx), closes. Returns the exit
 * status: BMT_EXIT_FAIL after an error line when the output cannot be
 * opened or written, or print returns -ENOMEM. */
int bmt_analysis_print(struct bmt_analysis *a, const char *path,
                       int (*print)(struct bmt_out *o, void *ctx), void *ctx);

/* A command with one accumulator, start to end: the scope from its
 * common options, acc->init, configure (its options into the state, or
 * NULL), the pass, print to stdout, acc->free. */
struct bmt_analysis_one {
    const char *cmd;
    const struct bmt_acc *acc;
    void *self;                 /* the accumulator's state */
    void (*configure)(void *self, const void *opts, struct bmt_analysis *a);
    /* Prints the results; returns 0 or -ENOMEM. */
    int (*print)(struct bmt_out *o, const struct bmt_analysis *a, void *self, const void *opts);
};

/* Runs `one` with the command's options `opts` (a struct starting with
 * struct bmt_common). Returns the exit status. */
int bmt_analysis_main(const struct bmt_analysis_one *one, const void *opts);

/* Runs a command declared with an accumulator (options.h: cmd->acc) with
 * its options `opts`. Returns the exit status. */
int bmt_analysis_command(const struct bmt_command *cmd, const void *opts);

/* Closes the reader and frees the scope. */
void bmt_analysis_end(struct bmt_analysis *a);

/* Prepares `s` from the common options `c` (window, filter, the trace
 * directories; the arrays stay `c`'s). */
void bmt_cmd_scope(const struct bmt_common *c, struct bmt_an_scope *s);

/* Prints the error line for a failed bmt_an_run ("beamtrace: DIR: ..." and
 * exit 1, or the usage line and exit 2 for BMT_AN_USAGE) and returns the
 * exit status. */
int bmt_an_fail(const char *cmd, const char *dir, const struct bmt_reader *r, int rc);

/* Opens stdout (when `path` is NULL or "-", else `path`, created or
 * truncated, never through a symbolic link) for output.
 * Returns 0, or prints the error line and returns BMT_EXIT_FAIL. */
int bmt_an_out_open(struct bmt_out *o, const char *path);

/* Removes `path` after a failed output, if bmt_an_out_open made it: never
 * a file, fifo or device that was there before (-o /dev/null). */
void bmt_an_out_discard(const struct bmt_out *o, const char *path);

/* Closes `o` (and its file); prints the error line (naming `what`, "-"
 * as standard output) and returns
 * BMT_EXIT_FAIL on a write error, else BMT_EXIT_OK. */
int bmt_an_out_close(struct bmt_out *o, const char *what);

#endif
