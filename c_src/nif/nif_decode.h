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
#include "sinks/sinks.h"

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

/* bmt_decode_fields(d, tp) writes the fields of tracepoint `tp` for the
 * erl_tracer event in `d` at d->cursor and points d->t->event.values at
 * them; d->cursor ends after the last field. bmt_decode_extra(d) is the
 * `extra` value of the callback's options, or 'undefined'. Both inline:
 * each tracer callback gets a copy whose switch holds only its own
 * tracepoints. */

/* ---- field writers: each appends the next field at the cursor ---- */

static inline void put_text(struct decode *d, size_t len)
{
    struct bmt_value *v = &d->t->event.values[d->field++];
    v->str = (const char *)d->cursor;
    v->len = (uint32_t)len;
    d->cursor += len + 1;
}

static inline void put_word(struct decode *d, const char *word)
{
    size_t len = strlen(word);
    memcpy(d->cursor, word, len + 1);
    put_text(d, len);
}

static inline void put_id(struct decode *d, ERL_NIF_TERM term)
{
    put_text(d, bmt_format_id(d->t, d->env, term, (char *)d->cursor));
}

/* `vm_args`: see bmt_format_mfa. */
static inline void put_mfa(struct decode *d, ERL_NIF_TERM term, int vm_args)
{
    put_text(d, bmt_format_mfa(d->t, d->env, term, (char *)d->cursor, vm_args));
}

static inline void put_term(struct decode *d, ERL_NIF_TERM term)
{
    put_text(d, bmt_format_term(d->t, d->env, term, (char *)d->cursor, BMT_TERM_MAX_BYTES + 1));
}

static inline void put_message(struct decode *d, ERL_NIF_TERM term)
{
    put_text(d, bmt_format_message(d->t, d->env, term, d->message_bytes, (char *)d->cursor));
}

static inline void put_u32(struct decode *d, uint32_t v)
{
    d->t->event.values[d->field++].integer = v;
    bmt_put_u32(d->cursor, v);
    d->cursor += 4;
}

static inline void put_u64(struct decode *d, uint64_t v)
{
    d->t->event.values[d->field++].integer = v;
    bmt_put_u64(d->cursor, v);
    d->cursor += 8;
}

/* An atom's text as is (no quotes: a node name), or "undefined". */
static inline void put_atom_text(struct decode *d, ERL_NIF_TERM atom)
{
    int n = enif_get_atom(d->env, atom, (char *)d->cursor, BMT_TERM_MAX_BYTES + 1, ERL_NIF_LATIN1);
    if (n <= 0) {
        put_word(d, "undefined");
        return;
    }
    put_text(d, (size_t)n - 1);
}

static inline ERL_NIF_TERM bmt_decode_extra(struct decode *d)
{
    /* enif_get_map_value answers false for a term that is not a map (the
     * NIF fuzz passes garbage here on every release the matrix runs). */
    ERL_NIF_TERM value;
    if (enif_get_map_value(d->env, d->opts, d->a->extra, &value))
        return value;
    return d->a->undefined;
}

static inline const char *link_type(struct decode *d)
{
    return d->tag == d->a->link || d->tag == d->a->getting_linked ? "link" : "unlink";
}

static inline int is_getting(struct decode *d)
{
    return d->tag == d->a->getting_linked || d->tag == d->a->getting_unlinked;
}

static inline const char *running_type(struct decode *d)
{
    const struct bmt_atoms *a = d->a;
    if (d->tag == a->in) return "in";
    if (d->tag == a->out) return "out";
    if (d->tag == a->in_exiting) return "in_exiting";
    if (d->tag == a->out_exiting) return "out_exiting";
    if (d->tag == a->out_exited) return "out_exited";
    return "undefined";
}

/* Value of `key` in the GC info list [{Key, Value}, ...], or 0. The VM's
 * list has a dozen entries; the walk stops after 64 whatever it is given. */
static inline uint64_t gc_value(struct decode *d, ERL_NIF_TERM key)
{
    ERL_NIF_TERM list = d->term, head;
    const ERL_NIF_TERM *kv;
    int arity;
    for (int budget = 64; budget > 0 && enif_get_list_cell(d->env, list, &head, &list); budget--) {
        ErlNifUInt64 v;
        if (enif_get_tuple(d->env, head, &arity, &kv) && arity == 2 && kv[0] == key)
            return enif_get_uint64(d->env, kv[1], &v) ? v : 0;
    }
    return 0;
}

/* A local pid or port: the immediates tagged 0x3 and 0x7 (the VM's stable
 * immediate tags). Their text comes from the id cache. */
