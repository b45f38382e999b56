/* Help, version and completion, from the declarations alone (options.h).
 *
 * --help follows the layout help2man reads (`help2man -N priv/beamtrace`,
 * and `help2man -N 'priv/beamtrace calls'` for a command): a "Usage:"
 * line, the summary, the description, then "Options:" with one option per
 * line ("  -p, --pid PID|NAME" and its help from column 30, wrapped at 79)
 * and the shared groups as titled sub-sections. `beamtrace help --format
 * json` gives every declaration to programs (the option test, man pages);
 * `beamtrace completion bash` writes a bash completion script.
 */
#include "options.h"
#include "commands.h"
#include "out/json.h"

#include <stdio.h>
#include <string.h>

#define HELP_COL 30
#define HELP_WIDTH 79

static const char *const type_names[] = {
    [BMT_OPT_FLAG] = "flag",      [BMT_OPT_COUNT] = "count",     [BMT_OPT_DURATION] = "duration",
    [BMT_OPT_SIZE] = "size",      [BMT_OPT_ENUM] = "enum",       [BMT_OPT_TIME] = "time",
    [BMT_OPT_PID] = "pid",        [BMT_OPT_PROCESS] = "process", [BMT_OPT_PATTERN] = "pattern",
    [BMT_OPT_FILE] = "file",      [BMT_OPT_DIR] = "dir",         [BMT_OPT_NODE] = "node",
    [BMT_OPT_LIST] = "list",      [BMT_OPT_TEXT] = "text",
};

/* Writes `text` from column `col` (the cursor is there), wrapped at
 * HELP_WIDTH, continuation lines indented to `indent`. */
static void wrap(FILE *f, const char *text, unsigned col, unsigned indent)
{
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " ");
        if (col > indent && col + 1 + word > HELP_WIDTH) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, word, f);
        col += (unsigned)word;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

/* The value's name as --help shows it: ENUMs list their values. */
static void arg_text(const struct bmt_opt *o, char *buf, size_t size)
{
    buf[0] = '\0';
    if (o->type == BMT_OPT_FLAG)
        return;
    size_t n = 0;
    if (o->type == BMT_OPT_ENUM && !o->arg)
        for (unsigned k = 0; o->values[k] && n < size; k++)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", k ? "|" : "", o->values[k]);
    else
        snprintf(buf, size, "%s", o->arg);
}

/* "(1 to 1000; default 10)" or "" */
static void tail_text(const struct bmt_opt *o, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    if (o->type == BMT_OPT_COUNT && o->max)
        n += (size_t)snprintf(buf, size, "%lld to %lld", (long long)o->min, (long long)o->max);
    if (o->def && n < size)
        n += (size_t)snprintf(buf + n, size - n, "%sdefault %s", n ? "; " : "", o->def);
    if (n && n + 3 < size) {
        memmove(buf + 2, buf, n + 1);
        buf[0] = ' ';
        buf[1] = '(';
        strcat(buf, ")");
    }
}

static void option_line(void *ctx, const char *group, const struct bmt_opt *o)
{
    const char **last = ctx;
    char left[200], arg[200], tail[200], help[1200];
    if (!*last || strcmp(*last, group) != 0)
        printf("\n%s:\n", group);
    *last = group;
    arg_text(o, arg, sizeof arg);
    int n = o->letter ? snprintf(left, sizeof left, "  -%c, --%s", o->letter, o->name)
                      : snprintf(left, sizeof left, "      --%s", o->name);
    if (arg[0])
        snprintf(left + n, sizeof left - (size_t)n, o->flags & BMT_OPT_OPTIONAL_ARG ? "[=%s]" : " %s",
                 arg);
    tail_text(o, tail, sizeof tail);
    snprintf(help, sizeof help, "%s%s", o->help, tail);
    size_t w = strlen(left);
    if (w + 2 > HELP_COL)
        printf("%s\n%*s", left, HELP_COL, "");
    else
        printf("%s%*s", left, (int)(HELP_COL - w), "");
    wrap(stdout, help, HELP_COL, HELP_COL);
}

const char *bmt_synopsis(const struct bmt_command *cmd)
{
    if (cmd->synopsis)
        return cmd->synopsis;
    return cmd->uses & BMT_USES_DIRS ? "[OPTION]... DIR..." : "[OPTION]...";
}

void bmt_help_command(const struct bmt_command *cmd)
{
    printf("Usage: beamtrace %s %s\n", cmd->name, bmt_synopsis(cmd));
    printf("%c%s.\n\n", cmd->summary[0] >= 'a' && cmd->summary[0] <= 'z' ? cmd->summary[0] - 32
                                                                         : cmd->summary[0],
           cmd->summary + 1);
    printf("%s\n", cmd->description);
    if (cmd->uses & BMT_USES_DIRS)
        printf("\n%s\n", bmt_input_help);
    const char *last = NULL;
    bmt_opts_each(cmd, option_line, &last);
    if (cmd->epilog)
        printf("\n%s\n", cmd->epilog);
}

