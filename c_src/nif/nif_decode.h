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
#include "nif_term_peek.h"
#include "nif_thread.h"

#include <string.h>

/* The hot helpers: inlined into each tracer callback whatever their size. */
#define DECODE_INLINE static inline __attribute__((always_inline))

struct decode {
    ErlNifEnv *env;
    const struct bmt_atoms *a;
    struct thread_ctx *t;     /* the calling thread's context */
    struct bmt_format_cache *fmt; /* its caches */
    const ERL_NIF_TERM *argv; /* the erl_tracer call's Tag, State, Tracee,
                                 TraceTerm, Opts; NULL off the tracer */
    uint8_t *cursor;          /* where the next field goes */
    struct bmt_session *s;    /* the recording session (its message option
                                 and node name), or NULL: OTP's choices */
    ERL_NIF_TERM extra;       /* Opts' extra once looked up (0: not yet) */
    int tp;                   /* the tracepoint being written */
    /* The cache entries of the tracee and of the event's MFA (argv[3]),
     * when the caller found both before it entered the ring (the tracer's
     * fastest path: nif_tracer.c's trace_cached); NULL otherwise. */
    const struct bmt_id_cache_entry *tracee_hit;
    const struct mfa_cache_entry *mfa_hit;
#ifdef BMT_DEBUG
    unsigned field;           /* index of the next field (the checks') */
#endif
};

/* Starts decoding an event of tracepoint `tp` at `dst` with thread `t`'s
 * caches: the only place a struct decode is filled in. `argv` is the
 * tracer callback's (NULL for user probes and emit_nif); `s` the session
 * whose ring `dst` is in (NULL: scratch for LTTng and USDT). */
static inline void bmt_decode_init(struct decode *d, ErlNifEnv *env, const struct priv *p,
                                   struct thread_ctx *t, int tp, uint8_t *dst,
                                   const ERL_NIF_TERM *argv, struct bmt_session *s)
{
    *d = (struct decode){
        .env = env,
        .a = &p->atom,
        .t = t,
        .fmt = &t->fmt,
        .argv = argv,
        .cursor = dst,
        .s = s,
        .tp = tp,
    };
}

/* A copy of `d` for an out-of-line field writer, and its cursor taken
 * back: `d` itself never has its address taken on the tracer's path, so
 * the compiler keeps its fields in registers instead of storing and
 * reloading them around every field. */
static inline __attribute__((always_inline)) struct decode bmt_decode_copy(const struct decode *d)
{
    struct decode v = {.env = d->env, .a = d->a, .t = d->t, .fmt = d->fmt, .argv = d->argv,
                       .cursor = d->cursor, .s = d->s, .extra = d->extra, .tp = d->tp,
                       .tracee_hit = d->tracee_hit, .mfa_hit = d->mfa_hit};
#ifdef BMT_DEBUG
    v.field = d->field;
#endif
    return v;
}

static inline __attribute__((always_inline)) void bmt_decode_back(struct decode *d,
                                                                  const struct decode *v)
{
    d->cursor = v->cursor;
    d->extra = v->extra;
#ifdef BMT_DEBUG
    d->field = v->field;
#endif
}

static inline ERL_NIF_TERM d_tag(const struct decode *d) { return d->argv[0]; }
static inline ERL_NIF_TERM d_tracee(const struct decode *d) { return d->argv[2]; }
static inline ERL_NIF_TERM d_term(const struct decode *d) { return d->argv[3]; }
static inline ERL_NIF_TERM d_opts(const struct decode *d) { return d->argv[4]; }

/* The message bound: the recording session's option, else OTP's. */
static inline int bmt_decode_message_bytes(const struct decode *d)
{
    return d->s ? bmt_format_message_bytes(
                      atomic_load_explicit(&d->s->format_option, memory_order_relaxed))
                : BMT_OTP_MESSAGE_BYTES;
}

/* Prints the message of the message event in `ev` (tracepoint `tp`,
 * message_send or message_receive) again, bounded by OTP's 255 bytes, at
 * `where`, and points the event's message value at it: for LTTng, which
 * must see OTP's text when the recording session asked for another
 * length. */
