/* The `clock' option of start_nif (nif_clock_option.c). Dirty I/O
 * schedulers only (start).
 */
#ifndef BMT_NIF_CLOCK_OPTION_H
#define BMT_NIF_CLOCK_OPTION_H

#include "nif_state.h"

#include <erl_nif.h>

/* The `clock' option, #{offset_ns := Ns, env := [{Key, Integer | Binary}]}:
 * a controller's estimate that aligns the trace to its clock from the
 * start (the clock's offset to the epoch becomes Ns; the env entries, and
 * the node's own offset, go in the metadata as beamtrace_clock_KEY).
 * Returns 0 (also when absent) or -1 when malformed. */
int bmt_nif_clock_option(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                         struct bmt_ctf_trace_info *info);

#endif
