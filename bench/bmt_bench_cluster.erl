%% Issue 11's figures (bench/cluster.sh runs this in a distributed node):
%%  links/0: what links cost a traced message, per message kind: a sender
%%  and a receiver, both traced with send and 'receive', links off and on
%%  (the difference is the fingerprint on both sides plus the 'receive'
%%  match spec), next to erlang:phash2/1 of the same message;
%%  cluster/1: three nodes on this host recorded with beamtrace:trace/2 and
%%  `nodes', R rounds: the clock offsets estimated (the true offset is 0 on
%%  one host, so the estimate is its own error), their error bounds, and
%%  the time to bring the three traces back and check the nodes.
%% Prints figures and SUMMARY| lines; asserts nothing (STYLE.md).
-module(bmt_bench_cluster).

-export([links/0, cluster/1, sink/0]).

-define(N, 20000).

kinds() ->
    [{"8-word tuple", {req, 1, 2, 3, 4, 5, 6, 7}},
     {"gen_server call", {'$gen_call', {self(), [alias | make_ref()]}, {get, <<"key">>, 3}}},
     {"1 KiB binary", {data, binary:copy(<<"x">>, 1024)}},
     {"100-key map", maps:from_list([{K, K} || K <- lists:seq(1, 100)])},
     {"10k-integer list", lists:seq(1, 10000)},
     {"1 MiB binary", {data, binary:copy(<<"x">>, 1 bsl 20)}}].

links() ->
    Dir = "bench/out/cluster/traces",
    ok = filelib:ensure_path(Dir),
    io:format("~-18s ~12s ~12s ~12s ~12s~n", ["message", "untraced", "links off", "links on",
                                              "phash2/1"]),
    [begin
         N = case Name of "1 MiB binary" -> 500; "10k-integer list" -> 2000; _ -> ?N end,
         Un = per_msg(Msg, N, none, Dir),
         Off = per_msg(Msg, N, false, Dir),
         On = per_msg(Msg, N, true, Dir),
         Hash = hash_ns(Msg, N),
         io:format("~-18s ~10.2f us ~10.2f us ~10.2f us ~10.2f us~n",
                   [Name, Un / 1000, Off / 1000, On / 1000, Hash / 1000]),
         io:format("SUMMARY|links per message (send+receipt), ~s|~.2f us|bounded|reference "
                   "(phash2/1 ~.2f us)~n", [Name, (On - Off) / 1000, Hash / 1000])
     end || {Name, Msg} <- kinds()],
    ok.

%% ns per message sent and received, the best of 5 rounds.
per_msg(Msg, N, Links, Dir) ->
    lists:min([round1(Msg, N, Links, Dir) || _ <- lists:seq(1, 5)]).

round1(Msg, N, Links, Dir) ->
    Self = self(),
    Sink = spawn(?MODULE, sink, []),
    Sender = spawn(fun() -> receive go -> ok end,
                            T0 = erlang:monotonic_time(nanosecond),
                            send_n(Sink, Msg, N),
                            Sink ! {done, self()},
                            receive drained -> ok end,
                            Self ! {time, erlang:monotonic_time(nanosecond) - T0}
                   end),
    Stop = case Links of
               none ->
                   fun() -> ok end;
               _ ->
                   {ok, T} = beamtrace:trace_async([send, 'receive'],
                                                   #{procs => [Sender, Sink], links => Links,
                                                     duration => 600000, buffer_size => 64 bsl 20,
                                                     dir => filename:join(Dir, integer_to_list(
                                                            erlang:unique_integer([positive])))}),
                   fun() -> {ok, #{dir := D}} = beamtrace:stop_trace(T), file:del_dir_r(D) end
           end,
    Sender ! go,
    Ns = receive {time, X} -> X end,
    Stop(),
    exit(Sink, kill),
    Ns div N.

send_n(_Sink, _Msg, 0) -> ok;
send_n(Sink, Msg, N) -> Sink ! Msg, send_n(Sink, Msg, N - 1).

sink() ->
    receive
        {done, From} -> From ! drained, sink();
        _ -> sink()
    end.

hash_ns(Msg, N) ->
    T0 = erlang:monotonic_time(nanosecond),
    _ = [erlang:phash2(Msg) || _ <- lists:seq(1, N)],
    (erlang:monotonic_time(nanosecond) - T0) div N.

%%% Three nodes

cluster([RoundsText]) ->
    Rounds = list_to_integer(RoundsText),
    Nodes = [start_peer(P) || P <- ["bmt_bench_a", "bmt_bench_b", "bmt_bench_c"]],
    Results = [round_cluster(Nodes) || _ <- lists:seq(1, Rounds)],
    Offsets = [abs(maps:get(offset_ns, C)) || {Cs, _, _} <- Results, C <- Cs],
    Bounds = [maps:get(error_ns, C) || {Cs, _, _} <- Results, C <- Cs],
    Rtts = [maps:get(rtt_ns, C) || {Cs, _, _} <- Results, C <- Cs],
    Collect = [Ms || {_, Ms, _} <- Results],
    Cli = [C || {_, _, C} <- Results],
    Linked = lists:sum([maps:get(linked, C) || C <- Cli]),
    ToTraced = lists:sum([maps:get(to_traced, C) || C <- Cli]),
    MsgMs = median([maps:get(messages_us, C) div 1000 || C <- Cli]),
    StatsMs = median([maps:get(stats_us, C) div 1000 || C <- Cli]),
    Events = median([maps:get(events, C) || C <- Cli]),
    io:format("clock offsets estimated, |estimate| (true offset 0): median ~b ns, max ~b ns; "
              "error bounds median ~b ns; best round trips median ~b ns (~b nodes x ~b rounds)~n",
              [median(Offsets), lists:max(Offsets), median(Bounds), median(Rtts), 3, Rounds]),
    io:format("bring back 3 traces and check the nodes: median ~b ms, max ~b ms~n",
              [median(Collect), lists:max(Collect)]),
    io:format("SUMMARY|clock offset error, one host (3 nodes x ~b)|median ~b ns, max ~b ns|"
              "< 100 us|~s~n",
              [Rounds, median(Offsets), lists:max(Offsets),
               case lists:max(Offsets) < 100000 of true -> "within target"; false -> "OVER target" end]),
    io:format("SUMMARY|bring back + check a 3-node trace|median ~b ms|reference|reference~n",
              [median(Collect)]),
    io:format("beamtrace messages on the 3-node trace (~b events, median): ~b ms; stats ~b ms; "
              "link coverage ~b of ~b traced sends to traced nodes (~.1f%)~n",
              [Events, MsgMs, StatsMs, Linked, ToTraced, 100 * Linked / max(1, ToTraced)]),
    io:format("SUMMARY|merge + match a 3-node trace (beamtrace messages, ~b events)|median ~b ms|"
              "reference|reference~n", [Events, MsgMs]),
    io:format("SUMMARY|link coverage, 3 nodes (linked / traced sends to traced nodes)|~.1f%|"
              "reference|reference~n", [100 * Linked / max(1, ToTraced)]),
    halt().

start_peer(Prefix) ->
    {ok, _, Node} = peer:start(#{name => list_to_atom(Prefix ++ integer_to_list(
                                                              erlang:unique_integer([positive]))),
                                 args => ["-setcookie", atom_to_list(erlang:get_cookie())]}),
    Node.

round_cluster(Nodes) ->
    Dir = filename:join("bench/out/cluster/traces",
                        "cl-" ++ integer_to_list(erlang:unique_integer([positive]))),
    %% Traffic between the traced nodes while they are traced: gen_server
    %% calls from each node to the next one's file server (request and
    %% reply cross nodes).
    Traffic = spawn_link(fun() -> timer:sleep(300), traffic(Nodes, 300) end),
    {ok, #{nodes := PerNode}} = beamtrace:trace([procs, send, 'receive'],
                                                #{nodes => Nodes, links => true,
                                                  duration => 1000, dir => Dir}),
    unlink(Traffic),
    Clocks = [maps:get(clock, S) || S <- maps:values(PerNode)],
    Ms = lists:max([maps:get(collect_ms, S) || S <- maps:values(PerNode)]),
    Cli = analyse(Dir),
    _ = file:del_dir_r(Dir),
    {Clocks, Ms, Cli}.

traffic(Nodes, N) ->
    Pairs = lists:zip(Nodes, tl(Nodes) ++ [hd(Nodes)]),
    [catch erpc:call(A, gen_server, call, [{file_server_2, B}, get_cwd]) || _ <- lists:seq(1, N),
                                                                              {A, B} <- Pairs],
    ok.

%% The C command line on the 3-node trace: `messages' (merge, resolve,
%% match) and `stats' (merge only), wall time with the process start, and
%% what messages found.
analyse(Dir) ->
    Bt = filename:absname("priv/beamtrace"),
    Time = fun(Args) ->
                   T0 = erlang:monotonic_time(microsecond),
                   Out = os:cmd(Bt ++ " " ++ Args ++ " " ++ Dir ++ " 2>/dev/null"),
                   {erlang:monotonic_time(microsecond) - T0, Out}
           end,
    {MsgUs, Msg} = Time("messages --format json"),
    {StatsUs, Stats} = Time("stats --format json"),
    Int = fun(Key, Text) ->
                  case re:run(Text, "\"" ++ Key ++ "\": ([0-9]+)", [{capture, all_but_first, list}]) of
                      {match, [V]} -> list_to_integer(V);
                      nomatch -> 0
                  end
          end,
    #{messages_us => MsgUs, stats_us => StatsUs, events => Int("events", Stats),
      linked => Int("linked", Msg), to_traced => Int("sends_to_traced_nodes", Msg)}.

median(L) ->
    lists:nth((length(L) + 1) div 2, lists:sort(L)).
