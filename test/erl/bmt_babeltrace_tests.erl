%% Runs after the other modules: every trace they wrote (listed with its
%% event count from beamtrace:stop/1 as "DIR EVENTS" lines) is read again
%% by babeltrace2, and by the beamtrace CLI's `stats' when it is built; the
%% counts must agree.
-module(bmt_babeltrace_tests).

-export([babeltrace_counts_test/0, cli_stats_test/0]).

traces() ->
    {ok, Bin} = file:read_file(bmt_test_lib:traces_list_file()),
    [begin
         [Dir, N] = binary:split(L, <<" ">>),
         {binary_to_list(Dir), binary_to_integer(N)}
     end || L <- binary:split(Bin, <<"\n">>, [global, trim_all])].

babeltrace_counts_test() ->
    Traces = traces(),
    true = length(Traces) > 0,
    Bad = [{Dir, N, Got} || {Dir, N} <- Traces,
                            Got <- [count_lines(Dir)], Got =/= N],
    io:format("# babeltrace2 re-read ~w traces, ~w events~n",
              [length(Traces), lists:sum([N || {_, N} <- Traces])]),
    bmt_test_lib:assert_eq(babeltrace_counts, [], Bad).

count_lines(Dir) ->
    {0, [Out], _} = bmt_test_lib:cmd("/bin/sh", ["-c", "babeltrace2 \"$1\" | wc -l", "sh", Dir]),
    binary_to_integer(string:trim(Out)).

cli_stats_test() ->
    Root = os:getenv("BMT_ROOT", "."),
    Cli = filename:join([Root, "priv", "beamtrace"]),
    case filelib:is_regular(Cli) of
        false ->
            {skip, "beamtrace CLI not built"};
        true ->
            Traces = traces(),
            Res = [{Dir, N, cli_events(Cli, Dir)} || {Dir, N} <- Traces],
            Bad = [R || {_, N, Got} = R <- Res, Got =/= N],
            bmt_test_lib:assert_eq(cli_stats_vs_babeltrace2, [], Bad)
    end.

cli_events(Cli, Dir) ->
    case bmt_test_lib:cmd(Cli, ["stats", Dir, "--format", "json"]) of
        {0, Lines, _} ->
            Text = iolist_to_binary(Lines),
            case re:run(Text, <<"\"events\"\\s*:\\s*([0-9]+)">>, [{capture, all_but_first, binary}]) of
                {match, [N]} -> binary_to_integer(N);
                nomatch -> {unparsed, Text}
            end;
        {Status, _, Err} ->
            {failed, Status, Err}
    end.
