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
 * The options every analysis shares (the scope: --begin, --end, --pid,
 * --name; and --format text|json) are declared once, in common.c, and
 * their values land in struct bmt_common, the first member of every
 * command's options struct; a command's own options land in the rest of
 * it (BMT_OPT_AT checks each field's C type against the option's value
 * type at compile time). Single-threaded.
 */
#ifndef BMT_CLI_OPTIONS_H
#define BMT_CLI_OPTIONS_H

#include "base/diag.h"

#include <stddef.h>
#include <stdint.h>

/* What an option's value is. Each type has one C type for its storage. */
enum bmt_opt_type {
    BMT_OPT_FLAG,     /* no value (int: 1 when given) */
    BMT_OPT_COUNT,    /* a whole number in [min, max] (uint64_t) */
    BMT_OPT_DURATION, /* a number and its unit: 800ns, 250us, 1.5ms, 2s, 3m, 1h (uint64_t ns;
                       * "infinity" = UINT64_MAX when BMT_OPT_INFINITY) */
    BMT_OPT_SIZE,     /* bytes, or with K, M or G (powers of 1024) (uint64_t) */
    BMT_OPT_ENUM,     /* one of values[] (int: its index) */
    BMT_OPT_TIME,     /* a --begin/--end time, resolved on the trace (const char *) */
    BMT_OPT_PID,      /* a pid or port: <0.66.0>, 0.66.0, #Port<0.7>, NODE/<0.66.0> */
    BMT_OPT_PROCESS,  /* a pid as BMT_OPT_PID, or a registered name or label */
    BMT_OPT_PATTERN,  /* text with '*' wildcards */
    BMT_OPT_FILE,     /* a file's path */
    BMT_OPT_DIR,      /* a directory's path */
    BMT_OPT_NODE,     /* an Erlang node name: name@host, or name */
    BMT_OPT_LIST,     /* comma-separated items, checked by check() (or values[]) */
    BMT_OPT_TEXT,     /* any text */
};

/* The C type each value type stores into (the pointer types point into
 * argv). Repeatable options store a struct bmt_strs. */
struct bmt_strs {
    const char **v;
    unsigned n;
};

enum {
    BMT_OPT_REPEAT = 1,       /* may be given several times (struct bmt_strs) */
    BMT_OPT_REQUIRED = 2,     /* must be given */
    BMT_OPT_OPTIONAL_ARG = 4, /* the value is optional: --opt or --opt=VALUE */
    BMT_OPT_INFINITY = 8,     /* a DURATION that also takes "infinity" */
    BMT_OPT_NONZERO = 16,     /* a DURATION or SIZE that must be above 0 */
};

struct bmt_opt {
    const char *name;           /* long name, without "--" */
    char letter;                /* short letter, or 0 */
    enum bmt_opt_type type;
    const char *arg;            /* the value's name in --help (N, DURATION, FILE); NULL: flag */
    const char *help;           /* one line; --help wraps it */
    const char *def;            /* default, as typed (parsed into the field before argv), or NULL */
    const char *const *values;  /* ENUM and LIST: accepted values, NULL-terminated */
    int64_t min, max;           /* COUNT: accepted range */
    unsigned flags;             /* BMT_OPT_* */
    const char *needs;          /* another option that must be given with it, or NULL */
    const char *excludes;       /* another option it cannot be given with, or NULL */
    const char *example;        /* a valid value (help, tests), or NULL: derived from the type */
    const char *term;           /* record: its key in the controller's options map, or NULL */
    /* LIST (and any type): checks a value; 0, or -1 with the error's text
     * (after "--name VALUE: ") in err. */
    int (*check)(const char *value, char *err, size_t size);
    size_t offset;              /* of its field in the command's options struct */
};

/* The values every analysis shares (common.c declares their options). */
struct bmt_common {
    const char *begin, *end;    /* --begin, --end: as given */
    struct bmt_strs pids;       /* --pid */
    struct bmt_strs names;      /* --name */
    int format;                 /* --format: index in the command's format values (0: text) */
    struct bmt_strs dirs;       /* the positional arguments: trace directories */
    char label[512];            /* how error lines name them */
};

/* Option groups a command takes besides its own. */
enum {
    BMT_USES_SCOPE = 1,  /* --begin --end --pid --name */
    BMT_USES_FORMAT = 2, /* --format text|json */
    BMT_USES_DIRS = 4,   /* DIR... positional arguments, at least one */
};

struct bmt_command {
    const char *name;
    const char *summary;        /* one line for `beamtrace --help` */
    const char *synopsis;       /* what follows "beamtrace NAME" in the usage line */
    const char *description;    /* --help's paragraphs, '\n'-separated lines */
    const char *epilog;         /* after the options (e.g. exit statuses), or NULL */
    const struct bmt_opt *opts; /* its own options, ended by a row with a NULL name */
    unsigned uses;              /* BMT_USES_* */
    size_t size;                /* of its options struct (starting with struct bmt_common) */
    int (*run)(void *opts);     /* returns the exit status */
};

/* Storage of option `field` of struct `S` for type `T` (checked). */
#define BMT_OPT_AT(S, field, T) \
    (offsetof(S, field) + 0 * sizeof(_Generic(((S *)0)->field, T: 1)))

/* The shared declarations (common.c). */
extern const struct bmt_opt bmt_scope_opts[];
extern const struct bmt_opt bmt_format_opt[];
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

/* Help and completion (help.c). */
void bmt_help_command(const struct bmt_command *cmd);
void bmt_help_version(const struct bmt_command *cmd);

#endif
