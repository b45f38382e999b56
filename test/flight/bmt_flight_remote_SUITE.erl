%% The flight recorder driven from outside, against target nodes that have
%% nothing of beamtrace on their code path (bmt_kv alone): `record --flight
%% ... --detach' leaves a flight agent running after the command is gone,
%% a trigger on the node writes a capture, `flights' lists it, `fetch'
%% copies it here (babeltrace2 reads it), `stop' copies and removes
%% everything; after a restart of the node nothing of beamtrace runs or is
%% loaded, and `flights', `fetch' and `stop' still find the captures in
%% the private directory.
%%
%% The controller (beamtrace_record, what `beamtrace record' runs) is
%% driven here with the options term the command writes on its stdin.
-module(bmt_flight_remote_SUITE).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([detached_flight_test/1, restart_keeps_captures_test/1, riak_like_test/1,
         commands_test/1, command_errors_test/1]).
%% riak_like_test's own time limit.
-export([riak_like_test/0]).

-import(bmt_test_lib, [tmpdir/1, assert_eq/3, fail/2]).

%%% Common Test

%% The Riak-like case runs BMT_RIAK_SECONDS (default 40; the full run is
%% 600) plus the targets' start and stop: its own time limit follows.
suite() -> [{timetrap, {seconds, 240}}].

all() ->
    [commands_test,
     command_errors_test,
     detached_flight_test,
     restart_keeps_captures_test,
     riak_like_test].

riak_like_test() ->
    [{timetrap, {seconds, riak_seconds() + 240}}].

%% This node drives: distributed, the targets' code path (the workload
%% alone) ready.
init_per_suite(Config) ->
    ok = bmt_test_lib:ensure_distributed("bmt_fl_"),
    _ = bmt_test_lib:target_beams(Config, [bmt_kv, bmt_beamtrace_left]),
    Config.

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

riak_seconds() ->
    list_to_integer(os:getenv("BMT_RIAK_SECONDS", "40")).

%%% Target nodes

%% A fresh name: private directories are named by node, and a run that
%% failed may have left some of its own.
name(Prefix) ->
    list_to_atom(bmt_record_cmd:rand_name(atom_to_list(Prefix) ++ "_")).

start_target(Name) ->
    start_target(Name, #{clients => 2}).

start_target(Name, KvOpts) ->
    {ok, Peer, Node} = peer:start(#{name => Name,
                                    args => ["-setcookie", atom_to_list(erlang:get_cookie()),
                                             "-pa", os:getenv("BMT_TARGET_BEAMS")]}),
    _ = erpc:call(Node, bmt_kv, start, [KvOpts]),
    {Peer, Node}.

stop_target(Peer) ->
    catch peer:stop(Peer).

left(Node) ->
    erpc:call(Node, bmt_beamtrace_left, check, []).

%%% The controller

%% Runs beamtrace_record:main/0 as the command does: {Status, Lines}.
controller(Node, Opts) ->
    Root = bmt_test_lib:root(),
    Erl = os:find_executable("erl"),
    Cookie = integer_to_list(rand:uniform(1 bsl 60), 36),
    Port = open_port({spawn_executable, Erl},
                     [{args, ["-noshell", "+Bi", "-setcookie", Cookie, "-pa",
                              filename:join(Root, "ebin"), "-s", "beamtrace_record", "main"]},
                      binary, exit_status, use_stdio, {line, 4096}, stderr_to_stdout]),
    Term = maps:merge(#{node => atom_to_binary(Node), calls => [], events => [], procs => all,
                        duration => infinity, remote_dir => false, keep => false,
                        return_to => false, tty => false,
                        nif => list_to_binary(filename:join(Root, "priv/beamtrace_nif.so")),
                        cookie_from => <<"the test">>}, Opts),
    port_command(Port, [atom_to_list(erlang:get_cookie()), "\n",
                        io_lib:format("~0p.~n", [Term])]),
    collect(Port, []).

