%% The echo tracer's module (echo_tracer.c): use it as
%% {tracer, bmt_echo_tracer, Pid}; Pid receives {trace5, Tag, Tracee, Term, Opts}.
-module(bmt_echo_tracer).
-export([enabled/3, trace/5]).
-nifs([enabled/3, trace/5]).
-on_load(init/0).

init() ->
    erlang:load_nif(filename:join(filename:dirname(code:which(?MODULE)), "bmt_echo_tracer"), 0).

enabled(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
