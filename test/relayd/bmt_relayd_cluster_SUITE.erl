%% A cluster through lttng-relayd: three real nodes on loopback, none with
%% beamtrace on its code path (test/cluster's bmt_cluster_target and its
%% request fan-out), recorded with beamtrace:trace/2 and `nodes' while each
%% node streams its trace straight to the relayd. Run by test/relayd/run.sh
%% in a distributed driver node (the environment as bmt_relayd_tests').
%%
%%  - relayd_matches_copy_back_test: one recording, streamed and also
%%    brought back as today: `beamtrace messages' of the relayd's session
%%    directory gives the copy-back's result (every count equal; latencies
%%    equal within the clock correction the copy-back adds at the end).
%%  - streams_only_test: nothing comes back over distribution and nothing
%%    is left on the nodes; the relayd's copy holds every node's events,
%%    each trace carries the controller's clock estimate, and every
%%    cross-node message of the workload is linked.
%%  - record_cli_test: the same through the command, `beamtrace record
%%    --cluster --relayd URL --local': messages, calls, report and export
%%    of the relayd's session directory (<relayd output>/<host>/<session>)
%%    read it as one cluster, naming each node from its trace's metadata,
%%    with the copy-back's results.
%%  - record_cli_streams_only_test: `--relayd' alone brings nothing back
%%    (no -o directory made) and the result line says where the traces are.
%%  - record_cli_usage_test: a bad URL, --live or --local without --relayd:
%%    one line, exit 2, before anything connects.
-module(bmt_relayd_cluster_SUITE).

-define(DURATION, "([0-9]+(?:\\.[0-9]+)?) (s|ms|us|ns)\\b").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([relayd_matches_copy_back_test/1, streams_only_test/1, record_cli_test/1,
         record_cli_streams_only_test/1, record_cli_usage_test/1]).

-import(bmt_test_lib, [tmpdir/1, assert_eq/3, fail/2, cmd/2]).

%%% Common Test

%% Each case runs alone with a time limit; the node is left as the next
%% case expects it (no session running).
suite() -> [{timetrap, {seconds, 240}}].

all() ->
    [relayd_matches_copy_back_test,
     streams_only_test,
     record_cli_test,
     record_cli_streams_only_test,
     record_cli_usage_test].

%% test/relayd/run.sh starts the relayd and says where (BMT_RELAYD_*).
init_per_suite(Config) ->
    case os:getenv("BMT_RELAYD_URL") of
        false -> {skip, "no lttng-relayd started: run test/relayd/run.sh (make test-relayd)"};
        _ -> ok = bmt_test_lib:ensure_distributed("bmt_rdrv_"),
             Config
    end.

end_per_suite(_Config) -> ok.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

