/* The flight recorder's side of the NIF: the `flight` start option (what
 * a session captures and which triggers it takes), triggers decided
 * outside the tracer (beamtrace:trigger/1, the system monitor's reports, a
 * sampled message queue) and the capture figures. The recorder does the
 * captures (recorder/capture.h); docs/flight-recorder.md has the design.
 *
 * Threads: flight_offer and trigger run on normal schedulers and only
 * load atomics and copy a trigger record (bmt_capture_offer: lock-free);
 * flight_info takes the recorder's control lock, on a dirty I/O scheduler.
 */
#ifndef BMT_NIF_FLIGHT_H
#define BMT_NIF_FLIGHT_H

#include "recorder/recorder.h"

#include <erl_nif.h>

/* Parses start's `flight` option (absent or `none`: no captures) into
 * `cfg`: #{window => Ms, after => Ms, max_captures => N | infinity,
 * triggers => [call | probe | {probe, Label} | busy_port | busy_dist_port
 * | long_message_queue | {long_gc | long_schedule, Ms} | {large_heap,
 * Words} | {message_queue, N}]}. Returns 0, or -1 with the key at fault
 * in *bad. */
struct priv;
int bmt_flight_parse(const struct priv *p, ErlNifEnv *env, ERL_NIF_TERM opts,
                     struct bmt_capture_config *cfg, ERL_NIF_TERM *bad);

/* The capture figures as a map: captures, fired, absorbed, skipped_rate,
 * skipped_long, skipped_bytes, lost_packets, capture_bytes, open,
 * capture_error. */
ERL_NIF_TERM bmt_flight_stats_map(struct priv *p, ErlNifEnv *env,
                                  const struct bmt_capture_stats *st);

/* flight_offer_nif(Session, Kind, Value, Who, Where) -> started | extended
 * | skipped | false. */
ERL_NIF_TERM bmt_nif_flight_offer(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* trigger_nif(Label) -> boolean(): beamtrace:trigger/1. */
ERL_NIF_TERM bmt_nif_trigger(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* flight_info_nif(Session) -> map() | {error, not_running}. */
ERL_NIF_TERM bmt_nif_flight_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
