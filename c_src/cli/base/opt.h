/* An option's declaration: what it takes, how --help shows it, where its
 * value goes (cmd/options.h parses a command line with these). Below every
 * layer that declares options: the commands (cmd/) and `record`'s own
 * (record/options.c, whose rows also name the controller's option keys).
 */
#ifndef BMT_CLI_OPT_H
#define BMT_CLI_OPT_H

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
    BMT_OPT_INFINITY = 8,     /* a DURATION or COUNT that also takes "infinity" */
    BMT_OPT_NONZERO = 16,     /* a DURATION or SIZE that must be above 0 */
    BMT_OPT_AS_TERM = 32,     /* record: a TEXT value goes into the controller's term as typed
                               * (its check() admits only an integer or an atom) */
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
    /* LIST (and any type): checks a value; 0, or -1 with the whole error
     * line's text (naming the option and what it accepts) in err. */
    int (*check)(const char *value, char *err, size_t size);
    size_t offset;              /* of its field in the command's options struct */
};

/* The values every command's options struct starts with: the shared
 * options' (cmd/common.c declares them) and the positional arguments. */
struct bmt_common {
    const char *begin, *end;    /* --begin, --end: as given */
    struct bmt_strs pids;       /* --pid */
    struct bmt_strs names;      /* --name */
    int format;                 /* --format: index in the command's format values (0: text) */
    const char *output;         /* -o, --output FILE, or NULL: stdout */
    struct bmt_strs dirs;       /* the positional arguments: trace directories */
    char label[512];            /* how error lines name them */
};

/* Storage of option `field` of struct `S` for type `T` (checked). */
#define BMT_OPT_AT(S, field, T) \
    (offsetof(S, field) + 0 * sizeof(_Generic(((S *)0)->field, T: 1)))

#endif
