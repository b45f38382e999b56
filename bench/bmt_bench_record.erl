%% `make bench' figures for issue 10 (bench/record.sh):
%%  - rate: what max_rate costs per traced event. The consumer thread checks
%%    the rate every 100 ms; the writer path is the same with or without it,
%%    so the difference should be noise. Same traced call loop, a session
%%    with max_rate infinity against one with a cap that never trips,
%%    alternated, medians of ROUNDS.
%%  - first: the first function_call event's wall-clock time (ns since the
%%    epoch) in a trace, read from the CTF (via babeltrace2 --clock-seconds).
-module(bmt_bench_record).
-export([main/1, work/1]).

-define(CALLS, 400000).

main(["rate", Rounds0]) ->
    Rounds = list_to_integer(Rounds0),
    Out = os:getenv("BENCH_OUT", "bench/out"),
    Run = fun(Cap, I) ->
                  Dir = filename:join([Out, "traces", "rate-" ++ atom_to_list(Cap) ++ "-" ++
                                           integer_to_list(I)]),
                  Opts = case Cap of
                             off -> #{};
                             on -> #{max_rate => 1000000000000}
                         end,
                  {ok, S} = beamtrace:start(Opts#{dir => Dir, buffer_size => 64 bsl 20,
                                                  events => ["org_erlang_dyntrace:function_call"]}),
                  Self = self(),
                  P = spawn(fun() -> receive go -> ok end, T0 = erlang:monotonic_time(nanosecond),
                                     loop(?CALLS), Self ! {ns, erlang:monotonic_time(nanosecond) - T0}
                            end),
                  1 = erlang:trace(P, true, [call, {tracer, beamtrace, S}]),
                  erlang:trace_pattern({?MODULE, work, 1}, true, [local]),
                  P ! go,
                  Ns = receive {ns, X} -> X end,
                  erlang:trace_pattern({?MODULE, work, 1}, false, [local]),
                  {ok, #{events := E, discarded := D}} = beamtrace:stop(S),
                  (E + D) =:= ?CALLS orelse io:format("# note: ~p events, ~p discarded~n", [E, D]),
                  _ = file:del_dir_r(Dir),
                  Ns / ?CALLS
          end,
    Pairs = [{Run(off, I), Run(on, I)} || I <- lists:seq(1, Rounds)],
    Med = fun(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)) end,
    Off = Med([A || {A, _} <- Pairs]),
    On = Med([B || {_, B} <- Pairs]),
    Diffs = Med([B - A || {A, B} <- Pairs]),
    io:format("traced call, ns/event (median of ~b): max_rate off ~.1f, on (never trips) ~.1f; "
              "paired difference ~.1f ns/event~n", [Rounds, Off, On, Diffs]),
    io:format("SUMMARY|max_rate check per event (on - off)|~.1f ns|nil (consumer-side)|~s~n",
              [Diffs, case Diffs < 0.05 * Off of true -> "within noise (no cost)"; false -> "CHECK" end]),
    halt();
main(_) ->
    io:format("usage: rate ROUNDS~n"),
    halt(2).

loop(0) -> ok;
loop(N) -> _ = work(N), loop(N - 1).

work(N) -> N.
