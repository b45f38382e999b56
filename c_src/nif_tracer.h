/* One trace event being decoded, shared by the tracer (nif_tracer.c), the
 * user probes (nif_user.c) and the USDT sink (nif_usdt.c). Lives on the
 * calling thread's stack for one callback; strings it produces live in the
 * thread's scratch buffer and are NUL-terminated. */
#ifndef BMT_NIF_TRACER_H
#define BMT_NIF_TRACER_H

#include "nif_priv.h"

/* Sinks that want an event. */
enum {
    BMT_SINK_RECORDER = 1,
    BMT_SINK_LTTNG = 2,
    BMT_SINK_USDT = 4,
};

struct decode {
    ErlNifEnv *env;
    const struct bmt_atoms *a;
    struct thread_ctx *t;
    int message_bytes;  /* the recorder session's option, or OTP's 255 */
    ERL_NIF_TERM tag, tracee, term, opts;
    char *cursor;       /* next free byte of t->scratch */
};

/* Writes the decoded event (t->event) into the calling thread's ring of
 * session `s`, if it is still running with `generation`. */
void bmt_record(struct priv *p, struct session *s, uint64_t generation, struct thread_ctx *t);

/* Hands t->event to every sink in `sinks` (BMT_SINK_* bits) but the
 * recorder, which the caller handles (it knows the session). */
void bmt_emit_external(struct priv *p, struct decode *d, int tp, unsigned sinks);

/* The `extra` value of the trace callback's options, or 'undefined'. */
ERL_NIF_TERM bmt_decode_extra(struct decode *d);

/* Scratch text for probe-only arguments: writes `term`'s text at the
 * cursor (bounded by `room`), returns it NUL-terminated. */
const char *bmt_decode_text(struct decode *d, ERL_NIF_TERM term, size_t room);

#endif
