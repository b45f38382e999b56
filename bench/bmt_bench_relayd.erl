%% One small node of bench/relayd_scale.sh: records its own message traffic
%% at a fixed rate while streaming it to an lttng-relayd, for a window
%% every node starts at the same wall-clock time, then writes its figures.
%%
%%   erl -noshell -run bmt_bench_relayd main URL SESSION RATE SECONDS GO_MS LIVE_MS OUT
%%
%% RATE: events a second (a ping-pong between two traced processes, four
%% events per round trip, paced every 10 ms); GO_MS: the window's start,
%% ms since the epoch; LIVE_MS: the live timer (0: not live); OUT: where
%% the figures go, one Erlang term.
-module(bmt_bench_relayd).
-export([main/1]).

main([Url, Session, Rate, Seconds, GoMs, LiveMs, Out]) ->
    logger:set_primary_config(level, none),
    Live = case list_to_integer(LiveMs) of
               0 -> #{};
               L -> #{live => L}
           end,
    Result =
        case beamtrace:start(Live#{relayd => Url, relayd_session => Session,
                                   events => ["org_erlang_dyntrace:message_*"],
                                   buffer_size => 1 bsl 20, subbuffers => 8,
                                   relayd_buffer => 2 bsl 20}) of
            {ok, S} ->
                Pong = spawn(fun pong/0),
                Ping = spawn(fun() -> receive go -> ok end, ping(Pong, 0) end),
                erlang:trace(Ping, true, [send, 'receive', {tracer, beamtrace, S}]),
                erlang:trace(Pong, true, [send, 'receive', {tracer, beamtrace, S}]),
                Wait = list_to_integer(GoMs) - erlang:system_time(millisecond),
                timer:sleep(max(0, Wait)),
                PerTick = max(1, list_to_integer(Rate) div 400), %% round trips per 10 ms
                T0 = erlang:monotonic_time(millisecond),
                Ping ! go,
                put(per_tick, PerTick),
                Ping ! {per_tick, PerTick},
                timer:sleep(list_to_integer(Seconds) * 1000),
                Ping ! {stop, self()},
                Rounds = receive {rounds, R} -> R end,
                Elapsed = erlang:monotonic_time(millisecond) - T0,
                Info = beamtrace:info(S),
                Stopped = beamtrace:stop(S),
                #{rounds => Rounds, elapsed_ms => Elapsed, info => Info, stop => Stopped};
            Error ->
                #{error => Error}
        end,
    ok = file:write_file(Out, io_lib:format("~p.~n", [Result])),
    halt(0).

pong() ->
    receive
        {From, I} -> From ! {pong, I}, pong();
        stop -> ok
    end.

%% Every 10 ms, PerTick round trips; stops on {stop, From}.
ping(Pong, N) ->
    receive
        {per_tick, P} -> tick(Pong, N, P)
    end.

tick(Pong, N, P) ->
    T = erlang:monotonic_time(millisecond),
    N1 = rounds(Pong, N, P),
    Sleep = max(0, 10 - (erlang:monotonic_time(millisecond) - T)),
    receive
        {stop, From} -> From ! {rounds, N1}, Pong ! stop
    after Sleep ->
        tick(Pong, N1, P)
    end.

rounds(_Pong, N, 0) -> N;
rounds(Pong, N, K) ->
    Pong ! {self(), N},
    receive {pong, N} -> ok end,
    rounds(Pong, N + 1, K - 1).
