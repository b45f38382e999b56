/* `beamtrace record`: the command's row. Its options are declared in
 * record/options.c (each names its key in the controller's options map),
 * checked there as a whole, and record/ does the recording. */
#include "options.h"
#include "record/record.h"

static int run(void *opts)
{
    struct bmt_record_args *a = opts;
    int rc = bmt_record_check(a);
    return rc ? rc : bmt_record_run(a);
}

const struct bmt_command bmt_cmd_record = {
    .name = "record",
    .summary = "trace a running node from outside, with nothing installed on it",
    .synopsis = "--node NAME [OPTION]...\n"
                "  or:  beamtrace record --nodes NAME,NAME,... | --cluster --node NAME [OPTION]...",
    .description =
        "Connects to a running node as a hidden node (through a controller `erl` it\n"
        "starts), checks its OTP release, CPU and C library, ships beamtrace's modules\n"
        "and NIF library into a private 0700 directory there (unless the same build is\n"
        "loaded), records with the guard rails, copies the trace back into -o DIR and\n"
        "removes everything it shipped (modules purged, files deleted; no trace flag or\n"
        "pattern left). Ctrl-C stops early and still brings the trace back.",
    .epilog = "Exit status: 0 recorded, 1 failed (one line says why), 2 bad options,\n"
              "130 interrupted before recording.",
    .opts = bmt_record_options,
    .size = sizeof(struct bmt_record_args),
    .run = run,
};
