%% Nothing lost, nothing leaked (issue 7), on real nodes: traces survive
%% halt/0, init:stop/0 and kill -9; a flight recorder is written by
%% snapshot/1 and at exit; traces are private and never follow a symlink;
%% the caps stop a session by itself and leave a readable trace within
%% them; a removed directory is an error; default directories never collide;
%% a message whose walk is exponential cannot stall the sender.
%%
%% Child VMs: tests that end a VM run a separate `erl` (child/2), which
%% prints its OS pid and its expected event count, then exits its own way.
-module(bmt_recorder_SUITE).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([halt_test/1, init_stop_test/1, kill9_test/1, overwrite_exit_test/1,
         snapshot_test/1, private_test/1, symlink_test/1, caps_test/1, rotation_test/1,
         dir_removed_test/1, default_dirs_test/1, size_only_shared_test/1,
         long_list_message_test/1, nul_in_strings_test/1, state_dump_test/1,
         clock_test/1, env_schedulers_test/1, dirty_streams_test/1, traces_reread_test/1]).

-import(bmt_test_lib, [assert_eq/3, tmpdir/1, babeltrace/1]).

%%% Common Test

%% Each case runs alone in CT's process with a time limit; the node is left
%% as the next case expects it (no flags, patterns or sessions).
suite() -> [{timetrap, {seconds, 90}}].

all() ->
    [halt_test, init_stop_test, kill9_test,
     overwrite_exit_test, snapshot_test, private_test,
     symlink_test, caps_test, rotation_test,
     dir_removed_test, default_dirs_test, size_only_shared_test,
     long_list_message_test, nul_in_strings_test, state_dump_test,
     clock_test, env_schedulers_test, dirty_streams_test, traces_reread_test].

%% The traces the cases write are listed for traces_reread_test.
init_per_suite(Config) -> bmt_test_lib:reread_init(Config).

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

%% ---- exits ----

%% A child node starts a session, makes N user probe events (one event each,
%% a known count), and ends with Ending. Returns {Dir, N, OsPid}.
child(Ending, Opts) ->
    Dir = tmpdir("child"),
    N = 5000,
    Erl = io_lib:format(
            "{ok, S} = beamtrace:start(maps:merge(#{dir => ~p, "
            "events => [\"org_erlang_dyntrace:user_trace_*\"]}, ~w)),"
            "[true = beamtrace:p(I, \"x\") || I <- lists:seq(1, ~w)],"
            "io:format(\"pid ~~s~~n\", [os:getpid()]),"
            "~s", [Dir, Opts, N, Ending]),
    {Status, Out, _} = bmt_test_lib:cmd("erl", ["-noshell", "-pa", bmt_test_lib:ebin(),
                                                "-eval", lists:flatten(Erl)]),
    {Status, Dir, N, Out}.

%% babeltrace2 and `beamtrace stats` both read every event of `Dir`.
readable_events(Dir) ->
    {0, Lines, Err} = babeltrace(Dir),
    assert_eq({babeltrace_stderr, Dir}, [],
              [L || L <- binary:split(Err, <<"\n">>, [global, trim_all]),
                    re:run(L, <<"^WARNING: Tracer (may have )?discarded">>) =:= nomatch]),
    Cli = bmt_test_lib:cli(),
    {0, Stats, _} = bmt_test_lib:cmd(Cli, ["stats", "--format", "json", Dir]),
    {match, [Total]} = re:run(iolist_to_binary(Stats), <<"\"events\": *([0-9]+)">>,
                              [{capture, all_but_first, binary}]),
    assert_eq({cli_vs_babeltrace2, Dir}, length(Lines), binary_to_integer(Total)),
    length(Lines).

