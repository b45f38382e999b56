/* The fields each accumulator reads (contract in fields.h). One row per
 * tracepoint an accumulator looks at, its fields by their generated
 * indices (catalogue_fields.h). */
#include "fields.h"

#define F(tp, name) BMT_FIELD(BMT_F_##tp##_##name)

/* The four gc events share their first fields. */
_Static_assert(BMT_F_gc_minor_start_pid == 0 && BMT_F_gc_major_start_pid == 0 &&
               BMT_F_gc_minor_end_pid == 0 && BMT_F_gc_major_end_pid == 0 &&
               BMT_F_gc_minor_end_reclaimed == BMT_F_gc_major_end_reclaimed &&
               BMT_F_gc_minor_end_heap == BMT_F_gc_major_end_heap,
               "the gc events share one layout");
/* Message links are fed as OTP's events when a command does not keep
 * them (analysis.h): their first fields are OTP's. */
_Static_assert(BMT_F_message_send_link_from == BMT_F_message_send_from &&
               BMT_F_message_send_link_to == BMT_F_message_send_to &&
               BMT_F_message_send_link_message == BMT_F_message_send_message &&
               BMT_F_message_receive_link_to == BMT_F_message_receive_to &&
               BMT_F_message_receive_link_message == BMT_F_message_receive_message,
               "links extend OTP's message events");

/* Every gc event, with the fields `bits` (gc_minor_end's indices). */
#define GC_ALL(bits)                                                                    \
    [BMT_TP_gc_minor_start] = (bits), [BMT_TP_gc_minor_end] = (bits),                   \
    [BMT_TP_gc_major_start] = (bits), [BMT_TP_gc_major_end] = (bits)

const struct bmt_field_set bmt_fields_names = {{
    [BMT_TP_process_info] = F(process_info, pid) | F(process_info, name) |
                            F(process_info, label) | F(process_info, entry),
    [BMT_TP_process_spawn] = F(process_spawn, pid) | F(process_spawn, entry),
    [BMT_TP_process_register] = F(process_register, pid) | F(process_register, name) |
                                F(process_register, type),
}};

const struct bmt_field_set bmt_fields_callstack = {{
    [BMT_TP_function_call] = F(function_call, pid) | F(function_call, entry),
    [BMT_TP_function_return] = F(function_return, pid) | F(function_return, entry),
    [BMT_TP_function_exception] = F(function_exception, pid) | F(function_exception, entry),
    [BMT_TP_process_scheduled] = F(process_scheduled, pid) | F(process_scheduled, type),
    [BMT_TP_message_receive] = F(message_receive, to) | F(message_receive, message),
    [BMT_TP_message_send] = F(message_send, from) | F(message_send, to),
    GC_ALL(F(gc_minor_start, pid)),
    [BMT_TP_process_spawn] = F(process_spawn, parent),
    [BMT_TP_process_register] = F(process_register, pid),
    [BMT_TP_process_exit] = F(process_exit, pid),
}};

const struct bmt_field_set bmt_fields_sched = {{
    [BMT_TP_message_send] = F(message_send, from) | F(message_send, to),
    [BMT_TP_process_scheduled] = F(process_scheduled, pid) | F(process_scheduled, type),
}};

const struct bmt_field_set bmt_fields_gc = {{
    [BMT_TP_gc_minor_start] = F(gc_minor_start, pid),
    [BMT_TP_gc_major_start] = F(gc_major_start, pid),
    [BMT_TP_gc_minor_end] = F(gc_minor_end, pid) | F(gc_minor_end, reclaimed),
    [BMT_TP_gc_major_end] = F(gc_major_end, pid) | F(gc_major_end, reclaimed),
}};

const struct bmt_field_set bmt_fields_procs = {{
    [BMT_TP_process_spawn] = F(process_spawn, pid),
    [BMT_TP_process_exit] = F(process_exit, pid) | F(process_exit, reason),
}};

const struct bmt_field_set bmt_fields_timeline = {{
    [BMT_TP_process_scheduled] = F(process_scheduled, pid) | F(process_scheduled, type),
    [BMT_TP_process_spawn] = F(process_spawn, pid),
    [BMT_TP_process_exit] = F(process_exit, pid),
}};

const struct bmt_field_set bmt_fields_counters = {{
    [BMT_TP_counter] = BMT_FIELDS_ALL,
}};

const struct bmt_field_set bmt_fields_links = {{
    [BMT_TP_message_send_link] = F(message_send_link, from) | F(message_send_link, to) |
                                 F(message_send_link, type) |
                                 F(message_send_link, fingerprint),
    [BMT_TP_message_receive_link] = F(message_receive_link, to) |
                                    F(message_receive_link, from) |
                                    F(message_receive_link, from_node) |
                                    F(message_receive_link, fingerprint),
}};

const struct bmt_field_set bmt_fields_files = {{
    [BMT_TP_file_op] = F(file_op, pid) | F(file_op, op) | F(file_op, path) | F(file_op, result) |
                       F(file_op, error) | F(file_op, latency_ns) | F(file_op, bytes),
}};

const struct bmt_field_set bmt_fields_export = {{
    [BMT_TP_process_scheduled] = F(process_scheduled, pid) | F(process_scheduled, type) |
                                 F(process_scheduled, entry),
    [BMT_TP_process_spawn] = F(process_spawn, parent) | F(process_spawn, pid) |
                             F(process_spawn, entry),
    [BMT_TP_process_exit] = F(process_exit, pid) | F(process_exit, reason),
    [BMT_TP_process_register] = F(process_register, pid) | F(process_register, name) |
                                F(process_register, type),
    [BMT_TP_message_send] = F(message_send, from) | F(message_send, to) | F(message_send, message),
    [BMT_TP_message_receive] = F(message_receive, to) | F(message_receive, message),
    GC_ALL(F(gc_minor_end, pid) | F(gc_minor_end, reclaimed) | F(gc_minor_end, heap)),
    [BMT_TP_counter] = BMT_FIELDS_ALL,
    [BMT_TP_file_op] = BMT_FIELDS_ALL,
    [BMT_TP_ets_op] = BMT_FIELDS_ALL,
}};
