%% @doc Recording a cluster: one trace per node, written on that node,
%% brought back over the cluster's own distribution into one directory
%% with a subdirectory per node, every trace on the controller's clock.
%% What `beamtrace record --nodes'/`--cluster' runs (in the command's
%% hidden controller node) and what beamtrace:trace/2 with `nodes' runs
%% (in the caller's node).
%%
%% == Structure ==
%% A coordinator (the command's main process, or a process trace/2 starts)
%% starts one worker per node, linked. A worker does, for its node, what
%% `record --node' does (beamtrace_record's steps: connect, lock, check,
%% ship, trace with the guard rails, copy back, clean up and check): the
%% lock and then the agent on the node are linked to the worker, so
%% whatever kills a worker (or the coordinator, or the controller node)
%% makes its agent take everything down on its node by itself.
%%
%% The phases are the coordinator's:
%% <ol>
%% <li>setup: every worker connects, locks, ships and samples its node's
%% clock (beamtrace_clock), then says `ready'. A failure on any node, or
%% Ctrl-C, aborts them all: nothing was recorded, everything shipped is
%% taken down, the one error line names the node.</li>
%% <li>start: `go' to every worker at once; each starts its trace. A node
%% refusing the trace (its spec matches nothing there, say) aborts them
%% all as above.</li>
%% <li>record: the traces run with the guard rails of each node; the
%% coordinator sums their progress, relays Ctrl-C to every worker, and
%% waits for every outcome. A node that dies (or whose connection is lost)
%% fails alone: the others are still brought back, and the failure is
%% reported (one line, exit status 1).</li>
%% <li>collect, per worker once its trace ended: the node's clock sampled
%% again, the trace copied into Dir/NodeName, its metadata's clock offset
%% rewritten (beamtrace_clock), everything taken down and checked.</li>
%% </ol>
%%
%% == Through lttng-relayd ==
%% With `relayd' (and no local copy), every node streams its trace straight
%% to the relayd and nothing but the control crosses the distribution: the
%% node's clock estimate, taken in the setup phase, goes into the trace's
%% metadata at start (the `clock' option: the relayd's copy cannot be
%% rewritten afterwards, so drift during the trace is not corrected), and
%% every node's session has the same name, `relayd_session' (default the
%% cluster directory's name), so the relayd lays the cluster out as
%% <host>/<session>/ust/pid/beam.smp-PID-DATETIME/ per node.
-module(beamtrace_cluster).

-export([record/3, trace/3]).
%% The processes.
-export([worker/4, coordinate/4]).

-import(beamtrace_record_text, [bytes_text/1, plural/1]).

-define(SINK, beamtrace_record_sink).
-define(CLOCK_SAMPLES, 300).
-define(PROGRESS_MS, 500).

-record(w, {node :: node(),
            state = setup :: setup | ready | started | done | failed,
            progress = #{} :: map(),
            stats :: map() | undefined,
            summary :: iodata() | undefined,
            failure :: {integer(), iodata()} | undefined}).

%%% The command: beamtrace record --nodes / --cluster

%% @doc Records the cluster the command's options name (First is
%% connected already); returns the exit status or throws beamtrace_record's
%% `{fail, Status, Text}'. Runs in the controller's main process, which
%% gets the command's stdin lines.
-spec record(node(), string(), map()) -> non_neg_integer().
record(First, Cookie, Opts) ->
    Nodes = case maps:get(cluster, Opts, false) of
                true -> cluster_nodes(First);
                false -> lists:usort([First | [beamtrace_record:node_name(N)
                                               || N <- maps:get(nodes, Opts)]])
            end,
    beamtrace_record:note("recording ~b node~s: ~s",
                          [length(Nodes), plural(length(Nodes)),
                           lists:join(", ", [atom_to_list(N) || N <- Nodes])]),
    Out = maps:get(out, Opts),
    check_out(Out),
    Epoch = controller_clock(),
    process_flag(trap_exit, true),
    NodeOpts = session_name(Opts, Out),
    Workers = [{spawn_link(?MODULE, worker, [self(), N, NodeOpts#{out => node_dir(Out, N)},
                                             #{cookie => Cookie, epoch => Epoch}]),
                #w{node = N}} || N <- Nodes],
    {Status, Text, Ws} = run(maps:from_list(Workers), cli),
    put(result_line, result_text(Ws, Out)),
    case Status of
        0 -> 0;
        _ -> throw({fail, Status, Text})
    end.

%% --cluster: the named node and every (visible) node connected to it.
cluster_nodes(First) ->
    try erpc:call(First, erlang, nodes, [], 15000) of
        Others -> lists:usort([First | Others])
    catch Class:Why ->
            beamtrace_record:fail("cannot ask ~s for its nodes (~0p:~0p): give them with "
                                  "--nodes instead", [First, Class, Why])
    end.

%% The cluster directory: new, or an empty one of ours, not a link
%% (beamtrace_local_dir).
check_out(Out) ->
    case beamtrace_local_dir:check(Out, true) of
        ok -> ok;
        {error, Text} -> beamtrace_record:fail("~ts", [Text])
    end.

%% Streaming: one session name on the relayd for every node (the cluster
%% directory's name unless given), so their traces sit side by side there.
session_name(#{relayd := _} = Opts, Out) when not is_map_key(relayd_session, Opts) ->
    Opts#{relayd_session => filename:basename(Out)};
session_name(Opts, _Out) ->
    Opts.

node_dir(Out, Node) ->
    filename:join(Out, [case C of $/ -> $_; _ -> C end || C <- atom_to_list(Node)]).

%% This node's clock against the epoch: the reference of every trace.
controller_clock() ->
    case code:ensure_loaded(beamtrace) of
        {module, beamtrace} ->
            beamtrace_clock:epoch_offset();
        {error, Why} ->
            beamtrace_record:fail("cannot load beamtrace here (~0p), whose clock the traces "
                                  "are aligned to: run make", [Why])
    end.

%%% From a shell: beamtrace:trace(Spec, #{nodes => Nodes})

%% @doc beamtrace:trace/2 with `nodes': records Spec on every node of
%% Nodes (this one too if named), shipping beamtrace where it is missing,
%% with Opts' guard rails on each, and brings the traces back into one
%% cluster directory here (`dir', default
%% ./beamtrace-traces/cluster-YYYYMMDD-HHMMSS), a subdirectory per node.
%% Returns `{ok, #{dir, nodes => #{Node => Stats}}}'; `{error, {Node,
%% Text}}' when a node could not be set up or refused the trace (nothing
%% was recorded anywhere then); `{error, {nodes_failed, #{Node => Text},
%% Result}}' when a node failed while recording (Result as `{ok, Result}',
%% holding the traces of the others).
-spec trace(term(), [node()], map()) -> {ok, map()} | {error, term()}.
trace(Spec, Nodes, Opts) when is_list(Nodes), Nodes =/= [], is_map(Opts) ->
    case [N || N <- Nodes, not is_atom(N)] of
        [] ->
            Caller = self(),
            Ref = make_ref(),
            {Pid, Mon} = spawn_monitor(?MODULE, coordinate, [Caller, Ref, Spec,
                                                             {lists:usort(Nodes), Opts}]),
            receive
                {Ref, Result} ->
                    demonitor(Mon, [flush]),
                    Result;
                {'DOWN', Mon, process, Pid, Why} ->
                    {error, {controller_down, Why}}
            end;
        _ ->
            {error, {badopt, nodes}}
    end;
