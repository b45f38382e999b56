/* `beamtrace snapshot`: what a running `record --mode overwrite` holds
 * now, copied here; the recording goes on (record/ talks to the node). */
#include "options.h"
#include "record/record.h"

static int run(void *opts)
{
    bmt_record_reach_defaults(opts);
    return bmt_record_run_action(opts, BMT_ACTION_SNAPSHOT);
}

const struct bmt_command bmt_cmd_snapshot = {
    .name = "snapshot",
    .summary = "copy what a running overwrite-mode record holds now",
    .synopsis = "--node NAME [OPTION]...",
    .description =
        "For the `beamtrace record --mode overwrite` running on the node (started from\n"
        "this host or another), writes what its rings hold now into a trace directory\n"
        "next to its trace there and copies it into -o DIR: the newest events, a trace\n"
        "that every analysis reads. The recording goes on; the snapshot left on the node\n"
        "is removed with the trace when the recording ends. Nothing is shipped: the\n"
        "recording's agent makes it, OTP's file functions copy it (never through a\n"
        "symlink).",
    .epilog = "Exit status: 0 copied, 1 failed (no such recording, not in overwrite mode; one\n"
              "line says why), 2 bad options.",
    .opts = bmt_snapshot_options,
    .size = sizeof(struct bmt_record_args),
    .run = run,
};
