%% A Riak-like workload for the flight recorder's tests: a key-value store
%% (an ETS table) with get/put, where 1 get in `slow_every' (default 1000)
%% takes `slow_ms' (default 15) longer, and client processes that call it
%% and measure every get on the node's own clock. What they measured is
%% what the tests compare the captures with: every get slower than
%% `record_over_ms' (default 10) is kept, with its caller and its start and
%% end (erlang:monotonic_time/1, ns), and every get and put is counted.
%%
%% Runs on the test node or on a target node that has nothing of beamtrace
%% (it is compiled alone into the target's code path).
-module(bmt_kv).

-export([start/1, stop/0, get/2, put/3, slow_calls/0, counts/0, client/1, gc_burst/1,
         queue_burst/1, 'Never called'/0]).

-define(STORE, bmt_kv_store).
-define(SLOW, bmt_kv_slow).
-define(COUNTS, bmt_kv_counts).

%% @doc Starts the store and the clients. Opts: clients (default 4),
%% slow_every (1000), slow_ms (15), record_over_ms (10), pace_ms (1: each
%% client sleeps that long between operations; 0: none). Returns the
%% supervisor-like owner pid (stop/0 ends everything).
start(Opts) ->
    Parent = self(),
    Owner = spawn(fun() ->
                          ets:new(?STORE, [public, named_table, set, {read_concurrency, true}]),
                          ets:new(?SLOW, [public, named_table, bag]),
                          ets:new(?COUNTS, [public, named_table, set,
                                            {write_concurrency, true}]),
                          ets:insert(?COUNTS, [{gets, 0}, {puts, 0}, {seq, 0}]),
                          _ = [ets:insert(?STORE, {K, K * 2}) || K <- lists:seq(1, 1000)],
                          Cfg = maps:merge(#{clients => 4, slow_every => 1000, slow_ms => 15,
                                             record_over_ms => 10, pace_ms => 1}, Opts),
                          persistent_term:put(?MODULE, Cfg),
                          Clients = [spawn_link(?MODULE, client, [I])
                                     || I <- lists:seq(1, maps:get(clients, Cfg))],
                          register(bmt_kv, self()),
                          Parent ! {self(), started},
                          receive stop -> [exit(C, kill) || C <- Clients], ok end
                  end),
    receive {Owner, started} -> Owner end.

stop() ->
    case whereis(bmt_kv) of
        undefined -> ok;
        P ->
            Ref = monitor(process, P),
            P ! stop,
            receive {'DOWN', Ref, _, _, _} -> ok end
    end.

%% @doc The store's get: one in slow_every is slow_ms slower.
get(Tab, Key) ->
    #{slow_every := Every, slow_ms := Ms} = persistent_term:get(?MODULE),
    case ets:update_counter(?COUNTS, seq, 1) rem Every of
        0 -> put(bmt_kv_slowed, true), receive after Ms -> ok end;
        _ -> ok
    end,
    ets:lookup(Tab, Key).

put(Tab, Key, Value) ->
    ets:insert(Tab, {Key, Value}).

%% @private A client: get, get, ..., put every tenth, each get timed.
client(I) ->
    rand:seed(exsss, {I, I * 7, I * 13}),
    client_loop(persistent_term:get(?MODULE), 0).

client_loop(#{record_over_ms := Over, pace_ms := Pace} = Cfg, N) ->
    Key = rand:uniform(1000),
    T0 = erlang:monotonic_time(nanosecond),
    _ = ?MODULE:get(?STORE, Key),
    T1 = erlang:monotonic_time(nanosecond),
    ets:update_counter(?COUNTS, gets, 1),
    %% Slow: the store made it so (not the OS, descheduling the client
    %% around the call on a loaded machine: the call itself was not slow).
    Slowed = erase(bmt_kv_slowed) =:= true,
    _ = Slowed andalso T1 - T0 > Over * 1000000 andalso ets:insert(?SLOW, {slow, self(), T0, T1}),
    case N rem 10 of
        9 -> ?MODULE:put(?STORE, Key, N), ets:update_counter(?COUNTS, puts, 1);
        _ -> ok
    end,
    _ = Pace > 0 andalso timer:sleep(Pace),
    client_loop(Cfg, N + 1).

%% @doc The gets the store made slow that took longer than record_over_ms
%% for the client: [{Pid, StartNs, EndNs}] on
%% erlang:monotonic_time/1's clock, oldest first.
slow_calls() ->
    lists:keysort(2, [{P, T0, T1} || {slow, P, T0, T1} <- ets:tab2list(?SLOW)]).

%% @doc #{gets, puts} made so far.
counts() ->
    maps:from_list([{K, V} || {K, V} <- ets:tab2list(?COUNTS), K =/= seq]).

%% @doc A process whose garbage collection takes more than a millisecond:
%% {Pid, WhenNs} (monotonic, ns) of the collection.
gc_burst(Words) ->
    Self = self(),
    P = spawn(fun() ->
                      L = lists:seq(1, Words),
                      T = erlang:monotonic_time(nanosecond),
                      erlang:garbage_collect(),
                      Self ! {self(), T, length(L)},
                      receive stop -> ok end
              end),
    receive {P, T, _} -> {P, T} end.

%% @doc A process with N messages waiting: its pid (send it stop).
queue_burst(N) ->
    P = spawn(fun() -> receive stop -> ok end end),
    _ = [P ! {filler, I} || I <- lists:seq(1, N)],
    P.

%% @doc A function whose name OTP prints quoted, for a trigger that never
%% fires: the commands print it as OTP does (bmt_kv:'Never called'/0).
'Never called'() ->
    ok.