halt_test(_Config) ->
    {0, Dir, N, _} = child("halt().", #{}),
    assert_eq(events_after_halt, N, readable_events(Dir)).

init_stop_test(_Config) ->
    {0, Dir, N, _} = child("init:stop().", #{}),
    assert_eq(events_after_init_stop, N, readable_events(Dir)).

%% kill -9 after an idle second and a half: the idle thread's partial packet
%% was flushed (flush_interval 1 s), so everything is there.
kill9_test(_Config) ->
    %% Killed once the idle flush has written all 5000 (info/1 counts the
    %% events written), not after a time: a loaded machine flushes late.
    {_, Dir, N, _} = child("(fun W() -> case beamtrace:info(S) of #{events := E} when E >= 5000 -> ok;"
                           " _ -> timer:sleep(50), W() end end)(),"
                           " os:cmd(\"kill -9 \" ++ os:getpid()).", #{}),
    assert_eq(events_after_kill9, N, readable_events(Dir)).

%% A flight recorder is written out at a normal exit.
overwrite_exit_test(_Config) ->
    {0, Dir, N, _} = child("halt().", #{mode => overwrite}),
    assert_eq(flight_recorder_at_exit, N, readable_events(Dir)).

snapshot_test(_Config) ->
    S = bmt_test_lib:start(#{mode => overwrite, buffer_size => 64 * 1024, subbuffers => 4,
                             events => ["org_erlang_dyntrace:user_trace_*"]}),
    [true = beamtrace:p(I, "x") || I <- lists:seq(1, 20000)],
    {ok, #{dir := Snap, events := E1, discarded := D1}} = beamtrace:snapshot(S),
    #{dir := Dir} = beamtrace:info(S),
    assert_eq(snapshot_dir, <<Dir/binary, "-snapshot-1">>, Snap),
    assert_eq(snapshot_events_readable, E1, readable_events(Snap)),
    true = E1 > 0 andalso E1 + D1 =:= 20000,
    %% the newest events: the last probe is in the snapshot
    {0, Lines, _} = babeltrace(Snap),
    {_, #{i1 := 20000}} = bmt_test_lib:parse_line(lists:last(Lines)),
    %% and it keeps recording; a second snapshot gets the next number
    [true = beamtrace:p(I, "y") || I <- lists:seq(1, 10)],
    {ok, #{dir := Snap2}} = beamtrace:snapshot(S),
    assert_eq(second_snapshot_dir, <<Dir/binary, "-snapshot-2">>, Snap2),
    {ok, #{events := E, discarded := D}} = beamtrace:stop(S),
    assert_eq(events_plus_discarded, 20010, E + D),
    %% a discard-mode session has nothing to snapshot
    S2 = bmt_test_lib:start(#{}),
    {error, not_flight_recorder} = beamtrace:snapshot(S2),
    {ok, _} = beamtrace:stop(S2),
    ok.

%% ---- privacy and symlinks ----

mode(Path) ->
    {ok, Info} = file:read_file_info(Path),
    element(8, Info) band 8#777.

private_test(_Config) ->
    S = bmt_test_lib:start(#{dir => tmpdir("private")}),
    #{dir := Dir} = beamtrace:info(S),
    [true = beamtrace:p(I) || I <- lists:seq(1, 10)],
    {ok, _} = beamtrace:stop(S),
    assert_eq(dir_mode, 8#700, mode(Dir)),
    [assert_eq({file_mode, F}, 8#600, mode(F)) || F <- filelib:wildcard(binary_to_list(Dir) ++ "/*")],
    S2 = bmt_test_lib:start(#{dir => tmpdir("widened"), file_mode => 8#640}),
    #{dir := Dir2} = beamtrace:info(S2),
    {ok, _} = beamtrace:stop(S2),
    assert_eq(widened_dir_mode, 8#750, mode(Dir2)),
    assert_eq(widened_metadata_mode, 8#640, mode(filename:join(Dir2, "metadata"))),
    {error, {badopt, file_mode}} = beamtrace:start(#{dir => tmpdir("x"), file_mode => 8#1777}),
    ok.

%% The trace's environment says how many schedulers the VM has, normal
%% and dirty: the command caps how many processes it shows running at once
%% by them (issue 16 item 1).
env_schedulers_test(_Config) ->
    S = bmt_test_lib:start(#{dir => tmpdir("env_schedulers")}),
    #{dir := Dir} = beamtrace:info(S),
    {ok, _} = beamtrace:stop(S),
    {ok, Env} = beamtrace_clock:read_env(Dir),
    [assert_eq(K, integer_to_binary(erlang:system_info(K)),
               maps:get(<<"beamtrace_", (atom_to_binary(K))/binary>>, Env, missing))
     || K <- [schedulers, dirty_cpu_schedulers, dirty_io_schedulers]],
    ok.

%% Which kind of scheduler wrote each stream (issue 16 item 1): the
%% environment gives each kind its range of streams, and a process that
%% runs a dirty CPU and a dirty I/O BIF is scheduled in and out on the
%% streams of those kinds, its other runs on a normal scheduler's; the
%% report then counts the dirty runs apart (1 at once on normal
%% schedulers, 1 on dirty ones). Before, streams had no kind, and the
%% command bounded every run by the sum of all schedulers.
dirty_streams_test(_Config) ->
    S = bmt_test_lib:start(#{dir => tmpdir("dirty_streams"),
                             events => ["org_erlang_dyntrace:process_scheduled"]}),
    #{dir := Dir} = beamtrace:info(S),
    Self = self(),
    P = spawn(fun() ->
                      receive go -> ok end,
                      [begin
                           erts_debug:dirty_cpu(wait, 2),
                           erts_debug:dirty_io(wait, 2)
                       end || _ <- lists:seq(1, 5)],
                      Self ! done
              end),
    1 = erlang:trace(P, true, [running, {tracer, beamtrace, []}]),
    P ! go,
    receive done -> ok after 10000 -> error(no_done) end,
    {ok, _} = beamtrace:stop(S),
    {ok, Env} = beamtrace_clock:read_env(Dir),
    [N, Cpu, Io] = [erlang:system_info(K)
                    || K <- [schedulers, dirty_cpu_schedulers, dirty_io_schedulers]],
    Want = #{<<"beamtrace_first_dirty_cpu_stream">> => N,
             <<"beamtrace_first_dirty_io_stream">> => N + Cpu,
             <<"beamtrace_first_other_stream">> => N + Cpu + Io},
    [assert_eq(K, integer_to_binary(V), maps:get(K, Env, missing))
     || {K, V} <- maps:to_list(Want)],
    {0, Lines, _} = babeltrace(Dir),
    Kind = fun(C) when C < N -> normal;
              (C) when C < N + Cpu -> dirty_cpu;
              (C) when C < N + Cpu + Io -> dirty_io;
              (_) -> other
           end,
    %% Each dirty BIF's run: in and out on a dirty stream, its out at
    %% erts_internal:dirty_bif_result/1.
    Runs = [{Kind(binary_to_integer(C)), T, E}
            || L <- Lines,
               {match, [C, E, T]} <- [re:run(L, <<"cpu_id = ([0-9]+) }.* entry = \"([^\"]*)\", "
                                                  "type = \"(in|out)\"">>,
                                             [{capture, all_but_first, binary}])]],
    Counts = lists:foldl(fun({K, _, _}, A) -> maps:update_with(K, fun(X) -> X + 1 end, 1, A) end,
                         #{}, Runs),
    assert_eq(dirty_cpu_events, 10, maps:get(dirty_cpu, Counts, 0)),
    assert_eq(dirty_io_events, 10, maps:get(dirty_io, Counts, 0)),
    assert_eq(other_events, 0, maps:get(other, Counts, 0)),
    assert_eq(dirty_outs_at_result, 10,
              length([x || {K, <<"out">>, <<"erts_internal:dirty_bif_result/1">>} <- Runs,
                           K =/= normal])),
    Html = tmpdir("dirty_streams") ++ ".html",
    {0, _, _} = bmt_test_lib:cmd(bmt_test_lib:cli(), ["report", Dir, "-o", Html]),
    {ok, Page} = file:read_file(Html),
    [assert_eq(Row, {match, [<<"1">>]},
               re:run(Page, <<Row/binary, "</th><td>([0-9]+)<">>, [{capture, all_but_first, binary}]))
     || Row <- [<<"most processes running at once">>, <<"most on dirty schedulers at once">>]],
    ok.

symlink_test(_Config) ->
    Target = tmpdir("symlink-target"),
    ok = file:make_dir(Target),
    Link = tmpdir("symlink-dir"),
    ok = file:make_symlink(Target, Link),
    LinkBin = list_to_binary(Link),
    {error, {eloop, LinkBin}} = beamtrace:start(#{dir => Link}),
    {ok, []} = file:list_dir(Target),
    %% a directory planted with a channel0_0 symlink is not empty: refused,
    %% and the file the symlink names is untouched
    Planted = tmpdir("planted"),
    ok = file:make_dir(Planted),
    Victim = tmpdir("victim"),
    ok = file:write_file(Victim, <<"precious">>),
    ok = file:make_symlink(Victim, filename:join(Planted, "channel0_0")),
    PlantedBin = list_to_binary(Planted),
    {error, {enotempty, PlantedBin}} = beamtrace:start(#{dir => Planted}),
    {ok, <<"precious">>} = file:read_file(Victim),
    %% errors name the path
    File = tmpdir("a-file"),
    ok = file:write_file(File, <<>>),
    FileBin = list_to_binary(File),
    {error, {enotdir, FileBin}} = beamtrace:start(#{dir => File}),
    [] = beamtrace:sessions(),
    ok.

%% ---- caps ----

%% Starts a session with Caps, makes events until it stops by itself, and
%% checks the reason, the notification and the trace.
cap(Caps, Reason) ->
    S = bmt_test_lib:start(Caps#{notify => self(),
                                  events => ["org_erlang_dyntrace:user_trace_*"],
                                  buffer_size => 64 * 1024, subbuffers => 4}),
    N = probe_until_stopped(S, 0),
    %% The notification names the session by the very handle start gave
    %% (waited for: the case's time limit ends a wait that would not end).
    receive {beamtrace_stopped, S, Reason} -> ok end,
    #{state := stopped, reason := Reason} = beamtrace:info(S),
    {ok, #{events := E, discarded := D, written_bytes := B, reason := Reason} = Stats} =
        beamtrace:stop(S),
    assert_eq({events_plus_discarded, Reason}, N, E + D),
    _ = bmt_test_lib:check_trace(Stats),
    {E, B}.

%% Probes until the session says it stopped; returns how many probes a sink
%% took (a probe nobody listens to returns false and is not an event: after
%% the session stopped, user probes have no listener).
probe_until_stopped(S, N) ->
    probe_until_stopped(S, N, 0).

%% Paced (a millisecond's pause every 100 probes, about 90,000 a second):
%% unpaced, a 100 ms duration recorded 150,000 events that check_trace then
%% had babeltrace2 read, seconds on a loaded machine.
probe_until_stopped(S, N, Taken) when N rem 100 =:= 0 ->
    case beamtrace:info(S) of
        #{state := stopped} -> Taken;
        _ when N >= 10000000 -> erlang:error(never_stopped);
        _ ->
            timer:sleep(1),
            probe_until_stopped(S, N + 1, Taken + probe(N))
    end;
probe_until_stopped(S, N, Taken) ->
    probe_until_stopped(S, N + 1, Taken + probe(N)).

probe(N) ->
    case beamtrace:p(N, "probe") of
        true -> 1;
        false -> 0
    end.

caps_test(_Config) ->
    {E1, _} = cap(#{max_events => 3000}, max_events),
    true = E1 =< 3000,
    {_, B2} = cap(#{max_bytes => 200 * 1024}, max_bytes),
    %% within the bound, plus at most one packet per stream (the seal)
    true = B2 =< 200 * 1024 + 84,
    {_, _} = cap(#{duration => 100}, duration),
    {_, _} = cap(#{max_rate => 1000}, max_rate),
    ok.

rotation_test(_Config) ->
    Dir = tmpdir("rotation"),
    %% 16 KiB packets: four to a file; the rings are big enough for nothing
    %% to be dropped, so the newest events are the last the workload made.
    S = bmt_test_lib:start(#{dir => Dir, tracefile_size => 64 * 1024, tracefile_count => 2,
                             buffer_size => 4 bsl 20, subbuffers => 256,
                             events => ["org_erlang_dyntrace:user_trace_*"]}),
    [true = beamtrace:p(I, "rotating") || I <- lists:seq(1, 30000)],
    {ok, #{events := E, discarded := D, overwritten := O}} = beamtrace:stop(S),
    Files = filelib:wildcard(Dir ++ "/channel0_*"),
    io:format("# rotation: ~w events kept, ~w discarded (~w in rotated-away files) in ~p~n",
              [E, D, O, [filename:basename(F) || F <- Files]]),
    assert_eq(events_plus_discarded, 30000, E + D),
    true = O > 0,
    %% at most tracefile_count files per stream, each within tracefile_size
    Streams = lists:usort([string:join(lists:droplast(string:split(filename:basename(F), "_", all)), "_")
                           || F <- Files]),
    true = length(Files) =< 2 * length(Streams),
    [true = filelib:file_size(F) =< 64 * 1024 || F <- Files],
    %% the newest events are kept and readable: the last line is the newest
    %% kept, the workload's last event unless the ring was full at the end
    %% (a loaded machine can starve the consumer: then D > 0)
    {0, Lines, _} = babeltrace(Dir),
    assert_eq(rotation_readable, E, length(Lines)),
    Is = [I || {_, #{i1 := I}} <- [bmt_test_lib:parse_line(L) || L <- Lines]],
    assert_eq(newest_last, lists:max(Is), lists:last(Is)),
    D =:= 0 andalso assert_eq(newest_kept, 30000, lists:last(Is)),
    {error, {badopt, tracefile_count}} =
        beamtrace:start(#{dir => tmpdir("x"), tracefile_count => 2}),
    ok.

dir_removed_test(_Config) ->
    Dir = tmpdir("removed"),
    S = bmt_test_lib:start(#{dir => Dir, notify => self()}),
    [true = beamtrace:p(I) || I <- lists:seq(1, 100)],
    {0, _, _} = bmt_test_lib:cmd("rm", ["-rf", Dir]),
    receive {beamtrace_stopped, S, dir_removed} -> ok end,
    {error, {dir_removed, #{reason := dir_removed}}} = beamtrace:stop(S),
    ok.

%% ---- default directories ----

default_dirs_test(_Config) ->
    {ok, Cwd} = file:get_cwd(),
    Here = tmpdir("defaults"),
    ok = filelib:ensure_dir(filename:join(Here, "x")),
    ok = file:set_cwd(Here),
    try
        Self = self(),
        [spawn(fun() -> Self ! {started, beamtrace:start(#{events => ["*:user_trace_s1"]})} end)
         || _ <- lists:seq(1, 8)],
        Results = [receive {started, R} -> R end || _ <- lists:seq(1, 8)],
        Sessions = [S || {ok, S} <- Results],
        assert_eq(all_started, 8, length(Sessions)),
        Dirs = [maps:get(dir, beamtrace:info(S)) || S <- Sessions],
        assert_eq(distinct_dirs, 8, length(lists:usort(Dirs))),
        [{ok, _} = beamtrace:stop(S) || S <- Sessions],
        ok
    after
        file:set_cwd(Cwd)
    end.

%% ---- bounded work per event ----

%% {T, T} nested 40 deep: 2^40 subterms to walk, 41 distinct in memory.
%% With size_only the walk stops at a budget and says so; the send returns
%% (an unbounded walk would never finish: the test runner's timeout).
size_only_shared_test(_Config) ->
    S = bmt_test_lib:start(#{message_length => size_only,
                             events => ["org_erlang_dyntrace:message_send"]}),
    Dead = spawn(fun() -> ok end),
    bmt_test_lib:wait_dead(Dead),
    Msg = lists:foldl(fun(_, T) -> {T, T} end, x, lists:seq(1, 40)),
    1 = erlang:trace(self(), true, [send, {tracer, beamtrace, S}]),
    Dead ! Msg,
    erlang:trace(self(), false, [send]),
    {_, [{message_send, #{message := Text}}]} = bmt_test_lib:stop_check(S),
    {match, _} = re:run(Text, <<"^<more than [0-9]+ words>$">>),
    ok.

%% A 10-million-element list of characters with the default 255 bytes: the
%% printed text is cut at 255 and the sender is not held up by the rest.
long_list_message_test(_Config) ->
    S = bmt_test_lib:start(#{events => ["org_erlang_dyntrace:message_send"]}),
    Dead = spawn(fun() -> ok end),
    bmt_test_lib:wait_dead(Dead),
    Msg = lists:duplicate(10000000, $a),
    1 = erlang:trace(self(), true, [send, {tracer, beamtrace, S}]),
    Dead ! Msg,
    erlang:trace(self(), false, [send]),
    {_, [{message_send, #{message := Text}}]} = bmt_test_lib:stop_check(S),
    assert_eq(message_bytes, 255, byte_size(Text)),
    <<"\"aaa", _/binary>> = Text,
    ok.

%% A string with a NUL byte is cut there (a CTF string ends at its NUL, as
%% the C strings OTP's probes passed did): the trace stays readable.
nul_in_strings_test(_Config) ->
    S = bmt_test_lib:start(#{events => ["org_erlang_dyntrace:user_trace_*"]}),
    true = beamtrace:p(1, <<"ab", 0, "cd">>, ["x", 0, "y"]),
    true = beamtrace:user_trace_s1(<<0, "hidden">>),
    true = beamtrace:p(2, "after"),
    {_, [{user_trace_i4s4, #{s1 := <<"ab">>, s2 := <<"x">>}},
         {user_trace_s1, #{message := <<>>}},
         {user_trace_i4s4, #{i1 := 2, s1 := <<"after">>}}]} = bmt_test_lib:stop_check(S),
    ok.

%% ---- the state dump ----

state_dump_test(_Config) ->
    Named = spawn(fun() -> receive stop -> ok end end),
    true = register(bmt_state_dump_probe, Named),
    S = bmt_test_lib:start(#{events => ["org_erlang_beamtrace:process_info"]}),
    %% The dump runs at low priority after the start returns, and a stop
    %% cuts it (names_missing): this test is of a dump left to finish.
    bmt_test_lib:wait_until(fun() -> beamtrace_statedump:dump_done(S) end),
    {#{names_missing := 0}, Events} = bmt_test_lib:stop_check(S),
    Named ! stop,
    Pids = [maps:get(pid, F) || {process_info, F} <- Events],
    %% every process alive at start, once
    assert_eq(one_event_per_process, length(Pids), length(lists:usort(Pids))),
    true = length(Pids) >= 20,
    NamedText = list_to_binary(pid_to_list(Named)),
    [#{name := <<"bmt_state_dump_probe">>}] =
        [F || {process_info, #{pid := P} = F} <- Events, P =:= NamedText],
    %% proc_lib processes are named by the function they run
    [#{entry := <<"application_controller:start/1">>}] =
        [F || {process_info, #{name := <<"application_controller">>} = F} <- Events],
    [#{name := <<"undefined">>} | _] =
        [F || {process_info, #{name := <<"undefined">>} = F} <- Events],
    ok.

%% ---- the clock ----

%% sinks() says what stamps the events (issue 19): the TSC where the CPU
%% says it is invariant (constant_tsc and nonstop_tsc) and the kernel has
%% not found it unstable (it is among the available clocksources, though
%% kvm-clock may be the current one), or keeps kvm-clock on a host that
%% marks the TSC stable (a page of the kernel's, not readable from here:
%% either answer, each with its reason), unless the TSC of some CPU
%% disagrees with the others; else clock_gettime, with the reason.
clock_test(_Config) ->
    #{clock := Clock} = beamtrace:sinks(),
    Flags = case file:read_file("/proc/cpuinfo") of
                {ok, Info} -> [F || L <- binary:split(Info, <<"\n">>, [global]),
                                    <<"flags", _/binary>> <- [L],
                                    F <- binary:split(L, [<<" ">>, <<"\t">>], [global])];
                _ -> []
            end,
    Offered = case file:read_file("/sys/devices/system/clocksource/clocksource0/"
                                  "available_clocksource") of
                  {ok, Avail} -> lists:member(<<"tsc">>, binary:split(string:trim(Avail), <<" ">>,
                                                                      [global]));
                  _ -> false
              end,
    KvmClock = file:read_file("/sys/devices/system/clocksource/clocksource0/"
                              "current_clocksource") =:= {ok, <<"kvm-clock\n">>},
    Invariant = erlang:system_info(wordsize) =:= 8 andalso
        lists:member(<<"constant_tsc">>, Flags) andalso lists:member(<<"nonstop_tsc">>, Flags)
        andalso os:getenv("BEAMTRACE_CLOCK") =/= "monotonic",
    Usable = Invariant andalso (Offered orelse KvmClock),
    case {Usable, Clock} of
        {true, tsc} -> ok;
        %% Usable on paper, but one CPU's TSC is off the others'.
        {true, {clock_gettime, <<"the TSC of CPU ", _/binary>>}} -> ok;
        %% kvm-clock, and its host does not mark the TSC stable.
        {true, {clock_gettime, Why}} when not Offered ->
            true = binary:match(Why, <<"no kvm-clock host marks it stable">>) =/= nomatch;
        {false, {clock_gettime, Why}} when is_binary(Why), byte_size(Why) > 0 -> ok;
        _ -> erlang:error({clock, Clock, usable, Usable, offered, Offered, kvm_clock, KvmClock})
    end,
    %% The answer stays the same (calibrated once).
    #{clock := Clock} = beamtrace:sinks(),
    ok.

%% Last: every trace the cases above wrote reads back the same later.
traces_reread_test(_Config) ->
    bmt_test_lib:reread_traces().
