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

#include "nif_fingerprint.h"
#include "nif_state.h"
#include "nif_thread.h"

#include <string.h>

struct decode {
    ErlNifEnv *env;
    const struct bmt_atoms *a;
    struct thread_ctx *t;
    int tp;             /* the tracepoint being written */
    int message_bytes;  /* the recorder session's option, or OTP's 255 */
    ERL_NIF_TERM tag, tracee, term, opts; /* the erl_tracer event, if any */
    uint8_t *cursor;    /* where the next field goes */
    unsigned field;     /* index of the next field */
    const char *node;   /* the recording session's node name (its trace's
                           beamtrace_node), for link variants; else NULL */
};

/* Starts decoding an event of tracepoint `tp` on thread `t` (entered) at
 * `dst`: the only place a struct decode is filled in. The tracer sets the
 * event's terms, message bound and node after it. */
static inline void bmt_decode_init(struct decode *d, ErlNifEnv *env, const struct priv *p,
                                   struct thread_ctx *t, int tp, uint8_t *dst)
{
    *d = (struct decode){
        .env = env,
        .a = &p->atom,
        .t = t,
        .tp = tp,
        .cursor = dst,
    };
    t->event.id = (uint16_t)tp;
}

/* Prints the message field of a message event (`tp` message_send or
 * message_receive) again, bounded by `message_bytes`, at `where`, and
 * points the event's value at it: for a sink that must see OTP's text when
 * the recorder session asked for another length. */
void bmt_decode_message_again(struct decode *d, int tp, int message_bytes, uint8_t *where);

/* Fills the USDT-only arguments of tracepoint `tp` (text written from
 * `where`, which has room for BMT_USDT_ARGS_TEXT_BYTES). */
#define BMT_USDT_ARGS_TEXT_BYTES (BMT_MFA_MAX_BYTES + 1 + 3 * (BMT_TERM_MAX_BYTES + 1))
void bmt_decode_usdt_args(struct decode *d, int tp, struct bmt_usdt_args *args, uint8_t *where);

/* bmt_decode_fields(d, tp) writes the fields of tracepoint `tp` for the
 * erl_tracer event in `d` at d->cursor and points d->t->event.values at
 * them; d->cursor ends after the last field. bmt_decode_extra(d) is the
 * `extra` value of the callback's options, or 'undefined'. Both inline:
 * each tracer callback gets a copy whose switch holds only its own
 * tracepoints. */

/* ---- the debug build's checks ----
 *
 * The fields are written in catalogue order by hand (a cursor, no
 * positions), so a reordered catalogue row would put values in the wrong
 * fields without a word. In a debug build (make debug: -DBMT_DEBUG) every
 * write names the field it means and states its type, and the end of an
 * event checks the count: a mismatch prints what was written where and
 * aborts. Release builds compile the names away. */
#ifdef BMT_DEBUG
void bmt_decode_check_field(const struct decode *d, const char *name, enum bmt_field_type type);
void bmt_decode_check_end(const struct decode *d);
#define CHECK_FIELD(d, name, type) bmt_decode_check_field(d, name, type)
#define CHECK_END(d) bmt_decode_check_end(d)
#else
#define CHECK_FIELD(d, name, type) ((void)(name))
#define CHECK_END(d) ((void)(d))
#endif

/* ---- field writers: each appends field `name` at the cursor ---- */

/* The text already at the cursor, `len` bytes plus its NUL. */
static inline void put_text(struct decode *d, const char *name, size_t len)
{
    CHECK_FIELD(d, name, BMT_FIELD_STRING);
    struct bmt_value *v = &d->t->event.values[d->field++];
    v->str = (const char *)d->cursor;
    v->len = (uint32_t)len;
    d->cursor += len + 1;
}

static inline void put_word(struct decode *d, const char *name, const char *word)
{
    size_t len = strlen(word);
    memcpy(d->cursor, word, len + 1);
    put_text(d, name, len);
}

static inline void put_id(struct decode *d, const char *name, ERL_NIF_TERM term)
{
    put_text(d, name, bmt_format_id(&d->t->fmt, d->env, term, (char *)d->cursor));
}

/* `vm_args`: see bmt_format_mfa. */
static inline void put_mfa(struct decode *d, const char *name, ERL_NIF_TERM term, int vm_args)
{
    put_text(d, name, bmt_format_mfa(&d->t->fmt, d->env, term, (char *)d->cursor, vm_args));
}

static inline void put_term(struct decode *d, const char *name, ERL_NIF_TERM term)
{
    put_text(d, name,
             bmt_format_term(&d->t->fmt, d->env, term, (char *)d->cursor, BMT_TERM_MAX_BYTES + 1));
}

static inline void put_message(struct decode *d, const char *name, ERL_NIF_TERM term)
{
    put_text(d, name,
             bmt_format_message(&d->t->fmt, d->env, term, d->message_bytes, (char *)d->cursor));
}

static inline void put_u32(struct decode *d, const char *name, uint32_t v)
{
    CHECK_FIELD(d, name, BMT_FIELD_U32);
    d->t->event.values[d->field++].integer = v;
    bmt_put_u32(d->cursor, v);
    d->cursor += 4;
}

static inline void put_u64(struct decode *d, const char *name, uint64_t v)
{
    CHECK_FIELD(d, name, BMT_FIELD_U64);
    d->t->event.values[d->field++].integer = v;
    bmt_put_u64(d->cursor, v);
    d->cursor += 8;
}

static inline void put_s64(struct decode *d, const char *name, int64_t v)
{
    CHECK_FIELD(d, name, BMT_FIELD_S64);
    d->t->event.values[d->field++].integer = (uint64_t)v;
    bmt_put_u64(d->cursor, (uint64_t)v);
    d->cursor += 8;
}

