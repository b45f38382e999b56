/* Trace events to catalogue fields (contract in nif_decode.h).
 *
 * Semantics are OTP dyntrace's (reference §1.2, §4.3) with its known
 * defects fixed on purpose:
 *  - pids and ports are never cut (OTP cut them at 15/19 characters);
 *  - return_to produces function_return (OTP's enabled_call discarded it);
 *  - gc fields are looked up by key in the GC info list (OTP read the first
 *    three elements by position).
 */
#include "nif_decode.h"

#include <string.h>

/* ---- field writers: each appends the next field at the cursor ---- */

static void put_text(struct decode *d, size_t len)
{
    struct bmt_value *v = &d->t->event.values[d->field++];
    v->str = (const char *)d->cursor;
    v->len = (uint32_t)len;
    d->cursor += len + 1;
}

static void put_word(struct decode *d, const char *word)
{
    size_t len = strlen(word);
    memcpy(d->cursor, word, len + 1);
    put_text(d, len);
}

static void put_id(struct decode *d, ERL_NIF_TERM term)
{
    put_text(d, bmt_format_id(d->t, d->env, term, (char *)d->cursor));
}

/* `vm_args`: see bmt_format_mfa. */
static void put_mfa(struct decode *d, ERL_NIF_TERM term, int vm_args)
{
    put_text(d, bmt_format_mfa(d->t, d->env, term, (char *)d->cursor, vm_args));
}

static void put_term(struct decode *d, ERL_NIF_TERM term)
{
    put_text(d, bmt_format_term(d->t, d->env, term, (char *)d->cursor, BMT_TERM_MAX_BYTES + 1));
}

static void put_message(struct decode *d, ERL_NIF_TERM term)
{
    put_text(d, bmt_format_message(d->t, d->env, term, d->message_bytes, (char *)d->cursor));
}

static void put_u32(struct decode *d, uint32_t v)
{
    d->t->event.values[d->field++].integer = v;
    bmt_put_u32(d->cursor, v);
    d->cursor += 4;
}

static void put_u64(struct decode *d, uint64_t v)
{
    d->t->event.values[d->field++].integer = v;
    bmt_put_u64(d->cursor, v);
    d->cursor += 8;
}

/* An atom's text as is (no quotes: a node name), or "undefined". */
static void put_atom_text(struct decode *d, ERL_NIF_TERM atom)
{
    int n = enif_get_atom(d->env, atom, (char *)d->cursor, BMT_TERM_MAX_BYTES + 1, ERL_NIF_LATIN1);
    if (n <= 0) {
        put_word(d, "undefined");
        return;
    }
    put_text(d, (size_t)n - 1);
}

ERL_NIF_TERM bmt_decode_extra(struct decode *d)
{
    /* enif_get_map_value answers false for a term that is not a map (the
     * NIF fuzz passes garbage here on every release the matrix runs). */
    ERL_NIF_TERM value;
    if (enif_get_map_value(d->env, d->opts, d->a->extra, &value))
        return value;
    return d->a->undefined;
}

static const char *link_type(struct decode *d)
{
    return d->tag == d->a->link || d->tag == d->a->getting_linked ? "link" : "unlink";
}

static int is_getting(struct decode *d)
{
    return d->tag == d->a->getting_linked || d->tag == d->a->getting_unlinked;
}

static const char *running_type(struct decode *d)
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
static uint64_t gc_value(struct decode *d, ERL_NIF_TERM key)
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
static int is_local_id(ERL_NIF_TERM t)
{
    return (t & 0xf) == 0x3 || (t & 0xf) == 0x7;
}

void bmt_decode_fields(struct decode *d, int tp)
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

void bmt_decode_message_again(struct decode *d, int tp, int message_bytes, uint8_t *where)
{
    /* The link variants keep OTP's fields first: the same positions. */
    _Static_assert(BMT_F_message_send_link_message == BMT_F_message_send_message &&
                       BMT_F_message_receive_link_message == BMT_F_message_receive_message,
                   "link variants start with OTP's fields");
    struct bmt_value *v = &d->t->event.values[tp == BMT_TP_message_send ? BMT_F_message_send_message
                                                                        : BMT_F_message_receive_message];
    v->str = (const char *)where;
    v->len = (uint32_t)bmt_format_message(d->t, d->env, d->term, message_bytes, (char *)where);
}

/* ---- USDT-only arguments ---- */

/* Writes `term`'s text at *where (bounded by `room`) and returns it. */
static const char *text_at(struct decode *d, ERL_NIF_TERM term, size_t room, uint8_t **where)
{
    char *text = (char *)*where;
    size_t len = bmt_format_term(d->t, d->env, term, text, room);
    *where += len + 1;
    return text;
}

/* {Module, Function, Args} of a call event, Args a proper list of length
 * `arity` (call events carry arguments unless the `arity` flag is set). */
