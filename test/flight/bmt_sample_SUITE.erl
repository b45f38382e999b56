%% Sampling on a real node, against bmt_kv (whose clients count their own
%% gets): `sample => N' keeps about one call in N, every kept call with its
%% return; a process's `in' and `out' stay paired; past max_rate with
%% `on_max_rate => sample' the session keeps recording at a lower ratio,
%% says so in its figures and in the trace (sample_ratio events), and the
%% calls scaled back by the ratios in force are within 10% of what the
%% node counted itself, by this suite and by `beamtrace calls' (which
%% scales them back itself). With `on_max_rate => stop' (trace/2's
%% default) it stops, as before.
-module(bmt_sample_SUITE).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([ratio_and_pairs_test/1, running_pairs_test/1, max_rate_samples_test/1,
         max_rate_stops_test/1, capture_says_ratio_test/1, group_by_and_export_scaled_test/1]).

-import(bmt_test_lib, [tmpdir/1, assert_eq/3, fail/2]).
-import(bmt_flight_lib, [with_kv/2]).

-define(GET_TEXT, <<"bmt_kv:get/2">>).


%%% Common Test

suite() -> [{timetrap, {seconds, 180}}].

all() ->
    [ratio_and_pairs_test,
     running_pairs_test,
     max_rate_samples_test,
     max_rate_stops_test,
     capture_says_ratio_test,
     group_by_and_export_scaled_test].

init_per_suite(Config) -> Config.

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

%%% Helpers

gets() ->
    maps:get(gets, bmt_kv:counts()).

trace(Spec, Opts) ->
    case beamtrace:trace(Spec, maps:merge(#{dir => tmpdir("sample")}, Opts)) of
        {ok, Stats} -> Stats;
        Other -> fail(trace_failed, {Spec, Opts, Other})
    end.

%% Events in time order: [{TsNs, Name, Fields}].
events(Dir) ->
    lists:keysort(1, bmt_flight_lib:capture_events(Dir)).

%% The gets in a trace scaled back: each call counts the ratio in force for
%% calls at its time (sample_ratio events; 1 before any). Also returns the
%% raw calls, the returns, and whether every kept call has its return.
%% With {From, To} (trace clock), only the calls between them are counted.
scaled_calls(Events, Fun) ->
    scaled_calls(Events, Fun, {0, 1 bsl 63}).

scaled_calls(Events, Fun, {From, To}) ->
    In = fun(T) -> T >= From andalso T =< To end,
    {_, Scaled, Calls, Returns, Open} =
        lists:foldl(
          fun({_, sample_ratio, #{kind := <<"call">>, ratio := R}}, {_, S, C, Rt, O}) ->
                  {R, S, C, Rt, O};
             ({T, function_call, #{entry := E, pid := P}}, {R, S, C, Rt, O}) when E =:= Fun ->
                  {S1, C1} = case In(T) of
                                 true -> {S + R, C + 1};
                                 false -> {S, C}
                             end,
                  {R, S1, C1, Rt, maps:update_with(P, fun(N) -> N + 1 end, 1, O)};
             ({_, function_return, #{entry := E, pid := P}}, {R, S, C, Rt, O}) when E =:= Fun ->
                  {R, S, C, Rt + 1, maps:update_with(P, fun(N) -> N - 1 end, -1, O)};
             (_, Acc) -> Acc
          end, {1, 0, 0, 0, #{}}, Events),
    %% A call still running when the flags came off has no return: at most
    %% one a process (the trace's end cut it), never a return without its
    %% call.
    Paired = lists:all(fun(N) -> N =:= 0 orelse N =:= 1 end, maps:values(Open)),
    Cut = length([N || N <- maps:values(Open), N =:= 1]),
    #{scaled => Scaled, calls => Calls, returns => Returns, paired => Paired, cut => Cut}.

%% The largest call ratio in force between trace clock times From and To
%% (the one set last before From counts; 1 before any), and the largest
%% the trace ever set: {InWindow, Ever}.
call_ratios(Events, {From, To}) ->
    Sets = [{T, R} || {T, sample_ratio, #{kind := <<"call">>, ratio := R}} <- Events],
    AtFrom = lists:foldl(fun({T, R}, _) when T =< From -> R; (_, Acc) -> Acc end, 1, Sets),
    {lists:max([AtFrom | [R || {T, R} <- Sets, T > From, T =< To]]),
     lists:max([1 | [R || {_, R} <- Sets]])}.

%% Until the node made Target gets in all (bounded: 100 ms steps).
wait_gets(_Target, 0) ->
    ok;
wait_gets(Target, Tries) ->
    case gets() >= Target of
        true -> ok;
        false -> timer:sleep(100), wait_gets(Target, Tries - 1)
    end.

%% --begin and --end of the trace clock times From and To, as +durations
%% from the trace's first event, First.
window_args(First, {From, To}) ->
    Span = fun(T) -> "+" ++ integer_to_list(T - First) ++ "ns" end,
    ["--begin", Span(From), "--end", Span(To)].

%% The integer after "Key": in Text (0 when absent; export writes no
%% space after the colon, calls one).
json_int(Text, Key) ->
    case re:run(Text, <<"\"", Key/binary, "\": ?([0-9]+)">>, [{capture, all_but_first, binary}]) of
        {match, [V]} -> binary_to_integer(V);
        nomatch -> 0
    end.

%% `beamtrace calls --format json' of Dir between trace clock times From
%% and To (as +durations from the trace's first event, First): the count
%% and kept_count of bmt_kv:get/2's row, the sampling object's ratio_max
%% and scaled_back, and stderr. (The JSON has one function per line; OTP
%% 25 has no json module; bmt_test_lib:cmd/2 gives stdout's lines.)
cli_gets(Dir, First, {From, To}) ->
    Span = fun(T) -> "+" ++ integer_to_list(T - First) ++ "ns" end,
    {0, Out, Err} = bmt_test_lib:cmd(bmt_test_lib:cli(), ["calls", "--format", "json",
                                                          "--begin", Span(From),
                                                          "--end", Span(To), Dir]),
    [Row] = [L || L <- Out,
                  binary:match(L, <<"\"function\": \"", ?GET_TEXT/binary, "\"">>) =/= nomatch],
    Int = fun(Text, Key) ->
                  {match, [V]} = re:run(Text, <<"\"", Key/binary, "\": ([0-9]+|true|false)">>,
                                        [{capture, all_but_first, binary}]),
                  case V of
                      <<"true">> -> true;
                      <<"false">> -> false;
                      _ -> binary_to_integer(V)
                  end
          end,
    {match, [Sampling]} = re:run(iolist_to_binary(Out), <<"\"sampling\": (\\{[^}]*\\})">>,
                                 [{capture, all_but_first, binary}]),
    {#{count => Int(Row, <<"count">>), kept => Int(Row, <<"kept_count">>)},
     #{ratio_max => Int(Sampling, <<"ratio_max">>), scaled_back => Int(Sampling, <<"scaled_back">>)},
     Err}.

within(Got, Expected, Pct) ->
    abs(Got - Expected) * 100 =< Expected * Pct.

%% Traces Spec for Ms once set up (or, with {gets, N}, until the node made
%% N gets: a statistical check needs enough of them, however loaded the
%% machine), counting the node's gets between two moments inside the
%% trace, on the trace clock too: {Stats, {Gets, From, To}}.
trace_counting(Spec, Opts, Until) ->
    {ok, T} = beamtrace:trace_async(Spec, maps:merge(#{dir => tmpdir("sample"),
                                                       duration => infinity}, Opts)),
    timer:sleep(200),
    {C0, G0} = {beamtrace:clock_ns(), gets()},
    case Until of
        {gets, N} -> wait_gets(G0 + N, 600);
        Ms -> timer:sleep(Ms)
    end,
    {G1, C1} = {gets(), beamtrace:clock_ns()},
    timer:sleep(200),
    case beamtrace:stop_trace(T) of
        {ok, Stats} -> {Stats, {G1 - G0, C0, C1}};
        Other -> fail(trace_failed, {Spec, Opts, Other})
    end.

%% sample => 10: about one get in ten is recorded, each with its return,
%% and the gets scaled back are within 10% of the node's own count (over
%% 10,000 gets: about 1,000 kept, 10% is over 3 standard deviations).
ratio_and_pairs_test(_Config) ->
    with_kv(#{clients => 4}, fun() ->
        {#{dir := Dir, sampling := #{ratios := #{call := 10}}}, {Made, C0, C1}} =
            trace_counting("bmt_kv:get/2 -> return", #{sample => 10}, {gets, 10000}),
        Events = events(Dir),
        #{calls := Calls, returns := Returns, paired := Paired, cut := Cut} =
            scaled_calls(Events, ?GET_TEXT),
        #{scaled := Scaled, calls := InWindow} = scaled_calls(Events, ?GET_TEXT, {C0, C1}),
        io:format("# ~b gets made, ~b recorded, ~b scaled back~n", [Made, InWindow, Scaled]),
        assert_eq(some_recorded, true, InWindow > 200),
        assert_eq({about_one_in_ten, InWindow, Made}, true, within(Scaled, Made, 10)),
        assert_eq(returns, Calls - Cut, Returns),
        assert_eq(each_call_with_its_return, true, Paired),
        %% The command says the trace is sampled, and by how much.
        {0, _, Err} = bmt_test_lib:cmd(bmt_test_lib:cli(), ["calls", Dir]),
        assert_eq({calls_says_sampled, Err}, true,
                  binary:match(Err, <<"sampled 1/10 (at most; of its call,">>) =/= nomatch)
    end).

%% sample running: each kept `in' has its `out', per process.
running_pairs_test(_Config) ->
    with_kv(#{clients => 4}, fun() ->
        %% Until the clients have made 800 gets (each sleeps between
        %% two, so is scheduled out and in again), not for a time: on a
        %% loaded machine 2 s held as few as 30 schedulings per client.
        {#{dir := Dir} = Stats, _} =
            trace_counting([running], #{sample => #{running => 4}}, {gets, 800}),
        Sched = [{P, T} || {_, process_scheduled, #{pid := P, type := T}} <- events(Dir)],
        assert_eq({some_recorded, length(Sched), Stats}, true, length(Sched) > 100),
        ByPid = lists:foldl(fun({P, T}, M) -> maps:update_with(P, fun(L) -> [T | L] end, [T], M) end,
                            #{}, Sched),
        [assert_eq({alternates, P}, true, alternates(lists:reverse(Ts)))
         || {P, Ts} <- maps:to_list(ByPid)]
    end).

%% in, out, in, out, ... (exiting variants count as in and out); a trace
%% may end with an in.
alternates([]) -> true;
alternates([In]) -> lists:member(In, [<<"in">>, <<"in_exiting">>]);
alternates([In, Out | Rest]) ->
    lists:member(In, [<<"in">>, <<"in_exiting">>]) andalso
        lists:member(Out, [<<"out">>, <<"out_exiting">>, <<"out_exited">>]) andalso
        alternates(Rest).

%% Past max_rate with on_max_rate sample: the session keeps recording (it
%% ends by its duration), at a lower ratio said in the figures and the
%% trace; the gets scaled back are within 10% of the node's own count.
max_rate_samples_test(_Config) ->
    with_kv(#{clients => 4, pace_ms => 0}, fun() ->
        {R, {Made, C0, C1}} = trace_counting("bmt_kv:get/2 -> return",
                                             #{max_rate => 20000, on_max_rate => sample}, 4000),
        #{dir := Dir, reason := Reason, sampling := #{ratios := #{call := Ratio},
                                                       reactions := Reactions}} = R,
        assert_eq(kept_recording, stop, Reason),
        assert_eq(lowered, true, Ratio > 1 andalso Reactions >= 1),
        Events = events(Dir),
        Changes = [E || {_, sample_ratio, #{reason := <<"max_rate">>}} = E <- Events],
        assert_eq(said_in_trace, true, Changes =/= []),
        #{paired := Paired} = scaled_calls(Events, ?GET_TEXT),
        #{scaled := Scaled, calls := Calls} = scaled_calls(Events, ?GET_TEXT, {C0, C1}),
        io:format("# ~b gets made, ~b recorded, ~b scaled back, ratio ~b after ~b changes~n",
                  [Made, Calls, Scaled, Ratio, Reactions]),
        assert_eq({scaled_within_10pct, Scaled, Made}, true, within(Scaled, Made, 10)),
        assert_eq(pairs, true, Paired),
        %% The command scales them back too, and says so.
        First = element(1, hd(Events)),
        {#{count := Count, kept := Kept}, Sampling, Err} = cli_gets(Dir, First, {C0, C1}),
        io:format("# calls: ~b scaled back, ~b kept; ~p~n", [Count, Kept, Sampling]),
        assert_eq({calls_scaled_within_10pct, Count, Made}, true, within(Count, Made, 10)),
        assert_eq({kept_clearly_fewer, Kept, Made}, true, Kept * 10 < Made * 9),
        %% Its ratio_max is at least the largest ratio in force between
        %% C0 and C1, and no ratio the trace never had (the session's
        %% last ratio, Ratio, may have been set after C1).
        #{scaled_back := true, ratio_max := Max} = Sampling,
        {InWindow, Ever} = call_ratios(Events, {C0, C1}),
        assert_eq({ratio_max, Max, InWindow, Ever}, true, Max >= InWindow andalso Max =< Ever),
        assert_eq({calls_says_scaled, Err}, true,
                  binary:match(Err, <<"counts and totals are scaled back">>) =/= nomatch)
    end).

%% trace/2's default: past max_rate it stops, as before.
max_rate_stops_test(_Config) ->
    with_kv(#{clients => 4, pace_ms => 0}, fun() ->
        R = trace("bmt_kv:get/2 -> return", #{max_rate => 20000, duration => 10000}),
        assert_eq(stopped, max_rate, maps:get(reason, R)),
        assert_eq(no_sampling, false, maps:is_key(sampling, R))
    end).

%% The two readings of a sampled trace that scaled nothing back before:
%% `calls --group-by return' (each value's row counts the calls its kept
%% ones stand for) and `export' (each event kept carries args.stands_for,
%% the ratio in force at it). Over the same window, the rows' counts of
%% bmt_kv:get/2 summed, and its call slices' stands_for summed, are
%% within 10% of the node's own count, the calls kept clearly fewer, and
%% both say they are sampled (10,000 gets: about 1,000 kept).
group_by_and_export_scaled_test(_Config) ->
    with_kv(#{clients => 4}, fun() ->
        {#{dir := Dir}, {Made, C0, C1}} =
            trace_counting("bmt_kv:get/2 -> return", #{sample => 10, results => true},
                           {gets, 10000}),
        Window = window_args(element(1, hd(events(Dir))), {C0, C1}),
        Cli = bmt_test_lib:cli(),
        {0, Out, Err} = bmt_test_lib:cmd(Cli, ["calls", "--group-by", "return", "--format",
                                               "json"] ++ Window ++ [Dir]),
        Rows = [L || L <- Out, binary:match(L, <<"{\"function\": \"", ?GET_TEXT/binary,
                                                 "\", \"value\": ">>) =/= nomatch],
        Count = lists:sum([json_int(R, <<"count">>) || R <- Rows]),
        Kept = lists:sum([json_int(R, <<"kept_count">>) || R <- Rows]),
        {0, Export, ExportErr} = bmt_test_lib:cmd(Cli, ["export"] ++ Window ++ [Dir]),
        Slices = [L || L <- Export, binary:match(L, <<"\"cat\":\"call\"">>) =/= nomatch,
                       binary:match(L, <<"\"name\":\"", ?GET_TEXT/binary, "\"">>) =/= nomatch],
        Stands = lists:sum([max(1, json_int(S, <<"stands_for">>)) || S <- Slices]),
        io:format("# ~b gets made; group-by: ~b rows, ~b scaled back, ~b kept; export: ~b "
                  "slices standing for ~b~n", [Made, length(Rows), Count, Kept, length(Slices),
                                              Stands]),
        assert_eq({group_by_scaled_within_10pct, Count, Made}, true, within(Count, Made, 10)),
        assert_eq({group_by_kept_fewer, Kept, Made}, true, Kept * 10 < Made * 9),
        assert_eq({group_by_says_scaled, Err}, true,
                  binary:match(Err, <<"counts and totals are scaled back">>) =/= nomatch),
        assert_eq({export_scaled_within_10pct, Stands, Made}, true, within(Stands, Made, 10)),
        assert_eq({export_kept_fewer, length(Slices), Made}, true, length(Slices) * 10 < Made * 9),
        assert_eq({export_says_so, ExportErr}, true,
                  binary:match(ExportErr, <<"args.stands_for">>) =/= nomatch),
        assert_eq(export_labels_the_group, true,
                  lists:any(fun(L) -> binary:match(L, <<"\"process_labels\"">>) =/= nomatch end,
                            Export))
    end).

%% A sampled flight recording's capture says, in its metadata, the ratios
%% in force where its window begins; the capture's own sample_ratio
%% events (if any fall in the window) come after.
capture_says_ratio_test(_Config) ->
    with_kv(#{clients => 2}, fun() ->
        {ok, F} = beamtrace:flight("bmt_kv:get/2 -> return",
                                   #{dir => tmpdir("sample"), triggers => ["probe"],
                                     window => 1000, 'after' => 200, sample => #{call => 5}}),
        timer:sleep(1500),
        true = beamtrace:trigger(now),
        bmt_flight_lib:wait_captures(F, 1),
        {ok, #{captures := [C]}} = beamtrace:stop_flight(F),
        Env = bmt_flight_lib:env(C),
        assert_eq(ratio_in_metadata, <<"5">>, maps:get(<<"beamtrace_sample_call">>, Env))
    end).
