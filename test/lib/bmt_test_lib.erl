%% Shared helpers for the Erlang test suites: where the project is, trace
%% directories, reading a trace back with babeltrace2 (and checking that
%% babeltrace2 agrees with what beamtrace:stop/1 reported), a distributed
%% test node, beams for target nodes, and small workload helpers. They work
%% the same under `make test` (test/lib/ct_group.sh sets BMT_ROOT and
%% BMT_TEST_TMP) and `rebar3 ct` (neither set).
-module(bmt_test_lib).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([root/0, cli/0, ebin/0, tmp_base/0, ensure_distributed/1, target_beams/2]).
-export([tmpdir/1, start/1, stop_check/1, stop_check/2, check_trace/1, check_trace/2,
         babeltrace/1, parse_line/1, cmd/2, select/2, field/2,
         assert_eq/3, fail/2, count_by_name/1, cleanup/0, discard_warnings_total/1,
         wait_status/2, wait_dead/1, wait_until/1, traces_list_file/0, flush/0]).
-export([view_line_ns/1, view_span_ns/2]).
-export([reread_init/1, reread_traces/0]).

%% The project's top directory: BMT_ROOT, else the one this module's
%% source is in (test/lib/), which rebar3 and erlc both record as an
%% absolute path.
root() ->
    case os:getenv("BMT_ROOT") of
        false ->
            Src = proplists:get_value(source, ?MODULE:module_info(compile)),
            filename:dirname(filename:dirname(filename:dirname(Src)));
        R -> R
    end.

%% The beamtrace command built by make.
cli() ->
    filename:join([root(), "priv", "beamtrace"]).

%% The directory beamtrace's beams were loaded from, for child nodes.
ebin() ->
    filename:dirname(code:which(beamtrace)).

