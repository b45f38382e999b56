%% Exact accounting: the same deterministic workload traced once by the
%% VM's own pid tracer and once by beamtrace gives the same count for every
%% tracepoint; with a tiny buffer, events + discarded is still that total.
%%
%% The workload runs with one scheduler online: with two, a worker's
%% scheduled in/out count depends on whether the controller's
%% process_info(status) poll reaches it while it runs (a signal that can
%% wake it once more). Every other count is the same on any number of
%% schedulers.
-module(bmt_accounting_SUITE).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([exact_counts_test/1, tiny_buffer_test/1,
         after_stop_test/1,
         traces_reread_test/1]).

-import(bmt_test_lib, [start/1, stop_check/1, assert_eq/3]).

-define(ROUNDS, 5).
-define(TINY_ROUNDS, 6).
-define(BURST, 10000).

%%% Common Test

%% Each case runs alone in CT's process with a time limit; the node is left
%% as the next case expects it (no flags, patterns or sessions).
suite() -> [{timetrap, {seconds, 90}}].

all() ->
    [exact_counts_test, tiny_buffer_test,
     after_stop_test,
     traces_reread_test].

%% The traces the cases write are listed for traces_reread_test.
init_per_suite(Config) -> bmt_test_lib:reread_init(Config).

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

one_scheduler(F) ->
    Old = erlang:system_flag(schedulers_online, 1),
    try F() after erlang:system_flag(schedulers_online, Old) end.

pid_tracer_run(Rounds) ->
    pid_tracer_run(Rounds, #{}).

pid_tracer_run(Rounds, Opts) ->
    T = bmt_workload:pid_tracer(),
    ok = bmt_workload:run({tracer, T}, Rounds, Opts),
    C = bmt_workload:pid_tracer_counts(T),
    exit(T, kill),
    C.

exact_counts_test(_Config) ->
    one_scheduler(fun() ->
        Exp = pid_tracer_run(?ROUNDS),
        S = start(#{}),
        ok = bmt_workload:run({tracer, beamtrace, S}, ?ROUNDS),
        {#{events := N, discarded := D}, Ev} = stop_check(S),
        Got = bmt_test_lib:count_by_name(Ev),
        [io:format("# ~-20s pid_tracer=~-5w beamtrace=~w~n",
                   [Tp, maps:get(Tp, Exp, 0), maps:get(Tp, Got, 0)])
         || Tp <- bmt_workload:tracepoints()],
        assert_eq(discarded, 0, D),
        assert_eq(total, bmt_workload:events_total(Exp), N),
        %% the workload covers every tracepoint
        assert_eq(all_18_present, lists:sort(bmt_workload:tracepoints()), lists:sort(maps:keys(Exp))),
        assert_eq(per_tracepoint, Exp, Got)
    end).

tiny_buffer_test(_Config) ->
    %% The smallest buffer the NIF accepts: 2 sub-buffers of 4096 bytes.
    Dir = bmt_test_lib:tmpdir("tiny-probe"),
    {error, {badopt, buffer_size}} = beamtrace:start(#{dir => Dir, buffer_size => 8191, subbuffers => 2}),
    {error, {badopt, subbuffers}} = beamtrace:start(#{dir => Dir, buffer_size => 8192, subbuffers => 1}),
    {error, {badopt, buffer_size}} = beamtrace:start(#{dir => Dir, buffer_size => 3 * 4096 - 1, subbuffers => 3}),
    %% '$consumer_wakeups' => false: the consumer drains only on its 10 ms
    %% tick (by default writers wake it per packet, and it keeps up even
    %% with this ring), so the bursts really overflow it.
    %% The workload's tracepoints only: with the user probes enabled too, a
    %% 4 KiB packet could not hold their largest event and start refuses it.
    Opts = #{buffer_size => 2 * 4096, subbuffers => 2, message_length => 0,
             '$consumer_wakeups' => false,
             events => ["org_erlang_dyntrace:process_*", "*:port_*", "*:function_*", "*:message_*", "*:gc_*"]},
    W = #{burst => ?BURST},
    one_scheduler(fun() ->
        PidCounts = pid_tracer_run(?TINY_ROUNDS, W),
        %% Reference: the same workload into a big buffer (nothing lost).
        R = start(#{message_length => 0}),
        ok = bmt_workload:run({tracer, beamtrace, R}, ?TINY_ROUNDS, W),
        {#{events := RefN, discarded := 0}, RefEv} = stop_check(R),
        RefCounts = bmt_test_lib:count_by_name(RefEv),
        S = start(Opts),
        ok = bmt_workload:run({tracer, beamtrace, S}, ?TINY_ROUNDS, W),
        {#{events := N, discarded := D, overwritten := O}, Ev} = stop_check(S),
        Exp = bmt_workload:events_total(PidCounts),
        io:format("# tiny buffer: pid tracer ~w events, big-buffer beamtrace ~w; "
                  "tiny beamtrace events=~w discarded=~w overwritten=~w~n",
                  [Exp, RefN, N, D, O]),
        %% Drops need the burst to outrun the consumer, which drains at most
        %% the 2 x 4 KiB ring per 10 ms tick (< 1 MB/s); each burst is
        %% 20000 events (~600 KB) in one go, so even a heavily loaded host
        %% overflows it.
        true = D > 0,
        assert_eq(babeltrace_count, N, length(Ev)),
        assert_eq(events_plus_discarded_vs_big_buffer, RefN, N + D),
        assert_eq(per_tracepoint_big_buffer_vs_pid_tracer, PidCounts, RefCounts),
        assert_eq(events_plus_discarded_vs_pid_tracer, Exp, N + D),
        %% message_length 0: no message text at all
        [] = [M || {_, #{message := M}} <- Ev, M =/= <<>>],
        ok
    end).

%% A session that ended (here its duration cap) while flags still feed it:
%% what it is offered from then on was never to be recorded, so it is
%% counted apart (after_stop) and is no loss: discarded stays 0 and the
%% trace reports no discarded events (babeltrace2 says none).
after_stop_test(_Config) ->
    %% 2 s: the flags go on well inside it, even on a loaded machine; the
    %% sender paced (a send a millisecond), so the trace stays small.
    S = start(#{duration => 2000, notify => self(),
                events => ["org_erlang_dyntrace:message_send"]}),
    Sender = spawn(fun Loop() -> self() ! tick, receive tick -> ok end, timer:sleep(1), Loop() end),
    1 = erlang:trace(Sender, true, [send, {tracer, beamtrace, S}]),
    receive {beamtrace_stopped, _, duration} -> ok end,
    %% Offered after the end, until the sender has sent some more.
    Mon = monitor(process, Sender),
    wait_offered_after(S, 200),
    exit(Sender, kill),
    receive {'DOWN', Mon, process, Sender, _} -> ok end,
    {#{events := N, discarded := D, after_stop := A, reason := duration}, Ev} = stop_check(S),
    io:format("# after the duration: events=~w discarded=~w after_stop=~w~n", [N, D, A]),
    true = N > 0,
    assert_eq(discarded, 0, D),
    true = A >= 200,
    assert_eq(babeltrace_count, N, length(Ev)).

%% Until info/1 of the stopped session counts at least Min after_stop.
wait_offered_after(S, Min) ->
    case beamtrace:info(S) of
        #{state := stopped, after_stop := A} when A >= Min -> ok;
        #{state := stopped} -> timer:sleep(5), wait_offered_after(S, Min)
    end.

%% Last: every trace the cases above wrote reads back the same later.
traces_reread_test(_Config) ->
    bmt_test_lib:reread_traces().
