%% @doc The null erl_tracer (bench/null_tracer.c): `enabled*' answer `trace',
%% `trace*' do nothing. The floor beamtrace is measured against. noop/0 is
%% an empty NIF.
-module(bmt_null_tracer).
-export([noop/0, enabled/3, trace/5,
         enabled_procs/3, trace_procs/5,
         enabled_ports/3, trace_ports/5,
         enabled_running_procs/3, trace_running_procs/5,
         enabled_running_ports/3, trace_running_ports/5,
         enabled_call/3, trace_call/5,
         enabled_send/3, trace_send/5,
         enabled_receive/3, trace_receive/5,
         enabled_garbage_collection/3, trace_garbage_collection/5]).
-nifs([noop/0, enabled/3, trace/5,
       enabled_procs/3, trace_procs/5,
       enabled_ports/3, trace_ports/5,
       enabled_running_procs/3, trace_running_procs/5,
       enabled_running_ports/3, trace_running_ports/5,
       enabled_call/3, trace_call/5,
       enabled_send/3, trace_send/5,
       enabled_receive/3, trace_receive/5,
       enabled_garbage_collection/3, trace_garbage_collection/5]).
-on_load(load_nif/0).

load_nif() ->
    Dir = filename:dirname(code:which(?MODULE)),
    erlang:load_nif(filename:join(Dir, "bmt_null_tracer_nif"), 0).

%% An empty NIF: returns ok (the user probe benchmark's baseline).
noop() -> erlang:nif_error(nif_not_loaded).
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
