/* Whether an attached USDT tracer wants a tracepoint: the semaphore checks,
 * inline in every tracer callback (they run on every event, listened to or
 * not). The semaphores themselves are defined in sinks/usdt.c, from usdt.def;
 * they exist (and stay 0) when the probes are compiled out.
 *
 * A tracer may attach between the check and the fire: that one event is
 * missed (sinks.h).
 */
#ifndef BMT_USDT_WANTS_H
#define BMT_USDT_WANTS_H

#include "core/catalogue.h"

/* Hidden: each is read PC-relative, not through the GOT (the probe notes
 * carry their addresses for the tracers, not their symbols). */
#define USDT_SEMAPHORE_DECL(symbol) \
    extern unsigned short erlang_##symbol##_semaphore __attribute__((visibility("hidden")));
#define USDT_DECL_PROVIDED(symbol) USDT_SEMAPHORE_DECL(symbol)
#define USDT_DECL_APPROX(symbol) USDT_SEMAPHORE_DECL(symbol)
#define USDT_DECL_NONE(symbol)
#define USDT_DECL_NUMBERED(symbol)
#define USDT(symbol, name, status, source, arguments, note) USDT_DECL_##status(symbol)
#include "core/usdt.def"
#undef USDT

/* One probe's semaphore; a tracepoint's several are OR'ed: one test, no
 * branch per probe. */
#define SEM(name) __atomic_load_n(&erlang_##name##_semaphore, __ATOMIC_RELAXED)

/* The semaphores of the USDT probes that tracepoint `tp` fires, OR'ed:
 * nonzero when an attached tracer wants one of them. Raw, so that the
 * tracer can OR it with LTTng's state and test both at once. */
static inline __attribute__((always_inline)) unsigned bmt_usdt_semaphores(int tp)
{
    switch (tp) {
    case BMT_TP_process_spawn: return SEM(process__spawn);
    case BMT_TP_process_exit: return SEM(process__exit);
    case BMT_TP_process_scheduled:
        return SEM(process__scheduled) | SEM(process__unscheduled) | SEM(process__hibernate);
    case BMT_TP_message_send:
        return SEM(message__send) | SEM(message__send__remote) | SEM(port__command);
    case BMT_TP_message_receive: return SEM(message__queued);
    case BMT_TP_gc_major_start: return SEM(gc_major__start);
    case BMT_TP_gc_minor_start: return SEM(gc_minor__start);
    case BMT_TP_gc_major_end: return SEM(gc_major__end);
    case BMT_TP_gc_minor_end: return SEM(gc_minor__end);
    case BMT_TP_function_call:
        return SEM(global__function__entry) | SEM(bif__entry) | SEM(process__hibernate) |
               SEM(port__control);
    case BMT_TP_function_return: return SEM(function__return) | SEM(bif__return);
    case BMT_TP_port_open: return SEM(port__open);
    case BMT_TP_port_exit: return SEM(port__exit);
    case BMT_TP_user_trace_s1: return SEM(user_trace__s1);
    case BMT_TP_user_trace_i4s4: return SEM(user_trace__i4s4);
    case BMT_TP_busy_port: return SEM(port__busy);
    case BMT_TP_busy_dist_port: return SEM(dist__port_busy);
    case BMT_TP_dist_monitor: return SEM(dist__monitor);
    case BMT_TP_file_op: return SEM(efile_drv__entry) | SEM(efile_drv__return);
    case BMT_TP_seq_trace: return SEM(trace) | SEM(trace_seq);
    default: return 0;
    }
}

/* 1 when an attached tracer wants a USDT probe that tracepoint `tp` fires. */
static inline __attribute__((always_inline)) int bmt_usdt_wants(int tp)
{
    return bmt_usdt_semaphores(tp) != 0;
}

/* One probe's semaphore, tested (usdt.c's probe sites). */
#define ON(name) (SEM(name) != 0)

#endif
