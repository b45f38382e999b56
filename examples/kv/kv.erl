%% A small Riak-like key-value store and its clients: the workload of the
%% README's p99 example (seed 003). kv:start() starts ?PARTITIONS vnodes
%% and ?CLIENTS client processes that each send a get every ?PAUSE_MS and
%% measure its latency themselves, so the p99 beamtrace finds can be
%% checked against the clients' own: kv:client_p99(Seconds) says it.
-module(kv).
-export([start/0, client_p99/1]).

-define(PARTITIONS, 8).
-define(KEYS, 2000).
-define(CLIENTS, 3).
-define(PAUSE_MS, 4).
-define(LATENCIES, kv_latencies).

start() ->
    Dir = filename:join(os:getenv("KV_DATA_DIR", "/tmp"), "kv-" ++ os:getpid()),
    ok = filelib:ensure_path(Dir),
    Keeper = spawn(fun() -> receive stop -> ok end end),
    register(kv_keeper, Keeper),
    ets:new(?LATENCIES, [named_table, public, duplicate_bag, {heir, Keeper, none}]),
    [kv_vnode:start(I, {Dir, ?KEYS}) || I <- lists:seq(1, ?PARTITIONS)],
    [spawn(fun() -> client(rand:uniform(?KEYS)) end) || _ <- lists:seq(1, ?CLIENTS)],
    ok.

%% The clients' own p99 over the gets that ended in the last Seconds, as a
%% line of text.
client_p99(Seconds) ->
    Since = erlang:monotonic_time(nanosecond) - Seconds * 1000000000,
    Ns = lists:sort(ets:select(?LATENCIES, [{{'$1', '$2'}, [{'>=', '$1', Since}], ['$2']}])),
    N = length(Ns),
    P99 = case N of
              0 -> 0;
              _ -> lists:nth(max(1, ceil(N * 0.99)), Ns)
          end,
    lists:flatten(io_lib:format("clients: ~b gets in the last ~b s, p99 ~.3f ms", [N, Seconds, P99 / 1.0e6])).

client(Key) ->
    T0 = erlang:monotonic_time(nanosecond),
    _ = kv_get_fsm:get(Key, ?PARTITIONS),
    T1 = erlang:monotonic_time(nanosecond),
    ets:insert(?LATENCIES, {T1, T1 - T0}),
    timer:sleep(?PAUSE_MS),
    client(rand:uniform(?KEYS)).
