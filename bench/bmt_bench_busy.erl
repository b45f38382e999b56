%% Issue 16 item 3 on a saturated node (bench/busy.sh): N processes each
%% spinning at normal priority (always runnable, never waiting), and from a
%% process at high priority, as `beamtrace record''s agent is:
%%  - startstop: beamtrace:start/1 to return, then stop/1 to return;
%%  - trace: beamtrace:trace/2 of `procs' with a 3 s duration to return,
%%    and the session's figures;
%% each given at most CAP seconds. A sampler at max priority looks every
%% 100 ms at where the caller, and the processes it monitors or is linked
%% to (the trace controller, the tracing handle, ...), sit: when a call
%% waits on some process of normal priority, the samples name it. They are
%% printed when the call returns or the cap passes (printing goes through
%% the group leader, a normal-priority process: not while the load runs).
%% Prints figures; asserts nothing (STYLE.md).
-module(bmt_bench_busy).
-export([main/1, spin/0, target/1, watch_agent/1]).

main([Op, Dir, N, Cap]) ->
    run(list_to_atom(Op), filename:absname(Dir), list_to_integer(N), list_to_integer(Cap)),
    halt();
main(_) ->
    io:format("usage: startstop|trace DIR N CAP_S~n"),
    halt(2).

run(Op, Dir, N, Cap) ->
    process_flag(priority, high),
    %% Loaded beforehand, as `beamtrace record' loads what it ships: a
    %% module's first load is a request to the code server.
    [{module, M} = code:ensure_loaded(M) || M <- [beamtrace, beamtrace_sessions, beamtrace_trace,
                                                   beamtrace_trace_spec,
                                                   beamtrace_trace_options, beamtrace_tracing,
                                                   beamtrace_statedump, beamtrace_sources,
                                                   beamtrace_sources_io, beamtrace_sources_monitor,
                                                   beamtrace_sources_samples, beamtrace_label,
                                                   beamtrace_registry]],
    Up0 = uptime(),
    Pids = [spawn(fun ?MODULE:spin/0) || _ <- lists:seq(1, N)],
    %% Let the load settle: every spinner has run once.
    receive after 2000 -> ok end,
    Turn = turn(),
    Self = self(),
    Worker = spawn_opt(fun() -> Self ! {done, self(), op(Op, Dir)} end,
                       [{priority, high}, link]),
    Sampler = spawn_opt(fun() -> sample(Worker, erlang:monotonic_time(millisecond), []) end,
                        [{priority, max}]),
    T0 = erlang:monotonic_time(millisecond),
    Result = receive {done, Worker, R} -> R after Cap * 1000 -> timeout end,
    T1 = erlang:monotonic_time(millisecond),
    Sampler ! {stop, self()},
    Samples = receive {samples, S} -> S end,
    [exit(P, kill) || P <- Pids],
    process_flag(priority, normal),
    io:format("~s: ~b busy processes, before: ~s; a normal-priority process "
              "answered in ~b ms~n", [Op, N, Up0, Turn]),
    print_samples(Samples),
    io:format("~s: ~b busy processes: ~p after ~b ms (~s)~n",
              [Op, N, Result, T1 - T0, uptime()]),
    case Result of
        timeout ->
            %% Unloaded, it finishes: how long it took in all.
            receive {done, Worker, R2} ->
                    io:format("~s: then, load gone: ~p after ~b ms in all~n",
                              [Op, R2, erlang:monotonic_time(millisecond) - T0])
            after 60000 -> io:format("~s: still not done 60 s after the load went~n", [Op])
            end;
        _ ->
            ok
    end.

%% How long a new process of normal priority takes to answer: about one
%% turn of the run queue.
turn() ->
    T0 = erlang:monotonic_time(millisecond),
    Self = self(),
    _ = spawn(fun() -> Self ! turned end),
    receive turned -> erlang:monotonic_time(millisecond) - T0 end.

spin() ->
    _ = erlang:phash2(erlang:unique_integer()),
    spin().

op(startstop, Dir) ->
    T0 = erlang:monotonic_time(millisecond),
    {ok, S} = beamtrace:start(#{dir => filename:join(Dir, "startstop"),
                                events => ["org_erlang_dyntrace:process_*"]}),
    T1 = erlang:monotonic_time(millisecond),
    {ok, Stats} = beamtrace:stop(S),
    T2 = erlang:monotonic_time(millisecond),
    #{start_ms => T1 - T0, stop_ms => T2 - T1,
      stats => maps:with([events, discarded, after_stop, names_missing], Stats)};
op(trace, Dir) ->
    T0 = erlang:monotonic_time(millisecond),
    R = beamtrace:trace([procs], #{duration => 3000, dir => filename:join(Dir, "trace")}),
    T1 = erlang:monotonic_time(millisecond),
    #{call_ms => T1 - T0,
      result => case R of
                    {ok, M} -> maps:with([events, discarded, after_stop, elapsed_ms, reason,
                                          names_missing], M);
                    Other -> Other
                end}.

%% Every 100 ms: {Ms, Pid, Priority, Status, Top frames} of the worker and
%% of the processes it monitors or is linked to, two levels down.
sample(Worker, T0, Acc) ->
    receive
        {stop, From} -> From ! {samples, lists:reverse(Acc)}
    after 100 ->
            T = erlang:monotonic_time(millisecond) - T0,
            Seen = related([Worker], 2, [Worker]),
            sample(Worker, T0, [{T, P, where(P)} || P <- Seen] ++ Acc)
    end.

related(_Pids, 0, Acc) ->
    Acc;
related(Pids, Depth, Acc) ->
    Next = lists:usort([Q || P <- Pids,
                             {K, L} <- [erlang:process_info(P, monitors),
                                        erlang:process_info(P, links)],
                             K =/= undefined,
                             Item <- L,
                             Q <- [case Item of {process, X} -> X; X -> X end],
                             is_pid(Q), node(Q) =:= node()]) -- Acc,
    related(Next, Depth - 1, Acc ++ Next).

where(P) ->
    case erlang:process_info(P, [priority, status, current_stacktrace]) of
        undefined -> gone;
        [{priority, Pr}, {status, St}, {current_stacktrace, Stack}] ->
            {Pr, St, [{M, F, A} || {M, F, A, _} <- lists:sublist(Stack, 7)]}
    end.

%% Runs of the same place collapsed: from-to ms, pid, place.
print_samples(Samples) ->
    ByPid = lists:foldl(fun({T, P, W}, M) -> maps:update_with(P, fun(L) -> [{T, W} | L] end,
                                                              [{T, W}], M) end,
                        #{}, Samples),
    maps:foreach(fun(P, L) -> print_runs(P, runs(lists:reverse(L))) end, ByPid).

runs([]) -> [];
runs([{T, W} | Rest]) -> runs(Rest, T, T, W, []).

runs([{T, W} | Rest], From, _To, W, Acc) -> runs(Rest, From, T, W, Acc);
runs([{T, W} | Rest], From, To, W0, Acc) -> runs(Rest, T, T, W, [{From, To, W0} | Acc]);
runs([], From, To, W, Acc) -> lists:reverse([{From, To, W} | Acc]).

print_runs(P, Runs) ->
    [io:format("  ~p ~6b-~6b ms: ~0p~n", [P, From, To, W]) || {From, To, W} <- Runs],
    ok.

uptime() ->
    string:trim(os:cmd("uptime | sed 's/.*load/load/'")).

%%% `beamtrace record' against a busy node (bench/busy.sh record)

%% The target: N spinners, then nothing (the node lives on).
target(N) ->
    [spawn(fun ?MODULE:spin/0) || _ <- lists:seq(1, N)],
    ok.

%% A sampler at max priority on the target: every 100 ms, where the
%% record agent (registered beamtrace_record) and the processes it
%% monitors or is linked to sit, appended to File (raw: no file server).
watch_agent(File) ->
    spawn_opt(fun() -> watch_agent(File, erlang:monotonic_time(millisecond)) end,
              [{priority, max}]).

watch_agent(File, T0) ->
    receive after 100 -> ok end,
    T = erlang:monotonic_time(millisecond) - T0,
    Lines = case whereis(beamtrace_record) of
                undefined -> [io_lib:format("~b no agent~n", [T])];
                A -> [io_lib:format("~b ~p ~0p~n", [T, P, where(P)])
                      || P <- related([A], 2, [A])]
            end,
    ok = file:write_file(File, Lines, [raw, append]),
    watch_agent(File, T0).
