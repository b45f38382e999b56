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
#include "sinks/usdt_wants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BMT_DEBUG
/* The debug build's checks (nif_decode.h). */
static void decode_mismatch(const struct decode *d, const char *what)
{
    const struct bmt_tracepoint *tp = &bmt_catalogue[d->tp];
    fprintf(stderr, "beamtrace (debug build): decoding %s: %s\r\n", tp->full_name, what);
    abort();
}

static const char *type_name(enum bmt_field_type type)
{
    switch (type) {
    case BMT_FIELD_STRING: return "string";
    case BMT_FIELD_U32: return "u32";
    case BMT_FIELD_U64: return "u64";
    case BMT_FIELD_S64: return "s64";
    }
    return "?";
}

void bmt_decode_check_field(struct decode *d, const char *name, enum bmt_field_type type)
{
    const struct bmt_tracepoint *tp = &bmt_catalogue[d->tp];
    char what[256];
    if (d->field >= tp->field_count) {
        snprintf(what, sizeof what, "field %u (%s %s) written, the catalogue has %u fields",
                 d->field, type_name(type), name, tp->field_count);
        decode_mismatch(d, what);
    }
    const struct bmt_field *f = &tp->fields[d->field];
    if (strcmp(f->name, name) != 0 || f->type != type) {
        snprintf(what, sizeof what, "field %u written as %s %s, the catalogue says %s %s",
                 d->field, type_name(type), name, type_name(f->type), f->name);
        decode_mismatch(d, what);
    }
    d->field++;
}

void bmt_decode_check_end(const struct decode *d)
{
    const struct bmt_tracepoint *tp = &bmt_catalogue[d->tp];
    char what[128];
    if (d->field != tp->field_count) {
        snprintf(what, sizeof what, "%u fields written, the catalogue has %u", d->field,
                 tp->field_count);
        decode_mismatch(d, what);
    }
}
#endif

void bmt_decode_message_again(struct decode *d, struct bmt_event *ev, int tp, uint8_t *where)
{
    /* The link variants keep OTP's fields first: the same positions. */
    _Static_assert(BMT_F_message_send_link_message == BMT_F_message_send_message &&
                       BMT_F_message_receive_link_message == BMT_F_message_receive_message,
                   "link variants start with OTP's fields");
    struct bmt_value *v = &ev->values[tp == BMT_TP_message_send ? BMT_F_message_send_message
                                                                : BMT_F_message_receive_message];
    v->str = (const char *)where;
    v->len = (uint32_t)bmt_format_message(d->fmt, d->env, d_term(d), BMT_OTP_MESSAGE_BYTES,
                                          (char *)where);
}

void bmt_decode_value(struct decode *d, int tp)
{
    const ERL_NIF_TERM *mfa;
    int size;
    put_id(d, "pid", d_tracee(d));
    put_mfa(d, "entry", d_term(d), 1);
    put_u32(d, "depth", 0);
    if (tp == BMT_TP_function_call_args) {
        if (enif_get_tuple(d->env, d_term(d), &size, &mfa) && size == 3)
            put_term(d, "args", mfa[2]);
        else
            put_word(d, "args", "undefined");
    } else if (d_tag(d) == d->a->return_from) {
        put_term(d, "result", bmt_decode_extra(d));
    } else {
        put_word(d, "result", "");
    }
}

/* ---- USDT-only arguments ---- */