void bmt_help_version(const struct bmt_command *cmd)
{
    if (cmd)
        printf("beamtrace-%s (beamtrace) %s\n", cmd->name, bmt_version);
    else
        printf("beamtrace %s\n", bmt_version);
}

void bmt_help_main(FILE *f)
{
    fputs("Usage: beamtrace COMMAND [OPTION]... [DIR]...\n"
          "Dynamic tracing for the Erlang VM: record a live node, read its traces.\n"
          "\n"
          "Reads traces recorded by beamtrace or LTTng (CTF 1.8 directories of\n"
          "org_erlang_dyntrace events), and babeltrace2's CTF output of them.\n"
          "\n"
          "Commands:\n", f);
    for (unsigned i = 0; i < bmt_command_count; i++)
        fprintf(f, "  %-12s%s\n", bmt_commands[i]->name, bmt_commands[i]->summary);
    fputs("\nOptions:\n"
          "  -h, --help     show this help and exit\n"
          "      --version  show the version and exit\n"
          "\nRun 'beamtrace COMMAND --help' for a command's options and 'beamtrace help\n"
          "--format json' for every option of every command.\n"
          "\nExit status: 0 success, 1 the trace or the system failed (one line says why),\n"
          "2 the command line is wrong.\n", f);
}

/* ---- help --format json ---- */

static void json_values(struct bmt_out *o, const char *const *v)
{
    bmt_out_char(o, '[');
    for (unsigned k = 0; v && v[k]; k++) {
        if (k)
            bmt_out_str(o, ", ");
        bmt_json_cstr(o, v[k]);
    }
    bmt_out_char(o, ']');
}

struct json_ctx {
    struct bmt_out *o;
    unsigned n;
};

static void json_option(void *ctx, const char *group, const struct bmt_opt *opt)
{
    struct json_ctx *j = ctx;
    struct bmt_out *o = j->o;
    char letter[2] = {opt->letter, 0}, arg[200];
    arg_text(opt, arg, sizeof arg);
    bmt_out_str(o, j->n++ ? ",\n    {\"name\": " : "\n    {\"name\": ");
    bmt_json_cstr(o, opt->name);
    bmt_json_member(o, "letter", opt->letter ? letter : NULL);
    bmt_json_member(o, "type", type_names[opt->type]);
    bmt_json_member(o, "arg", arg[0] ? arg : NULL);
    bmt_json_member(o, "group", group);
    bmt_json_member(o, "default", opt->def);
    bmt_json_member(o, "example", opt->example);
    bmt_json_member(o, "needs", opt->needs);
    bmt_json_member(o, "excludes", opt->excludes);
    bmt_json_member(o, "help", opt->help);
    bmt_out_str(o, ", \"values\": ");
    json_values(o, opt->values);
    char buf[200];
    snprintf(buf, sizeof buf, ", \"min\": %lld, \"max\": %lld, \"repeat\": %s, \"required\": %s, "
             "\"optional_value\": %s, \"infinity\": %s, \"nonzero\": %s}",
             (long long)opt->min, (long long)(opt->max ? opt->max : INT64_MAX),
             opt->flags & BMT_OPT_REPEAT ? "true" : "false",
             opt->flags & BMT_OPT_REQUIRED ? "true" : "false",
             opt->flags & BMT_OPT_OPTIONAL_ARG ? "true" : "false",
             opt->flags & BMT_OPT_INFINITY ? "true" : "false",
             opt->flags & BMT_OPT_NONZERO ? "true" : "false");
    bmt_out_str(o, buf);
}

/* Every command's declarations, or `only`'s. */
int bmt_help_json(const struct bmt_command *only)
{
    struct bmt_out o;
    if (bmt_out_open(&o, 1, 1 << 16) < 0)
        return BMT_EXIT_FAIL;
    bmt_out_str(&o, "{\"version\": ");
    bmt_json_cstr(&o, bmt_version);
    bmt_out_str(&o, ", \"commands\": [");
    unsigned shown = 0;
    for (unsigned i = 0; i < bmt_command_count; i++) {
        const struct bmt_command *c = bmt_commands[i];
        if (only && c != only)
            continue;
        bmt_out_str(&o, shown++ ? ",\n  {\"name\": " : "\n  {\"name\": ");
        bmt_json_cstr(&o, c->name);
        bmt_json_member(&o, "summary", c->summary);
        bmt_json_member(&o, "synopsis", bmt_synopsis(c));
        bmt_out_str(&o, c->uses & BMT_USES_DIRS ? ", \"dirs\": true" : ", \"dirs\": false");
        bmt_out_str(&o, ", \"options\": [");
        struct json_ctx j = {&o, 0};
        bmt_opts_each(c, json_option, &j);
        bmt_out_str(&o, "]}");
    }
    bmt_out_str(&o, "\n]}\n");
    return bmt_out_close(&o) < 0 ? BMT_EXIT_FAIL : BMT_EXIT_OK;
}

/* ---- completion bash ---- */

struct comp_ctx {
    int values; /* 0: the option words; 1: the value cases */
};

