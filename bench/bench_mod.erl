%% @doc The benchmark workloads, run inside one traced worker process.
%% Each loop does N operations; bench/bmt_bench.erl times them.
-module(bench_mod).
-export([f/1, call_loop/1, send_loop/1, spawn_loop/1, child/0, flood_sender/1,
         empty_loop/2, noop_loop/2, probe_loop/2]).

%% The traced function: `erlang:trace_pattern({bench_mod, f, 1}, true, [local])'.
f(X) -> X.

%% (a) N local calls of f/1: one call event each when traced.
call_loop(0) -> ok;
call_loop(N) -> f(N), call_loop(N - 1).

%% (b) N sends of a small message to self, the mailbox flushed every 64
%% sends so it stays short: one send event each when traced.
send_loop(N) -> send_loop(N, self()).

send_loop(0, _) -> flush();
send_loop(N, Self) when N band 63 =:= 0 ->
    Self ! {Self, ping, 42},
    flush(),
    send_loop(N - 1, Self);
send_loop(N, Self) ->
    Self ! {Self, ping, 42},
    send_loop(N - 1, Self).

flush() ->
    receive {_, ping, _} -> flush()
    after 0 -> ok
    end.

%% (c) N spawns of processes that exit at once, then waits until all are
%% gone, so their exit events fall inside the timed region.
spawn_loop(N) ->
    Base = erlang:system_info(process_count),
    spawn_n(N),
    wait_count(Base).

spawn_n(0) -> ok;
spawn_n(N) -> spawn(?MODULE, child, []), spawn_n(N - 1).

child() -> ok.

wait_count(Base) ->
    case erlang:system_info(process_count) > Base of
        true -> erlang:yield(), wait_count(Base);
        false -> ok
    end.

%% Flood: send to self as fast as possible until the atomic Stop is set;
%% returns the number of sends.
flood_sender(Stop) -> flood(Stop, self(), 0).

flood(Stop, Self, Count) ->
    Self ! {Self, ping, 42}, Self ! {Self, ping, 42},
    Self ! {Self, ping, 42}, Self ! {Self, ping, 42},
    Self ! {Self, ping, 42}, Self ! {Self, ping, 42},
    Self ! {Self, ping, 42}, Self ! {Self, ping, 42},
    flush(),
    case Count band 1023 =:= 0 andalso atomics:get(Stop, 1) =/= 0 of
        true -> Count + 8;
        false -> flood(Stop, Self, Count + 8)
    end.

%% User probes (bmt_bench user_probes): N calls in the same loop shape, the
%% last result returned. empty_loop is the loop alone, noop_loop an empty
%% NIF of ours, probe_loop beamtrace:p/2.
empty_loop(0, R) -> R;
empty_loop(N, R) -> empty_loop(N - 1, R).

noop_loop(0, R) -> R;
noop_loop(N, _) -> noop_loop(N - 1, bmt_null_tracer:noop()).

probe_loop(0, R) -> R;
probe_loop(N, _) -> probe_loop(N - 1, beamtrace:p(1, "x")).
