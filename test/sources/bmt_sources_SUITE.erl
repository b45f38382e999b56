%% The session's own sources (beamtrace_sources) on a real node: system
%% monitor events provoked on purpose, counters at the asked interval, node
%% up/down with a peer, chaining to a user's system monitor, and cleanup
%% after stop and after the helper or keeper is killed. A Common Test suite (run by
%% test/sources/run.sh); this node is made distributed for node up/down.
-module(bmt_sources_SUITE).
-compile(nowarn_deprecated_catch).
-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([nothing_when_not_asked/1, bad_options/1, long_gc_with_figures/1,
         long_schedule_with_figures/1, busy_port/1, user_monitor_chained/1,
         second_session_refused/1, long_message_queue/1, counters_at_interval/1,
         message_queue_top/1, node_up_down/1, cleanup_after_stop/1,
         cleanup_after_helper_killed/1, cleanup_after_keeper_killed/1,
         session_cap_ends_helper/1, file_ops_recorded/1, read_file_attributed_and_tagged/1,
         files_command/1, file_io_cleanup/1, ets_ops_recorded/1, file_io_of_listed_pids/1,
         ets_all_and_missing_tables/1, files_opened_before/1,
         nothing_left_after_last_stop/1, traces_reread_test/1]).

%% long_message_queue is a system monitor option from OTP 27: the case checks
%% that older VMs refuse it (dialyzer on OTP 25 knows only the refusal).
-dialyzer({[no_fail_call, no_match], long_message_queue/1}).

-import(bmt_test_lib, [assert_eq/3, fail/2, select/2, field/2]).

-define(EXPECT(Cond, What), (Cond) orelse fail(What, ?LINE)).

%%% Common Test

suite() -> [{timetrap, {seconds, 60}}].

all() ->
    [nothing_when_not_asked, bad_options, long_gc_with_figures,
     long_schedule_with_figures, busy_port, user_monitor_chained,
     second_session_refused, long_message_queue, counters_at_interval,
     message_queue_top, node_up_down, cleanup_after_stop,
     cleanup_after_helper_killed, cleanup_after_keeper_killed, session_cap_ends_helper,
     file_ops_recorded, read_file_attributed_and_tagged, files_command, file_io_cleanup,
     ets_ops_recorded, file_io_of_listed_pids, ets_all_and_missing_tables,
     files_opened_before, nothing_left_after_last_stop,
     traces_reread_test].

init_per_suite(Config0) ->
    Config = bmt_test_lib:reread_init(Config0),
    ok = bmt_test_lib:ensure_distributed("bmt_sources_"),
    Config.

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

%% No session, no system monitor left for the next case.
end_per_testcase(_Case, _Config) ->
    [catch beamtrace:stop(S) || S <- beamtrace:sessions()],
    erlang:system_monitor(undefined),
    ok.