static inline int is_local_id(ERL_NIF_TERM t)
{
    return (t & 0xf) == 0x3 || (t & 0xf) == 0x7;
}

static inline __attribute__((always_inline)) void bmt_decode_fields(struct decode *d, int tp)
{
    d->field = 0;
    switch (tp) {
    case BMT_TP_process_spawn:
        put_id(d, d->term);
        put_id(d, d->tracee);
        put_mfa(d, bmt_decode_extra(d), 0);
        break;
    case BMT_TP_process_link:
    case BMT_TP_port_link:
        put_id(d, is_getting(d) ? d->term : d->tracee);
        put_id(d, is_getting(d) ? d->tracee : d->term);
        put_word(d, link_type(d));
        break;
    case BMT_TP_process_exit:
    case BMT_TP_port_exit:
        put_id(d, d->tracee);
        put_term(d, d->term);
        break;
    case BMT_TP_process_register:
        put_id(d, d->tracee);
        put_term(d, d->term);
        put_word(d, d->tag == d->a->register_ ? "register" : "unregister");
        break;
    case BMT_TP_process_scheduled:
        put_id(d, d->tracee);
        put_mfa(d, d->term, 1);
        put_word(d, running_type(d));
        break;
    case BMT_TP_port_open:
        put_id(d, d->term);
        put_term(d, bmt_decode_extra(d));
        put_id(d, d->tracee);
        break;
    case BMT_TP_port_scheduled:
        put_id(d, d->tracee);
        put_term(d, d->term);
        put_word(d, running_type(d));
        break;
    case BMT_TP_function_call:
    case BMT_TP_function_return:
        put_id(d, d->tracee);
        put_mfa(d, d->term, 1);
        put_u32(d, 0);
        break;
    case BMT_TP_function_exception: {
        const ERL_NIF_TERM *cv;
        int arity;
        ERL_NIF_TERM x = bmt_decode_extra(d);
        put_id(d, d->tracee);
        put_mfa(d, d->term, 1);
        if (enif_get_tuple(d->env, x, &arity, &cv) && arity == 2)
            put_term(d, cv[0]);
        else
            put_word(d, "undefined");
        break;
    }
    case BMT_TP_message_send: {
        ERL_NIF_TERM to = bmt_decode_extra(d);
        put_id(d, d->tracee);
        /* Usually a local pid: the id cache's inline hit gives the same
         * text as the general printer, cheaper. Names and remote
         * destinations take the TERM bound. */
        if (is_local_id(to))
            put_id(d, to);
        else
            put_term(d, to);
        put_message(d, d->term);
        break;
    }
    case BMT_TP_message_receive:
        put_id(d, d->tracee);
        put_message(d, d->term);
        break;
    case BMT_TP_message_send_link: {
        ERL_NIF_TERM to = bmt_decode_extra(d);
        put_id(d, d->tracee);
        if (is_local_id(to))
            put_id(d, to);
        else
            put_term(d, to);
        put_message(d, d->term);
        put_word(d, d->tag == d->a->send_to_non_existing_process ? "send_to_non_existing_process"
                                                                  : "send");
        put_u64(d, bmt_fingerprint(d->env, d->term));
        break;
    }
    case BMT_TP_message_receive_link: {
        /* The 'receive' match spec beamtrace sets with links
         * (beamtrace_trace's LINKS_RECV_MS) answers, of OTP's [Node,
         * Sender, Message], the sender when it is on this node, else the
         * sender's node: one immediate either way, nothing to copy. */
        ERL_NIF_TERM result;
        int found = enif_get_map_value(d->env, d->opts, d->a->match_spec_result, &result);
        put_id(d, d->tracee);
        put_message(d, d->term);
        if (found && (enif_is_pid(d->env, result) || enif_is_port(d->env, result))) {
            put_id(d, result);
            if (d->node && *d->node) {
                size_t len = strlen(d->node);
                memcpy(d->cursor, d->node, len + 1);
                put_text(d, len);
            } else {
                put_word(d, "undefined");
            }
        } else {
            put_word(d, "undefined");
            if (found && enif_is_atom(d->env, result))
                put_atom_text(d, result);
            else
                put_word(d, "undefined");
        }
        put_u64(d, bmt_fingerprint(d->env, d->term));
        break;
    }
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_start:
    case BMT_TP_gc_major_end:
        put_id(d, d->tracee);
        put_u64(d, gc_value(d, d->a->wordsize));
        put_u64(d, gc_value(d, d->a->heap_block_size));
        put_u64(d, gc_value(d, d->a->old_heap_block_size));
        break;
    }
}

#endif
