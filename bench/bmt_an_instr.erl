%% The workload bench/instructions.sh counts the analyses on: one traced
%% process calls a traced local function (with return_trace) and sends a
%% message to a second process, N times: 3 N events (function_call,
%% function_return, message_send) recorded by beamtrace's CTF recorder,
%% with a buffer large enough that none is discarded.
%%   erl -noshell -pa ebin -pa DIR -run bmt_an_instr main TRACE_DIR N
%% prints "EV <events> <discarded>" and halts.
-module(bmt_an_instr).
-export([main/1, f/1]).

f(X) -> X + 1.

loop(_, 0) -> ok;
loop(Sink, N) ->
    bmt_an_instr:f(N),
    Sink ! {self(), ping, N},
    loop(Sink, N - 1).

main([Dir, N0]) ->
    N = list_to_integer(N0),
    {ok, _} = beamtrace:start(#{dir => Dir, buffer_size => 64 bsl 20, max_bytes => infinity}),
    Sink = spawn(fun Drop() -> receive _ -> Drop() end end),
    Self = self(),
    P = spawn(fun() -> receive go -> ok end, loop(Sink, N), Self ! done end),
    erlang:trace_pattern({?MODULE, f, 1}, [{'_', [], [{return_trace}]}], [local]),
    erlang:trace(P, true, [call, send, {tracer, beamtrace, []}]),
    P ! go,
    receive done -> ok end,
    {ok, #{events := E, discarded := D}} = beamtrace:stop(),
    io:format("EV ~b ~b~n", [E, D]),
    halt().
