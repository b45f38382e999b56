/* The options every analysis shares, declared once (options.h). */
#include "options.h"

const char *const bmt_text_json[] = {"text", "json", NULL};

#define COMMON(field, T) BMT_OPT_AT(struct bmt_common, field, T)

/* The scope (model/scope.h): a window and a process filter. */
const struct bmt_opt bmt_scope_opts[] = {
    {.name = "begin", .type = BMT_OPT_TIME, .arg = "TIME",
     .help = "count from TIME: HH:MM:SS[.nnn] or YYYY-MM-DD HH:MM:SS[.nnn] (local time, Z for "
             "UTC), or +DURATION after the first event (+2s, +250ms)",
     .example = "+1us", .offset = COMMON(begin, const char *)},
    {.name = "end", .type = BMT_OPT_TIME, .arg = "TIME", .help = "stop at TIME (same forms)",
     .example = "+1h", .offset = COMMON(end, const char *)},
    {.name = "pid", .letter = 'p', .type = BMT_OPT_PROCESS, .arg = "PID|NAME",
     .help = "only this process: <0.66.0>, 0.66.0, kv@h2/<0.66.0> (in a cluster, <0.66.0> is "
             "that pid on every node), or a registered name or label it ever had (repeatable)",
     .flags = BMT_OPT_REPEAT, .offset = COMMON(pids, struct bmt_strs)},
    {.name = "name", .type = BMT_OPT_PATTERN, .arg = "PATTERN",
     .help = "only processes whose name, label or initial call matches PATTERN ('*' "
             "wildcards; OTP's or Elixir's spelling, e.g. 'rabbit_channel*', 'MyApp.*'; "
             "repeatable)",
     .flags = BMT_OPT_REPEAT, .offset = COMMON(names, struct bmt_strs)},
    {0},
};

const struct bmt_opt bmt_format_opt[] = {
    {.name = "format", .type = BMT_OPT_ENUM, .help = "text for people, json for programs "
     "(times in ns)", .def = "text", .values = bmt_text_json,
     .offset = COMMON(format, int)},
    {0},
};

const struct bmt_opt bmt_output_opt[] = {
    {.name = "output", .letter = 'o', .type = BMT_OPT_FILE, .arg = "FILE",
     .help = "write to FILE instead of stdout (- for stdout; made private, 0600; never through a "
     "symlink)", .offset = COMMON(output, const char *)},
    {0},
};

const char bmt_input_help[] =
    "DIR is a trace directory, or a directory above traces (a cluster directory of\n"
    "`record --nodes`: one trace per node); several DIRs are read as one. Traces of\n"
    "several nodes merge in time order on their common clock, and every process is\n"
    "shown node-qualified: kv@h2/<0.312.0> (docs/cluster.md).";