/* Writes `term`'s text at *where (bounded by `room`) and returns it. */
static const char *text_at(struct decode *d, ERL_NIF_TERM term, size_t room, uint8_t **where)
{
    char *text = (char *)*where;
    size_t len = bmt_format_term(d->fmt, d->env, term, text, room);
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
    if (!enif_get_tuple(d->env, d_term(d), &size, &mfa) || size != 3 || mfa[0] != module ||
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
    return enif_get_tuple(d->env, d_term(d), &size, &mfa) && size == 3 && mfa[0] == d->a->erlang;
}

static void call_usdt_args(struct decode *d, struct bmt_usdt_args *a, uint8_t **where)
{
    ERL_NIF_TERM args[3];
    a->is_bif = module_is_erlang(d);
    if (ON(process__hibernate) && call_args(d, d->a->erlang, d->a->hibernate, 3, args)) {
        /* The resume function of erlang:hibernate(M, F, Args) (at most 255
         * arguments counted), for the `out' that follows: OTP 29 traces
         * compiled calls of it, older releases only interpreted ones. */
        struct bmt_hibernation *h = &d->t->hibernation;
        unsigned len = 0;
        ERL_NIF_TERM list = args[2], head;
        while (len < 256 && enif_get_list_cell(d->env, list, &head, &list))
            len++;
        if (enif_snprintf(h->mfa, sizeof h->mfa, "%T:%T/%u", args[0], args[1], len) > 0) {
            h->pid = d_tracee(d);
            h->called = 1;
        }
    }
    if (call_args(d, d->a->erlang, d->a->port_control, 3, args)) {
        a->control_op = 0;
        enif_get_int(d->env, args[1], &a->control_op);
        a->control_port = text_at(d, args[0], BMT_ID_MAX_BYTES + 1, where);
    }
}

/* process-hibernate, derived from the running flag: a process scheduled
 * out in erlang:hibernate/3 (the VM's term for it, out and in) hibernated.
 * OTP's probe gives the function it resumes in, which the running flag
 * does not say: it is the erlang:hibernate/3 call's when the call flag
 * traced it (exact), else where the process was when it was scheduled in
 * for the slice that ended hibernating (exact for a process that
 * hibernates into the function it was started in or woke up in, as OTP's
 * dyntrace_SUITE's does; a gen_server resumes in gen_server:wake_hib/6,
 * not in the loop it was scheduled in at). A slice that began with a wake
 * from hibernation and ends hibernating again is reported only when the
 * call is traced. */
static void hibernation_args(struct decode *d, const struct bmt_event *ev,
                             struct bmt_usdt_args *a)
{
    struct bmt_hibernation *h = &d->t->hibernation;
    const ERL_NIF_TERM *mfa;
    int size;
    int hibernating = enif_get_tuple(d->env, d_term(d), &size, &mfa) && size == 3 &&
                      mfa[0] == d->a->erlang && mfa[1] == d->a->hibernate;
    if (a->scheduled_in) {
        /* Woken from hibernation (in erlang:hibernate/3): nothing known of
         * where it goes next; an out in erlang:hibernate/3 without a new
         * call is the same hibernation (the VM woke the process for a
         * signal, process_info's say), which OTP's probe did not report
         * again. */
        const struct bmt_value *entry = &ev->values[BMT_F_process_scheduled_entry];
        size_t len = entry->len < sizeof h->mfa - 1 ? entry->len : sizeof h->mfa - 1;
        memcpy(h->mfa, entry->str, len);
        h->mfa[len] = '\0';
        h->pid = hibernating ? 0 : d_tracee(d);
        h->called = 0;
        return;
    }
    /* A call through apply (erl_eval's) is scheduled out elsewhere than in
     * erlang:hibernate/3: the call said it hibernates. */
    if (h->pid == d_tracee(d) && (hibernating || h->called))
        a->hibernate_mfa = h->mfa;
    h->pid = 0;
}

/* Port sends: {Pid, {command, _}}, {Pid, close}, {Pid, {connect, _}}. */
static void port_command_args(struct decode *d, struct bmt_usdt_args *a, uint8_t **where)
{
    const ERL_NIF_TERM *msg, *cmd;
    int size, cmd_size;
    if (!enif_get_tuple(d->env, d_term(d), &size, &msg) || size != 2)
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
    size_t words = bmt_term_words(d->env, d_term(d), &complete);
    return words > UINT32_MAX ? UINT32_MAX : (uint32_t)words;
}

static void send_usdt_args(struct decode *d, const struct bmt_event *ev, struct bmt_usdt_args *a,
                           uint8_t **where)
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
                                   : ev->values[BMT_F_message_send_to].str;
    } else {
        a->send_kind = BMT_SEND_LOCAL;
        /* OTP's probe gives the receiver's pid; a send to a registered
         * name (Name ! Msg, gen_server:cast(Name, _)) names it, and the
         * VM resolved the name for the send a moment ago. The name's
         * text stays in the event (OTP's LTTng text). */
        if (enif_is_atom(d->env, to) && enif_whereis_pid(d->env, to, &pid)) {
            char *text = (char *)*where;
            size_t len = bmt_format_id(d->fmt, d->env, enif_make_pid(d->env, &pid), text);
            *where += len + 1;
            a->receiver = text;
        }
    }
}

void bmt_decode_usdt_args(struct decode *d, const struct bmt_event *ev, int tp,
                          struct bmt_usdt_args *a, uint8_t *where)
{
    memset(a, 0, sizeof *a);
    switch (tp) {
    case BMT_TP_process_scheduled:
        a->scheduled_in = d_tag(d) == d->a->in || d_tag(d) == d->a->in_exiting;
        if (ON(process__hibernate))
            hibernation_args(d, ev, a);
        break;
    case BMT_TP_function_call:
        call_usdt_args(d, a, &where);
        break;
    case BMT_TP_function_return:
        a->is_bif = module_is_erlang(d);
        break;
    case BMT_TP_message_send:
        send_usdt_args(d, ev, a, &where);
        break;
    case BMT_TP_message_receive:
        a->message_words = message_words(d);
        break;
    case BMT_TP_seq_trace:
        /* OTP's trace_seq probe: each argument printed, TERM-bounded. */
        a->tracer_state = text_at(d, d->argv[1], BMT_TERM_MAX_BYTES + 1, &where);
        a->trace_label = text_at(d, d_tracee(d), BMT_TERM_MAX_BYTES + 1, &where);
        a->trace_info = text_at(d, d_term(d), BMT_TERM_MAX_BYTES + 1, &where);
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
