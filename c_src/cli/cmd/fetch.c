/* `beamtrace fetch`: copies a node's flight captures here (record/ talks
 * to the node). */
#include "options.h"
#include "record/record.h"

static int run(void *opts)
{
    bmt_record_reach_defaults(opts);
    return bmt_record_run_action(opts, BMT_ACTION_FETCH);
}

const struct bmt_command bmt_cmd_fetch = {
    .name = "fetch",
    .summary = "copy a node's flight captures here",
    .synopsis = "--node NAME [OPTION]...",
    .description =
        "Copies every sealed capture of the node's flight recordings, running or left\n"
        "on disk, that is not already in -o DIR: each capture is a trace of its own\n"
        "(DIR/capture-N-TIME) that every analysis reads. A capture is copied into\n"
        "NAME.part and renamed when whole; symlinks are never followed. The flight\n"
        "recording goes on.",
    .epilog = "Exit status: 0 copied (also when there was nothing new), 1 failed (one line\n"
              "says why), 2 bad options.",
    .opts = bmt_fetch_options,
    .size = sizeof(struct bmt_record_args),
    .run = run,
};
