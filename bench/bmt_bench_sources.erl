%% The session sources' cost on a mixed workload, side by side with the
%% baseline (bench/sources.sh). Each round runs every configuration once, in
%% a rotated order; the figure is the median over rounds of the workload's
%% wall time, and its ratio to the median with no session.
-module(bmt_bench_sources).
-export([main/1]).

configs() ->
    [{none, none},
     {session, #{}},
     {system_monitor, #{system_monitor => #{long_gc => 50, long_schedule => 50, large_heap => 10000000,
                                            busy_port => true, busy_dist_port => true}}},
     {samples, #{samples => #{schedulers => 100, run_queues => 100, memory => 100,
                              message_queues => {100, 10}}}},
     {distribution, #{distribution => true}},
     {file_io, #{file_io => true}},
     {ets, #{ets => [bmt_bench_tab]}}].

main([TraceDir, RoundsS]) ->
    Rounds = list_to_integer(RoundsS),
    Configs = configs(),
    Data = filename:join(TraceDir, "data"),
    ok = filelib:ensure_dir(filename:join(Data, "x")),
    persistent_term:put(bmt_bench_data, Data),
    bmt_bench_tab = ets:new(bmt_bench_tab, [named_table, public, {write_concurrency, true}]),
    _ = workload(),    %% warm up
    Times = lists:foldl(
              fun(R, Acc) ->
                      Order = rotate(Configs, R rem length(Configs)),
                      lists:foldl(fun({Name, Opts}, A) ->
                                          {Ms, Events} = run(TraceDir, Opts),
                                          maps:update_with(Name, fun(L) -> [{Ms, Events} | L] end,
                                                           [{Ms, Events}], A)
                                  end, Acc, Order)
              end, #{}, lists:seq(1, Rounds)),
    Base = median([Ms || {Ms, _} <- maps:get(none, Times)]),
    io:format("~-16s ~12s ~8s ~14s~n", ["source", "median ms", "ratio", "events/run"]),
    [begin
         Runs = maps:get(Name, Times),
         Med = median([Ms || {Ms, _} <- Runs]),
         Ev = median([E || {_, E} <- Runs]),
         io:format("~-16s ~12.1f ~8.3f ~14w~n", [Name, Med, Med / Base, Ev]),
         io:format("SUMMARY|sources: workload with ~s|~.3f x|reference|~.1f ms vs ~.1f ms untraced, ~w events~n",
                   [Name, Med / Base, Med, Base, Ev])
     end || {Name, _} <- Configs],
    halt().

run(_Dir, none) ->
    {workload(), 0};
run(Dir, Opts) ->
    {ok, S} = beamtrace:start(Opts#{dir => filename:join(Dir, integer_to_list(erlang:unique_integer([positive]))),
                                    events => ["org_erlang_beamtrace:*"]}),
    Ms = workload(),
    {ok, #{events := N, dir := D}} = beamtrace:stop(S),
    _ = file:del_dir_r(D),
    {Ms, N}.

%% 2000 processes each building and dropping lists, doing 8 operations on
%% an ETS table, and sending to a collector: garbage collections, messages,
%% scheduling; one in ten also writes and reads back a 4 KiB file.
workload() ->
    T0 = erlang:monotonic_time(microsecond),
    Self = self(),
    Data = persistent_term:get(bmt_bench_data),
    Pids = [spawn(fun() ->
                          L = lists:seq(1, 2000 + I rem 500),
                          _ = lists:reverse(lists:map(fun(X) -> X * 2 end, L)),
                          K = I,
                          true = ets:insert(bmt_bench_tab, {K, 0}),
                          _ = [ets:lookup(bmt_bench_tab, K) || _ <- lists:seq(1, 5)],
                          _ = ets:update_counter(bmt_bench_tab, K, 1, {K, 0}),
                          _ = ets:delete(bmt_bench_tab, K),
                          _ = I rem 10 =:= 0 andalso
                              begin
                                  F = filename:join(Data, integer_to_list(I)),
                                  ok = file:write_file(F, binary:copy(<<I:8>>, 4096)),
                                  {ok, _} = file:read_file(F)
                              end,
                          Self ! {done, self(), length(L)}
                  end) || I <- lists:seq(1, 2000)],
    [receive {done, P, _} -> ok end || P <- Pids],
    (erlang:monotonic_time(microsecond) - T0) / 1000.

rotate(L, K) ->
    {A, B} = lists:split(K, L),
    B ++ A.

median(L) ->
    lists:nth((length(L) + 1) div 2, lists:sort(L)).
