/* The beamtrace command-line tool: the subcommand table and the helpers
 * every subcommand shares (error lines, option parsing conventions).
 *
 * Adding a subcommand = one row in main.c's table + one cmd_<name>.c file
 * defining its run function. Each run function receives argv with argv[0]
 * set to the subcommand name and returns the process exit status:
 * 0 success, 1 the trace (or the system) failed, 2 the command line is wrong.
 */
#ifndef BMT_CLI_H
#define BMT_CLI_H

/* Exit statuses and error lines: BMT_EXIT_*, bmt_cli_line, bmt_cli_error,
 * bmt_cli_usage_error (base/diag.h, below the reader, which warns through
 * it). */
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>

struct bmt_cli_command {
    const char *name;
    const char *summary;  /* one line for `beamtrace --help` */
    const char *usage;    /* full text for `beamtrace <name> --help` */
    int (*run)(int argc, char **argv);
};

/* Prints `usage` of command `name` to stdout: for --help. */
void bmt_cli_print_usage(const char *name);



/* Parses a `--format` value into *json (1 for "json", 0 for "text").
 * Returns 0, or a usage error exit status after printing the line. */
int bmt_cli_parse_format(const char *cmd, const char *value, int *json);

struct bmt_out;
enum bmt_list_format { BMT_LIST_TEXT, BMT_LIST_JSON, BMT_LIST_MARKDOWN };

/* Prints the USDT probe table (list_usdt.c). */
void bmt_list_usdt(struct bmt_out *o, enum bmt_list_format format);

/* Subcommands (cmd_<name>.c). */
int bmt_cmd_view(int argc, char **argv);
int bmt_cmd_list(int argc, char **argv);
int bmt_cmd_stats(int argc, char **argv);
int bmt_cmd_calls(int argc, char **argv);
int bmt_cmd_sched(int argc, char **argv);
int bmt_cmd_procs(int argc, char **argv);
int bmt_cmd_gc(int argc, char **argv);
int bmt_cmd_files(int argc, char **argv);
int bmt_cmd_flame(int argc, char **argv);
int bmt_cmd_export(int argc, char **argv);
int bmt_cmd_messages(int argc, char **argv);
int bmt_cmd_report(int argc, char **argv);
int bmt_cmd_record(int argc, char **argv);

#endif
