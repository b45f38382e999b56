/* beamtrace: the command table and the entry point.
 *
 * The table below is the only list of subcommands: dispatch, `beamtrace
 * --help`, `beamtrace help --format json` and `beamtrace completion bash`
 * all read it. Each row is a struct bmt_command declared in its own
 * cmd/<name>.c with its options (options.h).
 */
#include "analysis.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

/* The vsn of src/beamtrace.app.src, passed by the Makefile (the one
 * version source); a build outside the Makefile (the sanitizer builds of
 * the tests) says so instead. */
#ifndef BMT_VERSION
#define BMT_VERSION "(version unknown: built outside the Makefile)"
#endif
const char bmt_version[] = BMT_VERSION;

const struct bmt_command *const bmt_commands[] = {
    &bmt_cmd_view,   &bmt_cmd_list,  &bmt_cmd_stats,   &bmt_cmd_calls,    &bmt_cmd_sched,
    &bmt_cmd_procs,  &bmt_cmd_gc,    &bmt_cmd_files,   &bmt_cmd_flame,    &bmt_cmd_export,
    &bmt_cmd_messages, &bmt_cmd_report, &bmt_cmd_captures, &bmt_cmd_record, &bmt_cmd_flights,
    &bmt_cmd_fetch,  &bmt_cmd_stop,  &bmt_cmd_snapshot, &bmt_cmd_help,    &bmt_cmd_completion,
};
const unsigned bmt_command_count = sizeof bmt_commands / sizeof bmt_commands[0];

/* Parses the command line into the command's options and runs it. */
static int run(const struct bmt_command *cmd, int argc, char **argv)
{
    void *opts = calloc(1, cmd->size);
    if (!opts) {
        bmt_cli_error("out of memory; free some memory");
        return BMT_EXIT_FAIL;
    }
    int done, status = bmt_opts_parse(cmd, argc, argv, opts, &done);
    if (status == 0 && !done)
        status = cmd->run ? cmd->run(opts) : bmt_analysis_command(cmd, opts);
    bmt_opts_free(cmd, opts);
    free(opts);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        bmt_cli_error("no command given; run 'beamtrace --help' for the list of commands");
        return BMT_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        bmt_help_main(stdout);
        return BMT_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        bmt_help_version(NULL);
        return BMT_EXIT_OK;
    }
    for (unsigned i = 0; i < bmt_command_count; i++)
        if (strcmp(bmt_commands[i]->name, name) == 0)
            return run(bmt_commands[i], argc - 1, argv + 1);
    if (name[0] == '-')
        bmt_cli_error("unknown option '%s'; run 'beamtrace --help' for usage", name);
    else
        bmt_cli_error("unknown command '%s'; run 'beamtrace --help' for the list of commands",
                      name);
    return BMT_EXIT_USAGE;
}