collect(Port, Acc) ->
    receive
        {Port, {data, {_, L}}} ->
            io:format("#   ~s~n", [L]),
            collect(Port, [L | Acc]);
        {Port, {exit_status, S}} -> {S, lists:reverse(Acc)}
    after 180000 ->
        catch port_close(Port),
        {timeout, lists:reverse(Acc)}
    end.

has_line(Lines, Prefix, Text) ->
    lists:any(fun(L) -> lists:prefix(Prefix, binary_to_list(L)) andalso
                            binary:match(L, Text) =/= nomatch end, Lines).

%% One capture at most: the queue stays past the bound until the test
%% stops it, and on a loaded machine a later sample (once the first
%% capture sealed) would make a second one before it does.
flight_opts(Trigger) ->
    #{calls => [<<"bmt_kv:get/2 -> return">>],
      flight => #{window => 2000, 'after' => 500, triggers => [Trigger], until => 600000,
                  max_captures => 1}}.

%% Waits (bounded) until the node's flight agent has N sealed captures.
wait_agent_captures(Node, N) ->
    wait_agent_captures(Node, N, 600).

wait_agent_captures(Node, N, 0) ->
    fail(no_capture, {N, erpc:call(Node, beamtrace_flight_agent, list, [])});
wait_agent_captures(Node, N, Tries) ->
    case erpc:call(Node, beamtrace_flight_agent, list, []) of
        [#{captures := C}] when length(C) >= N -> C;
        _ -> timer:sleep(50), wait_agent_captures(Node, N, Tries - 1)
    end.

capture_dirs(Out) ->
    lists:sort([filename:join(Out, D) || D <- element(2, file:list_dir(Out)),
                                         lists:prefix("capture-", D)]).

private_dirs(Node) ->
    Base = case erpc:call(Node, os, getenv, ["TMPDIR"]) of
               D when is_list(D), D =/= "" -> D;
               _ -> "/tmp"
           end,
    Prefix = "beamtrace-flight-" ++ atom_to_list(Node) ++ "-",
    {ok, Names} = erpc:call(Node, file, list_dir, [Base]),
    [filename:join(Base, N) || N <- Names, lists:prefix(Prefix, N)].

%%% The command

%% Runs `beamtrace Args...`: {Status, StdoutLines, StderrLines}, each line
%% echoed as a TAP comment.
bt(Args) ->
    {Status, Out, Err} = bmt_test_lib:cmd(bmt_test_lib:cli(), Args),
    ErrLines = binary:split(Err, <<"\n">>, [global, trim_all]),
    io:format("# beamtrace ~ts: exit ~p~n", [lists:join(" ", Args), Status]),
    [io:format("#   ~ts~n", [L]) || L <- Out ++ ErrLines],
    {Status, Out, ErrLines}.

node_args(Node) ->
    ["--node", atom_to_list(Node), "--cookie-file", bmt_record_cmd:cookie_file()].

%% The error lines among a command's stderr (its progress notes aside).
errors(Err) ->
    [L || <<"beamtrace: ", _/binary>> = L <- Err].

has(Lines, Text) ->
    lists:any(fun(L) -> binary:match(L, Text) =/= nomatch end, Lines).

%%% Tests

%% The whole round from a shell, as docs/flight-recorder.md shows it:
%% `record --flight 2s --trigger 'bmt_kv:get/2>10ms' --detach' exits 0
%% leaving the recording; a slow get writes a capture; `flights' lists it
%% with what fired it; `fetch -o DIR' copies it; `captures DIR' lists
%% each with its trigger; `calls --breakdown' of one marks the triggering
%% call among the slowest; `report' says it and draws it on the timeline
%% (the recording has scheduling events); `stop' copies the rest and
%% leaves nothing of beamtrace on the node.
commands_test(_Config) ->
    %% The default one slow get in 1,000: more often, the slow gets keep
    %% extending the first capture (triggers absorbed) and a second one
    %% comes late or never.
    {Peer, Node} = start_target(name(bmt_flight_cmd)),
    try
        {0, Rec, _} = bt(["record" | node_args(Node)] ++
                             ["--calls", "bmt_kv:get/2 -> return", "--events", "running",
                              "--flight", "2s",
                              "--trigger", "bmt_kv:get/2>10ms",
                              "--trigger", "bmt_kv:'Never called'/0>10ms", "--after", "300ms",
                              "--max-captures", "60/h", "--until", "1h", "--detach"]),
        assert_eq(left_running_said, true, has(Rec, <<"flight recorder left running on">>)),
        %% Each trigger as given, its function as OTP prints it.
        assert_eq(left_running_names_the_triggers, true,
                  has(Rec, <<"triggers bmt_kv:get/2>10ms, bmt_kv:'Never called'/0>10ms;">>)),
        %% Wait for two captures (up to 2 min: a loaded machine makes
        %% fewer gets).
        [_, _ | _] = wait_agent_captures(Node, 2, 2400),
        {0, List, _} = bt(["flights" | node_args(Node)]),
        assert_eq(flights_lists_the_recording, true,
                  has(List, <<" running ">>) andalso
                  has(List, <<"  triggers: bmt_kv:get/2>10ms, bmt_kv:'Never called'/0>10ms">>)),
        assert_eq(flights_lists_a_capture, true,
                  lists:any(fun(L) -> re:run(L, <<"^    capture-1-[0-9TZ]+  call [0-9.]+ ms "
                                                  "bmt_kv:get/2 <[0-9.]+>$">>) =/= nomatch
                            end, List)),
        Out = tmpdir("fetched"),
        {0, Fetched, _} = bt(["fetch" | node_args(Node)] ++ ["-o", Out]),
        Caps = capture_dirs(Out),
        assert_eq(fetched_said, true, has(Fetched, <<"captures copied from">>)),
        assert_eq(fetched, true, length(Caps) >= 2),
        {0, Listed, []} = bt(["captures", Out]),
        Rows = [L || L <- Listed, re:run(L, <<"^[0-9]+ +[0-9-]+ [0-9:.]+ UTC call +[0-9.]+ ms > "
                                              "10.000 ms +<[0-9.]+> +bmt_kv:get/2 ">>) =/= nomatch],
        assert_eq(captures_lists_each, length(Caps), length(Rows)),
        [C1 | _] = Caps,
        {0, Calls, _} = bt(["calls", "--breakdown", C1]),
        assert_eq(calls_says_the_capture, true,
                  re:run(hd(Calls), <<"^capture 1, fired .* UTC by call bmt_kv:get/2 in <">>)
                  =/= nomatch),
        assert_eq(calls_marks_the_trigger, true, has(Calls, <<"<- the capture's trigger">>)),
        Html = filename:join(Out, "report.html"),
        {0, _, _} = bt(["report", "-o", Html, C1]),
        {ok, Page} = file:read_file(Html),
        assert_eq(report_says_the_trigger, true,
                  binary:match(Page, <<"<p class=\"trigger\">Flight recorder capture 1">>)
                  =/= nomatch),
        assert_eq(report_marks_it_on_the_timeline, true,
                  re:run(Page, <<"<g class=\"trigger\"><title>trigger: capture 1, fired .*"
                                 "</title><line x1=\"[0-9.]+\"">>) =/= nomatch),
        {0, Stop, _} = bt(["stop" | node_args(Node)] ++ ["-o", Out]),
        assert_eq(stop_said, true, has(Stop, <<"stopped 1 flight recording">>)),
        assert_eq(nothing_left, [], left(Node)),
        assert_eq(no_agent, undefined, erpc:call(Node, erlang, whereis, [beamtrace_flight_agent])),
        assert_eq(no_private_dir, [], private_dirs(Node)),
        %% Nothing runs: each says so, exit 0.
        {0, None, _} = bt(["flights" | node_args(Node)]),
        assert_eq(none_listed, true, has(None, <<"0 flight recordings">>))
    after
        stop_target(Peer)
    end.

%% What users get wrong, one line each and a non-zero exit: a trigger the
%% node's VM cannot watch (long_message_queue: checked on the node as a
%% feature, not a release), a call trigger on no function or in a missing
%% module, a second detached recording, a node that does
%% not exist; and a flight without a trigger refused before connecting.
command_errors_test(_Config) ->
    {Peer, Node} = start_target(name(bmt_flight_err)),
    try
        Flight = ["--calls", "bmt_kv:get/2", "--flight", "2s", "--until", "1h", "--detach"],
        %% The target runs this node's VM.
        case bmt_flight_lib:vm_has_long_message_queue() of
            false ->
                {1, _, Err} = bt(["record" | node_args(Node)] ++ Flight ++
                                     ["--trigger", "long_message_queue=10/100"]),
                [Line] = errors(Err),
                assert_eq(says_what_and_how, true,
                          re:run(Line, <<"^beamtrace: record: .*--trigger long_message_queue=D/E "
                                         "needs .* use --trigger message_queue=N">>) =/= nomatch),
                assert_eq(nothing_left_after_refusal, [], left(Node));
            true ->
                {0, _, _} = bt(["record" | node_args(Node)] ++ Flight ++
                                   ["--trigger", "long_message_queue=10/100"]),
                {0, _, _} = bt(["stop" | node_args(Node)] ++ ["-o", tmpdir("stopped")])
        end,
        %% A call trigger on no function, or in a module the node lacks:
        %% the trigger named, as given (OTP's text).
        [begin
             {1, _, ErrT} = bt(["record" | node_args(Node)] ++ Flight ++ ["--trigger", Trigger]),
             [TLine] = errors(ErrT),
             assert_eq({says_which_trigger, Trigger}, true,
                       re:run(TLine, <<"^beamtrace: record: cannot start the flight recording on .*: ",
                                       Says/binary>>) =/= nomatch),
             assert_eq({nothing_left_after, Trigger}, [], left(Node))
         end || {Trigger, Says} <- [{"bmt_kv:'No such'/9>10ms",
                                     <<"--trigger on bmt_kv:'No such'/9 matches no function there: "
                                       "check the function name and arity$">>},
                                    {"bmt_no_such_mod:f/1>10ms",
                                     <<"a --trigger's module bmt_no_such_mod is not loaded and "
                                       "cannot be loaded there .*: check the module name in "
                                       "--trigger$">>}]],
        {0, _, _} = bt(["record" | node_args(Node)] ++ Flight ++ ["--trigger", "probe"]),
        {1, _, Err2} = bt(["record" | node_args(Node)] ++ Flight ++ ["--trigger", "probe"]),
        [Second] = errors(Err2),
        assert_eq(second_refused, true,
                  re:run(Second, <<"^beamtrace: record: a flight recording already runs on .*: "
                                   "see it with beamtrace flights --node .* stop it with "
                                   "beamtrace stop --node ">>) =/= nomatch),
        {0, _, _} = bt(["stop" | node_args(Node)] ++ ["-o", tmpdir("stopped")]),
        assert_eq(nothing_left, [], left(Node)),
        {2, [], [NoTrigger]} = bt(["record" | node_args(Node)] ++
                                      ["--calls", "bmt_kv:get/2", "--flight", "2s"]),
        assert_eq(no_trigger_refused, true,
                  binary:match(NoTrigger, <<"--flight needs at least one --trigger">>) =/= nomatch),
        {1, [], Err3} = bt(["flights", "--node", "bmt_no_such_node",
                            "--cookie-file", bmt_record_cmd:cookie_file()]),
        [NoNode] = errors(Err3),
        assert_eq(no_node_one_line, true,
                  binary:match(NoNode, <<"beamtrace: flights: ">>) =/= nomatch)
    after
        stop_target(Peer)
    end.

%% record --flight --detach, then a trigger on the node, flights, fetch,
%% stop: the command exits leaving the agent; the capture is listed,
%% copied and readable; stop leaves nothing of beamtrace on the node.
detached_flight_test(_Config) ->
    {Peer, Node} = start_target(name(bmt_flight_target)),
    try
        {0, Rec} = controller(Node, maps:merge(flight_opts(<<"message_queue=5000">>),
                                               #{detach => true})),
        assert_eq(left_running_said, true, has_line(Rec, "result", <<"left running">>)),
        Agent = erpc:call(Node, erlang, whereis, [beamtrace_flight_agent]),
        assert_eq(agent_runs, true, is_pid(Agent)),
        assert_eq(record_lock_gone, undefined, erpc:call(Node, erlang, whereis, [beamtrace_record])),
        timer:sleep(2500),
        Q = erpc:call(Node, bmt_kv, queue_burst, [6000]),
        [_] = wait_agent_captures(Node, 1),
        Q ! stop,
        {0, List} = controller(Node, #{action => flights}),
        assert_eq(listed, true, has_line(List, "line", <<"capture-1-">>)
                                andalso has_line(List, "line", <<"message_queue">>)),
        Out = tmpdir("fetched"),
        {0, _} = controller(Node, #{action => fetch, out => list_to_binary(Out)}),
        [C] = capture_dirs(Out),
        {Status, Lines, _} = bmt_test_lib:cmd("babeltrace2", [C]),
        assert_eq(babeltrace, 0, Status),
        assert_eq(gets_in_capture, true,
                  lists:any(fun(L) -> binary:match(L, <<"bmt_kv:get/2">>) =/= nomatch end, Lines)),
        %% Again: nothing new to copy.
        {0, Again} = controller(Node, #{action => fetch, out => list_to_binary(Out)}),
        assert_eq(idempotent, true, has_line(Again, "result", <<"0 captures copied">>)),
        {0, Stop} = controller(Node, #{action => stop, out => list_to_binary(Out)}),
        assert_eq(stop_said, true, has_line(Stop, "note", <<"no beamtrace flag, pattern or session left">>)),
        assert_eq(nothing_left, [], left(Node)),
        assert_eq(no_agent, undefined, erpc:call(Node, erlang, whereis, [beamtrace_flight_agent])),
        assert_eq(no_private_dir, [], private_dirs(Node))
    after
        stop_target(Peer)
    end.

%% A node restarted under a detached flight: nothing of beamtrace runs or
%% is loaded after the restart; the captures written before it are still
%% listed, fetched and removed from the private directory.
restart_keeps_captures_test(_Config) ->
    Name = name(bmt_flight_restart),
    {Peer, Node} = start_target(Name),
    Dirs = try
               {0, _} = controller(Node, maps:merge(flight_opts(<<"message_queue=5000">>),
                                                    #{detach => true})),
               timer:sleep(2500),
               Q = erpc:call(Node, bmt_kv, queue_burst, [6000]),
               [_] = wait_agent_captures(Node, 1),
               Q ! stop,
               private_dirs(Node)
           after
               stop_target(Peer)
           end,
    {Peer2, Node} = start_target(Name),
    try
        assert_eq(nothing_after_restart, [], left(Node)),
        {0, List} = controller(Node, #{action => flights}),
        assert_eq(listed_after_restart, true, has_line(List, "line", <<"capture-1-">>)
                                              andalso has_line(List, "line", <<"interrupted">>)),
        Out = tmpdir("fetched"),
        {0, _} = controller(Node, #{action => stop, out => list_to_binary(Out)}),
        assert_eq(one_capture_fetched, 1, length(capture_dirs(Out))),
        assert_eq(nothing_left, [], left(Node)),
        [assert_eq({removed, D}, {error, enoent}, erpc:call(Node, file, read_file_info, [D]))
         || D <- Dirs]
    after
        stop_target(Peer2)
    end.

%% The Riak-like run (issue 18's "done when", BMT_RIAK_SECONDS long:
%% default 40; the full run is BMT_RIAK_SECONDS=600
%% make test-flight T=bmt_flight_remote_SUITE:riak_like_test): a store whose clients make about 100
%% gets a second, 1 in 1000 of them 15 ms slower, recorded from outside by
%% a detached `--flight 10s --trigger bmt_kv:get/2>10ms'. Every get the
%% node's own clock measured slower than 10 ms has a capture holding its
%% call and return and at least the 5 s before it; `flights' lists every
%% capture `fetch' copies; the node's memory stays flat once the rings are
%% in use; after `stop', nothing of beamtrace is left on the node.
riak_like_test(_Config) ->
    Seconds = riak_seconds(),
    {Peer, Node} = start_target(name(bmt_riak), #{clients => 4, pace_ms => 40}),
    try
        Rss0 = rss(Node),
        {0, _} = controller(Node, #{calls => [<<"bmt_kv:get/2 -> return">>], detach => true,
                                    flight => #{window => 10000, 'after' => 1000,
                                                triggers => [<<"bmt_kv:get/2>10ms">>],
                                                until => 3600000, max_captures => 360}}),
        Offset = bmt_flight_lib:clock_offset(Node),
        Start = erpc:call(Node, erlang, monotonic_time, [nanosecond]),
        Rss = [begin timer:sleep(10000), rss(Node) end || _ <- lists:seq(1, Seconds div 10)],
        %% Then until the gets from 6 s in held one slow get per 20 s run
        %% (up to 2 min more: a loaded machine makes fewer gets).
        bmt_flight_lib:wait_slow(Node, Start + 6000000000, Seconds div 20, 1200),
        Stop = erpc:call(Node, erlang, monotonic_time, [nanosecond]),
        %% From 6 s in: the rings hold the 5 s before.
        Slow = [S || {_, T0, T1} = S <- erpc:call(Node, bmt_kv, slow_calls, []),
                     T0 > Start + 6000000000, T1 < Stop],
        {0, List} = controller(Node, #{action => flights}),
        Listed = [L || L <- List, lists:prefix("line     capture-", binary_to_list(L))],
        Out = tmpdir("riak"),
        {0, _} = controller(Node, #{action => stop, out => list_to_binary(Out)}),
        Caps = capture_dirs(Out),
        io:format("# ~b s: ~b slow gets, ~b captures (~b listed before the stop); RSS ~b KiB "
                  "before, then ~w KiB~n",
                  [Seconds, length(Slow), length(Caps), length(Listed), Rss0 div 1024,
                   [R div 1024 || R <- Rss]]),
        assert_eq(slow_gets_made, true, length(Slow) >= Seconds div 20),
        assert_eq(listed_all_but_the_last, true, length(Caps) - length(Listed) =< 1),
        %% Pids as the node prints them (the trace's text).
        bmt_flight_lib:check_slow_calls(
          Caps, [{list_to_binary(erpc:call(Node, erlang, pid_to_list, [P])), T0, T1}
                 || {P, T0, T1} <- Slow], Offset, 5000),
        %% Flat: after the first 20 s (rings in use, the window full), the
        %% node's RSS moves by less than one ring's worth (4 MiB).
        Steady = lists:nthtail(min(2, length(Rss) - 1), Rss),
        assert_eq({memory_flat, [R div 1024 || R <- Steady]}, true,
                  lists:max(Steady) - lists:min(Steady) < 4 * 1024 * 1024),
        assert_eq(nothing_left, [], left(Node)),
        assert_eq(no_private_dir, [], private_dirs(Node))
    after
        stop_target(Peer)
    end.

%% The node's resident set, bytes (/proc of its OS process).
rss(Node) ->
    Pid = erpc:call(Node, os, getpid, []),
    {ok, Status} = file:read_file("/proc/" ++ Pid ++ "/status"),
    {match, [Kb]} = re:run(Status, <<"VmRSS:\\s+([0-9]+) kB">>, [{capture, all_but_first, binary}]),
    binary_to_integer(Kb) * 1024.
