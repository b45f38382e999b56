%% The workload of a target node (no beamtrace on its code path): a process
%% that keeps spawning, sending and calling, plus helpers the test driver
%% calls over distribution. The node halts when the driver node goes.
-module(bmt_trace_target).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([start/1, start_timeout/1, load/0, work/1, tick/0, loop_report/2,
         dbg_start/0, dbg_count/0, dbg_fresh_calls/1, dbg_stop/0,
         code_requests_start/0, code_requests_stop/0, beamtrace_left/0, sources_load/1, own_monitor/1,
         own_monitor_got/0, io_load/1, long_gc/0, lookup/2, lookups/3, suspend/1]).

%% -eval'd at boot: watch the driver, run the load.
start(Driver) ->
    spawn(fun() ->
                  true = net_kernel:connect_node(Driver),
                  monitor_node(Driver, true),
                  receive {nodedown, Driver} -> erlang:halt() end
          end),
    register(bmt_load, spawn(fun load/0)),
    ok.

%% For a target the driver cannot reach (TLS distribution): halt after Ms.
start_timeout(Ms) ->
    spawn(fun() -> timer:sleep(Ms), erlang:halt() end),
    register(bmt_load, spawn(fun load/0)),
    ok.

%% Suspends the registered process Name until the returned process is sent
%% `resume' (a suspension lasts as long as its suspender: not an erpc's).
suspend(Name) ->
    Self = self(),
    S = spawn(fun() ->
                      true = erlang:suspend_process(whereis(Name)),
                      Self ! {self(), suspended},
                      receive resume -> ok end
              end),
    receive {S, suspended} -> S end.

%% bmt_beamtrace_left:check/0 (test/lib), compiled beside this module.
beamtrace_left() ->
    bmt_beamtrace_left:check().

%% Every ~2 ms: spawn a child that receives one message and exits, send it
%% the message, call work/1.
load() ->
    C = spawn(fun() -> receive {ping, N} -> work(N) end end),
    C ! {ping, 1},
    _ = ?MODULE:work(2),
    ?MODULE:tick(),
    timer:sleep(2),
    load().

work(N) ->
    N + 1.

%% A store's get (calls --group-by's tests): a miss answers at once, a hit
%% after SleepMs.
lookup(miss, _SleepMs) ->
    not_found;
lookup(_Key, SleepMs) ->
    timer:sleep(SleepMs),
    {ok, <<"value">>}.

%% Misses, then hits of keys 1..Keys in turn.
lookups(Misses, Hits, {Keys, SleepMs}) ->
    _ = [lookup(miss, SleepMs) || _ <- lists:seq(1, Misses)],
    _ = [lookup(1 + I rem Keys, SleepMs) || I <- lists:seq(0, Hits - 1)],
    ok.

tick() ->
    ok.

%% A tail-recursive loop of N iterations, which sends its stack size (words)
%% to From at the end: what `-> return' does to tail recursion.
loop_report(0, From) ->
    {stack_size, Words} = erlang:process_info(self(), stack_size),
    From ! {stack_words, Words},
    done;
loop_report(N, From) ->
    _ = work(N),
    loop_report(N - 1, From).

%% A dbg user on the same node: counts call messages for tick/0 of the
%% load process. dbg sends them straight to the counter (a module tracer,
%% {erl_tracer, Counter}), not through dbg's tracer process: that one
%% suspends each local process it gets a call message from until it has
%% handled the message (suspend_process/2, then resume_process/1), and on
%% OTP 29.1.2 a process suspended and resumed while it waits in
%% `receive ... after' can lose its timeout for good: bmt_load was seen
%% stuck in timer:sleep/1, with dbg alone (docs/otp-versions.md).
dbg_start() ->
    Counter = spawn(fun() -> count(0) end),
    register(bmt_dbg_counter, Counter),
    {ok, _} = dbg:tracer(module, fun() -> {erl_tracer, Counter} end),
    {ok, _} = dbg:p(whereis(bmt_load), [c]),
    {ok, _} = dbg:tpl(?MODULE, tick, 0, []),
    ok.

count(N) ->
    receive
        {get, From} -> From ! {count, N}, count(N);
        {trace, _, call, _} -> count(N + 1);
        _ -> count(N)
    end.

dbg_count() ->
    bmt_dbg_counter ! {get, self()},
    receive {count, N} -> N end.

%% N calls of tick/0 from a new process that dbg traces: {ok, Counted}
%% once the counter has counted at least N more (bmt_load's calls count
%% too), or {counted, Before, After} when it has not after 5 s.
dbg_fresh_calls(N) ->
    C0 = dbg_count(),
    P = spawn(fun() -> receive go -> [?MODULE:tick() || _ <- lists:seq(1, N)] end end),
    {ok, _} = dbg:p(P, [c]),
    P ! go,
    wait_count(C0 + N, 600, C0).

wait_count(Want, Tries, C0) ->
    case dbg_count() of
        C when C >= Want -> {ok, C - C0};
        C when Tries =:= 0 -> {counted, C0, C};
        _ -> timer:sleep(50), wait_count(Want, Tries - 1, C0)
    end.

dbg_stop() ->
    dbg:stop().

%% The requests the code server receives, by their first element
%% (load_binary, finish_loading, ...), from now to code_requests_stop/0:
%% traced with a tracer process of this node's own, which beamtrace
%% leaves alone.
code_requests_start() ->
    Collector = spawn(fun() -> collect_requests([]) end),
    register(bmt_code_requests, Collector),
    1 = erlang:trace(whereis(code_server), true, ['receive', {tracer, Collector}]),
    ok.

collect_requests(Acc) ->
    receive
        {trace, _, 'receive', {code_call, _, Req}} when is_tuple(Req) ->
            collect_requests([element(1, Req) | Acc]);
        {trace, _, 'receive', {code_call, _, Req}} ->
            collect_requests([Req | Acc]);
        {get, From} ->
            From ! {requests, lists:reverse(Acc)};
        _ ->
            collect_requests(Acc)
    end.

code_requests_stop() ->
    1 = erlang:trace(whereis(code_server), false, ['receive']),
    bmt_code_requests ! {get, self()},
    receive {requests, Rs} -> Rs after 5000 -> error(no_requests) end.

%% For the session sources: a system monitor of the node's own (long_gc
%% 1 ms, as riak_sysmon or lager set one), a named ETS table and a process
%% that keeps reading File and writing the table.
sources_load(File) ->
    Mon = spawn(?MODULE, own_monitor, [[]]),
    register(bmt_own_monitor, Mon),
    _ = erlang:system_monitor(Mon, [{long_gc, 1}]),
    Ready = self(),
    register(bmt_io_load, spawn(fun() ->
                                        bmt_tab = ets:new(bmt_tab, [named_table, public]),
                                        Ready ! table_made,
                                        io_load(File)
                                end)),
    receive table_made -> ok end.

io_load(File) ->
    {ok, _} = file:read_file(File),
    true = ets:insert(bmt_tab, {k, erlang:unique_integer()}),
    timer:sleep(5),
    ?MODULE:io_load(File).

own_monitor(Acc) ->
    receive
        {get, From} -> From ! {own, lists:reverse(Acc)}, own_monitor(Acc);
        Msg -> own_monitor([Msg | Acc])
    end.

own_monitor_got() ->
    bmt_own_monitor ! {get, self()},
    receive {own, L} -> L end.

%% A garbage collection over 4 M live words: longer than 1 ms anywhere.
long_gc() ->
    L = lists:seq(1, 2000000),
    erlang:garbage_collect(),
    {length(L), self()}.
