/* `beamtrace flights`: the flight recordings on a node, running or left
 * on disk, with their captures (record/ talks to the node). */
#include "options.h"
#include "record/record.h"

static int run(void *opts)
{
    bmt_record_reach_defaults(opts);
    return bmt_record_run_action(opts, BMT_ACTION_FLIGHTS);
}

const struct bmt_command bmt_cmd_flights = {
    .name = "flights",
    .summary = "list a node's flight recordings and their captures",
    .synopsis = "--node NAME [OPTION]...",
    .description =
        "Lists the flight recording that `beamtrace record --flight ... --detach` left\n"
        "running on the node, and those whose captures are still in its private\n"
        "directories (after it ended, or after the node restarted): since when, until\n"
        "when or why it ended, its triggers, and each capture with what fired it.\n"
        "Only OTP's own functions are called there: nothing is shipped.",
    .epilog = "Exit status: 0 listed (also when there is none), 1 failed (one line says why),\n"
              "2 bad options.",
    .opts = bmt_flights_options,
    .size = sizeof(struct bmt_record_args),
    .run = run,
};