relayd_matches_copy_back_test(_Config) ->
    with_cluster(fun(_Ts, Nodes) ->
        Out = tmpdir("cluster-both"),
        Session = session_name("both"),
        {Result, Sent} = record(Nodes, #{dir => Out, local => true, relayd_session => Session}),
        {ok, #{dir := Dir, nodes := PerNode}} = Result,
        assert_eq(dir, list_to_binary(Out), Dir),
        [#{relayd := #{state := closed, lost := 0}} = maps:get(N, PerNode) || N <- Nodes],
        Relayd = session_dir(PerNode),
        CopyBack = messages(Out),
        Streamed = messages(Relayd),
        io:format("# ~b cross-node messages sent; copy-back: ~s~n# relayd:    ~s~n",
                  [Sent, summary(CopyBack), summary(Streamed)]),
        same_counts(same_counts, CopyBack, Streamed),
        same_negatives(CopyBack, Streamed),
        Drift = max_drift(Out, Nodes),
        [close_enough(K, A, B, Drift) || {{K, A}, {K, B}} <- lists:zip(latencies(CopyBack),
                                                                      latencies(Streamed))],
        assert_eq(workload_linked, true, jint(<<"linked">>, CopyBack) >= Sent),
        ok
    end).

streams_only_test(_Config) ->
    with_cluster(fun(Ts, Nodes) ->
        Session = session_name("streamed"),
        {Result, Sent} = record(Nodes, #{relayd_session => Session}),
        {ok, #{dir := undefined, nodes := PerNode}} = Result,
        Events = lists:sum([begin
                                #{dir := undefined, events := E,
                                  relayd := #{events := E, state := closed}} = maps:get(N, PerNode),
                                E
                            end || N <- Nodes]),
        Relayd = session_dir(PerNode),
        {ok, PerProcess} = file:list_dir(filename:join(Relayd, "ust/pid")),
        assert_eq(one_directory_per_node, length(Nodes), length(PerProcess)),
        {0, Lines, _} = cmd("babeltrace2", [Relayd]),
        assert_eq(babeltrace_events, Events, length(Lines)),
        [begin
             {ok, Env} = beamtrace_clock:read_env(filename:join([Relayd, "ust/pid", P])),
             Offset = binary_to_integer(maps:get(<<"beamtrace_clock_offset_ns">>, Env)),
             assert_eq({clock_reference, P}, atom_to_binary(node()),
                       maps:get(<<"beamtrace_clock_reference">>, Env)),
             %% One host, one clock: the estimate is off by at most half
             %% its best round trip, which a loaded machine lengthens.
             Rtt = binary_to_integer(maps:get(<<"beamtrace_clock_rtt_ns">>, Env)),
             abs(Offset) =< max(100000, Rtt div 2 + 1000)
                 orelse fail({clock_offset_over_half_rtt, P}, {Offset, Rtt})
         end || P <- PerProcess],
        M = messages(Relayd),
        io:format("# streamed only: ~b events, ~b cross-node messages sent; ~s~n",
                  [Events, Sent, summary(M)]),
        assert_eq(workload_linked, true, jint(<<"linked">>, M) >= Sent),
        %% Nothing of beamtrace left, nothing in the nodes' temporary dirs.
        [begin
             assert_eq({beamtrace_left, N}, [],
                       erpc:call(N, bmt_cluster_target, beamtrace_left, [])),
             assert_eq({tmp_left, N}, {ok, []}, erpc:call(N, file, list_dir, [Tmp]))
         end || #{node := N, tmp := Tmp} <- Ts],
        ok
    end).

%% `beamtrace record --cluster --relayd URL --local': each node streams to
%% the relayd and keeps a copy, brought back into -o; every analysis of the
%% relayd's session directory gives the copy-back's result.
record_cli_test(_Config) ->
    with_cluster(fun(_Ts, Nodes) ->
        Out = tmpdir("cli-both"),
        {{0, _, _}, Sent} = record_cli(Nodes, ["--local", "-o", Out]),
        Relayd = relayd_session_dir(Out),
        {ok, PerProcess} = file:list_dir(filename:join(Relayd, "ust/pid")),
        assert_eq(one_directory_per_node, length(Nodes), length(PerProcess)),
        CopyBack = messages(Out),
        Streamed = messages(Relayd),
        io:format("# record --relayd --local: ~b cross-node messages sent; copy-back: ~s~n"
                  "# relayd:    ~s~n", [Sent, summary(CopyBack), summary(Streamed)]),
        same_counts(same_message_counts, CopyBack, Streamed),
        same_negatives(CopyBack, Streamed),
        assert_eq(workload_linked, true, jint(<<"linked">>, Streamed) >= Sent),
        %% calls: per-node durations, the same lines but the one naming the
        %% input.
        %% Durations agree within 0.1%, not to the digit: the copy-back's
        %% clock offsets are rewritten with the end-of-trace drift
        %% correction, the streamed traces keep the estimate made at
        %% start, so unfinished calls closed at the merged trace's end
        %% move by microseconds.
        [CallsBack, CallsStreamed] = [analysis(["calls"], D) || D <- [Out, Relayd]],
        assert_eq(same_calls, [untimed(L) || L <- CallsBack], [untimed(L) || L <- CallsStreamed]),
        assert_eq(calls_durations_within_0_1_percent, true,
                  lists:all(fun({A, B}) -> abs(A - B) =< 1.0e-3 * max(abs(A), abs(B)) end,
                            lists:zip(durations(CallsBack), durations(CallsStreamed)))),
        _ = binary:match(iolist_to_binary(CallsStreamed), <<"handle_call">>) =/= nomatch
            orelse fail(calls_of_the_workload, CallsStreamed),
        %% export and report: one group per node, named by its metadata.
        Json = filename:join(tmpdir("cli-export"), "trace.json"),
        ok = filelib:ensure_dir(Json),
        _ = analysis(["export", "--format", "chrome", "-o", Json], Relayd),
        {ok, Chrome} = file:read_file(Json),
        Html = filename:join(tmpdir("cli-report"), "report.html"),
        ok = filelib:ensure_dir(Html),
        _ = analysis(["report", "-o", Html], Relayd),
        {ok, Page} = file:read_file(Html),
        [begin
             Name = atom_to_binary(N),
             binary:match(Chrome, <<Name/binary, ": BEAM calls and events">>) =/= nomatch
                 orelse fail({chrome_node_group, N}, Json),
             binary:match(Page, Name) =/= nomatch orelse fail({report_names_node, N}, Html)
         end || N <- Nodes],
        ok
    end).

%% `--relayd' alone: nothing comes back, no -o directory is made, and the
%% result line names the relayd's session.
record_cli_streams_only_test(_Config) ->
    with_cluster(fun(_Ts, Nodes) ->
        Out = tmpdir("cli-streamed"),
        {{0, Stdout, _}, Sent} = record_cli(Nodes, ["-o", Out]),
        assert_eq(no_local_directory, false, filelib:is_file(Out)),
        Relayd = relayd_session_dir(Out),
        Line = iolist_to_binary(Stdout),
        binary:match(Line, list_to_binary(filename:basename(Out))) =/= nomatch
            orelse fail(result_names_the_relayd_session, Line),
        M = messages(Relayd),
        io:format("# record --relayd: ~b cross-node messages sent; ~s~n", [Sent, summary(M)]),
        assert_eq(workload_linked, true, jint(<<"linked">>, M) >= Sent),
        ok
    end).

%% Mistakes: one line naming the option and the fix, exit 2, nothing run.
record_cli_usage_test(_Config) ->
    Base = ["--node", "nobody@nowhere", "--events", "send"],
    [begin
         {2, [], [Line]} = bmt_record_cmd:record(Base ++ Args),
         re:run(Line, Expect) =/= nomatch orelse fail({usage_line, Args}, Line)
     end || {Args, Expect} <- [{["--relayd", "http://x"], <<"--relayd: .*net://">>},
                               {["--relayd", "net://h:70000"], <<"--relayd: .*port">>},
                               {["--live"], <<"--live.*--relayd">>},
                               {["--local"], <<"--local.*--relayd">>}]],
    ok.

%%% Recording

%% Records the nodes' sends and receipts (with links) for 12 s (each node's
%% window starts with its own trace; a loaded machine starts them apart) while the
%% workload runs; returns trace/2's result and the cross-node messages the
%% workload sent.
record(Nodes, Opts) ->
    Self = self(),
    Pid = spawn_link(fun() ->
                             Self ! {traced, beamtrace:trace(
                                               [send, 'receive'],
                                               Opts#{nodes => Nodes, links => true,
                                                     duration => 12000,
                                                     relayd => os:getenv("BMT_RELAYD_URL")})}
                     end),
    wait_traced(Nodes, 600),
    Sent = workload(Nodes, 20),
    receive {traced, R} -> {R, Sent} after 90000 -> fail(trace_timeout, Pid) end.

%% `beamtrace record --cluster' of the nodes' sends and receipts (links)
%% and the workload's calls into bmt_kv, for 12 s, streaming to the relayd,
%% with `Extra' arguments; returns the command's {Status, Stdout, Stderr}
%% and the cross-node messages the workload sent.
record_cli([A | _] = Nodes, Extra) ->
    Self = self(),
    Args = ["--cluster", "--node", atom_to_list(A), "--cookie-file", bmt_record_cmd:cookie_file(),
            "--events", "send,receive", "--links", "--calls", "bmt_cluster_target:handle_call/3",
            "--duration", "12s", "--relayd", os:getenv("BMT_RELAYD_URL") | Extra],
    Pid = spawn_link(fun() -> Self ! {recorded, bmt_record_cmd:record(Args)} end),
    wait_traced(Nodes, 600),
    Sent = workload(Nodes, 20),
    receive {recorded, R} -> {R, Sent} after 200000 -> fail(record_timeout, Pid) end.

%% <relayd output>/<host>/<session> of a command's recording: the session
%% is named after -o's last component.
relayd_session_dir(Out) ->
    case filelib:wildcard(filename:join([os:getenv("BMT_RELAYD_OUT"), "*",
                                         filename:basename(Out)])) of
        [Dir] -> Dir;
        Dirs -> fail(one_relayd_session_directory, Dirs)
    end.

%% An analysis' output lines on Dir, but the one naming the input; it must
%% succeed with nothing on stderr.
%% A calls line with its durations ("375.461 s", "12 ms", ...) replaced
%% by "T"; durations/1 gives them, in seconds.
untimed(Line) ->
    re:replace(Line, ?DURATION, "T", [global, {return, binary}]).

durations(Lines) ->
    [to_seconds(N, U) || L <- Lines,
                         {match, Ms} <- [re:run(L, ?DURATION, [global, {capture, all_but_first, list}])],
                         [N, U] <- Ms].

to_seconds(N, U) ->
    V = case string:to_float(N) of
            {F, []} -> F;
            _ -> float(list_to_integer(N))
        end,
    V * maps:get(U, #{"s" => 1.0, "ms" => 1.0e-3, "us" => 1.0e-6, "ns" => 1.0e-9}).

analysis(Args, Dir) ->
    Cli = filename:join(os:getenv("BMT_ROOT"), "priv/beamtrace"),
    {Status, Lines, Err} = cmd(Cli, Args ++ [Dir]),
    assert_eq({exit_status, Args, Dir, Err}, 0, Status),
    assert_eq({stderr, Args, Dir}, <<>>, Err),
    [L || L <- Lines, binary:match(L, <<"trace  ">>) =:= nomatch].

%% The relayd's session directory of a cluster recording: every node's
%% trace is under it.
session_dir(PerNode) ->
    Dirs = lists:usort([begin
                            [Host, Session | _] = binary:split(P, <<"/">>, [global]),
                            filename:join([os:getenv("BMT_RELAYD_OUT"), Host, Session])
                        end || #{relayd := #{path := P}} <- maps:values(PerNode)]),
    assert_eq(one_session_directory, 1, length(Dirs)),
    hd(Dirs).

messages(Dir) ->
    Cli = filename:join(os:getenv("BMT_ROOT"), "priv/beamtrace"),
    {0, Lines, Err} = cmd(Cli, ["messages", "--format", "json", "--top", "5", Dir]),
    assert_eq({messages_stderr, Dir}, <<>>, Err),
    iolist_to_binary(lists:join(<<"\n">>, Lines)).

%% Every integer of the messages JSON but times and latencies, by key, in
%% order: what links were made and how many.
%% The counts of a messages JSON, but each pair's `negative' (links whose
%% latency came out below zero): that depends on the clock offsets, which
%% differ between the two copies (see close_enough/4), and a link within
%% them of zero can change sign (CI saw 2 against 0 on OTP 27). Those are
%% compared by same_negatives/2.
counts(M) ->
    [{K, V} || [K, V] <- pairs(M), not is_time(K), K =/= <<"negative">>].

%% The two copies' counts are equal; when not, the failure names the
%% entries that differ (by position and key), first, so that a log cut
%% short still shows them.
same_counts(What, A, B) ->
    {CA, CB} = {counts(A), counts(B)},
    case CA =:= CB of
        true -> ok;
        false ->
            N = max(length(CA), length(CB)),
            Pad = fun(L) -> L ++ lists:duplicate(N - length(L), missing) end,
            Diff = [{I, X, Y} || {I, X, Y} <- lists:zip3(lists:seq(1, N), Pad(CA), Pad(CB)),
                                 X =/= Y],
            fail(What, #{differ => lists:sublist(Diff, 10), copy_back => A, streamed => B})
    end.

%% Each pair's negative count in the two copies, apart by at most 2.
same_negatives(A, B) ->
    Neg = fun(M) -> [binary_to_integer(V) || [<<"negative">>, V] <- pairs(M)] end,
    {NA, NB} = {Neg(A), Neg(B)},
    assert_eq(negative_pairs, length(NA), length(NB)),
    Apart = [{X, Y} || {X, Y} <- lists:zip(NA, NB), abs(X - Y) > 2],
    assert_eq(negatives_apart_by_over_2, [], Apart).

latencies(M) ->
    [{K, binary_to_integer(V)} || [K, V] <- pairs(M), is_time(K)].

pairs(M) ->
    case re:run(M, <<"\"([a-z_0-9]+)\": (-?[0-9]+)">>, [global, {capture, all_but_first, binary}]) of
        {match, Ps} -> Ps;
        nomatch -> []
    end.

is_time(K) -> binary:match(K, <<"_ns">>) =/= nomatch orelse binary:match(K, <<"_us">>) =/= nomatch.

%% Latencies from the two copies differ by the clock correction only: the
%% copy-back's offsets are the mean of the estimates before and after the
%% trace, the streamed one's the estimate before (a few us on one host).
%% The streamed trace's clock estimate is the one taken at its start; the
%% copy-back's is refined at the stop: a latency can differ by the drift
%% between the two (each node's, both ends).
close_enough(K, A, B, Drift) ->
    abs(A - B) =< max(50000, abs(A) div 20) + 2 * Drift
        orelse fail({latency_apart, K}, {A, B, Drift}).

%% The largest clock drift (ns) the copy-back's per-node traces state.
max_drift(Out, Nodes) ->
    lists:max([0 | [abs(binary_to_integer(D))
                    || N <- Nodes,
                       {ok, Env} <- [beamtrace_clock:read_env(filename:join(Out, atom_to_list(N)))],
                       D <- [maps:get(<<"beamtrace_clock_drift_ns">>, Env, <<"0">>)]]]).

summary(M) ->
    io_lib:format("linked ~b, not received ~b, in flight ~b, unmatched ~b",
                  [jint(<<"linked">>, M), jint(<<"not_received">>, M), jint(<<"in_flight">>, M),
                   jint(<<"unmatched">>, M)]).

jint(Key, Bin) ->
    case re:run(Bin, <<"\"", Key/binary, "\": (-?[0-9]+)">>, [{capture, all_but_first, binary}]) of
        {match, [V]} -> binary_to_integer(V);
        nomatch -> fail({no_json_key, Key}, Bin)
    end.

session_name(Base) ->
    lists:flatten(io_lib:format("cluster-~s-~w", [Base, erlang:unique_integer([positive])])).

%%% Nodes (as test/cluster's)

target(Prefix) ->
    Name = lists:flatten(io_lib:format("~s~w", [Prefix, erlang:unique_integer([positive])])),
    Tmp = tmpdir("target-tmp"),
    ok = filelib:ensure_dir(filename:join(Tmp, "x")),
    Erl = os:find_executable(os:getenv("ERL", "erl")),
    Args = ["-noshell", "-sname", Name, "-setcookie", atom_to_list(erlang:get_cookie()),
            "-pa", os:getenv("BMT_TARGET_BEAMS"),
            "-eval", lists:flatten(io_lib:format("bmt_cluster_target:start('~s')", [node()]))],
    Port = open_port({spawn_executable, Erl},
                     [{args, Args}, {env, [{"TMPDIR", Tmp}]}, exit_status, stderr_to_stdout]),
    {ok, Host} = inet:gethostname(),
    Node = list_to_atom(Name ++ "@" ++ Host),
    wait_up(Node, 1200), %% 60 s: a loaded machine boots a VM slowly
    #{node => Node, tmp => Tmp, port => Port}.

wait_up(Node, 0) ->
    fail(node_did_not_start, Node);
wait_up(Node, N) ->
    case net_kernel:hidden_connect_node(Node) andalso
        is_pid(quietly(fun() -> erpc:call(Node, erlang, whereis, [bmt_vnode]) end)) of
        true -> ok;
        false -> timer:sleep(50), wait_up(Node, N - 1)
    end.

with_cluster(Fun) ->
    Ts = [target(P) || P <- ["bmt_ra_", "bmt_rb_", "bmt_rc_"]],
    Nodes = [N || #{node := N} <- Ts],
    [ok = erpc:call(N, bmt_cluster_target, mesh, [Nodes]) || N <- Nodes],
    try Fun(Ts, Nodes)
    after [stop_target(T) || T <- Ts]
    end.

stop_target(#{node := N, port := Port}) ->
    quietly(fun() -> erpc:cast(N, erlang, halt, []) end),
    receive {Port, {exit_status, _}} -> ok after 10000 -> quietly(fun() -> port_close(Port) end) end,
    ok.

wait_traced(Nodes, 0) ->
    fail(never_traced, Nodes);
wait_traced(Nodes, K) ->
    case lists:all(fun(N) -> quietly(fun() -> erpc:call(N, bmt_cluster_target, traced, []) end)
                             =:= true end, Nodes) of
        true -> ok;
        false -> timer:sleep(50), wait_traced(Nodes, K - 1)
    end.

%% F's value, or its exception as a value (OTP 29 deprecates catch Expr).
quietly(F) ->
    try F() catch C:E -> {C, E} end.

%% Each node makes N request fan-outs to the other two; returns the
%% cross-node messages the workload sent, by its own count.
workload(Nodes, N) ->
    Self = self(),
    [spawn_link(fun() ->
                        Sent = erpc:call(Node, bmt_cluster_target, run, [N, 8, Nodes -- [Node]],
                                         60000),
                        Self ! {workload, Node, Sent}
                end) || Node <- Nodes],
    FsmSent = lists:sum([receive {workload, Node, S} -> S after 90000 -> fail(workload, Node) end
                         || Node <- Nodes]),
    timer:sleep(200), %% the last replies on their way
    VnodeSent = lists:sum([erpc:call(Node, bmt_cluster_target, vnode_sent, []) || Node <- Nodes]),
    FsmSent + VnodeSent.