void bmt_decode_message_again(struct decode *d, struct bmt_event *ev, int tp, uint8_t *where);

/* Fills the USDT-only arguments of tracepoint `tp` (event `ev`, whose
 * values are set; text written from `where`, which has room for
 * BMT_USDT_ARGS_TEXT_BYTES). */
#define BMT_USDT_ARGS_TEXT_BYTES (BMT_MFA_MAX_BYTES + 1 + 3 * (BMT_TERM_MAX_BYTES + 1))
void bmt_decode_usdt_args(struct decode *d, const struct bmt_event *ev, int tp,
                          struct bmt_usdt_args *args, uint8_t *where);

/* bmt_decode_fields(d, tp) writes the fields of tracepoint `tp` for the
 * erl_tracer event in `d` at d->cursor, in their CTF layout; d->cursor
 * ends after the last field. No value is kept aside: a sink that wants
 * values reads them back (bmt_event_values_from_payload). Inline: each
 * tracer callback gets a copy whose switch holds only its own
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
void bmt_decode_check_field(struct decode *d, const char *name, enum bmt_field_type type);
void bmt_decode_check_end(const struct decode *d);
#define CHECK_FIELD(d, name, type) bmt_decode_check_field(d, name, type)
#define CHECK_END(d) bmt_decode_check_end(d)
#else
#define CHECK_FIELD(d, name, type) ((void)(name))
#define CHECK_END(d) ((void)(d))
#endif

/* ---- field writers: each appends field `name` at the cursor ---- */

/* The text already at the cursor, `len` bytes plus its NUL. */
DECODE_INLINE void put_text(struct decode *d, const char *name, size_t len)
{
    CHECK_FIELD(d, name, BMT_FIELD_STRING);
    d->cursor += len + 1;
}

DECODE_INLINE void put_word(struct decode *d, const char *name, const char *word)
{
    size_t len = strlen(word);
    memcpy(d->cursor, word, len + 1);
    put_text(d, name, len);
}

DECODE_INLINE void put_id(struct decode *d, const char *name, ERL_NIF_TERM term)
{
    put_text(d, name, bmt_format_id(d->fmt, d->env, term, (char *)d->cursor));
}

/* The tracee, a pid or port: as put_id, tried first against the thread's
 * last tracee (the process running on it, as a rule). */
DECODE_INLINE void put_tracee(struct decode *d, const char *name)
{
    if (d->tracee_hit)
        put_text(d, name, bmt_id_copy(d->tracee_hit, (char *)d->cursor));
    else
        put_text(d, name, bmt_format_tracee(d->fmt, d->env, d_tracee(d), (char *)d->cursor));
}

/* `vm_args`: see bmt_format_mfa. */
DECODE_INLINE void put_mfa(struct decode *d, const char *name, ERL_NIF_TERM term, int vm_args)
{
    if (d->mfa_hit && term == d_term(d))
        put_text(d, name, bmt_mfa_copy(d->mfa_hit, (char *)d->cursor));
    else
        put_text(d, name, bmt_format_mfa(d->fmt, d->env, term, (char *)d->cursor, vm_args));
}

DECODE_INLINE void put_term(struct decode *d, const char *name, ERL_NIF_TERM term)
{
    put_text(d, name,
             bmt_format_term(d->fmt, d->env, term, (char *)d->cursor, BMT_TERM_MAX_BYTES + 1));
}

DECODE_INLINE void put_message(struct decode *d, const char *name, ERL_NIF_TERM term)
{
    put_text(d, name, bmt_format_message(d->fmt, d->env, term, bmt_decode_message_bytes(d),
                                         (char *)d->cursor));
}

DECODE_INLINE void put_u32(struct decode *d, const char *name, uint32_t v)
{
    CHECK_FIELD(d, name, BMT_FIELD_U32);
    bmt_put_u32(d->cursor, v);
    d->cursor += 4;
}

