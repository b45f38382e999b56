/* USDT sink: OTP's DTrace/SystemTap probes (provider `erlang`) as sys/sdt.h
 * probes with semaphores in this library, fired from the decoded events.
 *
 * Which probes exist and how each maps to OTP's is usdt.def's table; this
 * file holds the probe sites. Names use "__" where DTrace shows "-":
 * `bpftrace -p PID -e 'usdt:.../beamtrace_nif.so:erlang:process__spawn {...}'`,
 * `stap -e 'probe process("beamtrace_nif.so").mark("process__spawn") {...}'`.
 *
 * Cost when nothing is attached: the semaphore loads in bmt_usdt_wants.
 * A tracer attaching or detaching changes a semaphore at any time; a probe
 * seen enabled in wants and disabled at the fire (or the reverse) costs one
 * missed or one harmless extra probe hit, never a wrong argument: arguments
 * point into the calling thread's scratch, valid for the whole callback.
 */
#define _SDT_HAS_SEMAPHORES 1
#include "nif_sinks.h"
#include "nif_tracer.h"

#include <string.h>
#include "usdt_sdt.h"

/* Numbers 0..1023 for the numbered user probes: X(0) ... X(1023). */
#define D10(X, p) X(p##0) X(p##1) X(p##2) X(p##3) X(p##4) X(p##5) X(p##6) X(p##7) X(p##8) X(p##9)
#define D100(X, p) D10(X, p##0) D10(X, p##1) D10(X, p##2) D10(X, p##3) D10(X, p##4) \
                   D10(X, p##5) D10(X, p##6) D10(X, p##7) D10(X, p##8) D10(X, p##9)
#define LABELS(X)                                                                        \
    D10(X, ) D10(X, 1) D10(X, 2) D10(X, 3) D10(X, 4) D10(X, 5) D10(X, 6) D10(X, 7) D10(X, 8) \
    D10(X, 9) D100(X, 1) D100(X, 2) D100(X, 3) D100(X, 4) D100(X, 5) D100(X, 6) D100(X, 7) \
    D100(X, 8) D100(X, 9) D10(X, 100) D10(X, 101) X(1020) X(1021) X(1022) X(1023)

/* The probes with a site below (usdt.def rows PROVIDED or APPROX). */
#define PROBES(X)                                                                        \
    X(process__spawn) X(process__exit) X(process__scheduled) X(process__unscheduled)     \
    X(process__hibernate) X(message__send) X(message__send__remote) X(message__queued)   \
    X(gc_major__start) X(gc_minor__start) X(gc_major__end) X(gc_minor__end)              \
    X(global__function__entry) X(function__return) X(bif__entry) X(bif__return)         \
    X(port__open) X(port__command) X(port__control) X(port__exit)                        \
    X(user_trace__s1) X(user_trace__i4s4)

/* Semaphores: a tracer increments one while attached to its probe. */
#define SEMAPHORE(name) \
    __extension__ unsigned short erlang_##name##_semaphore __attribute__((unused, section(".probes")));
#define USER_N_SEMAPHORE(n) SEMAPHORE(user_trace__n##n)
PROBES(SEMAPHORE)
LABELS(USER_N_SEMAPHORE)

#define ON(name) (__atomic_load_n(&erlang_##name##_semaphore, __ATOMIC_RELAXED) != 0)

int bmt_usdt_wants(int tp)
{
    switch (tp) {
    case BMT_TP_process_spawn: return ON(process__spawn);
    case BMT_TP_process_exit: return ON(process__exit);
    case BMT_TP_process_scheduled: return ON(process__scheduled) || ON(process__unscheduled);
    case BMT_TP_message_send:
        return ON(message__send) || ON(message__send__remote) || ON(port__command);
    case BMT_TP_message_receive: return ON(message__queued);
    case BMT_TP_gc_major_start: return ON(gc_major__start);
    case BMT_TP_gc_minor_start: return ON(gc_minor__start);
    case BMT_TP_gc_major_end: return ON(gc_major__end);
    case BMT_TP_gc_minor_end: return ON(gc_minor__end);
    case BMT_TP_function_call:
        return ON(global__function__entry) || ON(bif__entry) || ON(process__hibernate) ||
               ON(port__control);
    case BMT_TP_function_return: return ON(function__return) || ON(bif__return);
    case BMT_TP_port_open: return ON(port__open);
    case BMT_TP_port_exit: return ON(port__exit);
    case BMT_TP_user_trace_s1: return ON(user_trace__s1);
    case BMT_TP_user_trace_i4s4: return ON(user_trace__i4s4);
    default: return 0;
    }
}

int bmt_usdt_user_n_wants(unsigned label)
{
    switch (label) {
#define USER_N_WANTS(n) case n: return ON(user_trace__n##n);
        LABELS(USER_N_WANTS)
#undef USER_N_WANTS
    default: return 0;
    }
}

#define S(i) (ev->values[i].str)
#define I(i) ((int64_t)ev->values[i].integer)

/* {Module, Function, Args} of a call event, Args a proper list of length
 * `arity` (call events carry arguments unless the `arity` flag is set). */
static int call_args(struct decode *d, ERL_NIF_TERM module, ERL_NIF_TERM function,
                     unsigned arity, ERL_NIF_TERM args[])
{
    const ERL_NIF_TERM *mfa;
    int size;
    unsigned len;
    ERL_NIF_TERM list;
    if (!enif_get_tuple(d->env, d->term, &size, &mfa) || size != 3 || mfa[0] != module ||
        mfa[1] != function || !enif_get_list_length(d->env, mfa[2], &len) || len != arity)
        return 0;
    list = mfa[2];
    for (unsigned i = 0; i < arity; i++)
        enif_get_list_cell(d->env, list, &args[i], &list);
    return 1;
}

static int module_is_erlang(struct decode *d)
{
    const ERL_NIF_TERM *mfa;
    int size;
    return enif_get_tuple(d->env, d->term, &size, &mfa) && size == 3 && mfa[0] == d->a->erlang;
}

static void fire_call(struct decode *d, const struct bmt_event *ev)
{
    ERL_NIF_TERM args[3];
    if (ON(process__hibernate) && call_args(d, d->a->erlang, d->a->hibernate, 3, args)) {
        /* The resume function: erlang:hibernate(M, F, Args). */
        char *mfa = d->cursor;
        unsigned len = 0;
        enif_get_list_length(d->env, args[2], &len);
        int n = enif_snprintf(mfa, BMT_MFA_MAX_BYTES + 1, "%T:%T/%u", args[0], args[1], len);
        d->cursor += (n > 0 ? (size_t)n : 0) + 1;
        STAP_PROBE2(erlang, process__hibernate, S(0), mfa);
    }
    if (ON(port__control) && call_args(d, d->a->erlang, d->a->port_control, 3, args)) {
        int op = 0;
        enif_get_int(d->env, args[1], &op);
        const char *port = bmt_decode_text(d, args[0], BMT_ID_MAX_BYTES + 1);
        STAP_PROBE4(erlang, port__control, S(0), port, "", op);
    }
    if (module_is_erlang(d)) {
        if (ON(bif__entry))
            STAP_PROBE2(erlang, bif__entry, S(0), S(1));
    } else if (ON(global__function__entry)) {
        STAP_PROBE3(erlang, global__function__entry, S(0), S(1), 0);
    }
}

/* Port sends: {Pid, {command, _}}, {Pid, close}, {Pid, {connect, _}}. */
static void fire_port_command(struct decode *d, const struct bmt_event *ev)
{
    const ERL_NIF_TERM *msg, *cmd;
    int size, cmd_size;
    const char *type = NULL;
    if (!enif_get_tuple(d->env, d->term, &size, &msg) || size != 2)
        return;
    if (msg[1] == d->a->close)
        type = "close";
    else if (enif_get_tuple(d->env, msg[1], &cmd_size, &cmd) && cmd_size == 2)
        type = cmd[0] == d->a->command ? "command" : cmd[0] == d->a->connect ? "connect" : NULL;
    if (!type)
        return;
    const char *process = bmt_decode_text(d, msg[0], BMT_ID_MAX_BYTES + 1);
    STAP_PROBE4(erlang, port__command, process, S(1), "", type);
}

static void fire_send(struct decode *d, const struct bmt_event *ev)
{
    ERL_NIF_TERM to = bmt_decode_extra(d);
    const ERL_NIF_TERM *name_node;
    int size;
    ErlNifPid pid;
    if (enif_is_port(d->env, to)) {
        if (ON(port__command))
            fire_port_command(d, ev);
        return;
    }
    int remote_pid = enif_is_pid(d->env, to) && !enif_get_local_pid(d->env, to, &pid);
    int remote_name = enif_get_tuple(d->env, to, &size, &name_node) && size == 2;
    if (remote_pid || remote_name) {
        if (!ON(message__send__remote))
            return;
        uint32_t words = (uint32_t)bmt_term_words(d->env, d->term);
        const char *node = remote_name ? bmt_decode_text(d, name_node[1], BMT_TERM_MAX_BYTES + 1) : "";
        const char *receiver =
            remote_name ? bmt_decode_text(d, name_node[0], BMT_TERM_MAX_BYTES + 1) : S(1);
        STAP_PROBE7(erlang, message__send__remote, S(0), node, receiver, words, 0, 0, 0);
    } else if (ON(message__send)) {
        uint32_t words = (uint32_t)bmt_term_words(d->env, d->term);
        STAP_PROBE6(erlang, message__send, S(0), S(1), words, 0, 0, 0);
    }
}

static void fire_user_n(const struct bmt_event *ev)
{
    switch (ev->values[0].integer) {
#define USER_N_FIRE(n)                                                                    \
    case n:                                                                               \
        if (ON(user_trace__n##n))                                                         \
            STAP_PROBE10(erlang, user_trace__n##n, S(1), S(2), I(3), I(4), I(5), I(6), S(7), \
                         S(8), S(9), S(10));                                              \
        break;
        LABELS(USER_N_FIRE)
#undef USER_N_FIRE
    default: break;
    }
}

void bmt_usdt_fire(struct decode *d, int tp)
{
    const struct bmt_event *ev = &d->t->event;
    switch (tp) {
    case BMT_TP_process_spawn:
        if (ON(process__spawn))
            STAP_PROBE2(erlang, process__spawn, S(0), S(2));
        break;
    case BMT_TP_process_exit:
        if (ON(process__exit))
            STAP_PROBE2(erlang, process__exit, S(0), S(1));
        break;
    case BMT_TP_process_scheduled:
        if (d->tag == d->a->in || d->tag == d->a->in_exiting) {
            if (ON(process__scheduled))
                STAP_PROBE2(erlang, process__scheduled, S(0), S(1));
        } else if (ON(process__unscheduled)) {
            STAP_PROBE1(erlang, process__unscheduled, S(0));
        }
        break;
    case BMT_TP_message_send:
        fire_send(d, ev);
        break;
    case BMT_TP_message_receive:
        if (ON(message__queued)) {
            uint32_t words = (uint32_t)bmt_term_words(d->env, d->term);
            STAP_PROBE6(erlang, message__queued, S(0), words, 0, 0, 0, 0);
        }
        break;
    case BMT_TP_gc_major_start:
        if (ON(gc_major__start))
            STAP_PROBE2(erlang, gc_major__start, S(0), ev->values[1].integer);
        break;
    case BMT_TP_gc_minor_start:
        if (ON(gc_minor__start))
            STAP_PROBE2(erlang, gc_minor__start, S(0), ev->values[1].integer);
        break;
    case BMT_TP_gc_major_end:
        if (ON(gc_major__end))
            STAP_PROBE2(erlang, gc_major__end, S(0), ev->values[1].integer);
        break;
    case BMT_TP_gc_minor_end:
        if (ON(gc_minor__end))
            STAP_PROBE2(erlang, gc_minor__end, S(0), ev->values[1].integer);
        break;
    case BMT_TP_function_call:
        fire_call(d, ev);
        break;
    case BMT_TP_function_return:
        if (module_is_erlang(d)) {
            if (ON(bif__return))
                STAP_PROBE2(erlang, bif__return, S(0), S(1));
        } else if (ON(function__return)) {
            STAP_PROBE3(erlang, function__return, S(0), S(1), 0);
        }
        break;
    case BMT_TP_port_open:
        if (ON(port__open)) {
            /* OTP passes the driver name unquoted ("tcp_inet"). */
            char *driver = d->cursor;
            if (enif_get_atom(d->env, bmt_decode_extra(d), driver, BMT_TERM_MAX_BYTES + 1,
                              ERL_NIF_LATIN1) <= 0)
                driver[0] = '\0';
            d->cursor += strlen(driver) + 1;
            STAP_PROBE3(erlang, port__open, S(0), driver, S(2));
        }
        break;
    case BMT_TP_port_exit:
        if (ON(port__exit))
            STAP_PROBE4(erlang, port__exit, "", S(0), "", S(1));
        break;
    case BMT_TP_user_trace_s1:
        if (ON(user_trace__s1))
            STAP_PROBE1(erlang, user_trace__s1, S(2));
        break;
    case BMT_TP_user_trace_i4s4:
        if (ON(user_trace__i4s4))
            STAP_PROBE10(erlang, user_trace__i4s4, S(0), S(1), I(2), I(3), I(4), I(5), S(6), S(7),
                         S(8), S(9));
        break;
    case BMT_TP_user_trace_n:
        fire_user_n(ev);
        break;
    default:
        break;
    }
}