static int call_args(struct decode *d, ERL_NIF_TERM module, ERL_NIF_TERM function,
                     unsigned arity, ERL_NIF_TERM args[])
{
    const ERL_NIF_TERM *mfa;
    int size;
    ERL_NIF_TERM list;
    if (!enif_get_tuple(d->env, d->term, &size, &mfa) || size != 3 || mfa[0] != module ||
        mfa[1] != function)
        return 0;
    list = mfa[2];
    for (unsigned i = 0; i < arity; i++)
        if (!enif_get_list_cell(d->env, list, &args[i], &list))
            return 0;
    return enif_is_empty_list(d->env, list);
}

static int module_is_erlang(struct decode *d)
{
    const ERL_NIF_TERM *mfa;
    int size;
    return enif_get_tuple(d->env, d->term, &size, &mfa) && size == 3 && mfa[0] == d->a->erlang;
}

static void call_usdt_args(struct decode *d, struct bmt_usdt_args *a, uint8_t **where)
{
    ERL_NIF_TERM args[3];
    a->is_bif = module_is_erlang(d);
    if (call_args(d, d->a->erlang, d->a->hibernate, 3, args)) {
        /* The resume function: erlang:hibernate(M, F, Args), at most 255
         * arguments counted. */
        unsigned len = 0;
        ERL_NIF_TERM list = args[2], head;
        while (len < 256 && enif_get_list_cell(d->env, list, &head, &list))
            len++;
        char *mfa = (char *)*where;
        int n = enif_snprintf(mfa, BMT_MFA_MAX_BYTES + 1, "%T:%T/%u", args[0], args[1], len);
        *where += (n > 0 ? (size_t)n : 0) + 1;
        a->hibernate_mfa = mfa;
    }
    if (call_args(d, d->a->erlang, d->a->port_control, 3, args)) {
        a->control_op = 0;
        enif_get_int(d->env, args[1], &a->control_op);
        a->control_port = text_at(d, args[0], BMT_ID_MAX_BYTES + 1, where);
    }
}

/* Port sends: {Pid, {command, _}}, {Pid, close}, {Pid, {connect, _}}. */
static void port_command_args(struct decode *d, struct bmt_usdt_args *a, uint8_t **where)
{
    const ERL_NIF_TERM *msg, *cmd;
    int size, cmd_size;
    if (!enif_get_tuple(d->env, d->term, &size, &msg) || size != 2)
        return;
    if (msg[1] == d->a->close)
        a->port_command = "close";
    else if (enif_get_tuple(d->env, msg[1], &cmd_size, &cmd) && cmd_size == 2)
        a->port_command = cmd[0] == d->a->command ? "command"
                          : cmd[0] == d->a->connect ? "connect"
                                                    : NULL;
    if (a->port_command)
        a->port_sender = text_at(d, msg[0], BMT_ID_MAX_BYTES + 1, where);
}

static uint32_t message_words(struct decode *d)
{
    int complete;
    size_t words = bmt_term_words(d->env, d->term, &complete);
    return words > UINT32_MAX ? UINT32_MAX : (uint32_t)words;
}

static void send_usdt_args(struct decode *d, struct bmt_usdt_args *a, uint8_t **where)
{
    ERL_NIF_TERM to = bmt_decode_extra(d);
    const ERL_NIF_TERM *name_node;
    int size;
    ErlNifPid pid;
    if (enif_is_port(d->env, to)) {
        a->send_kind = BMT_SEND_PORT;
        port_command_args(d, a, where);
        return;
    }
    int remote_pid = enif_is_pid(d->env, to) && !enif_get_local_pid(d->env, to, &pid);
    int remote_name = enif_get_tuple(d->env, to, &size, &name_node) && size == 2;
    a->message_words = message_words(d);
    if (remote_pid || remote_name) {
        a->send_kind = BMT_SEND_REMOTE;
        a->remote_node = remote_name ? text_at(d, name_node[1], BMT_TERM_MAX_BYTES + 1, where) : "";
        a->remote_to = remote_name ? text_at(d, name_node[0], BMT_TERM_MAX_BYTES + 1, where)
                                   : d->t->event.values[BMT_F_message_send_to].str;
    } else {
        a->send_kind = BMT_SEND_LOCAL;
    }
}

void bmt_decode_usdt_args(struct decode *d, int tp, struct bmt_usdt_args *a, uint8_t *where)
{
    memset(a, 0, sizeof *a);
    switch (tp) {
    case BMT_TP_process_scheduled:
        a->scheduled_in = d->tag == d->a->in || d->tag == d->a->in_exiting;
        break;
    case BMT_TP_function_call:
        call_usdt_args(d, a, &where);
        break;
    case BMT_TP_function_return:
        a->is_bif = module_is_erlang(d);
        break;
    case BMT_TP_message_send:
        send_usdt_args(d, a, &where);
        break;
    case BMT_TP_message_receive:
        a->message_words = message_words(d);
        break;
    case BMT_TP_port_open: {
        /* OTP passes the driver name unquoted ("tcp_inet"). */
        char *driver = (char *)where;
        if (enif_get_atom(d->env, bmt_decode_extra(d), driver, BMT_TERM_MAX_BYTES + 1,
                          ERL_NIF_LATIN1) <= 0)
            driver[0] = '\0';
        a->driver = driver;
        break;
    }
    default:
        break;
    }
}
