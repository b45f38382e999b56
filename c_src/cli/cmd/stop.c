/* `beamtrace stop`: ends a node's flight recordings, copies their
 * captures here and removes everything beamtrace left there (record/
 * talks to the node). */
#include "options.h"
#include "record/record.h"

static int run(void *opts)
{
    bmt_record_reach_defaults(opts);
    return bmt_record_run_action(opts, BMT_ACTION_STOP);
}

const struct bmt_command bmt_cmd_stop = {
    .name = "stop",
    .summary = "end a node's flight recordings, copy their captures, remove everything",
    .synopsis = "--node NAME [OPTION]...",
    .description =
        "Stops the flight recording running on the node, copies every capture not\n"
        "already in -o DIR as fetch does, then removes everything beamtrace put there\n"
        "(the flight agent, its modules and NIF library, the private directories, also\n"
        "those left by a restart) and checks that no trace flag, pattern or session\n"
        "is left.",
    .epilog = "Exit status: 0 stopped and removed (also when nothing ran), 1 failed (one line\n"
              "says why), 2 bad options.",
    .opts = bmt_fetch_options,
    .size = sizeof(struct bmt_record_args),
    .run = run,
};
