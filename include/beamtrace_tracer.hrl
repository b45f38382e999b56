%% DO NOT EDIT: generated from c_src/nif/tracer_callbacks.def by
%% tools/gen_catalogue.c (make generate).
%% The erl_tracer callbacks a tracer module exports as NIFs: beamtrace,
%% its dyntrace compatibility module and the benchmark's null tracer all
%% implement exactly these (the VM looks them up by name and arity).
%% Include this after the module's attributes: it also defines the
%% callbacks' stubs, which the NIF library replaces when it loads.
-define(BEAMTRACE_TRACER_CALLBACKS,
        [enabled/3, trace/5,
         enabled_procs/3, trace_procs/5,
         enabled_ports/3, trace_ports/5,
         enabled_running_procs/3, trace_running_procs/5,
         enabled_running_ports/3, trace_running_ports/5,
         enabled_call/3, trace_call/5,
         enabled_send/3, trace_send/5,
         enabled_receive/3, trace_receive/5,
         enabled_garbage_collection/3, trace_garbage_collection/5]).

-export(?BEAMTRACE_TRACER_CALLBACKS).
-nifs(?BEAMTRACE_TRACER_CALLBACKS).

enabled(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_procs(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_procs(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_ports(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_ports(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_running_procs(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_running_procs(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_running_ports(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_running_ports(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_call(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_call(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_send(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_send(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_receive(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_receive(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_garbage_collection(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_garbage_collection(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
