/* `beamtrace record`'s session sources: the options --samples,
 * --system-monitor, --distribution, --file-io and --ets, turned into
 * beamtrace:start/1's options of the same names (src/beamtrace_sources.erl
 * documents them) as Erlang term text for the controller's options map.
 *
 *   --samples LIST          schedulers, run_queues, memory, each optionally
 *                           =INTERVAL (default 1s); message_queues[=INTERVAL[/N]]
 *                           (the N longest queues, default 10, at most 100)
 *   --system-monitor LIST   long_gc=TIME, long_schedule=TIME, large_heap=WORDS,
 *                           busy_port, busy_dist_port,
 *                           long_message_queue=DISABLE/ENABLE (OTP 27+)
 *   --distribution          node up/down with reasons
 *   --file-io               every file operation
 *   --ets LIST              operations on the named tables, or all
 *
 * Times take their unit (50ms, 1s): a bare number would be ambiguous
 * between the VM's milliseconds and --duration's seconds.
 */
#ifndef BMT_CLI_RECORD_SOURCES_H
#define BMT_CLI_RECORD_SOURCES_H

#include <stddef.h>

struct bmt_record_sources {
    const char *samples;        /* the option values as given, or NULL */
    const char *system_monitor;
    const char *ets;
    int distribution, file_io;
};

/* Writes the options as ", samples => #{...}, ..." (nothing when none is
 * given) into `out`. Returns 0, or -1 with a usage message for the
 * command's error line in `err`. */
int bmt_record_sources_term(const struct bmt_record_sources *s, char *out, size_t size, char *err,
                            size_t err_size);

#endif
