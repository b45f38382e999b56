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

/* #{url, state, path, events, lost, unconfirmed, written_bytes,
 * queued_bytes, connections, disconnections, error}. */
ERL_NIF_TERM bmt_nif_relayd_stats(struct priv *p, ErlNifEnv *env,
                                  const struct bmt_relayd_stats *st);

#endif
