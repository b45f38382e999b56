/* The sinks an event can go to besides the recorder: LTTng-UST and USDT.
 *
 * One interface for both, as OTP's dtrace-wrapper.h gave every probe site
 * one shape: `wants(tp)` says whether the sink listens for a tracepoint, and
 * `emit` takes the decoded event (catalogue values; strings NUL-terminated)
 * plus, for USDT, a small struct of the arguments OTP's probes carry that
 * are not catalogue fields. No sink sees a term or the tracer's state.
 *
 * Both checks must be cheap and safe from any scheduler thread at once:
 *  - LTTng: one load of the tracepoint's enabled state (the NIF keeps a
 *    pointer to each, nif_state.h), which lttng-ust maintains (sessiond enables and disables events at any time; a change
 *    can be missed for the event in flight, never later ones).
 *  - USDT: loads of the probes' semaphores, which a tracer (bpftrace,
 *    SystemTap) increments when it attaches. A tracer may attach between the
 *    check and the fire: that one event is missed.
 * A sink that is absent (no liblttng-ust, no sys/sdt.h at build time)
 * answers "no". Pure C: no erl_nif.h.
 */
#ifndef BMT_SINKS_H
#define BMT_SINKS_H

#include "core/event.h"

#include <stddef.h>
#include <stdint.h>

/* Sinks that want an event. */
enum {
    BMT_SINK_RECORDER = 1,
    BMT_SINK_LTTNG = 2,
    BMT_SINK_USDT = 4,
};

/* ---- LTTng-UST (sinks/lttng.c; the provider itself is priv/beamtrace_lttng.so) ---- */

/* What the provider library exports as `bmt_lttng_provider`. The library is
 * built from the catalogue (tools/gen_lttng.c), so ids are catalogue ids. */
#define BMT_LTTNG_ABI 2
struct bmt_lttng_provider {
    uint32_t abi;              /* BMT_LTTNG_ABI */
    uint32_t tracepoint_count; /* must equal BMT_TP_COUNT */
    /* The enabled state lttng-ust keeps for each tracepoint, by id:
     * nonzero while an LTTng session enables it. */
    const int *const *state;
    /* Fires tracepoint ev->id with ev's values. */
    void (*emit)(const struct bmt_event *ev);
};

/* 1 when an LTTng session enables tracepoint `tp` (provider may be NULL). */
static inline int bmt_lttng_wants(const struct bmt_lttng_provider *provider, int tp)
{
    return provider && __atomic_load_n(provider->state[tp], __ATOMIC_RELAXED) != 0;
}

/* Loads `<priv_dir>/beamtrace_lttng.so` unless the environment variable
 * BEAMTRACE_LTTNG is "0" or "off". Returns the provider, or NULL when
 * liblttng-ust or the provider library is missing or does not match this
 * build (a one-line reason goes to `why`, `why_size` bytes). Loading
 * registers the provider with any running lttng-sessiond. Called once, from
 * the NIF's load. */
const struct bmt_lttng_provider *bmt_lttng_load(const char *priv_dir, char *why, size_t why_size);

/* Unloads what bmt_lttng_load loaded (NIF unload; no event in flight). */
void bmt_lttng_unload(const struct bmt_lttng_provider *provider);

/* ---- USDT, provider `erlang` (sinks/usdt.c) ---- */

/* OTP's probe arguments that are not catalogue fields, filled by the
 * tracer only when bmt_usdt_wants said yes. Strings NUL-terminated. */
struct bmt_usdt_args {
    int scheduled_in;          /* process_scheduled: in or in_exiting (else out) */
    int is_bif;                /* function_call/return: the module is erlang */
    const char *hibernate_mfa; /* process_scheduled, out hibernating: "m:f/a" it resumes in */
    const char *control_port;  /* call of erlang:port_control/3: the port */
    int control_op;            /*   and its operation number */
    enum { BMT_SEND_LOCAL, BMT_SEND_REMOTE, BMT_SEND_PORT } send_kind;
    const char *remote_node;   /* remote send: the node ("" for a remote pid) */
    const char *remote_to;     /*   and the receiver (name, or the pid's text) */
    const char *receiver;      /* local send: the receiver's pid (a registered name
                                * resolved), or NULL: the destination as given */
    const char *port_command;  /* send to a port: command, close or connect; else NULL */
    const char *port_sender;   /*   the process in the message ({Pid, Command}) */
    uint32_t message_words;    /* send, receive: the message's heap words */
    const char *tracer_state;  /* seq_trace: the tracer state, printed */
    const char *trace_label;   /*   the token's label, printed */
    const char *trace_info;    /*   the trace term (SeqTraceInfo), printed */
    const char *driver;        /* port_open: the driver name, unquoted */
};

/* bmt_usdt_wants(tp), the semaphore checks, is inline: usdt_wants.h. */

/* 1 when a tracer is attached to user_trace-n<label>. */
int bmt_usdt_user_n_wants(unsigned label);

/* Fires the USDT probes of the decoded event `ev` that are attached. */
void bmt_usdt_emit(const struct bmt_event *ev, const struct bmt_usdt_args *args);

/* 1 when this build has USDT probes (sys/sdt.h was found). */
int bmt_usdt_built(void);

#endif
