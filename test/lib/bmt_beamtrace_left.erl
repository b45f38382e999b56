%% What of beamtrace is on this node ([] when nothing): processes and ports
%% traced by it, its trace sessions (OTP 27+), its modules, the lock, the
%% node table's watcher, the registry's holder, any process running its
%% code, a flight agent, its application environment, flags on new
%% processes, and a 'receive' trace pattern (links). Compiled onto the
%% target nodes of the trace and cluster groups, where nothing of
%% beamtrace may stay after a recording.
-module(bmt_beamtrace_left).
-export([check/0, check_purged/0]).

%% OTP 25's spec of erlang:trace_info/2 gives a tracer module as
%% {tracer, Module, State}; the VM answers {tracer, {Module, State}} (dialyzer).
-dialyzer({no_match, check/0}).

check() ->
    Tracers = [P || P <- processes() ++ erlang:ports(),
                    try erlang:trace_info(P, tracer) of
                        {tracer, {beamtrace, _}} -> true;
                        _ -> false
                    catch error:badarg -> false   % gone meanwhile
                    end],
    _ = code:ensure_loaded(trace),
    Sessions = case erlang:function_exported(trace, session_info, 1) of
                   false -> [];
                   true -> lists:usort([S || W <- [new | processes()],
                                             L <- [session_info(W)], is_list(L),
                                             {beamtrace_trace, _} = S <- L])
               end,
    %% Every beamtrace module, whatever the release ships: derived from the
    %% loaded modules' names, not a list to keep in step with src/.
    Mods = lists:sort([M || {M, _} <- code:all_loaded(),
                            lists:prefix("beamtrace", atom_to_list(M))]),
    [{traced_by_beamtrace, Tracers} || Tracers =/= []]
        ++ [{sessions, Sessions} || Sessions =/= []]
        ++ [{modules, Mods} || Mods =/= []]
        ++ [{lock, P} || P <- [whereis(beamtrace_record)], P =/= undefined]
        ++ [{flight_agent, P} || P <- [whereis(beamtrace_flight_agent)], P =/= undefined]
        ++ [{node_watcher, P} || P <- [whereis(beamtrace_nodes)], P =/= undefined]
        ++ [{registry, P} || P <- [ets:info(beamtrace_registry, owner)], is_pid(P)]
        ++ [{running_beamtrace_code, P, MFA} || {P, MFA} <- running_beamtrace()]
        ++ [{env, E} || E <- application:get_all_env(beamtrace)]
        ++ [{new_flags, F} || {flags, F} <- [erlang:trace_info(new, flags)], F =/= []]
        ++ [{receive_pattern, MS} || {match_spec, MS} <- [erlang:trace_info('receive', match_spec)],
                                     MS =/= true, MS =/= false, MS =/= []].

%% What the purge of the shipped modules leaves until it is done ([] when
%% nothing): old code of beamtrace's modules (erlang:loaded/0 lists
%% modules with old code only too), and the system request limit it raises
%% meanwhile, when not back at its default (2 per scheduler).
check_purged() ->
    Old = lists:sort([M || M <- erlang:loaded(), lists:prefix("beamtrace", atom_to_list(M)),
                           erlang:check_old_code(M)]),
    Limit = erlang:system_info(outstanding_system_requests_limit),
    [{old_code, Old} || Old =/= []]
        ++ [{outstanding_system_requests_limit, Limit}
            || Limit =/= 2 * erlang:system_info(schedulers)].

%% Processes whatever their name running beamtrace's code now: a helper, a
%% keeper, a holder or a worker left behind.
running_beamtrace() ->
    [{P, MFA} || P <- processes(), P =/= self(),
                 {current_function, {M, _, _} = MFA} <- [process_info(P, current_function)],
                 lists:prefix("beamtrace", atom_to_list(M))].

%% trace:session_info/1 (OTP 27+), or undefined for a process gone meanwhile.
session_info(W) ->
    try trace:session_info(W) catch error:badarg -> undefined end.
