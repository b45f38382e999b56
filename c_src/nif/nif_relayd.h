/* Streaming options of start_nif and the relayd's figures as terms
 * (nif_relayd.c): the VM side of c_src/recorder/relayd_client.h. Dirty I/O
 * schedulers only (start, stop, info).
 */
#ifndef BMT_NIF_RELAYD_H
#define BMT_NIF_RELAYD_H

#include "nif_state.h"

#include <erl_nif.h>

/* Reads the streaming options of `opts` into cfg (cfg->relayd: a client the
 * caller owns, NULL when not streaming). Returns 0; -1 for a bad option
 * (its key in *bad, maybe a reason in `why`); or a negative errno with a
 * reason in `why` (the host does not resolve, out of memory). */
int bmt_nif_relayd_options(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                           struct bmt_rec_config *cfg, ERL_NIF_TERM *bad, char *why,
                           size_t why_size);

/* The `clock' option, #{offset_ns := Ns, env := [{Key, Integer | Binary}]}:
 * a controller's estimate that aligns the trace to its clock from the
 * start (the clock's offset to the epoch becomes Ns; the env entries, and
 * the node's own offset, go in the metadata as beamtrace_clock_KEY).
 * Returns 0 (also when absent) or -1 when malformed. */
int bmt_nif_clock_option(struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                         struct bmt_ctf_trace_info *info);

/* #{url, state, path, events, lost, unconfirmed, written_bytes,
 * queued_bytes, connections, disconnections, error}. */
ERL_NIF_TERM bmt_nif_relayd_stats(struct priv *p, ErlNifEnv *env,
                                  const struct bmt_relayd_stats *st);

#endif
