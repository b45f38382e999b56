/* USDT sink: OTP's DTrace/SystemTap probes (provider `erlang`) as sys/sdt.h
 * probes with semaphores in this library, fired from decoded events.
 *
 * Which probes exist and how each maps to OTP's is usdt.def's table; the
 * semaphores are expanded from its PROVIDED and APPROX rows (and 1024 for
 * the NUMBERED user_trace-n row), and this file holds one probe site per
 * row. Names use "__" where DTrace shows "-":
 * `bpftrace -p PID -e 'usdt:.../beamtrace_nif.so:erlang:process__spawn {...}'`,
 * `stap -e 'probe process("beamtrace_nif.so").mark("process__spawn") {...}'`.
 *
 * The sink sees the decoded event (catalogue values, named by
 * catalogue_fields.h) and struct bmt_usdt_args for what OTP's probes carry
 * beyond the catalogue; never a term.
 *
 * Cost when nothing is attached: the semaphore loads in bmt_usdt_wants
 * (the semaphores live in usdt_wants.c).
 * A tracer attaching or detaching changes a semaphore at any time; a probe
 * seen enabled in wants and disabled at the fire (or the reverse) costs one
 * missed or one harmless extra probe hit, never a wrong argument: arguments
 * point into the calling thread's memory, valid for the whole callback.
 */
#define _SDT_HAS_SEMAPHORES 1
#include "sinks.h"
#include "usdt_wants.h"
#include "usdt_sdt.h" /* sys/sdt.h, or stubs when it is absent */

#include <errno.h>
#include <string.h>

int bmt_usdt_built(void)
{
    return BMT_USDT_COMPILED_IN;
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

/* Field `f` of tracepoint `tp`: its text, or its integer. */
#define S(tp, f) (ev->values[BMT_F_##tp##_##f].str)
#define I(tp, f) ((int64_t)ev->values[BMT_F_##tp##_##f].integer)

static void fire_user_n(const struct bmt_event *ev)
{
    switch (ev->values[BMT_F_user_trace_n_label].integer) {
#define USER_N_FIRE(n)                                                                    \
    case n:                                                                               \
        if (ON(user_trace__n##n))                                                         \
            STAP_PROBE10(erlang, user_trace__n##n, S(user_trace_n, pid), S(user_trace_n, tag), \
                         I(user_trace_n, i1), I(user_trace_n, i2), I(user_trace_n, i3),   \
                         I(user_trace_n, i4), S(user_trace_n, s1), S(user_trace_n, s2),   \
                         S(user_trace_n, s3), S(user_trace_n, s4));                       \
        break;
        LABELS(USER_N_FIRE)
#undef USER_N_FIRE
    default: break;
    }
}

static void fire_call(const struct bmt_event *ev, const struct bmt_usdt_args *a)
{
    if (a->control_port && ON(port__control))
        STAP_PROBE4(erlang, port__control, S(function_call, pid), a->control_port, "",
                    a->control_op);
    if (a->is_bif) {
        if (ON(bif__entry))
            STAP_PROBE2(erlang, bif__entry, S(function_call, pid), S(function_call, entry));
    } else if (ON(global__function__entry)) {
        STAP_PROBE3(erlang, global__function__entry, S(function_call, pid),
                    S(function_call, entry), 0);
    }
}

static void fire_send(const struct bmt_event *ev, const struct bmt_usdt_args *a)
{
    switch (a->send_kind) {
    case BMT_SEND_PORT:
        if (a->port_command && ON(port__command))
            STAP_PROBE4(erlang, port__command, a->port_sender, S(message_send, to), "",
                        a->port_command);
        break;
    case BMT_SEND_REMOTE:
        if (ON(message__send__remote))
            STAP_PROBE7(erlang, message__send__remote, S(message_send, from), a->remote_node,
                        a->remote_to, a->message_words, 0, 0, 0);
        break;
    case BMT_SEND_LOCAL:
        if (ON(message__send))
            STAP_PROBE6(erlang, message__send, S(message_send, from),
                        a->receiver ? a->receiver : S(message_send, to), a->message_words, 0, 0,
                        0);
        break;
    }
}

/* OTP's efile_drv command numbers (efile_drv.c, OTP 20 and older) for the
 * file functions file_io records; 0 for those the driver had none for. */
static int efile_command(const char *op)
{
    static const struct { const char *op; int command; } map[] = {
        {"open", 1}, {"read", 2}, {"position", 3}, {"write", 4}, {"read_file_info", 5},
        {"list_dir", 7}, {"sync", 9}, {"make_dir", 10}, {"delete", 11}, {"rename", 12},
        {"del_dir", 13}, {"truncate", 14}, {"read_file", 15}, {"write_file_info", 16},
        {"read_link_info", 19}, {"read_link", 20}, {"make_link", 21}, {"make_symlink", 22},
        {"close", 23}, {"pwrite", 24}, {"pread", 25}, {"read_line", 29}, {"datasync", 30},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].op, op) == 0)
            return map[i].command;
    return 0;
}

/* The errno of a POSIX reason atom's text ("enoent"), or 0. */
static int errno_of(const char *reason)
{
    static const struct { const char *name; int value; } map[] = {
        {"enoent", ENOENT}, {"eacces", EACCES}, {"eexist", EEXIST}, {"eisdir", EISDIR},
        {"enotdir", ENOTDIR}, {"enotempty", ENOTEMPTY}, {"enospc", ENOSPC}, {"ebadf", EBADF},
        {"einval", EINVAL}, {"emfile", EMFILE}, {"enfile", ENFILE}, {"erofs", EROFS},
        {"exdev", EXDEV}, {"eloop", ELOOP}, {"enametoolong", ENAMETOOLONG}, {"eperm", EPERM},
        {"ebusy", EBUSY}, {"eio", EIO}, {"eagain", EAGAIN}, {"edquot", EDQUOT},
        {"efbig", EFBIG}, {"etxtbsy", ETXTBSY}, {"espipe", ESPIPE},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].name, reason) == 0)
            return map[i].value;
    return 0;
}

