/* The command table (main.c): every subcommand's declaration, and what
 * `beamtrace --help`, `beamtrace help` and `beamtrace completion` read
 * from it. Adding a subcommand = one cmd/<name>.c defining its struct
 * bmt_command, and one row in main.c's table. */
#ifndef BMT_CLI_COMMANDS_H
#define BMT_CLI_COMMANDS_H

#include "options.h"

#include <stdio.h>

/* The table, in `beamtrace --help` order. */
extern const struct bmt_command *const bmt_commands[];
extern const unsigned bmt_command_count;

/* The version (src/beamtrace.app.src's vsn, passed by the Makefile). */
extern const char bmt_version[];

/* `beamtrace --help`: the commands and how to learn more. */
void bmt_help_main(FILE *f);

/* Every command's declarations (or `only`'s) as JSON on stdout. Returns
 * the exit status. */
int bmt_help_json(const struct bmt_command *only);

/* The bash completion script on stdout. Returns the exit status. */
int bmt_help_completion(void);

/* The commands (cmd/<name>.c). */
extern const struct bmt_command bmt_cmd_view, bmt_cmd_list, bmt_cmd_stats, bmt_cmd_calls,
    bmt_cmd_sched, bmt_cmd_procs, bmt_cmd_gc, bmt_cmd_files, bmt_cmd_flame, bmt_cmd_export,
    bmt_cmd_messages, bmt_cmd_report, bmt_cmd_record, bmt_cmd_flights, bmt_cmd_fetch, bmt_cmd_stop,
    bmt_cmd_snapshot, bmt_cmd_captures, bmt_cmd_help, bmt_cmd_completion;

#endif