trace(_Spec, _Nodes, Opts) when is_map(Opts) ->
    {error, {badopt, nodes}};
trace(Spec, Nodes, Opts) when is_list(Opts) ->
    try maps:from_list(Opts) of
        Map -> trace(Spec, Nodes, Map)
    catch error:_ -> {error, {badopt, Opts}}
    end.

%% @private The coordinator of trace/3: answers `{Ref, Result}'.
-spec coordinate(pid(), reference(), term(), {[node()], map()}) -> ok.
coordinate(Caller, Ref, Spec, {Nodes, Opts}) ->
    process_flag(trap_exit, true),
    %% beamtrace_record's notes and errors come here, quietly.
    put(?SINK, self()),
    %% The caller's exit aborts the recording: monitored, so it comes as
    %% 'DOWN' (run/2 aborts on it).
    _ = monitor(process, Caller),
    Result = try
                 Out = shell_out(Opts),
                 check_out(Out),
                 Epoch = controller_clock(),
                 Nif = filename:join(beamtrace:priv_dir(), "beamtrace_nif.so"),
                 TraceOpts = session_name(maps:without([dir, owner, nodes], Opts), Out),
                 Workers = [{spawn_link(?MODULE, worker,
                                        [self(), N, #{node => N, spec => Spec,
                                                      trace_opts => TraceOpts,
                                                      out => node_dir(Out, N), nif => Nif},
                                         #{epoch => Epoch}]),
                             #w{node = N}} || N <- Nodes],
                 {_Status, _Text, Ws} = run(maps:from_list(Workers), shell),
                 shell_result(Ws, Out)
             catch throw:{fail, _, Text0} ->
                     {error, {setup, lists:flatten(io_lib:format("~ts", [Text0]))}}
             end,
    Caller ! {Ref, Result},
    ok.

shell_out(#{dir := Dir}) ->
    filename:absname(Dir);
shell_out(#{}) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:local_time(),
    Base = filename:absname(
             filename:join("beamtrace-traces",
                           io_lib:format("cluster-~4..0w~2..0w~2..0w-~2..0w~2..0w~2..0w",
                                         [Y, Mo, D, H, Mi, S]))),
    unique(Base, 1).

unique(Base, N) ->
    Path = case N of 1 -> Base; _ -> Base ++ "-" ++ integer_to_list(N) end,
    case filelib:is_file(Path) of
        false -> Path;
        true -> unique(Base, N + 1)
    end.

shell_result(Ws, Out0) ->
    All = maps:values(Ws),
    %% Streamed only: no cluster directory here.
    Out = case [W || W <- All, is_map(W#w.stats), maps:get(dir, W#w.stats, x) =:= undefined] of
              [] -> Out0;
              _ -> undefined
          end,
    Traces = maps:from_list([{W#w.node, W#w.stats} || W <- All, W#w.state =:= done]),
    Failed = maps:from_list([{W#w.node, text(element(2, W#w.failure))}
                             || W <- All, W#w.state =:= failed]),
    Started = lists:any(fun(W) -> W#w.stats =/= undefined end, All),
    case {maps:size(Failed), Started} of
        {0, _} ->
            {ok, #{dir => dir_bin(Out), nodes => Traces}};
        {_, false} ->
            %% Nothing was recorded: the first failure says why.
            [{Node, Text} | _] = lists:sort(maps:to_list(Failed)),
            {error, {Node, Text}};
        {_, true} ->
            {error, {nodes_failed, Failed, #{dir => dir_bin(Out), nodes => Traces}}}
    end.

dir_bin(undefined) -> undefined;
dir_bin(Out) -> unicode:characters_to_binary(Out).

%%% The coordinator

%% Runs the phases; returns {Status, ErrorText, Workers}. Mode: cli (lines
%% to stdout, stdin's stop relayed) or shell (lines kept quiet).
run(Ws0, Mode) ->
    case phase(Ws0, ready, Mode) of
        {ok, Ws1} ->
            [W ! {?MODULE, go} || W <- maps:keys(Ws1)],
            case phase(Ws1, started, Mode) of
                {ok, Ws2} ->
                    erlang:send_after(?PROGRESS_MS, self(), {?MODULE, progress}),
                    Ws3 = recording(Ws2, Mode),
                    beamtrace_record:note("traces brought back and checked ~.1f s after their "
                                          "end (the slowest node)", [collect_ms(Ws3) / 1000]),
                    outcome(Ws3);
                {abort, Ws2, Status, Text} ->
                    {Status, Text, Ws2}
            end;
        {abort, Ws1, Status, Text} ->
            {Status, Text, Ws1}
    end.

%% Waits until every worker reached State; at the first failure (or Ctrl-C,
%% or the caller gone) aborts every worker and waits for them all.
phase(Ws, State, Mode) ->
    case lists:all(fun(W) -> W#w.state =:= State end, maps:values(Ws)) of
        true ->
            {ok, Ws};
        false ->
            receive
                Msg ->
                    case event(Msg, Ws, Mode) of
                        {ok, Ws1} -> phase(Ws1, State, Mode);
                        {failed, Ws1, Status, Text} -> abort(Ws1, Status, Text, Mode);
                        {stop, Ws1} -> abort(Ws1, 130, "interrupted (Ctrl-C) before recording", Mode)
                    end
            end
    end.

abort(Ws, Status, Text, Mode) ->
    [W ! {?SINK, abort, "aborted: another node failed"} || {W, #w{state = S}} <- maps:to_list(Ws),
                                                           S =/= failed, S =/= done],
    {abort, finish_all(Ws, Mode), Status, Text}.

%% Every worker's outcome, whatever it is.
finish_all(Ws, Mode) ->
    case [W || W <- maps:values(Ws), W#w.state =/= failed, W#w.state =/= done] of
        [] -> Ws;
        _ ->
            receive
                Msg ->
                    case event(Msg, Ws, Mode) of
                        {ok, Ws1} -> finish_all(Ws1, Mode);
                        {failed, Ws1, _, _} -> finish_all(Ws1, Mode);
                        {stop, Ws1} -> finish_all(Ws1, Mode)
                    end
            end
    end.

recording(Ws, Mode) ->
    case [W || W <- maps:values(Ws), W#w.state =/= failed, W#w.state =/= done] of
        [] -> Ws;
        _ ->
            receive
                {?MODULE, progress} ->
                    progress(Ws, Mode),
                    erlang:send_after(?PROGRESS_MS, self(), {?MODULE, progress}),
                    recording(Ws, Mode);
                Msg ->
                    case event(Msg, Ws, Mode) of
                        {ok, Ws1} ->
                            recording(Ws1, Mode);
                        {failed, Ws1, _, Text} ->
                            %% Said now; the error line at the end repeats it.
                            beamtrace_record:note("~s; the other nodes go on", [Text]),
                            recording(Ws1, Mode);
                        {stop, Ws1} ->
                            recording(Ws1, Mode)
                    end
            end
    end.

%% One message to the coordinator.
event({?SINK, W, {line, Line}}, Ws, Mode) when is_map_key(W, Ws) ->
    _ = Mode =:= cli andalso io:put_chars(standard_io, [Line, $\n]),
    {ok, Ws};
event({?SINK, W, {progress, Info}}, Ws, _Mode) when is_map_key(W, Ws) ->
    {ok, update(W, Ws, fun(X) -> X#w{progress = Info} end)};
event({?MODULE, W, ready}, Ws, _Mode) ->
    {ok, update(W, Ws, fun(X) -> X#w{state = ready} end)};
event({?MODULE, W, started}, Ws, _Mode) ->
    {ok, update(W, Ws, fun(X) -> X#w{state = started} end)};
event({?MODULE, W, {done, Stats, Summary, Ms}}, Ws, _Mode) ->
    {ok, update(W, Ws, fun(X) -> X#w{state = done, stats = Stats#{collect_ms => Ms},
                                       summary = Summary} end)};
event({?MODULE, W, {failed, Status, Text, Stats}}, Ws, _Mode) ->
    Ws1 = update(W, Ws, fun(X) -> X#w{state = failed, failure = {Status, Text}, stats = Stats}
                        end),
    {failed, Ws1, Status, Text};
event({'EXIT', W, Why}, Ws, _Mode) when is_map_key(W, Ws) ->
    case maps:get(W, Ws) of
        #w{state = S} when S =:= done; S =:= failed ->
            {ok, Ws};
        #w{node = N} ->
            Text = io_lib:format("recording ~s failed, please report it: ~0P", [N, Why, 30]),
            {failed, update(W, Ws, fun(X) -> X#w{state = failed, failure = {1, Text}} end),
             1, Text}
    end;
event({stdin, "snapshot"}, Ws, _Mode) ->
    %% Each node's snapshot would need its own clock alignment, as the
    %% traces get at the end: not done yet.
    beamtrace_record:note("snapshot: not available for a cluster recording yet; the recording "
                          "goes on", []),
    {ok, Ws};
event({stdin, L}, Ws, _Mode) when L =:= "stop"; L =:= eof ->
    [W ! {stdin, L} || W <- maps:keys(Ws)],
    {stop, Ws};
event({'DOWN', _, process, _, _}, Ws, shell) ->
    %% The caller is gone: as Ctrl-C.
    [W ! {stdin, eof} || W <- maps:keys(Ws)],
    {stop, Ws};
event(_Other, Ws, _Mode) ->
    {ok, Ws}.

update(W, Ws, F) ->
    case maps:find(W, Ws) of
        {ok, X} -> Ws#{W => F(X)};
        error -> Ws
    end.

progress(Ws, cli) ->
    Ps = [W#w.progress || W <- maps:values(Ws)],
    Sum = fun(K) -> lists:sum([maps:get(K, P, 0) || P <- Ps]) end,
    io:put_chars(standard_io,
                 io_lib:format("progress ~b ~b ~b ~b~n",
                               [lists:max([maps:get(elapsed_ms, P, 0) || P <- Ps]), Sum(events),
                                Sum(discarded), Sum(written_bytes)]));
progress(_Ws, shell) ->
    ok.

collect_ms(Ws) ->
    lists:max([0 | [maps:get(collect_ms, S, 0) || #w{stats = S} <- maps:values(Ws), is_map(S)]]).

%% {Status, Text, Workers}: 0 when every node's trace came back.
outcome(Ws) ->
    case [W || W <- maps:values(Ws), W#w.state =:= failed] of
        [] ->
            {0, "", Ws};
        Failed ->
            Text = [lists:join("; ", [element(2, W#w.failure) || W <- lists:keysort(#w.node, Failed)]),
                    case [W || W <- maps:values(Ws), W#w.state =:= done] of
                        [] -> "";
                        Done -> io_lib:format(" (the trace~s of ~s came back)",
                                              [plural(length(Done)),
                                               lists:join(", ", [atom_to_list(W#w.node)
                                                                 || W <- Done])])
                    end],
            {1, Text, Ws}
    end.

result_text(Ws, Out) ->
    Done = [W || W <- maps:values(Ws), W#w.state =:= done],
    case Done of
        [] ->
            undefined;
        _ ->
            Sum = fun(K) -> lists:sum([maps:get(K, W#w.stats, 0) || W <- Done]) end,
            io_lib:format("~b node~s, ~b events, ~b discarded, ~s in ~.1f s; cluster trace ~s",
                          [length(Done), plural(length(Done)), Sum(events), Sum(discarded),
                           bytes_text(Sum(written_bytes)),
                           lists:max([maps:get(elapsed_ms, W#w.stats, 0) || W <- Done]) / 1000,
                           where([W#w.stats || W <- Done], Out)])
    end.

%% Where the cluster's traces are: here, or on the relayd (each host's
%% session directory).
where(Stats, Out) ->
    case lists:usort([session_of(P) || #{dir := undefined, relayd := #{path := P}} <- Stats,
                                       is_binary(P)]) of
        [] -> ["in ", Out];
        Sessions ->
            #{relayd := #{url := Url}} = hd(Stats),
            ["on lttng-relayd ", Url, " in ", lists:join(", ", Sessions)]
    end.

%% "HOST/SESSION" of a relayd path "HOST/SESSION/ust/pid/...".
session_of(Path) ->
    case binary:split(Path, <<"/">>, [global]) of
        [Host, Session | _] -> [Host, $/, Session];
        _ -> Path
    end.

%%% A worker: one node

%% @private Records one node for the coordinator Coord.
-spec worker(pid(), node(), map(), map()) -> ok.
worker(Coord, Node, Opts, How) ->
    %% The lock and the agent on the node are linked to this process (its
    %% death makes them take everything down): their links breaking when
    %% the node goes must not kill it; the agent's monitor says so. The
    %% coordinator's exit, though, ends this worker (beamtrace_record's
    %% wait and the wait for `go' look for it).
    process_flag(trap_exit, true),
    try
        connect(Node, Opts, How),
        R = beamtrace_record:setup(Node, Opts, Coord),
        steps(Coord, Node, Opts, R, How)
    catch
        throw:{fail, Status, Text} ->
            Coord ! {?MODULE, self(), {failed, Status, text(Text), get(trace_stats)}},
            ok
    end.

