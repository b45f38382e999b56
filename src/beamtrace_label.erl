%% @doc A label on beamtrace's own processes, so that observer and the
%% shell's i() say what they are (beamtrace_remote keeps its own copy: it
%% runs first on a target node, before the other modules are shipped).
-module(beamtrace_label).

-export([set_label/1]).

%% proc_lib:set_label/1 exists from OTP 27 (observer and the shell's i()
%% show it); checked by export, so OTP 25/26 skip it. Dialyzer on an OTP
%% without it would call the guarded call missing.
-dialyzer({no_missing_calls, set_label/1}).
-spec set_label(term()) -> ok.
set_label(Label) ->
    case erlang:function_exported(proc_lib, set_label, 1) of
        true -> proc_lib:set_label(Label);
        false -> ok
    end.
