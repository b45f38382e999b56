/* Decoding one trace event into its catalogue fields, written in their CTF
 * layout straight where they will live: the recorder's ring when it takes
 * the event, else the thread's scratch. The formatters already produce
 * NUL-terminated text, which is the CTF string layout, and integers are
 * stored little-endian in place, so there is no second copy and no size
 * pass: the destination has room for the tracepoint's largest event.
 *
 * Fields are written in catalogue order through a cursor, so no code here
 * names a field by position; each write also points the event's value at
 * its bytes, for the other sinks.
 *
 * Lives on the calling thread's stack for one callback; owned by it.
 */
#ifndef BMT_NIF_DECODE_H
#define BMT_NIF_DECODE_H

#include "nif_priv.h"
#include "sinks.h"

struct decode {
    ErlNifEnv *env;
    const struct bmt_atoms *a;
    struct thread_ctx *t;
    int message_bytes;  /* the recorder session's option, or OTP's 255 */
    ERL_NIF_TERM tag, tracee, term, opts;
    uint8_t *cursor;    /* where the next field goes */
    unsigned field;     /* index of the next field */
    const char *node;   /* the recording session's node name (its trace's
                           beamtrace_node), for link variants; else NULL */
};

/* Writes the fields of tracepoint `tp` for the erl_tracer event in `d` at
 * d->cursor and points d->t->event.values at them; d->cursor ends after
 * the last field. */
void bmt_decode_fields(struct decode *d, int tp);

/* Prints the message field of a message event (`tp` message_send or
 * message_receive) again, bounded by `message_bytes`, at `where`, and
 * points the event's value at it: for a sink that must see OTP's text when
 * the recorder session asked for another length. */
void bmt_decode_message_again(struct decode *d, int tp, int message_bytes, uint8_t *where);

/* Fills the USDT-only arguments of tracepoint `tp` (text written from
 * `where`, which has room for BMT_USDT_ARGS_TEXT_BYTES). */
#define BMT_USDT_ARGS_TEXT_BYTES (BMT_MFA_MAX_BYTES + 1 + 3 * (BMT_TERM_MAX_BYTES + 1))
void bmt_decode_usdt_args(struct decode *d, int tp, struct bmt_usdt_args *args, uint8_t *where);

/* The link fingerprint of `message` (nif_fingerprint.c): 64 bits, equal
 * for equal terms on every node, at most 64 terms and 128 bytes of each
 * binary looked at. Calling thread only; no allocation. */
uint64_t bmt_fingerprint(ErlNifEnv *env, ERL_NIF_TERM message);

/* The `extra` value of the trace callback's options, or 'undefined'. */
ERL_NIF_TERM bmt_decode_extra(struct decode *d);

#endif
