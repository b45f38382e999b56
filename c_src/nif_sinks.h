/* The sinks an event can go to besides the recorder: LTTng-UST and USDT.
 *
 * The tracer asks each sink whether it wants a tracepoint (enabled_* and
 * trace_* both ask, so nothing is formatted for nobody), then hands the
 * decoded event to every sink that said yes. Both checks must be cheap and
 * safe from any scheduler thread at once:
 *  - LTTng: one indirect call into the provider library, which reads the
 *    tracepoint's enabled state that lttng-ust maintains (sessiond enables
 *    and disables events at any time; a change can be missed for the event
 *    in flight, never later ones).
 *  - USDT: one load of the probe's semaphore, which a tracer (bpftrace,
 *    SystemTap) increments when it attaches. A tracer may attach between the
 *    check and the fire: that one event is missed.
 * A sink that is absent (no liblttng-ust on the machine) answers "no".
 */
#ifndef BMT_NIF_SINKS_H
#define BMT_NIF_SINKS_H

#include "event.h"

#include <erl_nif.h>
#include <stdint.h>

struct priv;

/* ---- LTTng-UST (nif_lttng.c; the provider itself is priv/beamtrace_lttng.so) ---- */

/* What the provider library exports as `bmt_lttng_provider`. The library is
 * built from the catalogue (tools/gen_lttng.c), so ids are catalogue ids. */
#define BMT_LTTNG_ABI 1
struct bmt_lttng_provider {
    uint32_t abi;        /* BMT_LTTNG_ABI */
    uint32_t tracepoint_count; /* must equal BMT_TP_COUNT */
    /* 1 when an LTTng session has enabled tracepoint `id`. */
    int (*enabled)(unsigned id);
    /* Fires tracepoint ev->id with ev's values; string values are
     * NUL-terminated. */
    void (*emit)(const struct bmt_event *ev);
};

/* Loads `<priv_dir>/beamtrace_lttng.so` unless the environment variable
 * BEAMTRACE_LTTNG is "0" or "off". Returns the provider, or NULL when
 * liblttng-ust or the provider library is missing or does not match this
 * build (a one-line reason goes to `why`, `why_size` bytes). Loading
 * registers the provider with any running lttng-sessiond. Called once, from
 * the NIF's load. */
const struct bmt_lttng_provider *bmt_lttng_load(const char *priv_dir, char *why, size_t why_size);

/* Unloads what bmt_lttng_load loaded (NIF unload; no event in flight). */
void bmt_lttng_unload(const struct bmt_lttng_provider *provider);

/* ---- USDT, provider `erlang` (nif_usdt.c) ---- */

struct decode;

/* 1 when an attached tracer wants any USDT probe that tracepoint `tp`
 * fires (semaphore loads only). */
int bmt_usdt_wants(int tp);

/* 1 when a tracer is attached to user_trace-n<label>. */
int bmt_usdt_user_n_wants(unsigned label);

/* Fires the USDT probes of tracepoint `tp` for the decoded event, computing
 * probe-only arguments (message sizes, command types) only for probes that
 * are attached. */
void bmt_usdt_fire(struct decode *d, int tp);

#endif
