%% Issue 16's figures for setting and clearing trace flags, and for the
%% end of a `duration' (bench/flags.sh):
%%  - flags: with N busy processes (a token ring keeping every scheduler
%%    busy), how long beamtrace:trace_async/2 takes to return (flags on)
%%    and stop_trace/1 to return (flags off, session stopped), called from
%%    a process at high priority as `beamtrace record''s agent is (at
%%    normal priority the caller's own turns in the run queue would be
%%    counted: seconds each on such a node), and how late a
%%    `timer:sleep(10)' probe wakes meanwhile (the node's responsiveness);
%%  - tail: trace/2 with a duration on such a node: the result's
%%    discarded and after_stop counts and elapsed time.
%% The load also runs on a target node for `beamtrace record' (load/1).
%% Prints figures; asserts nothing (STYLE.md).
-module(bmt_bench_flags).
-export([main/1, load/1, load/2, churn/1, probe/0, ring/2, work/1]).

main(["flags", Dir | Ns]) ->
    [flags(list_to_integer(N), Dir) || N <- Ns],
    halt();
main(["tail", Dir, N, Ms]) ->
    tail(list_to_integer(N), list_to_integer(Ms), Dir),
    halt();
main(_) ->
    io:format("usage: flags DIR N... | tail DIR N DURATION_MS~n"),
    halt(2).

%%% The load

%% N processes passing N div 20 tokens round a ring: every scheduler busy,
%% most processes waiting in receive, as on a busy broker. Returns the
%% processes.
load(N) ->
    load(N, max(2, N div 20)).

load(N, Tokens) ->
    Self = self(),
    Pids = [spawn(fun() -> receive {next, Next} -> ring(Next, 0) end end)
            || _ <- lists:seq(1, N)],
    [P ! {next, Next} || {P, Next} <- lists:zip(Pids, tl(Pids) ++ [hd(Pids)])],
    [P ! token || P <- lists:sublist(Pids, Tokens)],
    Self ! loaded,
    receive loaded -> ok end,
    Pids.

ring(Next, K) ->
    receive
        token ->
            _ = ?MODULE:work(200),
            Next ! token,
            ring(Next, K + 1);
        stop ->
            ok
    end.

work(0) -> ok;
work(N) -> _ = erlang:phash2(N), work(N - 1).

%% Spawns a short-lived process every Ms ms, linked and monitored: a few
%% thousand `procs' events a second, a rate no buffer fills at.
churn(Ms) ->
    Pid = spawn(fun() -> churn_loop(Ms) end),
    register(bmt_churn, Pid),
    Pid.

churn_loop(Ms) ->
    _ = spawn_link(fun() -> receive after 1 -> ok end end),
    receive stop -> ok after Ms -> churn_loop(Ms) end.

%% A probe sleeping 10 ms in a loop: the worst overshoot in us since the
%% last `{get, From}'.
probe() ->
    spawn(fun() -> probe_loop(0) end).

probe_loop(Max) ->
    T0 = erlang:monotonic_time(microsecond),
    timer:sleep(10),
    Over = erlang:monotonic_time(microsecond) - T0 - 10000,
    receive
        {get, From} -> From ! {overshoot, max(Max, Over)}, probe_loop(0)
    after 0 ->
            probe_loop(max(Max, Over))
    end.

overshoot(Probe) ->
    Probe ! {get, self()},
    receive {overshoot, Us} -> Us end.

%%% flags

flags(N, Dir0) ->
    Dir = filename:absname(Dir0),
    process_flag(priority, high),
    %% Loaded beforehand, as `beamtrace record' loads them: a module's
    %% first load is a request to the code server, which waits its turn
    %% in the run queue like any normal process.
    [{module, M} = code:ensure_loaded(M) || M <- [beamtrace, beamtrace_sessions, beamtrace_trace,
                                                   beamtrace_trace_spec,
                                                   beamtrace_trace_options, beamtrace_tracing,
                                                   beamtrace_statedump, beamtrace_sources,
                                                   beamtrace_sources_io, beamtrace_sources_monitor,
                                                   beamtrace_sources_samples]],
    Pids = load(N),
    churn(1),
    Probe = probe(),
    timer:sleep(1000),
    _ = overshoot(Probe),
    Before = overshoot_over(Probe, 1000),
    T0 = erlang:monotonic_time(millisecond),
    {ok, T} = beamtrace:trace_async([procs], #{procs => all, duration => infinity,
                                               dir => filename:join(Dir, "flags-" ++
                                                                        integer_to_list(N))}),
    T1 = erlang:monotonic_time(millisecond),
    SetOver = overshoot(Probe),
    timer:sleep(2000),
    _ = overshoot(Probe),
    T2 = erlang:monotonic_time(millisecond),
    {ok, R} = beamtrace:stop_trace(T),
    T3 = erlang:monotonic_time(millisecond),
    StopOver = overshoot(Probe),
    Info = erlang:process_info(self(), message_queue_len),
    io:format("flags: ~b busy processes (~s): set ~b ms (probe overshoot ~.1f ms), "
              "clear+stop ~b ms (probe overshoot ~.1f ms); idle overshoot ~.1f ms; "
              "~b events, ~b discarded, after_stop ~p, elapsed ~p ms ~p~n",
              [N, uptime(), T1 - T0, SetOver / 1000, T3 - T2, StopOver / 1000, Before / 1000,
               maps:get(events, R), maps:get(discarded, R), maps:get(after_stop, R, none),
               maps:get(elapsed_ms, R), Info]),
    whereis(bmt_churn) ! stop,
    unregister(bmt_churn),
    [exit(P, kill) || P <- [Probe | Pids]],
    process_flag(priority, normal),
    timer:sleep(500).

overshoot_over(Probe, Ms) ->
    _ = overshoot(Probe),
    timer:sleep(Ms),
    overshoot(Probe).

%%% tail

tail(N, Ms, Dir) ->
    Pids = load(N),
    churn(1),
    timer:sleep(1000),
    T0 = erlang:monotonic_time(millisecond),
    {ok, R} = beamtrace:trace([procs], #{procs => all, duration => Ms,
                                        dir => filename:join(Dir, "tail-" ++ integer_to_list(N))}),
    T1 = erlang:monotonic_time(millisecond),
    io:format("tail: ~b busy processes (~s), duration ~b ms: call took ~b ms; ~b events, "
              "~b discarded, after_stop ~p, elapsed ~p ms, reason ~p~n",
              [N, uptime(), Ms, T1 - T0, maps:get(events, R), maps:get(discarded, R),
               maps:get(after_stop, R, none), maps:get(elapsed_ms, R), maps:get(reason, R)]),
    whereis(bmt_churn) ! stop,
    [exit(P, kill) || P <- Pids],
    ok.

uptime() ->
    string:trim(os:cmd("uptime | sed 's/.*load/load/'")).