/* efile_drv-entry then efile_drv-return, from one returned call. */
static void fire_file(const struct bmt_event *ev)
{
    int command = efile_command(S(file_op, op));
    const char *tag = S(file_op, tag);
    if (ON(efile_drv__entry))
        STAP_PROBE11(erlang, efile_drv__entry, 0, 0, tag, command, S(file_op, path),
                     S(file_op, path2), I(file_op, bytes), (int64_t)0, (int64_t)0, (int64_t)0,
                     "");
    if (ON(efile_drv__return)) {
        int success = strcmp(S(file_op, result), "error") != 0;
        /* Computed here, not inside the probe's arguments: compiled out
         * (USDT=0) those are never evaluated, and clang would then call
         * errno_of unused. */
        int err = success ? 0 : errno_of(S(file_op, error));
        STAP_PROBE6(erlang, efile_drv__return, 0, 0, tag, command, success, err);
    }
}

/* process-spawn, process-exit; process-scheduled, or process-hibernate
 * and process-unscheduled. */
static void fire_process(const struct bmt_event *ev, const struct bmt_usdt_args *a)
{
    switch (ev->id) {
    case BMT_TP_process_spawn:
        if (ON(process__spawn))
            STAP_PROBE2(erlang, process__spawn, S(process_spawn, pid), S(process_spawn, entry));
        break;
    case BMT_TP_process_exit:
        if (ON(process__exit))
            STAP_PROBE2(erlang, process__exit, S(process_exit, pid), S(process_exit, reason));
        break;
    case BMT_TP_process_scheduled:
        if (a->scheduled_in) {
            if (ON(process__scheduled))
                STAP_PROBE2(erlang, process__scheduled, S(process_scheduled, pid),
                            S(process_scheduled, entry));
        } else {
            /* As the VM did: process-hibernate, then process-unscheduled. */
            if (a->hibernate_mfa && ON(process__hibernate))
                STAP_PROBE2(erlang, process__hibernate, S(process_scheduled, pid),
                            a->hibernate_mfa);
            if (ON(process__unscheduled))
                STAP_PROBE1(erlang, process__unscheduled, S(process_scheduled, pid));
        }
        break;
    default:
        break;
    }
}

/* gc_major-start, gc_minor-start, gc_major-end, gc_minor-end. */
static void fire_gc(const struct bmt_event *ev)
{
    switch (ev->id) {
    case BMT_TP_gc_major_start:
        if (ON(gc_major__start))
            STAP_PROBE2(erlang, gc_major__start, S(gc_major_start, pid), I(gc_major_start, need));
        break;
    case BMT_TP_gc_minor_start:
        if (ON(gc_minor__start))
            STAP_PROBE2(erlang, gc_minor__start, S(gc_minor_start, pid), I(gc_minor_start, need));
        break;
    case BMT_TP_gc_major_end:
        if (ON(gc_major__end))
            STAP_PROBE2(erlang, gc_major__end, S(gc_major_end, pid), I(gc_major_end, reclaimed));
        break;
    case BMT_TP_gc_minor_end:
        if (ON(gc_minor__end))
            STAP_PROBE2(erlang, gc_minor__end, S(gc_minor_end, pid), I(gc_minor_end, reclaimed));
        break;
    default:
        break;
    }
}

/* bif-return or function-return. */
static void fire_return(const struct bmt_event *ev, const struct bmt_usdt_args *a)
{
    if (a->is_bif) {
        if (ON(bif__return))
            STAP_PROBE2(erlang, bif__return, S(function_return, pid), S(function_return, entry));
    } else if (ON(function__return)) {
        STAP_PROBE3(erlang, function__return, S(function_return, pid),
                    S(function_return, entry), 0);
    }
}