start(Opts) ->
    bmt_test_lib:start(maps:merge(#{events => ["org_erlang_beamtrace:*"]}, Opts)).

stop(S) ->
    {_Stats, Events} = bmt_test_lib:stop_check(S),
    Events.

%% Nothing the sources set is left: the system monitor is `Monitor', the
%% scheduler_wall_time flag is off, the helper and keeper are gone.
assert_clean(Monitor, #{helper := H, keeper := K}) ->
    wait_gone(H), wait_gone(K),
    assert_eq(system_monitor_restored, Monitor, erlang:system_monitor()),
    %% The VM drops a dead process's scheduler_wall_time request in its
    %% exit cleanup, which can finish after is_process_alive says false.
    assert_eq(scheduler_wall_time_off, undefined, swt_off(200)),
    ok.

swt_off(0) ->
    statistics(scheduler_wall_time);
swt_off(N) ->
    case statistics(scheduler_wall_time) of
        undefined -> undefined;
        _ -> timer:sleep(10), swt_off(N - 1)
    end.

wait_gone(P) ->
    bmt_test_lib:wait_dead(P).

%%% Tests

nothing_when_not_asked(_) ->
    S = start(#{}),
    assert_eq(no_helpers, none, beamtrace_sources:helpers(S)),
    assert_eq(no_monitor, undefined, erlang:system_monitor()),
    assert_eq(no_swt, undefined, statistics(scheduler_wall_time)),
    _ = stop(S),
    ok.

bad_options(_) ->
    Dir = bmt_test_lib:tmpdir("bad"),
    assert_eq(bad_sample, {error, {badopt, {samples, foo}}},
              beamtrace:start(#{dir => Dir, samples => #{foo => 1}})),
    assert_eq(bad_interval, {error, {badopt, {samples, memory}}},
              beamtrace:start(#{dir => Dir, samples => #{memory => 0}})),
    assert_eq(bad_monitor, {error, {badopt, {system_monitor, long_gc}}},
              beamtrace:start(#{dir => Dir, system_monitor => #{long_gc => -1}})),
    assert_eq(bad_top, {error, {badopt, {samples, message_queues}}},
              beamtrace:start(#{dir => Dir, samples => #{message_queues => {100, 1000}}})),
    assert_eq(bad_dist, {error, {badopt, distribution}},
              beamtrace:start(#{dir => Dir, distribution => yes})),
    ?EXPECT(not filelib:is_file(Dir), dir_not_made),
    ok.

%% A full sweep of a live list of 2 M cons cells (4 M words) takes more
%% than 1 ms on any machine this runs on.
gc_worker(Parent) ->
    L = lists:seq(1, 2000000),
    erlang:garbage_collect(),
    {heap_size, H} = erlang:process_info(self(), heap_size),
    Parent ! {self(), gc_done, H},
    receive stop -> length(L) end.

long_gc_with_figures(_) ->
    S = start(#{system_monitor => #{long_gc => 1, large_heap => 1000000}}),
    Self = self(),
    W = spawn(fun() -> gc_worker(Self) end),
    receive {W, gc_done, _} -> ok end,
    %% The worker lives until the stop has flushed the reports: the helper
    %% reads its location when it handles each one (busy_port/1 says why).
    Events = try stop(S) after W ! stop end,
    Pid = list_to_binary(pid_to_list(W)),
    Gcs = select(Events, #{'$name' => long_gc, pid => Pid}),
    ?EXPECT(Gcs =/= [], {no_long_gc, Events}),
    [?EXPECT(field(timeout, E) >= 1, {timeout, E}) || E <- Gcs],
    %% The forced full sweep: all 4 M live words in the young heap.
    ?EXPECT(lists:any(fun(E) -> field(heap_size, E) + field(old_heap_size, E) >= 4000000 end, Gcs),
            {figures, Gcs}),
    [?EXPECT(field(heap_block_size, E) >= field(heap_size, E), {block, E}) || E <- Gcs],
    ?EXPECT(lists:all(fun(E) -> binary:match(field(location, E), <<":">>) =/= nomatch end, Gcs),
            {location, Gcs}),
    Large = select(Events, #{'$name' => large_heap, pid => Pid}),
    ?EXPECT(Large =/= [], {no_large_heap, Events}),
    ?EXPECT(lists:all(fun(E) -> field(heap_block_size, E) + field(old_heap_block_size, E) >= 1000000 end,
                      Large), {large_figures, Large}),
    ok.

%% Comparing two distinct 10 M element lists is one instruction that does
%% not yield: about 35 ms here, well past 5 ms anywhere.
long_schedule_with_figures(_) ->
    S = start(#{system_monitor => #{long_schedule => 5}}),
    Self = self(),
    W = spawn(fun() ->
                  A = lists:seq(1, 10000000), B = lists:seq(1, 10000000),
                  register(bmt_long_runner, self()),
                  T0 = erlang:monotonic_time(millisecond),
                  true = A =:= B,
                  Self ! {self(), erlang:monotonic_time(millisecond) - T0},
                  receive stop -> ok end
              end),
    Took = receive {W, T} -> T end,
    timer:sleep(50),
    %% Registered until the stop has flushed the report (busy_port/1).
    Events = try stop(S) after W ! stop end,
    Mine = select(Events, #{'$name' => long_schedule, pid => list_to_binary(pid_to_list(W)),
                            name => <<"bmt_long_runner">>}),
    ?EXPECT(Mine =/= [], {no_long_schedule, Took, Events}),
    ?EXPECT(lists:any(fun(E) -> field(timeout, E) >= 5 andalso field(timeout, E) =< Took + 50 end,
                      Mine), {figures, Took, Mine}),
    ok.

%% A port to `sleep' never reads its stdin: once the pipe is full the
%% driver queues, and past its limit the port is busy and the sender is
%% suspended. Both stay until the stop has flushed the report: the helper
%% names the sender and the port when it handles the report, and on a
%% loaded machine that can come after a kill or a close right here.
busy_port(_) ->
    S = start(#{system_monitor => #{busy_port => true}}),
    Port = open_port({spawn, "sleep 60"}, [binary]),
    Data = binary:copy(<<0>>, 65536),
    Sender = spawn(fun() -> register(bmt_busy_sender, self()), fill(Port, Data) end),
    erlang:port_connect(Port, Sender),
    unlink(Port),
    wait_suspended(Sender, 2000),
    Events = try stop(S)
             after
                 catch port_close(Port),
                 exit(Sender, kill)
             end,
    Busy = select(Events, #{'$name' => busy_port, pid => list_to_binary(pid_to_list(Sender)),
                            port => list_to_binary(erlang:port_to_list(Port)),
                            name => <<"bmt_busy_sender">>, port_name => <<"sleep 60">>}),
    ?EXPECT(Busy =/= [], {no_busy_port, Events}),
    ok.

fill(Port, Data) ->
    erlang:port_command(Port, Data),
    fill(Port, Data).

wait_suspended(_P, 0) ->
    fail(never_suspended, busy_port);
wait_suspended(P, N) ->
    case erlang:process_info(P, status) of
        {status, suspended} -> ok;
        _ -> timer:sleep(5), wait_suspended(P, N - 1)
    end.

%% A user's own monitor keeps getting what it asked for (long_gc), not what
%% only the session asked for (long_schedule), and is back at stop.
user_monitor_chained(_) ->
    Self = self(),
    User = spawn(fun() -> user_monitor(Self, []) end),
    erlang:system_monitor(User, [{long_gc, 1}]),
    S = start(#{system_monitor => #{long_schedule => 5, long_gc => 50}}),
    #{helper := H} = Helpers = beamtrace_sources:helpers(S),
    {H, Merged} = erlang:system_monitor(),
    assert_eq(union_of_settings, [{long_gc, 1}, {long_schedule, 5}], lists:sort(Merged)),
    W = spawn(fun() -> gc_worker(Self) end),
    receive {W, gc_done, _} -> W ! stop end,
    %% Waits for the long comparison itself (building the lists alone can
    %% take longer than a fixed sleep on a loaded machine), then lets the
    %% monitor messages land.
    {_, Ref} = spawn_monitor(fun() ->
                                 A = lists:seq(1, 10000000), B = lists:seq(1, 10000000), true = A =:= B
                             end),
    receive {'DOWN', Ref, process, _, normal} -> ok after 60000 -> fail(long_runner_stuck, chained) end,
    timer:sleep(100),
    User ! {report, self()},
    Got = receive {user_got, G} -> G end,
    ?EXPECT(lists:any(fun({monitor, P, long_gc, _}) -> P =:= W; (_) -> false end, Got),
            {user_missed_long_gc, Got}),
    ?EXPECT(not lists:any(fun({monitor, _, long_schedule, _}) -> true; (_) -> false end, Got),
            {user_got_unasked, Got}),
    ?EXPECT(lists:all(fun({monitor, _, long_gc, Info}) -> proplists:get_value(timeout, Info) >= 1 end,
                      Got), {user_threshold, Got}),
    Events = stop(S),
    assert_clean({User, [{long_gc, 1}]}, Helpers),
    %% The session's own threshold (50 ms) applies to what it records.
    [?EXPECT(field(timeout, E) >= 50, {session_threshold, E})
     || E <- select(Events, #{'$name' => long_gc})],
    ?EXPECT(select(Events, #{'$name' => long_schedule}) =/= [], {no_long_schedule, Events}),
    erlang:system_monitor(undefined),
    exit(User, kill),
    ok.

user_monitor(Parent, Acc) ->
    receive
        {report, From} -> From ! {user_got, lists:reverse(Acc)}, user_monitor(Parent, Acc);
        Msg -> user_monitor(Parent, [Msg | Acc])
    end.

second_session_refused(_) ->
    S = start(#{system_monitor => #{long_gc => 10}}),
    #{helper := H} = beamtrace_sources:helpers(S),
    Dir = bmt_test_lib:tmpdir("second"),
    assert_eq(refused, {error, {system_monitor, {in_use, H}}},
              beamtrace:start(#{dir => Dir, system_monitor => #{long_gc => 5}})),
    ?EXPECT(not filelib:is_file(Dir), second_dir_removed),
    assert_eq(still_ours, {H, [{long_gc, 10}]}, erlang:system_monitor()),
    assert_eq(one_session, [S], beamtrace:sessions()),
    _ = stop(S),
    ok.

%% OTP 27+ only: the feature is tried, not the version read.
long_message_queue(_) ->
    Supported = try erlang:system_monitor(self(), [{long_message_queue, {10, 100}}]) of
                    _ -> erlang:system_monitor(undefined), true
                catch error:badarg -> false
                end,
    Dir = bmt_test_lib:tmpdir("lmq"),
    Opts = #{dir => Dir, events => ["org_erlang_beamtrace:*"],
             system_monitor => #{long_message_queue => {10, 100}}},
    case Supported of
        false ->
            assert_eq(clear_error, {error, {system_monitor, {unsupported, long_message_queue}}},
                      beamtrace:start(Opts)),
            ?EXPECT(not filelib:is_file(Dir), dir_removed),
            assert_eq(nothing_set, undefined, erlang:system_monitor()),
            assert_eq(no_session, [], beamtrace:sessions()),
            {skip, "long_message_queue needs OTP 27+ (refusal checked)"};
        true ->
            {ok, S} = beamtrace:start(Opts),
            P = spawn(fun() -> receive go -> ok end, receive stop -> ok end end),
            [P ! {m, I} || I <- lists:seq(1, 200)],
            timer:sleep(50),
            P ! go,
            exit(P, kill),
            timer:sleep(50),
            Events = stop(S),
            Pid = list_to_binary(pid_to_list(P)),
            ?EXPECT(select(Events, #{'$name' => long_message_queue, pid => Pid,
                                     is_long => <<"true">>}) =/= [], {no_lmq, Events}),
            ok
    end.

%% Samples fall on a grid of the asked interval from the start (a late one
%% is taken at once, the next stays on the grid): each counter gets one
%% sample per interval, never more than the session's life holds, and the
%% counters asked at 100 ms get twice the samples of the one at 200 ms,
%% however the machine's load delays the helper.
counters_at_interval(_) ->
    Interval = 100,
    T0 = erlang:monotonic_time(millisecond),
    S = start(#{samples => #{schedulers => Interval, run_queues => Interval,
                             memory => 2 * Interval}}),
    Busy = spawn(fun Spin() -> Spin() end),
    timer:sleep(1050),
    exit(Busy, kill),
    #{dir := Dir} = beamtrace:info(S),
    Events = stop(S),
    Grid = (erlang:monotonic_time(millisecond) - T0) div Interval,
    Count = fun(Pattern) -> length(select(Events, Pattern#{'$name' => counter})) end,
    Totals = Count(#{counter => <<"scheduler_utilization">>, instance => <<"total">>}),
    ?EXPECT(Totals >= 5 andalso Totals =< Grid, {scheduler_samples, Totals, Grid}),
    Mem = Count(#{counter => <<"memory">>, instance => <<"total">>}),
    ?EXPECT(abs(Mem - Totals div 2) =< 1, {memory_samples, Mem, Totals}),
    Rq = Count(#{counter => <<"run_queue">>, instance => <<"1">>}),
    ?EXPECT(abs(Rq - Totals) =< 1, {run_queue_samples, Rq, Totals}),
    %% One scheduler spun the whole time: some scheduler is near full, and
    %% every value is a fraction of wall time.
    Utils = [field(value, E) || E <- select(Events, #{'$name' => counter,
                                                      counter => <<"scheduler_utilization">>})],
    ?EXPECT(lists:all(fun(V) -> V >= 0 andalso V =< 1000000 end, Utils), {ppm_range, Utils}),
    ?EXPECT(lists:max(Utils) > 500000, {no_busy_scheduler, lists:max(Utils)}),
    [?EXPECT(field(value, E) > 0, {memory_total, E})
     || E <- select(Events, #{'$name' => counter, counter => <<"memory">>, instance => <<"total">>})],
    %% The chrome export draws every sample as a counter ("C") event.
    Json = filename:join(bmt_test_lib:tmpdir("chrome"), "trace.json"),
    ok = filelib:ensure_dir(Json),
    Cli = bmt_test_lib:cli(),
    {0, _, _} = bmt_test_lib:cmd(Cli, ["export", "--format", "chrome", "-o", Json, Dir]),
    {ok, Text} = file:read_file(Json),
    Cs = binary:matches(Text, <<"{\"ph\":\"C\",\"cat\":\"counter\",\"pid\":3,">>),
    assert_eq(chrome_counters, length(select(Events, #{'$name' => counter})), length(Cs)),
    ?EXPECT(binary:match(Text, <<"\"name\":\"scheduler_utilization (ppm)\",\"args\":{\"total\":">>)
            =/= nomatch, chrome_track_name),
    %% The report draws each counter as a chart, one line per instance,
    %% with every sample of the instance and its peak.
    Values = fun(C, I) -> [field(value, E) || E <- select(Events, #{'$name' => counter,
                                                                   counter => C, instance => I})]
             end,
    Charts = report_counters(Dir),
    [begin
         Vs = Values(C, I),
         assert_eq({samples, C, I}, length(Vs), maps:get(samples, chart_series(Charts, C, U, I))),
         assert_eq({peak, C, I}, lists:max(Vs), maps:get(peak, chart_series(Charts, C, U, I)))
     end || {C, U, I} <- [{<<"scheduler_utilization">>, <<"ppm">>, <<"total">>},
                          {<<"memory">>, <<"bytes">>, <<"total">>},
                          {<<"run_queue">>, <<"count">>, <<"1">>}]],
    ok.

%% The report's counter charts of trace `Dir`: #{{Counter, Unit} =>
%% #{Instance => #{samples, peak}}}, read from the svg's data attributes.
report_counters(Dir) ->
    Html = filename:join(bmt_test_lib:tmpdir("report"), "report.html"),
    ok = filelib:ensure_dir(Html),
    Cli = bmt_test_lib:cli(),
    {0, _, _} = bmt_test_lib:cmd(Cli, ["report", "-o", Html, Dir]),
    {ok, Text} = file:read_file(Html),
    {match, Svgs} = re:run(Text, "<svg class=\"chart counters\"[^>]* data-counter=\"([^\"]*)\" "
                                 "data-unit=\"([^\"]*)\"(.*?)</svg>",
                           [global, dotall, {capture, all_but_first, binary}]),
    maps:from_list(
      [{{C, U}, maps:from_list(
                  [{unescape(I), #{samples => binary_to_integer(N), peak => binary_to_integer(P)}}
                   || [I, P, N] <- series_of(Body)])}
       || [C, U, Body] <- Svgs]).

series_of(Body) ->
    case re:run(Body, "<g class=\"series\" data-instance=\"([^\"]*)\" data-peak=\"(-?[0-9]+)\" "
                      "data-samples=\"([0-9]+)\"", [global, {capture, all_but_first, binary}]) of
        {match, L} -> L;
        nomatch -> []
    end.

unescape(B) ->
    lists:foldl(fun({From, To}, Acc) -> binary:replace(Acc, From, To, [global]) end, B,
                [{<<"&lt;">>, <<"<">>}, {<<"&gt;">>, <<">">>}, {<<"&quot;">>, <<"\"">>},
                 {<<"&amp;">>, <<"&">>}]).

chart_series(Charts, C, U, I) ->
    case Charts of
        #{{C, U} := #{I := S}} -> S;
        _ -> error({no_chart_series, C, U, I, Charts})
    end.

message_queue_top(_) ->
    P = spawn(fun() -> register(bmt_piled_up, self()), receive never -> ok end end),
    timer:sleep(10),
    [P ! {m, I} || I <- lists:seq(1, 500)],
    S = start(#{samples => #{message_queues => {100, 3}}}),
    %% A sample handled while P is alive, and one that began after it
    %% died (not timed: a loaded machine handled none in 250 ms).
    #{helper := H} = beamtrace_sources:helpers(S),
    1 = erlang:trace(H, true, ['receive', monotonic_timestamp]),
    wait_sample_handled(H, message_queues, erlang:monotonic_time(nanosecond)),
    exit(P, kill),
    bmt_test_lib:wait_dead(P),
    wait_sample_handled(H, message_queues, erlang:monotonic_time(nanosecond)),
    1 = erlang:trace(H, false, ['receive', monotonic_timestamp]),
    #{dir := Dir} = beamtrace:info(S),
    Events = stop(S),
    Instance = iolist_to_binary([pid_to_list(P), " bmt_piled_up"]),
    Mine = [field(value, E) || E <- select(Events, #{'$name' => counter, counter => <<"message_queue">>,
                                                     instance => Instance})],
    ?EXPECT(lists:member(500, Mine), {queue_seen, Mine}),
    %% Gone from the top: one 0, then nothing.
    assert_eq(dropped_to_zero, 0, lists:last(Mine)),
    %% The report's chart shows the queue's peak under its name.
    Series = chart_series(report_counters(Dir), <<"message_queue">>, <<"messages">>, Instance),
    assert_eq(report_queue_peak, 500, maps:get(peak, Series)),
    assert_eq(report_queue_samples, length(Mine), maps:get(samples, Series)),
    ok.

%% Waits (bounded) until helper H has handled a sample of Kind whose timer
%% message it received after monotonic time From (ns): H traced by the
%% caller with 'receive' and monotonic_timestamp. Received, then H waiting
%% with an empty mailbox: handled.
wait_sample_handled(H, Kind, From) ->
    receive
        {trace_ts, H, 'receive', {timeout, _, {sample, Kind, _, _}}, Ts} when Ts > From ->
            wait_idle(H, 3000)
    after 30000 ->
        fail(no_sample_received, {Kind, process_info(H)})
    end.

wait_idle(H, 0) ->
    fail(helper_busy, process_info(H, [status, message_queue_len, current_stacktrace]));
wait_idle(H, Tries) ->
    case process_info(H, [status, message_queue_len]) of
        [{status, waiting}, {message_queue_len, 0}] -> ok;
        _ -> timer:sleep(10), wait_idle(H, Tries - 1)
    end.

node_up_down(_) ->
    S = start(#{distribution => true}),
    #{helper := H} = beamtrace_sources:helpers(S),
    %% Told of the peer's nodeup and nodedown as the helper is (net_kernel
    %% tells its subscribers together), then until the helper has handled
    %% them: waited for, not slept (a loaded machine is slow to do either).
    ok = net_kernel:monitor_nodes(true),
    {ok, Peer, Node} = peer:start_link(#{name => peer:random_name(bmt_src)}),
    pong = net_adm:ping(Node),
    receive {nodeup, Node} -> ok after 60000 -> fail(no_nodeup, Node) end,
    wait_idle(H, 3000),
    peer:stop(Peer),
    receive {nodedown, Node} -> ok after 60000 -> fail(no_nodedown, Node) end,
    ok = net_kernel:monitor_nodes(false),
    wait_idle(H, 3000),
    Events = stop(S),
    Name = atom_to_binary(Node),
    Up = select(Events, #{'$name' => dist_monitor, what => <<"nodeup">>, monitored_node => Name,
                          node => atom_to_binary(node()), type => <<"visible">>,
                          reason => <<"undefined">>}),
    Down = select(Events, #{'$name' => dist_monitor, what => <<"nodedown">>, monitored_node => Name}),
    ?EXPECT(length(Up) =:= 1, {nodeup, Events}),
    ?EXPECT(length(Down) =:= 1, {nodedown, Events}),
    [D] = Down,
    ?EXPECT(field(reason, D) =/= <<"undefined">>, {nodedown_reason, D}),
    ok.

all_sources() ->
    #{system_monitor => #{long_gc => 100, busy_port => true},
      samples => #{schedulers => 100, memory => 100},
      distribution => true}.

cleanup_after_stop(_) ->
    S = start(all_sources()),
    Helpers = beamtrace_sources:helpers(S),
    #{helper := H} = Helpers,
    ?EXPECT(statistics(scheduler_wall_time) =/= undefined, swt_on_while_running),
    ?EXPECT(element(1, erlang:system_monitor()) =:= H, monitor_is_helper),
    %% A sample handled (not a time: a loaded machine took more).
    1 = erlang:trace(H, true, ['receive', monotonic_timestamp]),
    wait_sample_handled(H, schedulers, erlang:monotonic_time(nanosecond)),
    1 = erlang:trace(H, false, ['receive', monotonic_timestamp]),
    Events = stop(S),
    ?EXPECT(select(Events, #{'$name' => counter}) =/= [], no_counters),
    assert_clean(undefined, Helpers),
    %% The flag someone else turned on stays on.
    erlang:system_flag(scheduler_wall_time, true),
    S2 = start(#{samples => #{schedulers => 100}}),
    _ = stop(S2),
    ?EXPECT(statistics(scheduler_wall_time) =/= undefined, others_flag_kept),
    erlang:system_flag(scheduler_wall_time, false),
    ok.

cleanup_after_helper_killed(_) ->
    Self = self(),
    User = spawn(fun() -> user_monitor(Self, []) end),
    erlang:system_monitor(User, [busy_port]),
    S = start(all_sources()),
    #{helper := H} = Helpers = beamtrace_sources:helpers(S),
    exit(H, kill),
    assert_clean({User, [busy_port]}, Helpers),
    %% The session goes on; stop still works.
    assert_eq(running, running, maps:get(state, beamtrace:info(S))),
    _ = stop(S),
    assert_eq(still_user, {User, [busy_port]}, erlang:system_monitor()),
    erlang:system_monitor(undefined),
    exit(User, kill),
    ok.

cleanup_after_keeper_killed(_) ->
    S = start(all_sources()),
    #{keeper := K} = Helpers = beamtrace_sources:helpers(S),
    exit(K, kill),
    assert_clean(undefined, Helpers),
    _ = stop(S),
    ok.

%% Leave nothing behind (issue 16): after the last session stops, by
%% stop/1 or by its owner's exit, no process of beamtrace is left: the
%% registry's holder goes with its last entry (it stayed before).
nothing_left_after_last_stop(_) ->
    S1 = start(all_sources()),
    %% The helper and keeper run at high priority, as the sessions' other
    %% processes (a stop waits for both).
    #{helper := H, keeper := K} = beamtrace_sources:helpers(S1),
    assert_eq(helper_priority, {priority, high}, process_info(H, priority)),
    assert_eq(keeper_priority, {priority, high}, process_info(K, priority)),
    S2 = start(#{samples => #{memory => 100}}),
    ?EXPECT(is_pid(beamtrace_registry:holder()), no_holder_while_running),
    _ = stop(S1),
    ?EXPECT(is_pid(beamtrace_registry:holder()), holder_gone_with_a_session_left),
    _ = stop(S2),
    assert_eq(left_after_stop, [], beamtrace_left(1000)),
    Owner = spawn(fun() -> receive stop -> ok end end),
    {ok, T} = beamtrace:trace_async([procs], #{owner => Owner, duration => 60000,
                                                dir => bmt_test_lib:tmpdir("owner"),
                                                samples => #{memory => 100}}),
    ?EXPECT(is_pid(beamtrace_registry:holder()), no_holder_while_tracing),
    exit(Owner, kill),
    receive {beamtrace_trace, T, {ok, #{reason := owner_exit}}} -> ok end,
    assert_eq(left_after_owner_exit, [], beamtrace_left(1000)),
    ok.

%% Processes running beamtrace's code, and the registry's holder (polled:
%% the holder goes once it is scheduled, at high priority).
beamtrace_left(Tries) ->
    Left = [{P, MFA} || P <- processes(), P =/= self(),
                        {current_function, {M, _, _} = MFA} <- [process_info(P, current_function)],
                        lists:prefix("beamtrace", atom_to_list(M))]
        ++ [{holder, H} || H <- [beamtrace_registry:holder()], is_pid(H)],
    case Left of
        [_ | _] when Tries > 0 -> timer:sleep(5), beamtrace_left(Tries - 1);
        _ -> Left
    end.

%% A session that stops by itself (its duration) takes its sources down
%% within the helper's check interval.
session_cap_ends_helper(_) ->
    S = start(#{duration => 200, system_monitor => #{long_gc => 100},
                samples => #{memory => 50}}),
    Helpers = beamtrace_sources:helpers(S),
    timer:sleep(1500),
    assert_clean(undefined, Helpers),
    {ok, #{reason := duration}} = beamtrace:stop(S),
    ok.

%%% File I/O and ETS (beamtrace_sources_io)

%% Runs Fun in a new process and waits for it: its pid and result.
in_worker(Fun) ->
    Self = self(),
    {W, Ref} = spawn_monitor(fun() -> Self ! {self(), Fun()} end),
    receive
        {W, R} -> receive {'DOWN', Ref, _, _, _} -> {W, R} end;
        {'DOWN', Ref, _, _, Why} -> fail(worker_crashed, Why)
    end.

%% As in_worker/1, but the worker lives on until released (release/1):
%% the helper reads a caller's tag from its dictionary when it handles the
%% call, which on a loaded machine can be after a short-lived caller died.
in_worker_kept(Fun) ->
    Self = self(),
    W = spawn(fun() -> R = Fun(), Self ! {self(), R}, receive release -> ok end end),
    receive {W, R} -> {W, R} end.

release(W) ->
    W ! release,
    ok.

pid_text(P) -> list_to_binary(pid_to_list(P)).

file_ops_recorded(_) ->
    Dir = bmt_test_lib:tmpdir("fileops_data"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Path = filename:join(Dir, "known.bin"),
    Missing = filename:join(Dir, "missing.bin"),
    S = start(#{file_io => true}),
    {W, ok} = in_worker(fun() ->
        ok = file:write_file(Path, binary:copy(<<1>>, 1000)),
        {ok, Raw} = file:open(Path, [read, binary, raw]),
        {ok, <<_:100/binary>>} = file:read(Raw, 100),
        {ok, <<_:100/binary>>} = file:pread(Raw, 900, 200),
        eof = file:pread(Raw, 5000, 10),
        ok = file:close(Raw),
        {ok, Io} = file:open(Path, [write, binary]),
        ok = file:write(Io, binary:copy(<<2>>, 300)),
        ok = file:close(Io),
        {error, enoent} = file:read_file(Missing),
        {error, enoent} = file:open(Missing, [read]),
        ok = file:rename(Path, Path ++ ".2"),
        ok = file:delete(Path ++ ".2"),
        ok
    end),
    Events = stop(S),
    Mine = select(Events, #{'$name' => file_op, pid => pid_text(W)}),
    Ops = [binary_to_atom(field(op, E)) || E <- Mine],
    assert_eq(ops_in_order, [write_file, open, read, pread, pread, close, open, write, close,
                             read_file, open, rename, delete], Ops),
    B = list_to_binary(Path),
    Get = fun(I) -> lists:nth(I, Mine) end,
    assert_eq(write_file, {B, 1000, <<"ok">>, <<>>},
              {field(path, Get(1)), field(bytes, Get(1)), field(result, Get(1)), field(error, Get(1))}),
    assert_eq(raw_read, {B, 100}, {field(path, Get(3)), field(bytes, Get(3))}),
    assert_eq(pread, {B, 100}, {field(path, Get(4)), field(bytes, Get(4))}),
    assert_eq(pread_eof, {<<"eof">>, 0}, {field(result, Get(5)), field(bytes, Get(5))}),
    assert_eq(close_path, B, field(path, Get(6))),
    assert_eq(io_write, {B, 300, <<"ok">>}, {field(path, Get(8)), field(bytes, Get(8)), field(result, Get(8))}),
    MissingB = list_to_binary(Missing),
    assert_eq(enoent_read_file, {MissingB, <<"error">>, <<"enoent">>, 0},
              {field(path, Get(10)), field(result, Get(10)), field(error, Get(10)), field(bytes, Get(10))}),
    assert_eq(enoent_open, {<<"error">>, <<"enoent">>}, {field(result, Get(11)), field(error, Get(11))}),
    assert_eq(rename_paths, {B, <<B/binary, ".2">>}, {field(path, Get(12)), field(path2, Get(12))}),
    [?EXPECT(is_integer(field(latency_ns, E)) andalso field(latency_ns, E) < 10000000000, {latency, E})
     || E <- Mine],
    ok.

%% file:read_file/1 runs prim_file in file_server_2: the event names the
%% caller. A tag set with put_tag/1 and one spread to a receiver both ride.
read_file_attributed_and_tagged(_) ->
    Dir = bmt_test_lib:tmpdir("readfile_data"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Path = filename:join(Dir, "five.bin"),
    ok = file:write_file(Path, binary:copy(<<7>>, 5000)),
    S = start(#{file_io => true}),
    {W, ok} = in_worker_kept(fun() ->
        _ = beamtrace:put_tag(<<"req-42">>),
        {ok, _} = file:read_file(Path),
        ok
    end),
    Self = self(),
    {_, ok} = in_worker(fun() ->
        _ = beamtrace:put_tag(<<"spread-7">>),
        _ = beamtrace:spread_tag(true),
        R = spawn(fun() ->
                      receive go -> ok end,
                      {ok, _} = file:read_file_info(Path),
                      Self ! {receiver, self()}
                  end),
        R ! go,
        ok
    end),
    R = receive {receiver, P} -> P end,
    Events = stop(S),
    release(W),
    Mine = select(Events, #{'$name' => file_op, pid => pid_text(W), op => <<"read_file">>}),
    ?EXPECT(length(Mine) =:= 1, {read_file_events, Events}),
    [E] = Mine,
    assert_eq(read_file_fields, {list_to_binary(Path), 5000, <<"req-42">>},
              {field(path, E), field(bytes, E), field(tag, E)}),
    Server = pid_text(whereis(file_server_2)),
    assert_eq(nothing_in_file_server, [], select(Events, #{'$name' => file_op, pid => Server})),
    Spread = select(Events, #{'$name' => file_op, pid => pid_text(R), op => <<"read_file_info">>}),
    ?EXPECT(Spread =/= [], {spread_event, Events}),
    assert_eq(spread_tag, <<"spread-7">>, field(tag, hd(Spread))),
    ok.

%% `beamtrace files' counts each op as the workload did, and its
%% percentiles lie within generous bounds of the workload's own timings.
files_command(_) ->
    Dir = bmt_test_lib:tmpdir("files_data"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Path = filename:join(Dir, "f.bin"),
    N = 40,
    S = start(#{file_io => true}),
    #{dir := TraceDir} = beamtrace:info(S),
    {W, Times} = in_worker(fun() ->
        [begin
             T0 = erlang:monotonic_time(nanosecond),
             ok = file:write_file(Path, binary:copy(<<I>>, 4096)),
             T1 = erlang:monotonic_time(nanosecond),
             {ok, _} = file:read_file(Path),
             T2 = erlang:monotonic_time(nanosecond),
             {error, enoent} = file:read_file(Path ++ ".none"),
             {T1 - T0, T2 - T1}
         end || I <- lists:seq(1, N)]
    end),
    _ = stop(S),
    Cli = bmt_test_lib:cli(),
    {0, JsonLines, _} = bmt_test_lib:cmd(Cli, ["files", "--format", "json", "--pid",
                                              pid_to_list(W), TraceDir]),
    Json = iolist_to_binary(lists:join("\n", JsonLines)),
    Count = fun(Op) -> json_int(Json, <<"{\"op\": \"", Op/binary, "\", \"count\": ">>) end,
    assert_eq(write_file_count, N, Count(<<"write_file">>)),
    assert_eq(read_file_count, 2 * N, Count(<<"read_file">>)),
    assert_eq(enoent_count, N, json_int(Json, <<"{\"error\": \"enoent\", \"count\": ">>)),
    MaxWrite = lists:max([T || {T, _} <- Times]),
    Section = section(Json, <<"{\"op\": \"write_file\"">>),
    P50 = json_int(Section, <<"\"p50_ns\": ">>),
    Max = json_int(Section, <<"\"max_ns\": ">>),
    %% The workload's own timing encloses each call; the VM's timestamps
    %% are erlang:now/0's (microseconds, which may lag the OS clock under
    %% adjustment): generous bounds, never a tight one.
    MinWrite = lists:min([T || {T, _} <- Times]),
    ?EXPECT(P50 =< Max andalso Max =< 2 * MaxWrite + 1000000, {write_bounds, P50, Max, MaxWrite}),
    ?EXPECT(P50 =< 2 * lists:nth(N div 2, lists:sort([T || {T, _} <- Times])) + 1000000,
            {write_p50, P50, MinWrite}),
    ?EXPECT(P50 > 0, {p50_positive, P50}),
    {0, TextLines, _} = bmt_test_lib:cmd(Cli, ["files", "--top", "1", TraceDir]),
    Text = iolist_to_binary(lists:join("\n", TextLines)),
    %% --top 1: the one path with the most time, not the missing one.
    ?EXPECT(binary:match(Text, list_to_binary(Path ++ ".none")) =:= nomatch, {top_one, Text}),
    ?EXPECT(binary:match(Text, <<"      40  enoent">>) =/= nomatch, {text_errors, Text}),
    ?EXPECT(binary:match(Text, <<"write_file">>) =/= nomatch, {text, Text}),
    ?EXPECT(binary:match(Text, list_to_binary(Path)) =/= nomatch, {text_path, Text}),
    %% The chrome export: one instant per operation on the worker's track,
    %% with its path, result and error.
    Chrome = filename:join(bmt_test_lib:tmpdir("files_chrome"), "trace.json"),
    ok = filelib:ensure_dir(Chrome),
    {0, _, _} = bmt_test_lib:cmd(Cli, ["export", "--format", "chrome", "--pid", pid_to_list(W),
                                       "-o", Chrome, TraceDir]),
    {ok, Exported} = file:read_file(Chrome),
    Instants = fun(Re) -> case re:run(Exported, Re, [global]) of
                              {match, L} -> length(L);
                              nomatch -> 0
                          end
               end,
    Missing = iolist_to_binary(["\"name\":\"file read_file\",\"args\":{\"path\":\"", Path,
                                ".none\",\"result\":\"error\",\"error\":\"enoent\""]),
    assert_eq(chrome_write_file, N, Instants(<<"\"ph\":\"i\",\"cat\":\"file\",[^\n]*\"name\":\"file write_file\"">>)),
    assert_eq(chrome_enoent, N, Instants(re:replace(Missing, "[.^$*+?()\\[\\]{}|\\\\]", "\\\\&",
                                                   [global, {return, binary}]))),
    ok.

json_int(Json, Key) ->
    case binary:split(Json, Key) of
        [_, Rest] ->
            {I, _} = string:to_integer(binary_to_list(Rest)),
            I;
        _ -> fail({json_key, Key}, Json)
    end.

section(Json, Key) ->
    [_, Rest] = binary:split(Json, Key),
    hd(binary:split(Rest, <<"}">>)).

meta_clean() ->
    [MFA || M <- [file, ets], {F, A} <- M:module_info(functions),
            MFA <- [{M, F, A}], erlang:trace_info(MFA, meta) =/= {meta, false}].

file_io_cleanup(_) ->
    S = start(#{file_io => true, ets => [all]}),
    ?EXPECT(erlang:trace_info({file, read_file, 1}, meta) =/= {meta, false}, patterns_set),
    Helpers = beamtrace_sources:helpers(S),
    _ = stop(S),
    assert_clean(undefined, Helpers),
    assert_eq(no_patterns_after_stop, [], meta_clean()),
    assert_eq(no_flags, {flags, []}, erlang:trace_info(self(), flags)),
    %% A named table (a missing one is refused: ets_all_and_missing_tables).
    Tab = ets:new(bmt_cleanup_tab, [named_table, public]),
    S2 = start(#{file_io => [self()], ets => [Tab]}),
    #{helper := H} = Helpers2 = beamtrace_sources:helpers(S2),
    exit(H, kill),
    assert_clean(undefined, Helpers2),
    assert_eq(no_patterns_after_kill, [], meta_clean()),
    _ = stop(S2),
    true = ets:delete(Tab),
    %% A user's meta pattern set after the session's own stays.
    assert_eq(bad_file_io, {error, {badopt, file_io}},
              beamtrace:start(#{dir => bmt_test_lib:tmpdir("bad_fio"), file_io => [x]})),
    assert_eq(bad_ets, {error, {badopt, ets}},
              beamtrace:start(#{dir => bmt_test_lib:tmpdir("bad_ets"), ets => []})),
    ok.

%% `ets => all' as well as `[all]'; a table that does not exist is refused
%% with its name (it would record nothing), and nothing is left.
ets_all_and_missing_tables(_) ->
    T = ets:new(bmt_ets_all, [named_table, public]),
    S = start(#{ets => all}),
    {W, ok} = in_worker(fun() -> true = ets:insert(bmt_ets_all, {k}), ok end),
    Events = stop(S),
    [_] = select(Events, #{'$name' => ets_op, pid => pid_text(W), op => <<"insert">>}),
    Dir = bmt_test_lib:tmpdir("no-table"),
    assert_eq(missing_name, {error, {ets, {no_table, bmt_no_such_table}}},
              beamtrace:start(#{dir => Dir, ets => [bmt_ets_all, bmt_no_such_table]})),
    Gone = ets:new(bmt_gone, []),
    ets:delete(Gone),
    assert_eq(missing_tid, {error, {ets, {no_table, Gone}}}, beamtrace:start(#{dir => Dir, ets => [Gone]})),
    ?EXPECT(not filelib:is_file(Dir), dir_not_made),
    assert_eq(no_session_left, [], beamtrace:sessions()),
    assert_eq(no_patterns_left, [], meta_clean()),
    ets:delete(T),
    ok.

%% Files opened before the session: the state dump of open files names
%% both (file_info os_fd: every regular file the VM has open); the one
%% opened without raw is also named by its io server where the release's
%% file server has a table of them (OTP 25 and 26), and the operations on
%% it then carry its path. A raw handle's descriptor is the opener's
%% alone: operations on that one carry no path.
files_opened_before(_) ->
    Dir = bmt_test_lib:tmpdir("before_data"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    RawPath = filename:join(Dir, "raw.bin"),
    IoPath = filename:join(Dir, "io.bin"),
    ok = file:write_file(RawPath, binary:copy(<<1>>, 100)),
    ok = file:write_file(IoPath, binary:copy(<<2>>, 100)),
    Self = self(),
    W = spawn(fun() ->
                  {ok, Raw} = file:open(RawPath, [read, binary, raw]),
                  {ok, Io} = file:open(IoPath, [read, binary]),
                  Self ! {self(), opened},
                  receive go -> ok end,
                  {ok, _} = file:read(Io, 10),
                  {ok, _} = file:read(Raw, 10),
                  Self ! {self(), done},
                  receive close -> ok end,
                  ok = file:close(Raw),
                  ok = file:close(Io)
              end),
    receive {W, opened} -> ok end,
    Table = ets:info(file_io_servers, size) =/= undefined,
    S = start(#{file_io => true}),
    #{dir := TraceDir} = beamtrace:info(S),
    W ! go,
    receive {W, done} -> ok end,
    Events = stop(S),
    W ! close,
    Raw = list_to_binary(RawPath),
    Io = list_to_binary(IoPath),
    OsFds = [field(path, E) || E <- select(Events, #{'$name' => file_info, kind => <<"os_fd">>})],
    ?EXPECT(lists:member(Raw, OsFds) andalso lists:member(Io, OsFds), {os_fds, OsFds}),
    %% The reads as `beamtrace view' prints them: babeltrace2 2.0 (Debian
    %% bookworm's) prints an empty string field as an earlier event's
    %% value once other events separate the two (under load the state
    %% dump did), so its raw read showed the io read's path.
    {0, View, _} = bmt_test_lib:cmd(bmt_test_lib:cli(), ["view", TraceDir]),
    ReadOps = select([bmt_test_lib:parse_line(L) || L <- View],
                     #{'$name' => file_op, pid => pid_text(W), op => <<"read">>}),
    Reads = [field(path, E) || E <- ReadOps],
    case Table of
        true ->
            assert_eq({io_read_named, ReadOps}, [Io, <<>>], Reads),
            [_] = select(Events, #{'$name' => file_info, kind => <<"io_server">>, path => Io});
        false ->
            io:format("# no file_io_servers table on this release: the io server's file is "
                      "named by the open-files dump only~n"),
            assert_eq(reads_unnamed, [<<>>, <<>>], Reads)
    end,
    ok.

ets_ops_recorded(_) ->
    T = ets:new(bmt_ets_traced, [named_table, public]),
    Other = ets:new(bmt_ets_other, [named_table, public]),
    S = start(#{ets => [bmt_ets_traced]}),
    {W, ok} = in_worker_kept(fun() ->
        _ = beamtrace:put_tag(<<"ets-tag">>),
        [true = ets:insert(bmt_ets_traced, {I, 0}) || I <- lists:seq(1, 10)],
        [[_] = ets:lookup(bmt_ets_traced, I) || I <- lists:seq(1, 7)],
        [1 = ets:update_counter(bmt_ets_traced, I, 1) || I <- lists:seq(1, 3)],
        [_, _] = ets:select(bmt_ets_traced, [{{'$1', 1}, [{'<', '$1', 3}], ['$1']}]),
        true = ets:delete(bmt_ets_traced, 1),
        [true = ets:insert(bmt_ets_other, {I}) || I <- lists:seq(1, 5)],
        {'EXIT', _} = (catch ets:update_counter(bmt_ets_traced, 1, 1)),
        ok
    end),
    Events = stop(S),
    release(W),
    Mine = select(Events, #{'$name' => ets_op, pid => pid_text(W)}),
    Count = fun(Op) -> length([E || E <- Mine, field(op, E) =:= Op]) end,
    assert_eq(inserts, 10, Count(<<"insert">>)),
    assert_eq(lookups, 7, Count(<<"lookup">>)),
    assert_eq(counters, 4, Count(<<"update_counter">>)),
    assert_eq(selects, 1, Count(<<"select">>)),
    assert_eq(deletes, 1, Count(<<"delete">>)),
    assert_eq(only_traced_table, [<<"bmt_ets_traced">>], lists:usort([field(table, E) || E <- Mine])),
    assert_eq(tag, [<<"ets-tag">>], lists:usort([field(tag, E) || E <- Mine])),
    Errors = [E || E <- Mine, field(result, E) =:= <<"error">>],
    ?EXPECT(length(Errors) =:= 1 andalso field(op, hd(Errors)) =:= <<"update_counter">>, {errors, Errors}),
    assert_eq(no_patterns_after_stop, [], meta_clean()),
    ets:delete(T), ets:delete(Other),
    ok.

%% `file_io => [Pid]': only those processes' operations.
file_io_of_listed_pids(_) ->
    Dir = bmt_test_lib:tmpdir("listed_data"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Path = filename:join(Dir, "l.bin"),
    Self = self(),
    Work = fun() -> receive go -> ok end,
                    ok = file:write_file(Path, <<"abc">>),
                    {ok, <<"abc">>} = file:read_file(Path),
                    Self ! {done, self()}
           end,
    A = spawn(Work), B = spawn(Work),
    S = start(#{file_io => [A]}),
    A ! go, B ! go,
    [receive {done, P} -> ok end || P <- [A, B]],
    Events = stop(S),
    Ops = fun(P) -> [field(op, E) || E <- select(Events, #{'$name' => file_op, pid => pid_text(P)})] end,
    assert_eq(listed_recorded, [<<"write_file">>, <<"read_file">>], Ops(A)),
    assert_eq(unlisted_not, [], Ops(B)),
    assert_eq(only_listed, 2, length(select(Events, #{'$name' => file_op}))),
    assert_eq(patterns_gone, [], meta_clean()),
    ok.

%% Last: every trace the cases above wrote reads back the same later.
traces_reread_test(_Config) ->
    bmt_test_lib:reread_traces().