/* An atom's text as is (no quotes: a node name), or "undefined". */
static inline void put_atom_text(struct decode *d, const char *name, ERL_NIF_TERM atom)
{
    int n = enif_get_atom(d->env, atom, (char *)d->cursor, BMT_TERM_MAX_BYTES + 1, ERL_NIF_LATIN1);
    if (n <= 0) {
        put_word(d, name, "undefined");
        return;
    }
    put_text(d, name, (size_t)n - 1);
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

/* The destination of a send as given: usually a local pid, whose text the
 * id cache's inline hit gives exactly as the general printer would, and
 * cheaper; names and remote destinations take the TERM bound. */
static inline void put_destination(struct decode *d, const char *name, ERL_NIF_TERM to)
{
    if (is_local_id(to))
        put_id(d, name, to);
    else
        put_term(d, name, to);
}

/* The GC fields after pid: `first` is need (start events) or reclaimed
 * (end events), the VM's wordsize either way. */
static inline void put_gc(struct decode *d, const char *first)
{
    put_id(d, "pid", d->tracee);
    put_u64(d, first, gc_value(d, d->a->wordsize));
    put_u64(d, "heap", gc_value(d, d->a->heap_block_size));
    put_u64(d, "old_heap", gc_value(d, d->a->old_heap_block_size));
}

static inline __attribute__((always_inline)) void bmt_decode_fields(struct decode *d, int tp)
{
    d->tp = tp;
    d->field = 0;
    switch (tp) {
    case BMT_TP_process_spawn:
        put_id(d, "pid", d->term);
        put_id(d, "parent", d->tracee);
        put_mfa(d, "entry", bmt_decode_extra(d), 0);
        break;
    case BMT_TP_process_link:
    case BMT_TP_port_link:
        put_id(d, "from", is_getting(d) ? d->term : d->tracee);
        put_id(d, "to", is_getting(d) ? d->tracee : d->term);
        put_word(d, "type", link_type(d));
        break;
    case BMT_TP_process_exit:
        put_id(d, "pid", d->tracee);
        put_term(d, "reason", d->term);
        break;
    case BMT_TP_port_exit:
        put_id(d, "port", d->tracee);
        put_term(d, "reason", d->term);
        break;
    case BMT_TP_process_register:
        put_id(d, "pid", d->tracee);
        put_term(d, "name", d->term);
        put_word(d, "type", d->tag == d->a->register_ ? "register" : "unregister");
        break;
    case BMT_TP_process_scheduled:
        put_id(d, "pid", d->tracee);
        put_mfa(d, "entry", d->term, 1);
        put_word(d, "type", running_type(d));
        break;
    case BMT_TP_port_open:
        put_id(d, "pid", d->term);
        put_term(d, "driver", bmt_decode_extra(d));
        put_id(d, "port", d->tracee);
        break;
    case BMT_TP_port_scheduled:
        put_id(d, "pid", d->tracee);
        put_term(d, "entry", d->term);
        put_word(d, "type", running_type(d));
        break;
    case BMT_TP_function_call:
    case BMT_TP_function_return:
        put_id(d, "pid", d->tracee);
        put_mfa(d, "entry", d->term, 1);
        put_u32(d, "depth", 0);
        break;
    case BMT_TP_function_exception: {
        const ERL_NIF_TERM *cv;
        int arity;
        ERL_NIF_TERM x = bmt_decode_extra(d);
        put_id(d, "pid", d->tracee);
        put_mfa(d, "entry", d->term, 1);
        if (enif_get_tuple(d->env, x, &arity, &cv) && arity == 2)
            put_term(d, "class", cv[0]);
        else
            put_word(d, "class", "undefined");
        break;
    }
    case BMT_TP_message_send:
        put_id(d, "from", d->tracee);
        put_destination(d, "to", bmt_decode_extra(d));
        put_message(d, "message", d->term);
        break;
    case BMT_TP_message_receive:
        put_id(d, "to", d->tracee);
        put_message(d, "message", d->term);
        break;
    case BMT_TP_message_send_link:
        put_id(d, "from", d->tracee);
        put_destination(d, "to", bmt_decode_extra(d));
        put_message(d, "message", d->term);
        put_word(d, "type", d->tag == d->a->send_to_non_existing_process
                                ? "send_to_non_existing_process"
                                : "send");
        put_u64(d, "fingerprint", bmt_fingerprint(d->env, d->term));
        break;
    case BMT_TP_message_receive_link: {
        /* The 'receive' match spec beamtrace sets with links
         * (beamtrace_trace's LINKS_RECV_MS) answers, of OTP's [Node,
         * Sender, Message], the sender when it is on this node, else the
         * sender's node: one immediate either way, nothing to copy. */
        ERL_NIF_TERM result;
        int found = enif_get_map_value(d->env, d->opts, d->a->match_spec_result, &result);
        put_id(d, "to", d->tracee);
        put_message(d, "message", d->term);
        if (found && (enif_is_pid(d->env, result) || enif_is_port(d->env, result))) {
            put_id(d, "from", result);
            put_word(d, "from_node", d->node && *d->node ? d->node : "undefined");
        } else {
            put_word(d, "from", "undefined");
            if (found && enif_is_atom(d->env, result))
                put_atom_text(d, "from_node", result);
            else
                put_word(d, "from_node", "undefined");
        }
        put_u64(d, "fingerprint", bmt_fingerprint(d->env, d->term));
        break;
    }
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_major_start:
        put_gc(d, "need");
        break;
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_end:
        put_gc(d, "reclaimed");
        break;
    }
    CHECK_END(d);
}

#endif