%% Makes this node distributed (short names, a random name starting with
%% Prefix, the user's cookie as `erl -sname' would have it, which `peer'
%% nodes get too) unless it already is: the suites that talk to other nodes
%% call it from init_per_suite, so `rebar3 ct' needs no --sname. epmd is
%% started first, as `erl -sname' does.
ensure_distributed(Prefix) ->
    case node() of
        nonode@nohost ->
            _ = os:cmd("epmd -daemon"),
            ok = wait_epmd(200),
            Name = list_to_atom(Prefix ++ integer_to_list(rand:uniform(1 bsl 30), 36)),
            {ok, _} = net_kernel:start(Name, #{name_domain => shortnames}),
            ok;
        _ ->
            ok
    end.

%% `epmd -daemon' returns once it has forked, before the daemon listens:
%% on a loaded machine net_kernel:start/2 then found no epmd and failed
%% with nodistribution (OTP 29's sources suite, three test runs side by
%% side). Waits until epmd answers (ERL_EPMD_PORT's, as net_kernel will
%% ask), 50 ms at a time.
wait_epmd(0) ->
    {error, epmd_not_answering};
wait_epmd(Tries) ->
    case erl_epmd:names("localhost") of
        {ok, _} -> ok;
        {error, _} -> timer:sleep(50), wait_epmd(Tries - 1)
    end.

%% A directory under the suite's private directory holding only the beams
%% of Mods (test workloads compiled with the suites): the whole code path a
%% target node gets besides OTP's, so nothing of beamtrace is on it. Its
%% path is also put in BMT_TARGET_BEAMS for the tests' node commands.
target_beams(Config, Mods) ->
    Dir = filename:join(proplists:get_value(priv_dir, Config), "target"),
    ok = filelib:ensure_path(Dir),
    [{ok, _} = file:copy(code:which(M), filename:join(Dir, atom_to_list(M) ++ ".beam"))
     || M <- Mods],
    true = os:putenv("BMT_TARGET_BEAMS", Dir),
    Dir.

%% Where the tests write: BMT_TEST_TMP (the group's output directory under
%% make), else a directory under /tmp; made if missing.
tmp_base() ->
    Base = os:getenv("BMT_TEST_TMP", "/tmp/bmt_erl_tests"),
    ok = filelib:ensure_path(Base),
    Base.

%% A fresh, not yet existing directory under the group's output dir.
tmpdir(Name) ->
    filename:join(tmp_base(), lists:flatten(io_lib:format("~s-~p-~p",
        [Name, erlang:system_time(millisecond), erlang:unique_integer([positive])]))).

%% beamtrace:start/1 that must succeed; the dir is made fresh unless given.
%% Without `events', OTP's tracepoints: the tests count what a workload
%% makes, which the state dump of the node's processes would blur (the state
%% dump has tests of its own).
start(Opts0) ->
    Opts1 = maps:merge(#{events => ["org_erlang_dyntrace:*"]}, Opts0),
    Opts = case maps:is_key(dir, Opts1) of
               true -> Opts1;
               false -> Opts1#{dir => tmpdir("trace")}
           end,
    case beamtrace:start(Opts) of
        {ok, S} -> S;
        Other -> fail(start_failed, {Opts, Other})
    end.

%% Stops a session (a handle or [] for the default one) and checks the trace
%% with babeltrace2. Returns {Stats, Events}.
stop_check(S) ->
    stop_check(S, #{}).

stop_check(S, Expect) ->
    R = case S of
            [] -> beamtrace:stop();
            _ -> beamtrace:stop(S)
        end,
    case R of
        {ok, Stats} -> {Stats, check_trace(Stats, Expect)};
        Other -> fail(stop_failed, Other)
    end.

check_trace(Stats) ->
    check_trace(Stats, #{}).

%% babeltrace2 must exit 0, print nothing on stderr but discard warnings,
%% and print exactly `events' lines. The directory is appended to the list
%% the CLI cross-check reads at the end of the group.
check_trace(#{dir := Dir, events := N} = Stats, _Expect) ->
    {Status, Lines, Err} = babeltrace(Dir),
    assert_eq({babeltrace_status, Dir}, 0, Status),
    BadErr = [L || L <- binary:split(Err, <<"\n">>, [global, trim_all]),
                   not is_discard_warning(L)],
    assert_eq({babeltrace_stderr, Dir}, [], BadErr),
    assert_eq({babeltrace_lines_vs_events, Dir, Stats}, N, length(Lines)),
    %% In discard mode babeltrace2 reports the events stop counted as
    %% discarded (packet headers carry the running count). Seen: it can
    %% report one or a few fewer than stop (drops the last packet header
    %% did not carry); more would be an invented loss.
    case Stats of
        #{overwritten := 0, discarded := D} ->
            case discard_warnings_total(Err) of
                D -> ok;
                BD when BD < D ->
                    io:format("# note: ~s: stop discarded=~w, babeltrace2 reports ~w~n", [Dir, D, BD]);
                BD ->
                    assert_eq({babeltrace_discarded, Dir}, D, BD)
            end;
        _ -> ok
    end,
    ok = file:write_file(traces_list_file(), [Dir, $\s, integer_to_list(N), $\n], [append]),
    [parse_line(L) || L <- Lines].

%% babeltrace2 reports dropped events on stderr, one line each:
%% "WARNING: Tracer discarded N events between [...] and [...] in trace ..."
%% or, for a gap in packet sequence numbers (overwrite mode),
%% "WARNING: Tracer may have discarded events between ...".
is_discard_warning(L) ->
    re:run(L, <<"^WARNING: Tracer (may have )?discarded ">>) =/= nomatch.

%% Sum of the N in babeltrace2's "Tracer discarded N events" warnings.
discard_warnings_total(Err) ->
    case re:run(Err, <<"Tracer discarded ([0-9]+) events">>, [global, {capture, all_but_first, binary}]) of
        {match, Ms} -> lists:sum([binary_to_integer(N) || [N] <- Ms]);
        nomatch -> 0
    end.

traces_list_file() ->
    case os:getenv("BMT_TRACES_LIST") of
        false -> filename:join(tmp_base(), "traces.list");
        F -> F
    end.

%% The suite's own list of the traces its cases wrote (init_per_suite):
%% a fresh file in its private directory.
reread_init(Config) ->
    File = filename:join(proplists:get_value(priv_dir, Config), "traces.list"),
    ok = file:write_file(File, <<>>),
    true = os:putenv("BMT_TRACES_LIST", File),
    Config.

%% The suite's last case: every trace its cases wrote (each listed with
%% the event count beamtrace:stop/1 gave) is read again, after the cases
%% that might have touched it since, by babeltrace2 and by the beamtrace
%% command's `stats'; both counts must be stop's.
reread_traces() ->
    {ok, Bin} = file:read_file(traces_list_file()),
    Traces = [begin
                  [Dir, N] = binary:split(L, <<" ">>),
                  {binary_to_list(Dir), binary_to_integer(N)}
              end || L <- binary:split(Bin, <<"\n">>, [global, trim_all])],
    case Traces of
        [] ->
            {skip, "no trace to read again: the suite's other cases did not run"};
        _ ->
            Cli = cli(),
            Bad = [{Dir, N, #{babeltrace2 => B, stats => C}}
                   || {Dir, N} <- Traces,
                      B <- [babeltrace_count(Dir)], C <- [cli_count(Cli, Dir)],
                      {B, C} =/= {N, N}],
            io:format("re-read ~w traces, ~w events~n",
                      [length(Traces), lists:sum([N || {_, N} <- Traces])]),
            assert_eq(reread_counts, [], Bad)
    end.

babeltrace_count(Dir) ->
    {0, [Out], _} = cmd("/bin/sh", ["-c", "babeltrace2 \"$1\" | wc -l", "sh", Dir]),
    binary_to_integer(string:trim(Out)).

cli_count(Cli, Dir) ->
    case cmd(Cli, ["stats", Dir, "--format", "json"]) of
        {0, Lines, _} ->
            Text = iolist_to_binary(Lines),
            case re:run(Text, <<"\"events\"\\s*:\\s*([0-9]+)">>, [{capture, all_but_first, binary}]) of
                {match, [N]} -> binary_to_integer(N);
                nomatch -> {unparsed, Text}
            end;
        {Status, _, Err} ->
            {failed, Status, Err}
    end.

%% {ExitStatus, [Line], Stderr}
babeltrace(Dir) ->
    cmd("babeltrace2", [Dir]).

cmd(Exe, Args) ->
    ErrFile = tmpdir("stderr") ++ ".txt",
    ok = filelib:ensure_dir(ErrFile),
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", "f=$1; shift; exec \"$@\" 2>\"$f\"", "sh", ErrFile, Exe | Args]},
                      binary, exit_status, use_stdio, stream]),
    {Status, Out} = collect(Port, []),
    Err = case file:read_file(ErrFile) of
              {ok, E} -> E;
              _ -> <<>>
          end,
    _ = file:delete(ErrFile),
    {Status, binary:split(Out, <<"\n">>, [global, trim_all]), Err}.

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [D | Acc]);
        {Port, {exit_status, S}} -> {S, iolist_to_binary(lists:reverse(Acc))}
    after 120000 ->
        catch port_close(Port),
        {timeout, iolist_to_binary(lists:reverse(Acc))}
    end.