DECODE_INLINE void put_u64(struct decode *d, const char *name, uint64_t v)
{
    CHECK_FIELD(d, name, BMT_FIELD_U64);
    bmt_put_u64(d->cursor, v);
    d->cursor += 8;
}

DECODE_INLINE void put_s64(struct decode *d, const char *name, int64_t v)
{
    CHECK_FIELD(d, name, BMT_FIELD_S64);
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

/* The `extra' value of the callback's options, or 'undefined': looked up
 * once per event, and only by the events that carry one (the map lookup
 * is a few tens of instructions). */
DECODE_INLINE ERL_NIF_TERM bmt_decode_extra(struct decode *d)
{
    /* False for a term that is not a map (the NIF fuzz passes garbage
     * here on every release the matrix runs): the reader asks the VM.
     * Through a local: see bmt_decode_copy. */
    if (!d->extra) {
        ERL_NIF_TERM x;
        d->extra = bmt_peek_map_value(d->env, d_opts(d), d->a->extra, &x) ? x : d->a->undefined;
    }
    return d->extra;
}

/* The fixed words of WORD fields, padded to the field's bound: written
 * with one fixed-size copy (a WORD field's room is its bound). */
struct word16 {
    char text[BMT_WORD_MAX_BYTES + 1];
    uint8_t len;
};
#define WORD16(s) {s, sizeof(s) - 1}
static const struct word16 w_link = WORD16("link"), w_unlink = WORD16("unlink"),
                           w_register = WORD16("register"), w_unregister = WORD16("unregister"),
                           w_in = WORD16("in"), w_out = WORD16("out"),
                           w_in_exiting = WORD16("in_exiting"), w_out_exiting = WORD16("out_exiting"),
                           w_out_exited = WORD16("out_exited"), w_undefined = WORD16("undefined"),
                           w_send = WORD16("send"), w_receive = WORD16("receive"),
                           w_print = WORD16("print");

DECODE_INLINE void put_word16(struct decode *d, const char *name, const struct word16 *w)
{
    memcpy(d->cursor, w->text, sizeof w->text);
    put_text(d, name, w->len);
}

static inline const struct word16 *link_type(struct decode *d)
{
    return d_tag(d) == d->a->link || d_tag(d) == d->a->getting_linked ? &w_link : &w_unlink;
}

static inline int is_getting(struct decode *d)
{
    return d_tag(d) == d->a->getting_linked || d_tag(d) == d->a->getting_unlinked;
}

static inline const struct word16 *running_type(struct decode *d)
{
    const struct bmt_atoms *a = d->a;
    if (d_tag(d) == a->in) return &w_in;
    if (d_tag(d) == a->out) return &w_out;
    if (d_tag(d) == a->in_exiting) return &w_in_exiting;
    if (d_tag(d) == a->out_exiting) return &w_out_exiting;
    if (d_tag(d) == a->out_exited) return &w_out_exited;
    return &w_undefined;
}

/* The values of wordsize, heap_block_size and old_heap_block_size in the
 * GC info list [{Key, Value}, ...] (0 for a key that is absent), looked up
 * by key in one walk (the VM's list has a dozen entries, these three
 * first; the walk stops after 64 whatever it is given), read in place
 * (nif_term_peek.h: no VM call per cell and per tuple). */
static inline void gc_values(struct decode *d, uint64_t *words, uint64_t *heap,
                             uint64_t *old_heap)
{
    ERL_NIF_TERM list = d_term(d), head;
    const ERL_NIF_TERM *kv;
    int arity, left = 3;
    *words = *heap = *old_heap = 0;
    for (int budget = 64; left && budget > 0 && bmt_peek_list_cell(d->env, list, &head, &list);
         budget--) {
        if (!bmt_peek_tuple(d->env, head, &arity, &kv) || arity != 2)
            continue;
        uint64_t *dst = kv[0] == d->a->wordsize              ? words
                        : kv[0] == d->a->heap_block_size     ? heap
                        : kv[0] == d->a->old_heap_block_size ? old_heap
                                                             : NULL;
        if (!dst)
            continue;
        int64_t small;
        ErlNifUInt64 v;
        if (bmt_small_int(d->env, kv[1], &small))
            *dst = small < 0 ? 0 : (uint64_t)small;
        else
            *dst = enif_get_uint64(d->env, kv[1], &v) ? v : 0;
        left--;
    }
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
    uint64_t words, heap, old_heap;
    gc_values(d, &words, &heap, &old_heap);
    put_tracee(d, "pid");
    put_u64(d, first, words);
    put_u64(d, "heap", heap);
    put_u64(d, "old_heap", old_heap);
}

/* seq_trace's fields: the label (trace/5's third argument) and
 * {Type, {Previous, Current}, From, To, Message} (OTP's SeqTraceInfo; print
 * events have [] for To and the printed term for Message). Anything else
 * in its place is written as undefined and zeros. */
static inline void put_seq_trace(struct decode *d)
{
    const ERL_NIF_TERM *info, *serial;
    int arity, serial_arity;
    int64_t prev = 0, cur = 0;
    put_term(d, "label", d_tracee(d));
    if (!enif_get_tuple(d->env, d_term(d), &arity, &info) || arity != 5) {
        put_word16(d, "type", &w_undefined);
        put_u64(d, "previous", 0);
        put_u64(d, "current", 0);
        put_word16(d, "from", &w_undefined);
        put_word16(d, "to", &w_undefined);
        put_message(d, "message", d->a->undefined);
        return;
    }
    put_word16(d, "type", info[0] == d->a->send       ? &w_send
                          : info[0] == d->a->receive_ ? &w_receive
                          : info[0] == d->a->print    ? &w_print
                                                      : &w_undefined);
    if (enif_get_tuple(d->env, info[1], &serial_arity, &serial) && serial_arity == 2) {
        if (!bmt_small_int(d->env, serial[0], &prev) || prev < 0)
            prev = 0;
        if (!bmt_small_int(d->env, serial[1], &cur) || cur < 0)
            cur = 0;
    }
    put_u64(d, "previous", (uint64_t)prev);
    put_u64(d, "current", (uint64_t)cur);
    put_id(d, "from", info[2]);
    put_term(d, "to", info[3]);
    put_message(d, "message", info[4]);
}

/* function_result and function_call_args (the session's results and args
 * options): OTP's three fields plus the returned value (a return_from's
 * extra; a return_to has none: empty) or the argument list (the call's
 * {M, F, Args}). Out of line: only the sessions that asked pay for it. */
void bmt_decode_value(struct decode *d, int tp);

/* The fields of the rarer tracepoints, each in a helper of its own so that
 * bmt_decode_fields below stays one readable switch; always inlined, so
 * the code is the switch's own. */
DECODE_INLINE void decode_exception(struct decode *d)
{
    const ERL_NIF_TERM *cv;
    int arity;
    ERL_NIF_TERM x = bmt_decode_extra(d);
    put_tracee(d, "pid");
    put_mfa(d, "entry", d_term(d), 1);
    if (enif_get_tuple(d->env, x, &arity, &cv) && arity == 2)
        put_term(d, "class", cv[0]);
    else
        put_word16(d, "class", &w_undefined);
}

DECODE_INLINE void decode_send_link(struct decode *d)
{
    put_tracee(d, "from");
    put_destination(d, "to", bmt_decode_extra(d));
    put_message(d, "message", d_term(d));
    put_word(d, "type", d_tag(d) == d->a->send_to_non_existing_process
                            ? "send_to_non_existing_process"
                            : "send");
    put_u64(d, "fingerprint", bmt_fingerprint(d->env, d_term(d)));
}

/* The 'receive' match spec beamtrace sets with links (beamtrace_trace's
 * LINKS_RECV_MS) answers, of OTP's [Node, Sender, Message], the sender
 * when it is on this node, else the sender's node: one immediate either
 * way, nothing to copy. */
DECODE_INLINE void decode_receive_link(struct decode *d)
{
    ERL_NIF_TERM result;
    int found = enif_get_map_value(d->env, d_opts(d), d->a->match_spec_result, &result);
    put_tracee(d, "to");
    put_message(d, "message", d_term(d));
    if (found && (enif_is_pid(d->env, result) || enif_is_port(d->env, result))) {
        put_id(d, "from", result);
        put_word(d, "from_node", d->s && d->s->cfg.info.node[0] ? d->s->cfg.info.node
                                                                : "undefined");
    } else {
        put_word(d, "from", "undefined");
        if (found && enif_is_atom(d->env, result))
            put_atom_text(d, "from_node", result);
        else
            put_word(d, "from_node", "undefined");
    }
    put_u64(d, "fingerprint", bmt_fingerprint(d->env, d_term(d)));
}

/* The tracepoints decoded through a copy of the decoder (out of the hot
 * cases' registers): results and arguments, collections, seq_trace. */
DECODE_INLINE void decode_by_copy(struct decode *d, int tp)
{
    struct decode v = bmt_decode_copy(d);
    switch (tp) {
    case BMT_TP_function_result:
    case BMT_TP_function_call_args:
        bmt_decode_value(&v, tp);
        break;
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_major_start:
        put_gc(&v, "need");
        break;
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_end:
        put_gc(&v, "reclaimed");
        break;
    case BMT_TP_seq_trace:
        put_seq_trace(&v);
        break;
    }
    bmt_decode_back(d, &v);
}

static inline __attribute__((always_inline)) void bmt_decode_fields(struct decode *d, int tp)
{
    d->tp = tp;
    switch (tp) {
    case BMT_TP_process_spawn:
        put_id(d, "pid", d_term(d));
        put_tracee(d, "parent");
        put_mfa(d, "entry", bmt_decode_extra(d), 0);
        break;
    case BMT_TP_process_link:
    case BMT_TP_port_link:
        put_id(d, "from", is_getting(d) ? d_term(d) : d_tracee(d));
        put_id(d, "to", is_getting(d) ? d_tracee(d) : d_term(d));
        put_word16(d, "type", link_type(d));
        break;
    case BMT_TP_process_exit:
        put_tracee(d, "pid");
        put_term(d, "reason", d_term(d));
        break;
    case BMT_TP_port_exit:
        put_tracee(d, "port");
        put_term(d, "reason", d_term(d));
        break;
    case BMT_TP_process_register:
        put_tracee(d, "pid");
        put_term(d, "name", d_term(d));
        put_word16(d, "type", d_tag(d) == d->a->register_ ? &w_register : &w_unregister);
        break;
    case BMT_TP_process_scheduled:
        put_tracee(d, "pid");
        put_mfa(d, "entry", d_term(d), 1);
        put_word16(d, "type", running_type(d));
        break;
    case BMT_TP_port_open:
        put_id(d, "pid", d_term(d));
        put_term(d, "driver", bmt_decode_extra(d));
        put_tracee(d, "port");
        break;
    case BMT_TP_port_scheduled:
        put_tracee(d, "pid");
        put_term(d, "entry", d_term(d));
        put_word16(d, "type", running_type(d));
        break;
    case BMT_TP_function_call:
    case BMT_TP_function_return:
        put_tracee(d, "pid");
        put_mfa(d, "entry", d_term(d), 1);
        put_u32(d, "depth", 0);
        break;
    case BMT_TP_function_exception:
        decode_exception(d);
        break;
    case BMT_TP_message_send:
        put_tracee(d, "from");
        put_destination(d, "to", bmt_decode_extra(d));
        put_message(d, "message", d_term(d));
        break;
    case BMT_TP_message_receive:
        put_tracee(d, "to");
        put_message(d, "message", d_term(d));
        break;
    case BMT_TP_message_send_link:
        decode_send_link(d);
        break;
    case BMT_TP_message_receive_link:
        decode_receive_link(d);
        break;
    case BMT_TP_function_result:
    case BMT_TP_function_call_args:
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_major_start:
    case BMT_TP_gc_minor_end:
    case BMT_TP_gc_major_end:
    case BMT_TP_seq_trace:
        decode_by_copy(d, tp);
        break;
    }
    CHECK_END(d);
}

#endif