static void comp_option(void *ctx, const char *group, const struct bmt_opt *o)
{
    const struct comp_ctx *c = ctx;
    (void)group;
    if (!c->values) {
        printf(" --%s", o->name);
        if (o->letter)
            printf(" -%c", o->letter);
        return;
    }
    if (o->type == BMT_OPT_FLAG || (o->flags & BMT_OPT_OPTIONAL_ARG))
        return;
    printf("        --%s", o->name);
    if (o->letter)
        printf("|-%c", o->letter);
    if (o->type == BMT_OPT_ENUM || (o->type == BMT_OPT_LIST && o->values && !o->check)) {
        printf(") COMPREPLY=($(compgen -W \"");
        for (unsigned k = 0; o->values[k]; k++)
            printf("%s%s", k ? " " : "", o->values[k]);
        printf("\" -- \"$cur\")); return;;\n");
    } else if (o->type == BMT_OPT_FILE) {
        printf(") compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); "
               "return;;\n");
    } else if (o->type == BMT_OPT_DIR) {
        printf(") compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")); "
               "return;;\n");
    } else {
        printf(") return;;\n"); /* a value nothing can guess */
    }
}

int bmt_help_completion(void)
{
    char names[1024];
    size_t n = 0;
    for (unsigned i = 0; i < bmt_command_count && n < sizeof names; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? " " : "",
                              bmt_commands[i]->name);
    printf("# bash completion for beamtrace, generated by `beamtrace completion bash` from the\n"
           "# command's option declarations (beamtrace %s). Install it as\n"
           "# /usr/share/bash-completion/completions/beamtrace, or source it.\n"
           "_beamtrace() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
           "        COMPREPLY=($(compgen -W \"", bmt_version);
    printf("%s --help --version\" -- \"$cur\"))\n        return\n    fi\n", names);
    printf("    case ${COMP_WORDS[1]} in\n");
    for (unsigned i = 0; i < bmt_command_count; i++) {
        const struct bmt_command *cmd = bmt_commands[i];
        struct comp_ctx c = {1};
        printf("    %s)\n        case $prev in\n", cmd->name);
        bmt_opts_each(cmd, comp_option, &c);
        printf("        esac\n        if [[ $cur == -* ]]; then\n"
               "            COMPREPLY=($(compgen -W \"");
        c.values = 0;
        bmt_opts_each(cmd, comp_option, &c);
        printf("\" -- \"$cur\"))\n");
        if (cmd->uses & BMT_USES_DIRS)
            printf("        else\n            compopt -o filenames 2>/dev/null\n"
                   "            COMPREPLY=($(compgen -d -- \"$cur\"))\n");
        else if (cmd->uses & BMT_USES_WORD)
            printf("        else\n            COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n",
                   cmd->words ? cmd->words : names);
        printf("        fi\n        ;;\n");
    }
    printf("    esac\n}\ncomplete -F _beamtrace beamtrace\n");
    return BMT_EXIT_OK;
}

/* ---- the help and completion commands ---- */

static int help_run(void *opts)
{
    const struct bmt_common *c = opts;
    const struct bmt_command *only = NULL;
    for (unsigned i = 0; c->dirs.n && i < bmt_command_count; i++)
        if (strcmp(bmt_commands[i]->name, c->dirs.v[0]) == 0)
            only = bmt_commands[i];
    if (c->dirs.n && !only)
        return bmt_cli_usage_error("help", "unknown command '%s' (see 'beamtrace --help')",
                                   c->dirs.v[0]);
    if (c->format == 1)
        return bmt_help_json(only);
    if (only)
        bmt_help_command(only);
    else
        bmt_help_main(stdout);
    return BMT_EXIT_OK;
}

const struct bmt_command bmt_cmd_help = {
    .name = "help",
    .summary = "help on a command, or every command's options as JSON",
    .synopsis = "[COMMAND] [--format text|json]",
    .description =
        "Prints the help of COMMAND (as 'beamtrace COMMAND --help'), or the list of\n"
        "commands. With --format json: every option of every command (or of COMMAND)\n"
        "as declared: name, letter, type, accepted values or range, default, example\n"
        "and help; what man pages, completion and the option test are made from.",
    .uses = BMT_USES_FORMAT | BMT_USES_WORD,
    .size = sizeof(struct bmt_common),
    .run = help_run,
};

static int completion_run(void *opts)
{
    const struct bmt_common *c = opts;
    if (!c->dirs.n)
        return bmt_cli_usage_error("completion", "name the shell: bash");
    return bmt_help_completion();
}

const struct bmt_command bmt_cmd_completion = {
    .name = "completion",
    .summary = "shell completion script, from the option declarations",
    .synopsis = "bash",
    .description =
        "Prints a bash completion script for beamtrace: commands, their options, the\n"
        "values of options that take one of a list, files and trace directories. Load\n"
        "it with `source <(beamtrace completion bash)`, or install its output as\n"
        "/usr/share/bash-completion/completions/beamtrace.",
    .uses = BMT_USES_WORD,
    .words = "bash",
    .size = sizeof(struct bmt_common),
    .run = completion_run,
};
