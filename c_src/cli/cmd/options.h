/* Commands and their options, declared once.
 *
 * Each command is one struct bmt_command (one row of main.c's table); each
 * of its options one struct bmt_opt: long name, short letter, value type,
 * argument name, one-line help, default, accepted values or range, the
 * options it needs or excludes, an example value, and where its value
 * goes. From these declarations alone come the getopt_long table, the
 * parsing and checking of every value (a bad one is one line naming what
 * is accepted, exit 2), the defaults, `--help` (in the form help2man
 * reads), `beamtrace help --format json` (what the option test and man
 * pages read) and `beamtrace completion bash` — as Redis's commands.def
 * feeds both its server and redis-cli.
 *
 * The declarations' types are in base/opt.h (record/ declares its own
 * options with them). The options every analysis shares (the scope:
 * --begin, --end, --pid, --name; --format text|json; -o FILE) are
 * declared once, in common.c, and their values land in struct bmt_common,
 * the first member of every command's options struct; a command's own
 * options land in the rest of it (BMT_OPT_AT checks each field's C type
 * against the option's value type at compile time). Single-threaded.
 */
#ifndef BMT_CLI_OPTIONS_H
#define BMT_CLI_OPTIONS_H

#include "base/diag.h"
#include "base/opt.h"

#include <stddef.h>
#include <stdint.h>

/* Option groups a command takes besides its own. */
enum {
    BMT_USES_SCOPE = 1,   /* --begin --end --pid --name */
    BMT_USES_FORMAT = 2,  /* --format text|json */
    BMT_USES_DIRS = 4,    /* DIR... positional arguments, at least one */
    BMT_USES_WORD = 8,    /* one positional word, optional: one of `words` (completion) or a
                           * command's name (help); in struct bmt_common's dirs */
    BMT_USES_OUTPUT = 16, /* -o, --output FILE (instead of stdout) */
    /* What every analysis takes. */
    BMT_USES_ANALYSIS = BMT_USES_SCOPE | BMT_USES_FORMAT | BMT_USES_DIRS,
};

struct bmt_acc;
struct bmt_analysis;
struct bmt_out;

struct bmt_command {
    const char *name;
    const char *summary;        /* one line for `beamtrace --help` */
    const char *synopsis;       /* what follows "beamtrace NAME" in the usage line, or NULL:
                                 * "[OPTION]... DIR..." (BMT_USES_DIRS) or "[OPTION]..." */
    const char *description;    /* --help's paragraphs, '\n'-separated lines */
    const char *epilog;         /* after the options (e.g. exit statuses), or NULL */
    const struct bmt_opt *opts; /* its own options, ended by a row with a NULL name */
    unsigned uses;              /* BMT_USES_* */
    const char *words;          /* BMT_USES_WORD: the words taken, space-separated, or NULL:
                                 * a command's name */
    size_t size;                /* of its options struct (starting with struct bmt_common) */
    int (*run)(void *opts);     /* returns the exit status; or NULL: */
    /* A command with one accumulator (model/acc.h): its state's size, its
     * options into that state (or NULL), and what it prints (analysis.h
     * runs the rest). */
    const struct bmt_acc *acc;
    size_t state_size;
    void (*configure)(void *self, const void *opts, struct bmt_analysis *a);
    int (*print)(struct bmt_out *o, const struct bmt_analysis *a, void *self, const void *opts);
};

/* The shared declarations (common.c). */
extern const struct bmt_opt bmt_scope_opts[];
extern const struct bmt_opt bmt_format_opt[];
extern const struct bmt_opt bmt_output_opt[];
extern const char *const bmt_text_json[];  /* "text", "json" */
/* The paragraph on DIR... of every command that reads traces. */
extern const char bmt_input_help[];

/* Parses argv (argv[0]: the command's name) into `opts` (cmd->size bytes,
 * zeroed, defaults set first) as `cmd` declares. Returns 0; BMT_EXIT_OK
 * with *done set after --help or --version (printed); or BMT_EXIT_USAGE
 * after one error line. Free what it allocated with bmt_opts_free. */
int bmt_opts_parse(const struct bmt_command *cmd, int argc, char **argv, void *opts, int *done);
void bmt_opts_free(const struct bmt_command *cmd, void *opts);

/* 1 when option `name` of `cmd` was given on the command line last parsed. */
int bmt_opts_given(const struct bmt_command *cmd, const char *name);

/* A usage error about option `o` and value `value` ("--top x: expected
 * ..."), one line; returns BMT_EXIT_USAGE. */
int bmt_opts_bad_value(const struct bmt_command *cmd, const struct bmt_opt *o, const char *value,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Every option `cmd` takes, in --help order: its own, then the shared
 * groups it uses. Calls fn for each with the group's title. */
void bmt_opts_each(const struct bmt_command *cmd,
                   void (*fn)(void *ctx, const char *group, const struct bmt_opt *o), void *ctx);

/* Help and completion (help.c); the usage line after "beamtrace NAME". */
const char *bmt_synopsis(const struct bmt_command *cmd);
void bmt_help_command(const struct bmt_command *cmd);
void bmt_help_version(const struct bmt_command *cmd);

#endif
