%% The flight recorder's benchmarks (bench/flight.sh, part of `make
%% bench`). Prints figures; asserts nothing.
%%
%% steady: the cost of a flight recording whose trigger never fires, as
%% the ratio of a call's time under it to its time under the same
%% recording without flight (trace/2, discard mode), side by side in one
%% run, rounds interleaved: the same spec ("bench_fl:work/1 -> return"),
%% plus the call trigger "bench_fl:work/1>10s" (every call through the
%% meta pattern and the per-process table), window 10 s. Every run with
%% max_rate => infinity: under the default (100,000 events/s) the plain
%% recording stopped within its first 100 ms (trace/2's on_max_rate is
%% stop) and ran the rest untraced, while the flight ones sampled on
%% (theirs is sample), which made flight look 6x to 20x dearer than it is.
%% bench/flight_cg.sh counts the same comparison in instructions.
%%
%% max_rate: what this node sustains while staying responsive: two
%% processes calling a traced function as fast as they can, a third
%% sleeping 5 ms in a loop and noting how late it wakes; untraced, then
%% traced with no cap. The recorder's sustained rate (events written per
%% second without loss) and the wake-up lateness (p50, p99) are what
%% trace/2's and record's default max_rate come from.
-module(bmt_bench_flight).
-export([main/1, work/1]).

-define(CALLS, 200000).

main(Args) ->
    Rounds = case Args of [R | _] -> list_to_integer(R); [] -> 5 end,
    Dir = filename:join(os:getenv("BENCH_OUT", "/tmp"), "flight"),
    steady(Rounds, Dir),
    max_rate(Dir),
    halt(0).

%% The traced function: a little work, so a call is not all tracing.
work(N) -> lists:foldl(fun(X, A) -> A + X end, 0, lists:seq(1, N rem 8 + 1)).

loop(0) -> ok;
loop(N) -> _ = ?MODULE:work(N), loop(N - 1).

%% ns per call of two processes calling work/1 CALLS times each.
timed() ->
    Self = self(),
    T0 = erlang:monotonic_time(nanosecond),
    Ps = [spawn_link(fun() -> loop(?CALLS), Self ! {self(), done} end) || _ <- [1, 2]],
    [receive {P, done} -> ok end || P <- Ps],
    (erlang:monotonic_time(nanosecond) - T0) / (2 * ?CALLS).

under(untraced, _Dir) ->
    timed();
under(trace, Dir) ->
    {ok, T} = beamtrace:trace_async("bmt_bench_flight:work/1 -> return",
                                    #{dir => fresh(Dir), duration => infinity,
                                      max_rate => infinity}),
    Ns = timed(),
    {ok, _} = beamtrace:stop_trace(T),
    Ns;
under(flight_probe, Dir) ->
    {ok, F} = beamtrace:flight("bmt_bench_flight:work/1 -> return",
                               #{dir => fresh(Dir), triggers => ["probe=never"], window => 10000,
                                 max_rate => infinity}),
    Ns = timed(),
    {ok, #{flight := #{captures := 0}}} = beamtrace:stop_flight(F),
    Ns;
under(flight, Dir) ->
    {ok, F} = beamtrace:flight("bmt_bench_flight:work/1 -> return",
                               #{dir => fresh(Dir), triggers => ["bmt_bench_flight:work/1>10s"],
                                 window => 10000, max_rate => infinity}),
    Ns = timed(),
    {ok, #{flight := #{captures := 0}}} = beamtrace:stop_flight(F),
    Ns.

fresh(Dir) ->
    D = filename:join(Dir, integer_to_list(erlang:unique_integer([positive]))),
    D.

steady(Rounds, Dir) ->
    Modes = [untraced, trace, flight_probe, flight],
    Runs = [{M, under(M, Dir)} || _ <- lists:seq(1, Rounds), M <- Modes],
    Med = fun(M) -> median([Ns || {M1, Ns} <- Runs, M1 =:= M]) end,
    [U, T, P, F] = [Med(M) || M <- Modes],
    io:format("flight steady cost, no trigger firing (~b rounds, 2 x ~b calls, medians):~n"
              "  untraced                           ~8.1f ns/call~n"
              "  trace (discard mode)               ~8.1f ns/call~n"
              "  flight, probe trigger              ~8.1f ns/call  (~.2f x trace)~n"
              "  flight, call trigger on the call   ~8.1f ns/call  (~.2f x trace)~n",
              [Rounds, ?CALLS, U, T, P, P / T, F, F / T]).

median(L) ->
    S = lists:sort(L),
    lists:nth((length(S) + 1) div 2, S).

%%% max_rate

busy(Stop) ->
    case get(stop) of
        undefined ->
            receive Stop -> ok after 0 -> _ = ?MODULE:work(3), busy(Stop) end;
        _ -> ok
    end.

%% Lateness of 5 ms sleeps, ns, for Ms.
probe(Ms) ->
    End = erlang:monotonic_time(millisecond) + Ms,
    probe(End, []).

probe(End, Acc) ->
    case erlang:monotonic_time(millisecond) >= End of
        true -> lists:sort(Acc);
        false ->
            T0 = erlang:monotonic_time(nanosecond),
            receive after 5 -> ok end,
            probe(End, [erlang:monotonic_time(nanosecond) - T0 - 5000000 | Acc])
    end.

pct(L, P) ->
    lists:nth(max(1, round(length(L) * P / 100)), L) / 1.0e6.

max_rate(Dir) ->
    Run = fun(Traced) ->
                  Busy = [spawn(fun() -> busy(stop) end) || _ <- [1, 2]],
                  R = case Traced of
                          false ->
                              {probe(3000), undefined};
                          true ->
                              {ok, T} = beamtrace:trace_async("bmt_bench_flight:work/1 -> return",
                                                              #{dir => fresh(Dir),
                                                                duration => infinity,
                                                                max_rate => infinity}),
                              L = probe(3000),
                              {ok, S} = beamtrace:stop_trace(T),
                              {L, S}
                      end,
                  [P ! stop || P <- Busy],
                  R
          end,
    {Base, _} = Run(false),
    {Traced, #{events := E, discarded := D, elapsed_ms := Ms}} = Run(true),
    io:format("max_rate: two processes calling a traced function flat out, 3 s:~n"
              "  5 ms sleep lateness untraced  p50 ~.2f ms, p99 ~.2f ms~n"
              "  5 ms sleep lateness traced    p50 ~.2f ms, p99 ~.2f ms~n"
              "  recorded ~b events/s, offered ~b events/s (~.1f% discarded)~n",
              [pct(Base, 50), pct(Base, 99), pct(Traced, 50), pct(Traced, 99),
               E * 1000 div max(1, Ms), (E + D) * 1000 div max(1, Ms),
               100 * D / max(1, E + D)]).
