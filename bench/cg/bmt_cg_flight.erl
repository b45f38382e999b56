%% @doc The flight recorder's steady cost, for instruction counts
%% (bench/flight_cg.sh runs it under callgrind; only the workload's window
%% is counted, bmt_cgctl switching collection on and off around it).
%%
%% One process calls a traced function N times (a call and a return
%% event each: "bmt_cg_flight:f/1 -> return"), under one of:
%%   untraced      no recording (the floor)
%%   plain         beamtrace:trace_async/2, the same spec, discard mode
%%   flight_probe  beamtrace:flight/2, trigger "probe=never" (never fires)
%%   flight_call   beamtrace:flight/2, trigger "bmt_cg_flight:f/1>1000s"
%%                 (on the traced call itself, a bound never crossed)
%% Every mode with max_rate => infinity: the default max_rate (100,000
%% events/s) would stop the plain recording (trace/2's on_max_rate stop)
%% or sample the flight ones (their on_max_rate sample) part way, and the
%% figures would compare different event counts, not costs per event.
%% The recording is started before the workload's process and stopped
%% after its window, so the counted instructions are the workload's and
%% every thread's meanwhile (schedulers, the consumer, helpers).
-module(bmt_cg_flight).
-export([main/1, f/1]).

-define(SPEC, "bmt_cg_flight:f/1 -> return").

f(X) -> X + 1.

loop(0) -> ok;
loop(N) -> _ = bmt_cg_flight:f(N), loop(N - 1).

start(untraced, _Dir) ->
    {none, fun() -> ok end};
start(plain, Dir) ->
    {ok, T} = beamtrace:trace_async(?SPEC, #{dir => Dir, duration => infinity, max_rate => infinity}),
    {T, fun() -> {ok, _} = beamtrace:stop_trace(T) end};
start(flight_probe, Dir) ->
    {ok, F} = beamtrace:flight(?SPEC, #{dir => Dir, triggers => ["probe=never"],
                                               max_rate => infinity}),
    {F, fun() -> {ok, #{flight := #{captures := 0}}} = beamtrace:stop_flight(F) end};
start(flight_call, Dir) ->
    {ok, F} = beamtrace:flight(?SPEC, #{dir => Dir, triggers => ["bmt_cg_flight:f/1>1000s"],
                                               max_rate => infinity}),
    {F, fun() -> {ok, #{flight := #{captures := 0}}} = beamtrace:stop_flight(F) end}.

main([Mode0, N0]) ->
    Mode = list_to_atom(Mode0),
    N = list_to_integer(N0),
    Dir = os:getenv("CG_DIR"),
    {_, Stop} = start(Mode, Dir),
    Self = self(),
    %% A moment for the recording's helpers to settle (first timers).
    timer:sleep(200),
    P = spawn(fun() ->
                      receive go -> ok end,
                      bmt_cgctl:on(), loop(N), bmt_cgctl:off(),
                      Self ! done
              end),
    P ! go,
    receive done -> ok end,
    Stop(),
    halt().
