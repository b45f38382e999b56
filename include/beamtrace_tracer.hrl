%% The erl_tracer callbacks a tracer module exports as NIFs: beamtrace,
%% its dyntrace compatibility module and the benchmark's null tracer all
%% implement exactly these (the VM looks them up by name and arity).
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