/* port-open, port-exit, port-busy. */
static void fire_port(const struct bmt_event *ev, const struct bmt_usdt_args *a)
{
    switch (ev->id) {
    case BMT_TP_port_open:
        if (ON(port__open))
            STAP_PROBE3(erlang, port__open, S(port_open, pid), a->driver ? a->driver : "",
                        S(port_open, port));
        break;
    case BMT_TP_port_exit:
        if (ON(port__exit))
            STAP_PROBE4(erlang, port__exit, "", S(port_exit, port), "", S(port_exit, reason));
        break;
    case BMT_TP_busy_port:
        if (ON(port__busy))
            STAP_PROBE1(erlang, port__busy, S(busy_port, port));
        break;
    default:
        break;
    }
}

/* user_trace-s1, user_trace-i4s4, user_trace-n*. */
static void fire_user(const struct bmt_event *ev)
{
    switch (ev->id) {
    case BMT_TP_user_trace_s1:
        if (ON(user_trace__s1))
            STAP_PROBE1(erlang, user_trace__s1, S(user_trace_s1, message));
        break;
    case BMT_TP_user_trace_i4s4:
        if (ON(user_trace__i4s4))
            STAP_PROBE10(erlang, user_trace__i4s4, S(user_trace_i4s4, pid), S(user_trace_i4s4, tag),
                         I(user_trace_i4s4, i1), I(user_trace_i4s4, i2), I(user_trace_i4s4, i3),
                         I(user_trace_i4s4, i4), S(user_trace_i4s4, s1), S(user_trace_i4s4, s2),
                         S(user_trace_i4s4, s3), S(user_trace_i4s4, s4));
        break;
    case BMT_TP_user_trace_n:
        fire_user_n(ev);
        break;
    default:
        break;
    }
}

/* dist-port_busy, dist-monitor. */
static void fire_dist(const struct bmt_event *ev)
{
    switch (ev->id) {
    case BMT_TP_busy_dist_port:
        if (ON(dist__port_busy))
            STAP_PROBE4(erlang, dist__port_busy, S(busy_dist_port, node), S(busy_dist_port, port),
                        S(busy_dist_port, remote_node), S(busy_dist_port, pid));
        break;
    case BMT_TP_dist_monitor:
        if (ON(dist__monitor))
            STAP_PROBE5(erlang, dist__monitor, S(dist_monitor, node), S(dist_monitor, what),
                        S(dist_monitor, monitored_node), S(dist_monitor, type),
                        S(dist_monitor, reason));
        break;
    default:
        break;
    }
}

/* trace_seq, then trace, as the VM fires them for a seq_trace message. */
static void fire_seq_trace(const struct bmt_usdt_args *a)
{
    if (a->trace_info && ON(trace_seq))
        STAP_PROBE3(erlang, trace_seq, a->tracer_state, a->trace_label, a->trace_info);
    if (a->trace_info && ON(trace))
        STAP_PROBE5(erlang, trace, a->trace_label, "seq_trace", a->tracer_state, a->trace_info,
                    "");
}

void bmt_usdt_emit(const struct bmt_event *ev, const struct bmt_usdt_args *a)
{
    switch (ev->id) {
    case BMT_TP_process_spawn:
    case BMT_TP_process_exit:
    case BMT_TP_process_scheduled:
        fire_process(ev, a);
        break;
    case BMT_TP_message_send:
        fire_send(ev, a);
        break;
    case BMT_TP_message_receive:
        if (ON(message__queued))
            STAP_PROBE6(erlang, message__queued, S(message_receive, to), a->message_words, 0, 0, 0,
                        0);
        break;
    case BMT_TP_gc_major_start:
    case BMT_TP_gc_minor_start:
    case BMT_TP_gc_major_end:
    case BMT_TP_gc_minor_end:
        fire_gc(ev);
        break;
    case BMT_TP_function_call:
        fire_call(ev, a);
        break;
    case BMT_TP_function_return:
        fire_return(ev, a);
        break;
    case BMT_TP_port_open:
    case BMT_TP_port_exit:
    case BMT_TP_busy_port:
        fire_port(ev, a);
        break;
    case BMT_TP_user_trace_s1:
    case BMT_TP_user_trace_i4s4:
    case BMT_TP_user_trace_n:
        fire_user(ev);
        break;
    case BMT_TP_busy_dist_port:
    case BMT_TP_dist_monitor:
        fire_dist(ev);
        break;
    case BMT_TP_file_op:
        fire_file(ev);
        break;
    case BMT_TP_seq_trace:
        fire_seq_trace(a);
        break;
    default:
        break;
    }
}
