%% User probes, user tags and the dyntrace compatibility module, on a real
%% node, read back with babeltrace2. A Common Test suite, run by
%% test/probes/run.sh; each case records into its own directory.
-module(bmt_probes_SUITE).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).
-export([all/0, suite/0, init_per_testcase/2, end_per_testcase/2]).
-export([no_listener_returns_false/1, probe_fields/1, probe_shapes/1, probe_bad_arguments/1,
         pn_labels/1, tag_api/1, tag_spreads_through_gen_server_call/1,
         tag_not_spread_without_spreading/1, fuzz_user_probe_nifs/1,
         dyntrace_install_and_uninstall/1, dyntrace_survives_reload/1,
         dyntrace_tracer_records/1,
         event_clock/1, buffer_fits_largest_user_probe/1]).

%% These cases give the probes what their specs refuse, on purpose (dialyzer).
-dialyzer({[no_improper_lists, no_fail_call], [probe_bad_arguments/1, tag_api/1]}).

-define(EXPECT(Cond, What), (Cond) orelse erlang:error({failed, What})).

%%% Common Test

suite() -> [{timetrap, {seconds, 60}}].

all() ->
    [no_listener_returns_false, probe_fields, probe_shapes, probe_bad_arguments,
     pn_labels, tag_api, tag_spreads_through_gen_server_call,
     tag_not_spread_without_spreading, fuzz_user_probe_nifs,
     dyntrace_install_and_uninstall, dyntrace_survives_reload, dyntrace_tracer_records,
     event_clock,
     buffer_fits_largest_user_probe].

init_per_testcase(Case, Config) ->
    [{dir, filename:join(proplists:get_value(priv_dir, Config), atom_to_list(Case))} | Config].

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

dir(Config) -> proplists:get_value(dir, Config).

