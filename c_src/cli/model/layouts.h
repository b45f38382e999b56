/* The field layouts several tracepoints share, which the analyses rely on
 * to read them through one index. Each is checked at compile time against
 * the generated positions (core/catalogue_fields.h, from catalogue.def),
 * so a reordered catalogue row fails the build instead of making an
 * analysis read the wrong field. Field indices are otherwise the generated
 * BMT_F_<tracepoint>_<field> constants, used as they are.
 */
#ifndef BMT_CLI_LAYOUTS_H
#define BMT_CLI_LAYOUTS_H

#include "core/catalogue.h"
#include "core/event.h"

#include <string.h>

/* 1 when string field `v` is exactly `text` (an atom the VM prints, such
 * as "register" or "timeout"). */
static inline int bmt_value_is(const struct bmt_value *v, const char *text)
{
    size_t n = strlen(text);
    return v->len == n && memcmp(v->str, text, n) == 0;
}

/* function_call, function_return and function_exception: the process and
 * the function first (callstack.c reads the three alike). */
#define BMT_FN_PID BMT_F_function_call_pid
#define BMT_FN_ENTRY BMT_F_function_call_entry
_Static_assert(BMT_F_function_return_pid == BMT_FN_PID &&
                   BMT_F_function_exception_pid == BMT_FN_PID,
               "function_* events share the pid field's position");
_Static_assert(BMT_F_function_return_entry == BMT_FN_ENTRY &&
                   BMT_F_function_exception_entry == BMT_FN_ENTRY,
               "function_* events share the entry field's position");

/* gc_minor_start, gc_major_start, gc_minor_end and gc_major_end: the
 * process, then need (starts) or reclaimed (ends), then heap and old_heap
 * (gc.c, callstack.c and the export read the four alike). */
#define BMT_GC_PID BMT_F_gc_minor_start_pid
#define BMT_GC_RECLAIMED BMT_F_gc_minor_end_reclaimed
#define BMT_GC_HEAP BMT_F_gc_minor_end_heap
#define BMT_GC_OLD_HEAP BMT_F_gc_minor_end_old_heap
_Static_assert(BMT_F_gc_major_start_pid == BMT_GC_PID && BMT_F_gc_minor_end_pid == BMT_GC_PID &&
                   BMT_F_gc_major_end_pid == BMT_GC_PID,
               "gc_* events share the pid field's position");
_Static_assert(BMT_F_gc_major_end_reclaimed == BMT_GC_RECLAIMED,
               "gc_*_end events share the reclaimed field's position");
_Static_assert(BMT_F_gc_minor_start_heap == BMT_GC_HEAP &&
                   BMT_F_gc_major_start_heap == BMT_GC_HEAP &&
                   BMT_F_gc_major_end_heap == BMT_GC_HEAP,
               "gc_* events share the heap field's position");
_Static_assert(BMT_F_gc_minor_start_old_heap == BMT_GC_OLD_HEAP &&
                   BMT_F_gc_major_start_old_heap == BMT_GC_OLD_HEAP &&
                   BMT_F_gc_major_end_old_heap == BMT_GC_OLD_HEAP,
               "gc_* events share the old_heap field's position");

/* message_send_link and message_receive_link (record --links) begin with
 * OTP's message_send and message_receive fields, in OTP's order: an
 * analysis that does not read links gets them as OTP's events (run.c). */
_Static_assert(BMT_F_message_send_link_from == BMT_F_message_send_from &&
                   BMT_F_message_send_link_to == BMT_F_message_send_to &&
                   BMT_F_message_send_link_message == BMT_F_message_send_message,
               "message_send_link begins with message_send's fields");
_Static_assert(BMT_F_message_receive_link_to == BMT_F_message_receive_to &&
                   BMT_F_message_receive_link_message == BMT_F_message_receive_message,
               "message_receive_link begins with message_receive's fields");

#endif
