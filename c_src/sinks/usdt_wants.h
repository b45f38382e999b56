/* Whether an attached USDT tracer wants a tracepoint: the semaphore checks,
 * inline in every tracer callback (they run on every event, listened to or
 * not). The semaphores themselves are defined in sinks/usdt_wants.c, from usdt.def;
 * they exist (and stay 0) when the probes are compiled out.
 *
 * A tracer may attach between the check and the fire: that one event is
 * missed (sinks.h).
 */
#ifndef BMT_USDT_WANTS_H
#define BMT_USDT_WANTS_H

#include "core/catalogue.h"

#include <stdint.h>

/* Numbers 0..1023 for the numbered user probes: X(0) ... X(1023). */
#define D10(X, p) X(p##0) X(p##1) X(p##2) X(p##3) X(p##4) X(p##5) X(p##6) X(p##7) X(p##8) X(p##9)
#define D100(X, p) D10(X, p##0) D10(X, p##1) D10(X, p##2) D10(X, p##3) D10(X, p##4) \
                   D10(X, p##5) D10(X, p##6) D10(X, p##7) D10(X, p##8) D10(X, p##9)
#define LABELS(X)                                                                        \
    D10(X, ) D10(X, 1) D10(X, 2) D10(X, 3) D10(X, 4) D10(X, 5) D10(X, 6) D10(X, 7) D10(X, 8) \
    D10(X, 9) D100(X, 1) D100(X, 2) D100(X, 3) D100(X, 4) D100(X, 5) D100(X, 6) D100(X, 7) \
    D100(X, 8) D100(X, 9) D10(X, 100) D10(X, 101) X(1020) X(1021) X(1022) X(1023)

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
#define USDT_DECL_USER_N(n) USDT_SEMAPHORE_DECL(user_trace__n##n)
LABELS(USDT_DECL_USER_N)

/* One probe's semaphore. */
#define SEM(name) __atomic_load_n(&erlang_##name##_semaphore, __ATOMIC_RELAXED)

/* The semaphores a hot tracepoint fires several probes for lie side by
 * side in one aligned 8-byte word, so that its check is one load, not one
 * per probe: USDT_IN_WORD_<symbol> says which word and which half-word
 * (usdt_wants.c places them there). process__hibernate, fired from both
 * function_call and process_scheduled, is the call word's last. The form,
 * "~, 1, word, index", is what USDT_IN_A_WORD below detects. */
#define USDT_IN_WORD_global__function__entry ~, 1, call, 0
#define USDT_IN_WORD_bif__entry ~, 1, call, 1
#define USDT_IN_WORD_port__control ~, 1, call, 2
#define USDT_IN_WORD_process__hibernate ~, 1, call, 3
#define USDT_IN_WORD_process__scheduled ~, 1, scheduled, 0
#define USDT_IN_WORD_process__unscheduled ~, 1, scheduled, 1
#define USDT_IN_WORD_message__send ~, 1, send, 0
#define USDT_IN_WORD_message__send__remote ~, 1, send, 1
#define USDT_IN_WORD_port__command ~, 1, send, 2

/* 1 when `symbol` has a USDT_IN_WORD_ line above, else 0: the line's
 * expansion puts its 1 second; an undefined name stays one argument and
 * the default 0 comes second. */
#define USDT_SECOND(a, b, ...) b
#define USDT_SECOND_OF(...) USDT_SECOND(__VA_ARGS__)
#define USDT_IN_A_WORD(symbol) USDT_SECOND_OF(USDT_IN_WORD_##symbol, 0, ~)

union bmt_usdt_word {
    uint64_t all;
    unsigned short sem[4];
};
extern union bmt_usdt_word bmt_usdt_word_call, bmt_usdt_word_scheduled, bmt_usdt_word_send
    __attribute__((visibility("hidden")));

/* A word's semaphores at once: nonzero when a tracer wants one. */
#define SEM_WORD(word) __atomic_load_n(&bmt_usdt_word_##word.all, __ATOMIC_RELAXED)

/* The semaphores of the USDT probes that tracepoint `tp` fires, OR'ed:
 * nonzero when an attached tracer wants one of them. Raw, so that the
 * tracer can OR it with LTTng's state and test both at once. */
static inline __attribute__((always_inline)) uint64_t bmt_usdt_semaphores(int tp)
{
    switch (tp) {
    case BMT_TP_process_spawn: return SEM(process__spawn);
    case BMT_TP_process_exit: return SEM(process__exit);
    case BMT_TP_process_scheduled:
        return SEM_WORD(scheduled) | SEM(process__hibernate);
    case BMT_TP_message_send: return SEM_WORD(send);
    case BMT_TP_message_receive: return SEM(message__queued);
    case BMT_TP_gc_major_start: return SEM(gc_major__start);
    case BMT_TP_gc_minor_start: return SEM(gc_minor__start);
    case BMT_TP_gc_major_end: return SEM(gc_major__end);
    case BMT_TP_gc_minor_end: return SEM(gc_minor__end);
    case BMT_TP_function_call: return SEM_WORD(call);
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