%% Events of a trace as {Name, #{Field => Value}} via babeltrace2.
events(Dir) ->
    Out = os:cmd("babeltrace2 --no-delta " ++ Dir ++ " 2>&1"),
    [parse(L) || L <- string:split(Out, "\n", all), L =/= ""].

parse(Line) ->
    {match, [Name, Fields]} =
        re:run(Line, "org_erlang_dyntrace:([a-z_0-9]+): \\{ cpu_id = [0-9]+ \\}, \\{ (.*) \\}$",
               [{capture, all_but_first, list}, unicode]),
    {list_to_atom(Name), fields(Fields)}.

fields(Text) ->
    {match, Pairs} = re:run(Text, "([a-z0-9_]+) = (\"(?:[^\"\\\\]|\\\\.)*\"|-?[0-9]+)",
                            [global, {capture, all_but_first, list}]),
    maps:from_list([{list_to_atom(K), value(V)} || [K, V] <- Pairs]).

value([$" | Rest]) -> lists:droplast(Rest);
value(Int) -> list_to_integer(Int).

with_session(Dir, Events, Fun) ->
    {ok, S} = beamtrace:start(#{dir => Dir, events => Events}),
    try Fun(S) after {ok, _} = beamtrace:stop(S) end,
    events(Dir).

%%% Tests

no_listener_returns_false(_Config) ->
    %% LTTng may be loaded, but no LTTng session enables user probes here.
    ?EXPECT(beamtrace:p(1, "x") =:= false, p_without_listener),
    ?EXPECT(beamtrace:pn(3, 1) =:= false, pn_without_listener),
    ?EXPECT(beamtrace:user_trace_s1("x") =:= false, s1_without_listener),
    ok.

probe_fields(Config) ->
    Dir = dir(Config),
    Self = pid_to_list(self()),
    Evs = with_session(Dir, ["org_erlang_dyntrace:user_trace_*"], fun(_) ->
              beamtrace:put_tag("GGOOOAAALL!!!!!"),
              true = beamtrace:p(7, 8, 9, "one", <<"four">>),
              true = beamtrace:p(),
              true = beamtrace:p(-5, [<<"io">>, $l, "ist"]),
              true = beamtrace:pn(1023, 1, 2, 3, 4, "a", "b", "c", "d"),
              true = beamtrace:user_trace_s1(["hello ", <<"world">>]),
              beamtrace:put_tag(undefined)
          end),
    [{user_trace_i4s4, E1}, {user_trace_i4s4, E2}, {user_trace_i4s4, E3},
     {user_trace_n, E4}, {user_trace_s1, E5}] = Evs,
    ?EXPECT(E1 =:= #{pid => Self, tag => "GGOOOAAALL!!!!!", i1 => 7, i2 => 8, i3 => 9, i4 => 0,
                     s1 => "one", s2 => "four", s3 => "", s4 => ""}, E1),
    ?EXPECT(maps:with([i1, s1], E2) =:= #{i1 => 0, s1 => ""}, E2),
    ?EXPECT(maps:with([i1, s1], E3) =:= #{i1 => -5, s1 => "iolist"}, E3),
    ?EXPECT(E4 =:= #{label => 1023, pid => Self, tag => "GGOOOAAALL!!!!!", i1 => 1, i2 => 2,
                     i3 => 3, i4 => 4, s1 => "a", s2 => "b", s3 => "c", s4 => "d"}, E4),
    ?EXPECT(E5 =:= #{pid => Self, tag => "GGOOOAAALL!!!!!", message => "hello world"}, E5),
    ok.

probe_shapes(Config) ->
    Dir = dir(Config),
    with_session(Dir, ["*:user_trace_i4s4"], fun(_) ->
        %% OTP's rule: up to 4 integers first, then up to 4 strings.
        [{'EXIT', {function_clause, _}} = (catch erlang:apply(beamtrace, p, Args))
         || Args <- [["Hello", 1], [1, "a", 2], [1, 2, 3, 4, 5], ["a", "b", "c", "d", "e"]]],
        true = beamtrace:p(1, 2, 3, 4, "a", "b", "c", "d"),
        true = beamtrace:p("a", "b", "c", "d"),
        ok
    end),
    ok.

probe_bad_arguments(Config) ->
    Dir = dir(Config),
    Long = lists:duplicate(1025, $x),
    Evs = with_session(Dir, ["*:user_trace_*"], fun(_) ->
        {'EXIT', {badarg, _}} = (catch beamtrace:p(Long)),
        {'EXIT', {badarg, _}} = (catch beamtrace:p(1, [a | b])),
        {'EXIT', {badarg, _}} = (catch beamtrace:p({tuple})),
        {'EXIT', {badarg, _}} = (catch beamtrace:user_trace_s1(Long)),
        true = beamtrace:p(lists:duplicate(1024, $y)),
        %% An integer beyond 64 bits counts as 0, as OTP's probe did.
        true = beamtrace:p(1 bsl 70),
        %% A tag over 1024 bytes is dropped, not cut.
        beamtrace:put_tag(Long),
        true = beamtrace:p(1),
        beamtrace:put_tag(undefined),
        ok
    end),
    [{_, A}, {_, B}, {_, C}] = Evs,
    ?EXPECT(length(maps:get(s1, A)) =:= 1024, A),
    ?EXPECT(maps:get(i1, B) =:= 0, B),
    ?EXPECT(maps:get(tag, C) =:= "", C),
    ok.

pn_labels(Config) ->
    Dir = dir(Config),
    with_session(Dir, ["*:user_trace_n"], fun(_) ->
        [{'EXIT', {badarg, _}} = (catch beamtrace:pn(L)) || L <- [-1, 1024, foo, 1.0]],
        [true = beamtrace:pn(L) || L <- [0, 950, 951, 1023]],
        ok
    end),
    ok.

tag_api(_Config) ->
    undefined = beamtrace:get_tag(),
    undefined = beamtrace:put_tag("abc"),
    <<"abc">> = beamtrace:get_tag(),
    <<"abc">> = beamtrace:get_tag_data(),
    <<"abc">> = beamtrace:put_tag(<<"déf"/utf8>>),
    <<"déf"/utf8>> = beamtrace:get_tag(),
    {1, <<"déf"/utf8>>} = Saved = beamtrace:spread_tag(true),
    {3, _} = beamtrace:spread_tag(false),
    true = beamtrace:restore_tag(Saved),
    {1, _} = beamtrace:spread_tag(true),
    true = beamtrace:restore_tag({0, []}),
    undefined = beamtrace:get_tag_data(),
    {'EXIT', {badarg, _}} = (catch beamtrace:spread_tag('maybe')),
    {'EXIT', {badarg, _}} = (catch beamtrace:restore_tag(true)),
    ok.

%% The issue's case: a tag put before a gen_server:call shows up in the
%% probes the callee fires.
tag_spreads_through_gen_server_call(Config) ->
    Dir = dir(Config),
    {ok, Server} = gen_server:start(bmt_probe_server, [], []),
    Evs = with_session(Dir, ["*:user_trace_i4s4"], fun(_) ->
        beamtrace:put_tag("request-17"),
        Saved = beamtrace:spread_tag(true),
        ok = gen_server:call(Server, fire),
        true = beamtrace:restore_tag(Saved),
        beamtrace:put_tag(undefined),
        ok = gen_server:call(Server, fire)
    end),
    gen_server:stop(Server),
    ServerPid = pid_to_list(Server),
    [{_, First}, {_, Second}] = Evs,
    ?EXPECT(First =:= (First#{pid := ServerPid, tag := "request-17"}), First),
    %% The caller stopped spreading: its next call carries no tag, and the
    %% server dropped the one it had received.
    ?EXPECT(maps:get(tag, Second) =:= "", Second),
    ok.

tag_not_spread_without_spreading(Config) ->
    Dir = dir(Config),
    Self = self(),
    Evs = with_session(Dir, ["*:user_trace_i4s4"], fun(_) ->
        beamtrace:put_tag("private"),
        P = spawn(fun() -> receive go -> beamtrace:p(1), Self ! done end end),
        P ! go,
        receive done -> ok end,
        beamtrace:put_tag(undefined)
    end),
    [{_, E}] = Evs,
    ?EXPECT(maps:get(tag, E) =:= "", E),
    ok.

%% Random terms in every slot of every user-probe NIF: the VM never crashes;
%% each call returns a boolean or raises badarg, and the trace stays valid.
fuzz_user_probe_nifs(Config) ->
    Dir = dir(Config),
    rand:seed(exsss, {17, 42, 7}),
    {ok, S} = beamtrace:start(#{dir => Dir, events => ["*:user_trace_*"]}),
    Results = [fuzz_one() || _ <- lists:seq(1, 3000)],
    %% true: recorded, or dropped (and counted) in a full ring: a loaded
    %% machine's consumer can fall behind 3,000 probes of up to 5 MB.
    {ok, #{events := N, discarded := D}} = beamtrace:stop(S),
    Trues = length([R || R <- Results, R =:= true]),
    ?EXPECT(Trues =:= N + D, {recorded, N, discarded, D, returned_true, Trues}),
    ?EXPECT(length(events(Dir)) =:= N, babeltrace2_count),
    ok.

%% Through the exported entry points that pass their arguments straight to
%% the NIFs: user_trace_s1/1, user_trace_i4s4/9, and pn/1..9 (whose wrapper
%% only reorders slots, so shapes it rejects raise function_clause).
fuzz_one() ->
    {Fun, Args} = case rand:uniform(3) of
                      1 -> {user_trace_s1, [random_term(3)]};
                      2 -> {user_trace_i4s4, [random_term(3) || _ <- lists:seq(1, 9)]};
                      3 -> {pn, [random_term(1) | [random_term(3) || _ <- lists:seq(1, rand:uniform(8))]]}
                  end,
    try erlang:apply(beamtrace, Fun, Args) of
        B when is_boolean(B) -> B
    catch error:badarg -> badarg;
          error:function_clause -> function_clause
    end.

random_term(0) -> rand:uniform(1000);
random_term(D) ->
    case rand:uniform(12) of
        1 -> rand:uniform(1 bsl 70) - (1 bsl 69);
        2 -> list_to_atom("a" ++ integer_to_list(rand:uniform(5)));
        3 -> random_binary(rand:uniform(3000));
        4 -> [random_term(D - 1) || _ <- lists:seq(1, rand:uniform(5))];
        5 -> [random_term(D - 1) | random_term(D - 1)];
        6 -> lists:duplicate(rand:uniform(2000), $z);
        7 -> {random_term(D - 1), random_term(D - 1)};
        8 -> rand:uniform(1024) - 1;
        9 -> 1.5;
        10 -> self();
        11 -> deep(rand:uniform(200));
        _ -> "short"
    end.

random_binary(N) -> << <<(rand:uniform(255))>> || _ <- lists:seq(1, N) >>.
deep(0) -> [];
deep(N) -> [deep(N - 1)].

dyntrace_install_and_uninstall(_Config) ->
    Otp = code:which(dyntrace),
    ?EXPECT(is_list(Otp) andalso string:find(Otp, "runtime_tools") =/= nomatch, Otp),
    ok = beamtrace:install_dyntrace(),
    Ours = code:which(dyntrace),
    ?EXPECT(string:find(Ours, "priv/compat") =/= nomatch, Ours),
    true = dyntrace:available(),
    ok = beamtrace:uninstall_dyntrace(),
    ?EXPECT(code:which(dyntrace) =:= Otp, code:which(dyntrace)),
    %% OTP's module on a stock VM: its probes report no dynamic tracing.
    ?EXPECT(dyntrace:p(1) =/= true, otp_p),
    ok = beamtrace:install_dyntrace(),
    ok = beamtrace:uninstall_dyntrace(),
    ok.

%% The seed's first step after installing: `l(dyntrace)'. It reloads the
%% stand-in, not OTP's module (whose probes raise nif_not_loaded here),
%% until uninstall_dyntrace/0, which takes the stand-in off the code path.
dyntrace_survives_reload(_Config) ->
    Otp = code:which(dyntrace),
    ok = beamtrace:install_dyntrace(),
    Ours = code:which(dyntrace),
    {module, dyntrace} = c:l(dyntrace),
    ?EXPECT(code:which(dyntrace) =:= Ours, {after_l, code:which(dyntrace)}),
    ?EXPECT(is_boolean(dyntrace:p(1)), p_after_l),
    ?EXPECT(is_boolean(dyntrace:pn(3, "x")), pn_after_l),
    true = dyntrace:available(),
    Compat = filename:dirname(Ours),
    ?EXPECT(hd(code:get_path()) =:= Compat, {path, hd(code:get_path())}),
    ok = beamtrace:uninstall_dyntrace(),
    ?EXPECT(code:which(dyntrace) =:= Otp, {after_uninstall, code:which(dyntrace)}),
    ?EXPECT(not lists:member(Compat, code:get_path()), compat_left_on_path),
    {module, dyntrace} = c:l(dyntrace),
    ?EXPECT(code:which(dyntrace) =:= Otp, {after_uninstall_l, code:which(dyntrace)}),
    ok.

dyntrace_tracer_records(Config) ->
    Dir = dir(Config),
    ok = beamtrace:install_dyntrace(),
    Evs = with_session(Dir, ["*:process_register", "*:user_trace_i4s4"], fun(_) ->
        erlang:trace(new, true, [procs, {tracer, dyntrace, []}]),
        Self = self(),
        P = spawn(fun() ->
                      register(bmt_dyntrace_test, self()),
                      dyntrace:put_tag("old code"),
                      true = dyntrace:p(42, "via dyntrace"),
                      Self ! done
                  end),
        receive done -> ok end,
        erlang:trace(all, false, [procs]),
        put(child, pid_to_list(P))
    end),
    ok = beamtrace:uninstall_dyntrace(),
    Child = get(child),
    ?EXPECT(lists:member({process_register, #{pid => Child, name => "bmt_dyntrace_test",
                                              type => "register"}}, Evs), Evs),
    ?EXPECT(lists:member({user_trace_i4s4, #{pid => Child, tag => "old code", i1 => 42, i2 => 0,
                                             i3 => 0, i4 => 0, s1 => "via dyntrace", s2 => "",
                                             s3 => "", s4 => ""}}, Evs), Evs),
    ok.

%% Event times (TSC-based, anchored to CLOCK_MONOTONIC, shifted to the epoch
%% by the CTF clock offset) fall between wall-clock readings taken around
%% the probes, within a millisecond, and never go backwards. Probes from
%% two processes exercise two threads where the VM has two schedulers.
event_clock(Config) ->
    Dir = dir(Config),
    {ok, S} = beamtrace:start(#{dir => Dir, events => ["*:user_trace_i4s4"]}),
    T0 = os:system_time(nanosecond),
    Self = self(),
    Pids = [spawn(fun() ->
                          [begin beamtrace:p(I), timer:sleep(1) end || I <- lists:seq(1, 30)],
                          Self ! {done, self()}
                  end) || _ <- [1, 2]],
    [receive {done, P} -> ok end || P <- Pids],
    T1 = os:system_time(nanosecond),
    {ok, #{events := 60}} = beamtrace:stop(S),
    Out = os:cmd("babeltrace2 --clock-seconds --no-delta " ++ Dir),
    Times = [begin
                 [Sec, Ns] = string:split(T, "."),
                 list_to_integer(Sec) * 1000000000 + list_to_integer(Ns)
             end || [T] <- element(2, re:run(Out, "^\\[([0-9]+\\.[0-9]+)\\]",
                                               [global, multiline, {capture, all_but_first, list}]))],
    ?EXPECT(length(Times) =:= 60, {count, length(Times)}),
    ?EXPECT(lists:all(fun(T) -> T >= T0 - 1000000 andalso T =< T1 + 1000000 end, Times),
            {out_of_range, T0, T1, lists:min(Times), lists:max(Times)}),
    ?EXPECT(Times =:= lists:sort(Times), not_sorted),
    ok.

%% A packet must hold the largest event the session can record: 4 KiB
%% packets are refused when user probes (up to 5 strings of 1024 bytes)
%% are enabled, accepted without them; and with room, a probe with every
%% string at its 1024-byte limit is recorded whole.
buffer_fits_largest_user_probe(Config) ->
    Dir = dir(Config),
    Small = #{buffer_size => 8192, subbuffers => 2},
    {error, {badopt, buffer_size}} =
        beamtrace:start(Small#{dir => Dir ++ "-a", events => ["*:user_trace_n"]}),
    false = filelib:is_file(filename:join(Dir ++ "-a", "metadata")),
    {ok, S1} = beamtrace:start(Small#{dir => Dir ++ "-b", events => ["*:process_*"]}),
    {ok, _} = beamtrace:stop(S1),
    K = lists:duplicate(1024, $k),
    {ok, S2} = beamtrace:start(#{dir => Dir, events => ["*:user_trace_n"],
                                 buffer_size => 16384, subbuffers => 2}),
    beamtrace:put_tag(K),
    true = beamtrace:pn(7, 1, 2, 3, 4, K, K, K, K),
    beamtrace:put_tag(undefined),
    {ok, #{events := 1, discarded := 0}} = beamtrace:stop(S2),
    [{user_trace_n, E}] = events(Dir),
    ?EXPECT(maps:get(s4, E) =:= K andalso maps:get(tag, E) =:= K, too_short),
    ok.