%% One babeltrace2 text line -> {TracepointName, #{Field => Value}}, Value a
%% binary (string fields) or an integer.
parse_line(Line) ->
    case re:split(Line, <<" org_erlang_(?:dyntrace|beamtrace):">>, [{parts, 2}]) of
        [_, Rest] ->
            [Name, Rest2] = binary:split(Rest, <<": ">>),
            %% skip "{ cpu_id = N }, "
            [_, Payload] = binary:split(Rest2, <<"}, { ">>),
            {binary_to_atom(Name), parse_fields(Payload, #{})};
        _ ->
            fail(unparsable_line, Line)
    end.

parse_fields(<<" }">>, Acc) -> Acc;
parse_fields(<<"}">>, Acc) -> Acc;
parse_fields(<<", ", Rest/binary>>, Acc) -> parse_fields(Rest, Acc);
parse_fields(Bin, Acc) ->
    [Key, Rest] = binary:split(Bin, <<" = ">>),
    {Value, Rest2} = parse_value(Rest),
    parse_fields(Rest2, Acc#{binary_to_atom(Key) => Value}).

parse_value(<<$", Rest/binary>>) -> parse_string(Rest, []);
parse_value(Bin) ->
    {match, [Num]} = re:run(Bin, <<"^-?[0-9]+">>, [{capture, first, binary}]),
    <<_:(byte_size(Num))/binary, Rest/binary>> = Bin,
    {binary_to_integer(Num), Rest}.

parse_string(<<$\\, C, Rest/binary>>, Acc) ->
    Ch = case C of
             $n -> $\n;
             $t -> $\t;
             $r -> $\r;
             _ -> C
         end,
    parse_string(Rest, [Ch | Acc]);
parse_string(<<$", Rest/binary>>, Acc) ->
    {list_to_binary(lists:reverse(Acc)), Rest};
parse_string(<<C, Rest/binary>>, Acc) ->
    parse_string(Rest, [C | Acc]).

%% Events of the given tracepoint name(s) whose fields match the given
%% partial map (values as lists or binaries).
select(Events, Pattern) when is_map(Pattern) ->
    P = maps:map(fun(_, V) when is_list(V) -> list_to_binary(V); (_, V) -> V end, Pattern),
    {Names, Fields} = case maps:take('$name', P) of
                          error -> {any, P};
                          {N, F} when is_list(N) -> {N, F};
                          {N, F} -> {[N], F}
                      end,
    [E || {Name, M} = E <- Events,
          Names =:= any orelse lists:member(Name, Names),
          maps:fold(fun(K, V, A) -> A andalso maps:get(K, M, '$none') =:= V end, true, Fields)].

field(K, {_, M}) -> maps:get(K, M).

count_by_name(Events) ->
    lists:foldl(fun({N, _}, A) -> maps:update_with(N, fun(C) -> C + 1 end, 1, A) end, #{}, Events).

assert_eq(_What, X, X) -> ok;
assert_eq(What, Expected, Got) -> fail(What, #{expected => Expected, got => Got}).

fail(What, Detail) ->
    erlang:error({assertion_failed, What, Detail}).

%% Leaves the node clean for the next test: no trace flags, no patterns, no
%% sessions.
cleanup() ->
    catch erlang:trace_pattern({'_', '_', '_'}, false, [local]),
    catch erlang:trace_pattern({'_', '_', '_'}, false, [global]),
    catch erlang:trace(all, false, [all]),
    [catch beamtrace:stop(S) || S <- catch beamtrace:sessions()],
    flush(),
    ok.

flush() ->
    receive _ -> flush() after 0 -> ok end.

%% Polls until process P has status Status (no timing assertion: the test
%% runner's timeout bounds it).
wait_status(P, Status) ->
    case erlang:process_info(P, status) of
        {status, Status} -> ok;
        undefined -> fail(process_gone, P);
        _ -> erlang:yield(), wait_status(P, Status)
    end.

wait_dead(P) ->
    case is_process_alive(P) of
        false -> ok;
        true -> timer:sleep(1), wait_dead(P)
    end.

%% Waits until Done() is true (the test case's timeout bounds the wait).
wait_until(Done) ->
    case Done() of
        true -> ok;
        false -> timer:sleep(5), wait_until(Done)
    end.

%% The time of a `beamtrace view --no-delta --gmt' line: ns since midnight
%% UTC.
view_line_ns(<<"[", H:2/binary, ":", M:2/binary, ":", S:2/binary, ".", Ns:9/binary, "]",
               _/binary>>) ->
    ((binary_to_integer(H) * 60 + binary_to_integer(M)) * 60 + binary_to_integer(S)) * 1000000000
        + binary_to_integer(Ns).

%% To - From of two such times: a span across midnight wraps (spans are
%% under 12 h; a slightly negative one, within a clock's error, stays).
view_span_ns(From, To) when To - From < -43200 * 1000000000 -> To - From + 86400 * 1000000000;
view_span_ns(From, To) -> To - From.
