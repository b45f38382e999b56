-module(bmt_bench_purge).
-export([main/1]).
%% The end of `beamtrace record' on a busy node: loads a throwaway module,
%% deletes it and runs beamtrace_remote:purge/1 (the agent's purger) with N
%% busy processes (bmt_bench_flags:load/1): how long until the old code is
%% gone and the system request limit is back. Prints; asserts nothing.
%% erl -noshell +P 1000000 -pa ebin -pa bench/out/flags/beams -pa bench/out/purge \
%%     -run bmt_bench_purge main 100000
main([NS]) ->
    N = list_to_integer(NS),
    process_flag(priority, high),
    Pids = bmt_bench_flags:load(N),
    timer:sleep(1000),
    {ok, tmpmod, Bin} = compile:forms([{attribute,1,module,tmpmod},{attribute,1,export,[{f,0}]},
                                       {function,1,f,0,[{clause,1,[],[],[{string,1,"a literal"}]}]}], []),
    {module, tmpmod} = code:load_binary(tmpmod, "tmpmod.erl", Bin),
    true = code:delete(tmpmod),
    Old = erlang:system_info(outstanding_system_requests_limit),
    T0 = erlang:monotonic_time(millisecond),
    Pid = beamtrace_remote:purge([tmpmod]),
    Mon = monitor(process, Pid),
    receive {'DOWN', Mon, _, _, R} -> ok end,
    T1 = erlang:monotonic_time(millisecond),
    io:format("~b processes (~s): purger done in ~b ms (~p), old code left: ~p, limit ~p -> ~p~n",
              [N, string:trim(os:cmd("uptime | sed 's/.*load/load/'")), T1 - T0, R, erlang:check_old_code(tmpmod),
               Old, erlang:system_info(outstanding_system_requests_limit)]),
    [exit(P, kill) || P <- Pids],
    halt().