steps(Coord, Node, #{out := Out} = Opts, R0, #{epoch := Epoch}) ->
    try
        Before = clock(Node, R0),
        %% A streamed trace gets the controller's clock now: no one can
        %% rewrite the relayd's copy afterwards.
        Streamed = is_map_key(relayd, trace_opts(Opts)),
        StreamsOnly = beamtrace_record_session:streams_only(Opts),
        R = case Streamed of
                true -> beamtrace_record_session:with_trace_opts(R0, #{clock => clock_opt(Epoch, Before)});
                false -> R0
            end,
        Coord ! {?MODULE, self(), ready},
        receive
            {?MODULE, go} -> ok;
            {?SINK, abort, Abort} -> beamtrace_record:fail("~s", [Abort]);
            {'EXIT', Coord, CoordGone} -> exit(CoordGone);
            {stdin, _} -> throw({fail, 130, "interrupted (Ctrl-C) before recording"})
        end,
        {R1, T0} = beamtrace_record_session:start_trace(R),
        Coord ! {?MODULE, self(), started},
        Result = beamtrace_record_session:wait(R1, T0),
        Stopped = erlang:monotonic_time(millisecond),
        put(trace_stats, stats(Result)),
        %% The clock again while the agent is there (the trace has stopped);
        %% a failure here only loses the drift correction.
        After = try clock(Node, R1) catch throw:_ -> undefined end,
        R2 = beamtrace_record_session:collect(R1, Result),
        Estimate = case StreamsOnly of
                       true -> (beamtrace_clock:combine(Before, undefined))#{reference => node()};
                       false -> (beamtrace_clock:combine(Before, After))#{reference => node()}
                   end,
        case StreamsOnly orelse beamtrace_clock:rewrite_metadata(Out, Epoch, Estimate) of
            true -> ok;
            ok -> ok;
            {error, Bad} -> beamtrace_record:fail("cannot set the clock offset in ~s: ~0p",
                                                  [Out, Bad])
        end,
        beamtrace_record:note("~s: clock ~s~b ns (+/- ~b ns) from this node's",
                              [Node, sign(maps:get(offset_ns, Estimate)),
                               abs(maps:get(offset_ns, Estimate)), maps:get(error_ns, Estimate)]),
        Summary = get(result_line),
        Ms = erlang:monotonic_time(millisecond) - Stopped,
        beamtrace_record_cleanup:finish(R2),
        beamtrace_record:note("~s: ~s", [Node, Summary]),
        Dir = case StreamsOnly of
                  true -> undefined;
                  false -> unicode:characters_to_binary(Out)
              end,
        Coord ! {?MODULE, self(), {done, (stats(Result))#{dir => Dir, clock => Estimate},
                                   Summary, Ms}},
        ok
    catch
        throw:{fail, _, _} = F ->
            beamtrace_record_cleanup:abandon(F);
        Class:Why:Stack ->
            %% A defect here: everything on the node still goes, and the
            %% node's line says what happened.
            beamtrace_record_cleanup:abandon({fail, 1, io_lib:format("recording ~s failed, please report "
                                                             "it: ~0p:~0P ~0P",
                                                             [Node, Class, Why, 20, Stack, 20])})
    end.

%% The node's trace options, from the command's or a shell's.
trace_opts(#{trace_opts := T}) -> T;
trace_opts(Opts) -> Opts.

%% beamtrace:start/1's `clock' option: the estimate before the trace, as
%% beamtrace_clock:rewrite_metadata/3 would write it.
clock_opt(Epoch, #{offset_ns := Offset} = E) ->
    #{offset_ns => Epoch + Offset,
      env => [{reference, atom_to_binary(node(), utf8)}, {offset_ns, Offset},
              {error_ns, maps:get(error_ns, E)}, {rtt_ns, maps:get(rtt_ns, E)}, {drift_ns, 0},
              {samples, maps:get(samples, E)}]}.

sign(N) when N < 0 -> "-";
sign(_) -> "+".

stats({ok, S}) -> S;
stats({error, {_, S}}) when is_map(S) -> S;
stats(_) -> #{}.

clock(Node, R) ->
    beamtrace_clock:sample(fun() ->
                                   case beamtrace_record:agent_call(R, clock_ns) of
                                       N when is_integer(N) -> N;
                                       Other -> beamtrace_record:fail("the agent on ~s cannot "
                                                                      "read its clock: ~0p",
                                                                      [Node, Other])
                                   end
                           end, ?CLOCK_SAMPLES).

%% The command's workers connect with the cookie; from a shell, the node's
%% own connections (a hidden one when not connected yet).
connect(Node, Opts, #{cookie := Cookie}) ->
    beamtrace_record_connect:connect(Node, Cookie, Opts);
connect(Node, _Opts, #{}) when Node =:= node() ->
    ok;
connect(Node, _Opts, #{}) ->
    case lists:member(Node, nodes(connected)) orelse net_kernel:hidden_connect_node(Node) of
        true -> ok;
        _ -> beamtrace_record:fail("cannot connect to ~s (is it up, with this node's cookie?)",
                                   [Node])
    end.

text(T) -> lists:flatten(io_lib:format("~ts", [T])).

