%% Issue 18's "Done when", run as a user runs it (bench/flight_done.sh):
%% a target node with nothing of beamtrace, running the Riak-like store of
%% test/flight/bmt_kv.erl (1 get in 1000 is 15 ms slower; its clients
%% time every get on the node's own clock and keep the slow ones), and the
%% `beamtrace' command from outside:
%%
%%   call SECS     record --flight 10s --trigger 'bmt_kv:get/2>10ms' --detach,
%%                 SECS of the store, flights, stop --node -o DIR: every
%%                 slow get the clients measured (from 6 s in: the rings
%%                 need 5 s) is in a capture that `calls --slower-than'
%%                 lists, with at least 5 s before it; `captures' lists
%%                 them all; the node's RSS every 10 s; after stop nothing
%%                 of beamtrace on the node.
%%   long_gc SECS  the same with --trigger long_gc=5ms and a collection of
%%                 a 3M-word heap every 15 s: each in a capture, 5 s before.
%%   probe SECS    the same with --trigger probe=burst and
%%                 beamtrace:trigger(burst) called on the node every 15 s.
%%   sample SECS   record --max-rate 5000 --on-max-rate sample for SECS + 10
%%                 against clients that never pause: `calls' of the middle
%%                 SECS scaled back, against the gets the node counted.
%%
%% Prints one line per figure and "ok"/"FAILED" per check; halts 1 if one
%% failed. Not in make test: the Done-when run is 10 minutes.
-module(bmt_flight_done).
-export([main/1]).

-define(BEFORE_NS, 5000000000).

main([Mode, Secs, Out, Cli, TargetEbin, CookieFile]) ->
    S = list_to_integer(Secs),
    put(failed, false),
    put(env, #{cli => Cli, out => Out, cookie_file => CookieFile}),
    Name = list_to_atom("bmt_done_" ++ Mode ++ "_" ++ os:getpid()),
    Kv = case Mode of
             "sample" -> #{clients => 4, pace_ms => 0};
             _ -> #{clients => 4, pace_ms => 10}
         end,
    {ok, Peer, Node} = peer:start(#{name => Name,
                                    args => ["-setcookie", atom_to_list(erlang:get_cookie()),
                                             "-pa", TargetEbin]}),
    _ = erpc:call(Node, bmt_kv, start, [Kv]),
    try run(list_to_atom(Mode), S, Node)
    after catch peer:stop(Peer)
    end,
    halt(case get(failed) of true -> 1; false -> 0 end).

%%% The modes

run(sample, S, Node) ->
    Dir = filename:join(cfg(out), "sampled"),
    Port = bt_async(["record"] ++ node_args(Node) ++
                        ["--calls", "bmt_kv:get/2 -> return", "--max-rate", "5000",
                         "--on-max-rate", "sample", "--duration", integer_to_list(S + 10) ++ "s",
                         "-o", Dir]),
    timer:sleep(5000),
    {G0, W0} = {gets(Node), wall(Node)},
    timer:sleep(S * 1000),
    {W1, G1} = {wall(Node), gets(Node)},
    {RecStatus, RecOut} = wait_port(Port, (S + 120) * 1000),
    check("record exits 0", RecStatus =:= 0, RecOut),
    {0, Calls} = bt(["calls", "--format", "json", "--begin", utc(W0), "--end", utc(W1), Dir]),
    [Row] = [L || L <- lines(Calls), has(L, <<"\"function\": \"bmt_kv:get/2\"">>)],
    Count = int(Row, "count"), Kept = int(Row, "kept_count"),
    Made = G1 - G0,
    Ratio = int(Calls, "ratio_max"),
    fig("sample: ~b gets made in ~b s; calls: ~b scaled back (~b kept, ratio up to 1/~b), "
        "~.1f% off", [Made, S, Count, Kept, Ratio, 100 * abs(Count - Made) / max(1, Made)]),
    check("sampled (fewer kept than made)", Kept * 10 < Made * 9, Row),
    check("calls scaled back within 10% of the node's count", abs(Count - Made) * 10 =< Made,
          {Count, Made}),
    {_, Txt} = bt(["calls", "--begin", utc(W0), "--end", utc(W1), Dir]),
    check("calls says it scaled back", has(Txt, <<"scaled back">>), Txt);
run(Mode, S, Node) ->
    Trigger = case Mode of
                  call -> "bmt_kv:get/2>10ms";
                  long_gc -> "long_gc=5ms";
                  probe -> "probe=burst"
              end,
    Rss0 = rss(Node),
    {RecStatus, RecOut} =
        bt(["record"] ++ node_args(Node) ++
               ["--calls", "bmt_kv:get/2 -> return", "--flight", "10s", "--trigger", Trigger,
                "--max-captures", "360/h", "--detach"]),
    check("record --flight --detach exits 0", RecStatus =:= 0, RecOut),
    Start = wall(Node),
    Marks = drive(Mode, Node, S),
    Rss = [R || {rss, R} <- Marks],
    Stop = wall(Node),
    Events = [E || {event, E} <- Marks] ++ slow_gets(Mode, Node),
    Due = [E || {_, T0, T1} = E <- Events, T0 > Start + 6000000000, T1 < Stop],
    {0, Flights} = bt(["flights"] ++ node_args(Node)),
    Caps0 = filename:join(cfg(out), atom_to_list(Mode)),
    {StopStatus, StopOut} = bt(["stop"] ++ node_args(Node) ++ ["-o", Caps0]),
    check("stop --node exits 0", StopStatus =:= 0, StopOut),
    {0, CapJson} = bt(["captures", "--format", "json", Caps0]),
    Caps = [capture(L) || L <- lines(CapJson), has(L, <<"{\"dir\": ">>)],
    Listed = length([L || L <- lines(Flights), has(L, <<"capture-">>)]),
    fig("~s: ~b s, ~b events due (~b in all), ~b captures (~b listed by flights before the "
        "stop); RSS ~b KiB before, then ~w KiB",
        [Mode, S, length(Due), length(Events), length(Caps), Listed, Rss0 div 1024,
         [R div 1024 || R <- Rss]]),
    check("events to catch", Due =/= [], Events),
    check("captures lists every capture directory",
          length(Caps) =:= length(capture_dirs(Caps0)), CapJson),
    Missed = [E || E <- Due, not caught(Mode, E, Caps)],
    check(io_lib:format("every one in a capture with >= 5 s before it (~b of ~b)",
                        [length(Due) - length(Missed), length(Due)]), Missed =:= [], Missed),
    Steady = lists:nthtail(min(2, max(0, length(Rss) - 1)), Rss),
    %% The long_gc run's own bursts allocate 3M-word heaps: only the call
    %% run's memory says something of the recorder's.
    _ = Mode =:= call andalso
        check("RSS flat after 20 s (moves < 4 MiB, one ring)",
              Steady =:= [] orelse lists:max(Steady) - lists:min(Steady) < 4 * 1024 * 1024,
              [R div 1024 || R <- Steady]),
    Left = left(Node),
    check("nothing of beamtrace left on the node", Left =:= [], Left).

%% Every 10 s the RSS; every 15 s (long_gc, probe) an event to catch, as
%% {Pid text, StartWallNs, EndWallNs} on the node's clock: S div 5 steps.
drive(Mode, Node, S) ->
    lists:append([step(Mode, Node, N) || N <- lists:seq(1, S div 5)]).

step(Mode, Node, N) ->
    timer:sleep(5000),
    [E || N rem 3 =:= 0, E <- fire(Mode, Node)] ++ [{rss, rss(Node)} || N rem 2 =:= 0].

fire(call, _Node) -> [];
fire(long_gc, Node) ->
    {P, T} = erpc:call(Node, bmt_kv, gc_burst, [3000000]),
    Off = erpc:call(Node, erlang, time_offset, [nanosecond]),
    W1 = wall(Node),
    _ = erpc:call(Node, erlang, exit, [P, kill]),
    [{event, {pid_text(Node, P), T + Off, W1}}];
fire(probe, Node) ->
    W0 = wall(Node),
    true = erpc:call(Node, beamtrace, trigger, [burst]),
    [{event, {"-", W0, wall(Node)}}].

slow_gets(call, Node) ->
    Off = erpc:call(Node, erlang, time_offset, [nanosecond]),
    [{pid_text(Node, P), T0 + Off, T1 + Off} || {P, T0, T1} <- erpc:call(Node, bmt_kv, slow_calls, [])];
slow_gets(_, _) -> [].

%% A capture covers the event with 5 s before it; a slow get is also
%% listed by `calls --slower-than 10ms' of that capture (same process,
%% its start within the get the client timed, 5 ms either side for the
%% two clocks' offsets).
caught(Mode, {Pid, T0, T1}, Caps) ->
    lists:any(fun(#{first := F, last := L, dir := D}) ->
                      F =< T0 - ?BEFORE_NS andalso L >= T1 andalso
                          (Mode =/= call orelse slow_listed(D, Pid, T0, T1))
              end, Caps).

slow_listed(Dir, Pid, T0, T1) ->
    Slow = case get({slow, Dir}) of
               undefined ->
                   {0, J} = bt(["calls", "--slower-than", "10ms", "--format", "json", Dir], quiet),
                   L = [{str(X, "pid"), int(X, "start_unix_ns")}
                        || X <- lines(J), has(X, <<"\"start_unix_ns\"">>)],
                   put({slow, Dir}, L),
                   L;
               L -> L
           end,
    lists:any(fun({P, S}) -> P =:= Pid andalso S >= T0 - 5000000 andalso S =< T1 + 5000000 end,
              Slow).

%%% The node

gets(Node) -> maps:get(gets, erpc:call(Node, bmt_kv, counts, [])).

wall(Node) -> erpc:call(Node, erlang, system_time, [nanosecond]).

pid_text(Node, P) -> erpc:call(Node, erlang, pid_to_list, [P]).

rss(Node) ->
    {ok, Status} = file:read_file("/proc/" ++ erpc:call(Node, os, getpid, []) ++ "/status"),
    {match, [Kb]} = re:run(Status, <<"VmRSS:\\s+([0-9]+) kB">>, [{capture, all_but_first, binary}]),
    binary_to_integer(Kb) * 1024.

%% What of beamtrace the node still holds: bmt_beamtrace_left's list
%% (processes traced, sessions, modules, registered processes, flags,
%% patterns), processes running beamtrace code, the NIF library mapped,
%% open files and private directories under its TMPDIR.
left(Node) ->
    OsPid = erpc:call(Node, os, getpid, []),
    {ok, Maps} = file:read_file("/proc/" ++ OsPid ++ "/maps"),
    Fds = [L || F <- element(2, file:list_dir("/proc/" ++ OsPid ++ "/fd")),
                {ok, L} <- [file:read_link("/proc/" ++ OsPid ++ "/fd/" ++ F)],
                string:find(L, "beamtrace") =/= nomatch],
    Tmp = case erpc:call(Node, os, getenv, ["TMPDIR"]) of
              D when is_list(D), D =/= "" -> D;
              _ -> "/tmp"
          end,
    Priv = [N || N <- element(2, file:list_dir(Tmp)),
                 lists:prefix("beamtrace-flight-" ++ atom_to_list(Node), N)],
    Procs = [P || P <- erpc:call(Node, erlang, processes, []),
                  Info <- [erpc:call(Node, erlang, process_info,
                                     [P, [initial_call, current_function]])],
                  is_list(Info),
                  M <- [element(1, proplists:get_value(initial_call, Info)),
                        element(1, proplists:get_value(current_function, Info))],
                  lists:prefix("beamtrace", atom_to_list(M))],
    erpc:call(Node, bmt_beamtrace_left, check, [])
        ++ [{nif_mapped, Mapped} || Mapped <- [[L || L <- lines(Maps), has(L, <<"beamtrace">>)]],
                                    Mapped =/= []]
        ++ [{open_files, Fds} || Fds =/= []]
        ++ [{private_dirs, Priv} || Priv =/= []]
        ++ [{processes, Procs} || Procs =/= []].

%%% The command

cfg(K) -> maps:get(K, get(env)).

node_args(Node) -> ["--node", atom_to_list(Node), "--cookie-file", cfg(cookie_file)].

%% Runs `beamtrace Args': {Status, Output} (stderr with stdout), echoed
%% after "$ " unless quiet.
bt(Args) -> bt(Args, echo).

bt(Args, Echo) ->
    wait_port(bt_async(Args, Echo), 600000).

bt_async(Args) -> bt_async(Args, echo).

bt_async(Args, Echo) ->
    _ = Echo =:= echo andalso
        io:format("$ beamtrace ~ts~n", [lists:join(" ", [quote(A) || A <- Args])]),
    open_port({spawn_executable, cfg(cli)},
              [{args, Args}, binary, exit_status, stderr_to_stdout, use_stdio]).

wait_port(Port, Ms) ->
    wait_port(Port, Ms, []).

wait_port(Port, Ms, Acc) ->
    receive
        {Port, {data, D}} -> wait_port(Port, Ms, [D | Acc]);
        {Port, {exit_status, S}} -> {S, iolist_to_binary(lists:reverse(Acc))}
    after Ms ->
        catch port_close(Port),
        {timeout, iolist_to_binary(lists:reverse(Acc))}
    end.

quote(A) ->
    case lists:any(fun(C) -> lists:member(C, " >'") end, A) of
        true -> "'" ++ A ++ "'";
        false -> A
    end.

capture_dirs(Dir) ->
    [D || D <- element(2, file:list_dir(Dir)), lists:prefix("capture-", D)].

%% One line of `captures --format json': where it reaches, wall ns.
capture(L) ->
    Fired = int(L, "fired_ns"),
    First = Fired - int(L, "before_ns"),
    #{dir => str(L, "dir"), first => First, last => First + int(L, "span_ns")}.

%%% Text

utc(WallNs) ->
    calendar:system_time_to_rfc3339(WallNs div 1000000,
                                    [{unit, millisecond}, {offset, "Z"}, {time_designator, $\s}]).

lines(B) -> binary:split(B, <<"\n">>, [global, trim_all]).

has(B, P) -> binary:match(B, P) =/= nomatch.

int(Text, Key) ->
    {match, [V]} = re:run(Text, "\"" ++ Key ++ "\": (-?[0-9]+)", [{capture, all_but_first, list}]),
    list_to_integer(V).

str(Text, Key) ->
    {match, [V]} = re:run(Text, "\"" ++ Key ++ "\": \"([^\"]*)\"", [{capture, all_but_first, list}]),
    V.

fig(Fmt, Args) ->
    io:format("FIGURE " ++ Fmt ++ "~n", Args).

check(What, true, _) ->
    io:format("ok      ~ts~n", [What]);
check(What, _, Detail) ->
    put(failed, true),
    io:format("FAILED  ~ts: ~tp~n", [What, Detail]).
