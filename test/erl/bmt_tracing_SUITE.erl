%% beamtrace_tracing: flags and patterns through a handle, on both backends
%% this VM has (the trace session backend from OTP 27, the legacy session
%% everywhere); what close and the owner's exit take down; beamtrace's
%% session surviving tools that clear the legacy session; the guard against
%% OTP's GC double-session defect; loading order.
-module(bmt_tracing_SUITE).

-export([all/0, groups/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_group/2,
         end_per_group/2, init_per_testcase/2, end_per_testcase/2]).
-export([backend_test/1, records_and_close_test/1, legacy_clear_test/1,
         legacy_exact_undo_test/1, owner_exit_test/1, handle_killed_test/1,
         gc_guard_test/1, loading_order_test/1, bad_options_test/1,
         traces_reread_test/1]).
-export([worker/0, f/1, g/0]).

%% bad_options_test gives open/1 what its spec refuses, on purpose (dialyzer).
-dialyzer({[no_fail_call, no_return], bad_options_test/1}).

-import(bmt_test_lib, [start/1, stop_check/1, select/2, assert_eq/3, fail/2]).

-define(F, <<"bmt_tracing_SUITE:f/1">>).
-define(NO_SESSIONS, "no trace sessions before OTP 27: one (legacy) session only").

%%% Common Test

%% Each case runs alone in CT's process with a time limit; the node is left
%% as the next case expects it (no flags, patterns or sessions).
suite() -> [{timetrap, {seconds, 90}}].

all() ->
    [backend_test, {group, session}, {group, legacy}, legacy_exact_undo_test,
     handle_killed_test, gc_guard_test, loading_order_test, bad_options_test,
     traces_reread_test].

%% The cases that run once per backend (Config's `backend'); a backend the
%% VM lacks is skipped with the reason.
groups() ->
    Cases = [records_and_close_test, legacy_clear_test, owner_exit_test],
    [{session, [], Cases}, {legacy, [], Cases}].

init_per_group(B, Config) ->
    case lists:member(B, backends()) of
        true -> [{backend, B} | Config];
        false -> {skip, ?NO_SESSIONS}
    end.

end_per_group(_B, _Config) -> ok.

%% The traces the cases write are listed for traces_reread_test.
init_per_suite(Config) -> bmt_test_lib:reread_init(Config).

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

%%% Workload: a process that calls f/1 N times on request.

worker() ->
    receive
        {From, {run, N}} -> [f(I) || I <- lists:seq(1, N)], From ! {self(), done}, worker();
        {From, {spawn_child}} -> C = spawn(fun() -> receive stop -> ok end end), From ! {self(), C}, worker();
        stop -> ok
    end.

f(I) -> I + 1.
g() -> ok.

new_worker() ->
    spawn(?MODULE, worker, []).

run(W, N) ->
    W ! {self(), {run, N}},
    receive {W, done} -> ok end.

%% Backends this VM has: the legacy one always, session where the VM has
%% trace sessions.
backends() ->
    case beamtrace_tracing:backend() of
        session -> [session, legacy];
        legacy -> [legacy]
    end.

%% Runs Fun with the group's backend.
per_backend(Config, Fun) ->
    Fun(proplists:get_value(backend, Config)),
    ok.

open(Opts) ->
    case beamtrace_tracing:open(Opts) of
        {ok, T} -> T;
        Other -> fail(open_failed, {Opts, Other})
    end.

ok(_What, {ok, N}) when is_integer(N) -> N;
ok(What, Other) -> fail(What, Other).

calls_of_f(S) ->
    {_, Ev} = stop_check(S),
    length(select(Ev, #{'$name' => function_call, entry => ?F})).

flags(P) ->
    {flags, F} = erlang:trace_info(P, flags),
    lists:sort(F).

wait_dead(P) ->
    Ref = monitor(process, P),
    receive {'DOWN', Ref, process, P, _} -> ok end.

%%% Tests

%% auto picks session exactly where trace:session_create/3 exists.
backend_test(_Config) ->
    _ = code:ensure_loaded(trace),
    Expect = case erlang:function_exported(trace, session_create, 3) of
                 true -> session;
                 false -> legacy
             end,
    assert_eq(backend, Expect, beamtrace_tracing:backend()),
    T = open(#{}),
    #{backend := Expect, tracer := {beamtrace, []}} = beamtrace_tracing:info(T),
    ok = beamtrace_tracing:close(T),
    ok = beamtrace_tracing:close(T),
    {error, closed} = beamtrace_tracing:process(T, self(), true, [procs]).

%% Events recorded while the handle is open, none after close; close
%% leaves no flag on the worker and no pattern on f/1.
records_and_close_test(Config) ->
    per_backend(Config, fun(B) ->
        S = start(#{events => ["org_erlang_dyntrace:function_*"]}),
        W = new_worker(),
        T = open(#{tracer_state => S, backend => B}),
        1 = ok(process, beamtrace_tracing:process(T, W, true, [call])),
        1 = ok(function, beamtrace_tracing:function(T, {?MODULE, f, 1}, [{'_', [], [{return_trace}]}],
                                                    [local])),
        run(W, 3),
        ok = beamtrace_tracing:close(T),
        run(W, 5),
        assert_eq({B, flags_after_close}, [], flags_of(B, T, W)),
        assert_eq({B, pattern_after_close}, false, pattern_of(B, {?MODULE, f, 1})),
        B =:= session andalso
            assert_eq(no_session_left, [], [I || {beamtrace, _} = I <- trace:session_info(all)]),
        assert_eq({B, calls_recorded}, 3, calls_of_f(S)),
        W ! stop
    end).

%% What recon_trace:clear/0 does to the legacy session. A session-backend
%% handle keeps recording through it; a legacy-backend handle loses its
%% flags and patterns, as the README says.
legacy_clear_test(Config) ->
    per_backend(Config, fun(B) ->
        S = start(#{events => ["org_erlang_dyntrace:function_*"]}),
        W = new_worker(),
        T = open(#{tracer_state => S, backend => B}),
        ok(process, beamtrace_tracing:process(T, W, true, [call])),
        ok(function, beamtrace_tracing:function(T, {?MODULE, f, 1}, [], [local])),
        run(W, 2),
        recon_trace_clear(),
        run(W, 4),
        ok = beamtrace_tracing:close(T),
        Expect = case B of session -> 6; legacy -> 2 end,
        assert_eq({B, calls_recorded}, Expect, calls_of_f(S)),
        W ! stop
    end).

%% recon_trace:clear/0's body (recon 2.5).
recon_trace_clear() ->
    erlang:trace(all, false, [all]),
    erlang:trace_pattern({'_', '_', '_'}, false, [local, meta, call_count, call_time]),
    erlang:trace_pattern({'_', '_', '_'}, false, []).

%% Legacy backend: close undoes exactly what the handle set. Its flags go
%% from the process and from a child that inherited them; another
%% tracer's process keeps its flags, another tool's pattern stays, and the
%% send pattern is what it was before.
legacy_exact_undo_test(_Config) ->
    W = new_worker(),
    Other = new_worker(),
    erlang:trace(Other, true, [send, {tracer, self()}]),
    erlang:trace_pattern({?MODULE, g, 0}, true, [local]),
    SendBefore = erlang:trace_info(send, match_spec),
    T = open(#{backend => legacy}),
    ok(process, beamtrace_tracing:process(T, W, true, [procs, set_on_spawn])),
    ok(function, beamtrace_tracing:function(T, {?MODULE, f, 1}, true, [local])),
    ok(send, beamtrace_tracing:send(T, [{['_', hello], [], []}], [])),
    W ! {self(), {spawn_child}},
    Child = receive {W, C} -> C end,
    assert_eq(child_inherited, [procs, set_on_spawn], flags(Child)),
    ok = beamtrace_tracing:close(T),
    assert_eq(worker_flags, [], flags(W)),
    assert_eq(child_flags, [], flags(Child)),
    assert_eq(other_tracer_flags, [send], flags(Other)),
    assert_eq(other_tracer, {tracer, self()}, erlang:trace_info(Other, tracer)),
    assert_eq(other_pattern, {traced, local}, erlang:trace_info({?MODULE, g, 0}, traced)),
    assert_eq(own_pattern, {traced, false}, erlang:trace_info({?MODULE, f, 1}, traced)),
    assert_eq(send_pattern, SendBefore, erlang:trace_info(send, match_spec)),
    [P ! stop || P <- [W, Other]],
    Child ! stop.

%% The owner's exit closes the handle.
owner_exit_test(Config) ->
    per_backend(Config, fun(B) ->
        W = new_worker(),
        Self = self(),
        Owner = spawn(fun() ->
                          T = open(#{backend => B}),
                          ok(process, beamtrace_tracing:process(T, W, true, [procs, call])),
                          ok(function, beamtrace_tracing:function(T, {?MODULE, f, 1}, true, [local])),
                          Self ! {self(), T},
                          receive never -> ok end
                      end),
        T = receive {Owner, H} -> H end,
        assert_eq({B, flags_while_open}, [call, procs], flags_of(B, T, W)),
        assert_eq({B, pattern_while_open}, true, pattern_of(B, {?MODULE, f, 1})),
        exit(Owner, kill),
        wait_dead(T),
        assert_eq({B, flags_after_owner_exit}, [], flags_of(B, T, W)),
        assert_eq({B, pattern_after_owner_exit}, false, pattern_of(B, {?MODULE, f, 1})),
        W ! stop
    end).

%% Flags of W as the handle's backend sees them ([] once its session is gone).
flags_of(legacy, _T, W) ->
    flags(W);
flags_of(session, _T, W) ->
    case [Id || {beamtrace, _} = Id <- trace:session_info(W)] of
        [] -> [];
        [Id] -> {flags, F} = trace:info(Id, W, flags), lists:sort(F)
    end.

%% Whether MFA has a call pattern in the handle's backend.
pattern_of(legacy, MFA) ->
    erlang:trace_info(MFA, traced) =/= {traced, false};
pattern_of(session, MFA) ->
    [Id || {beamtrace, _} = Id <- trace:session_info(MFA)] =/= [].

%% A session-backend handle killed outright: its session handle is garbage
%% with it, and the VM destroys the session.
handle_killed_test(_Config) ->
    case beamtrace_tracing:backend() of
        legacy ->
            {skip, ?NO_SESSIONS ++ " (the legacy backend cannot undo anything when killed: README)"};
        session ->
            W = new_worker(),
            T = open(#{}),
            #{session := Id} = beamtrace_tracing:info(T),
            ok(process, beamtrace_tracing:process(T, W, true, [procs])),
            true = lists:member(Id, trace:session_info(all)),
            exit(T, kill),
            wait_dead(T),
            wait_gone(Id),
            assert_eq(worker_sessions, [], [S || S <- trace:session_info(W), S =:= Id]),
            W ! stop
    end.

wait_gone(Id) ->
    case lists:member(Id, trace:session_info(all)) of
        false -> ok;
        true -> erlang:garbage_collect(), timer:sleep(10), wait_gone(Id)
    end.

%% OTP defect erlang/otp#11624: refused while another session (a trace
%% session or the legacy one) traces garbage collection on a covered
%% process or on new processes; allowed once it stops. Never are two
%% sessions tracing GC on one process here.
gc_guard_test(_Config) ->
    case beamtrace_tracing:backend() of
        legacy ->
            {skip, ?NO_SESSIONS ++ ": no double-session GC defect to guard against"};
        session ->
            false = beamtrace_tracing:gc_multi_session_safe(),
            W = new_worker(),
            W2 = new_worker(),
            Other = trace:session_create(bmt_other_tool, self(), []),
            1 = trace:process(Other, W, true, [garbage_collection]),
            T = open(#{}),
            {error, {otp_gc_multi_session_defect, #{other_session := {bmt_other_tool, _}, traced := W,
                                                     why := Why}}} =
                beamtrace_tracing:process(T, W, true, [garbage_collection, procs]),
            true = binary:match(Why, <<"#11624">>) =/= nomatch,
            {error, {otp_gc_multi_session_defect, _}} = beamtrace_tracing:process(T, all, true, [all]),
            {error, {otp_gc_multi_session_defect, _}} =
                beamtrace_tracing:process(T, existing, true, [garbage_collection]),
            assert_eq(nothing_set_when_refused, [], flags_of(session, T, W)),
            %% Other flags, other processes, new processes: allowed.
            1 = ok(procs, beamtrace_tracing:process(T, W, true, [procs])),
            1 = ok(gc_w2, beamtrace_tracing:process(T, W2, true, [garbage_collection])),
            ok(gc_new, beamtrace_tracing:process(T, new, true, [garbage_collection])),
            ok(gc_new_off, beamtrace_tracing:process(T, new, false, [garbage_collection])),
            %% The other session on new processes, then the legacy session.
            trace:process(Other, new, true, [garbage_collection]),
            {error, {otp_gc_multi_session_defect, #{traced := new}}} =
                beamtrace_tracing:process(T, new, true, [garbage_collection]),
            trace:session_destroy(Other),
            W3 = new_worker(),
            erlang:trace(W3, true, [garbage_collection, {tracer, self()}]),
            {error, {otp_gc_multi_session_defect, #{other_session := {legacy, default}, traced := W3}}} =
                beamtrace_tracing:process(T, W3, true, [garbage_collection]),
            erlang:trace(W3, false, [garbage_collection]),
            %% A legacy-backend handle is one session of several here too.
            Other2 = trace:session_create(bmt_other_tool2, self(), []),
            1 = trace:process(Other2, W3, true, [garbage_collection]),
            L = open(#{backend => legacy}),
            {error, {otp_gc_multi_session_defect, #{other_session := {bmt_other_tool2, _}}}} =
                beamtrace_tracing:process(L, W3, true, [garbage_collection]),
            ok = beamtrace_tracing:close(L),
            trace:session_destroy(Other2),
            1 = ok(gc_w3_after, beamtrace_tracing:process(T, W3, true, [garbage_collection])),
            1 = ok(gc_w_after, beamtrace_tracing:process(T, W, true, [garbage_collection])),
            ok = beamtrace_tracing:close(T),
            [P ! stop || P <- [W, W2, W3]],
            ok
    end.

%% In a fresh node, before anything loaded beamtrace: session_create with
%% beamtrace as tracer module is badarg; open/1 loads it first and works.
loading_order_test(_Config) ->
    Ebin = bmt_test_lib:ebin(),
    Eval = "false = code:is_loaded(beamtrace),"
           "_ = code:ensure_loaded(trace),"
           "Bare = case erlang:function_exported(trace, session_create, 3) of"
           "  true -> try trace:session_create(x, {beamtrace, []}, []) catch error:E -> E end;"
           "  false -> no_sessions end,"
           "{ok, T} = beamtrace_tracing:open(#{}),"
           "#{backend := B} = beamtrace_tracing:info(T),"
           "ok = beamtrace_tracing:close(T),"
           "io:format(\"~p ~p~n\", [Bare, B]), halt().",
    Out = os:cmd("erl -noshell -pa '" ++ Ebin ++ "' -eval '" ++ Eval ++ "' 2>&1"),
    Expect = case beamtrace_tracing:backend() of
                 session -> "badarg session\n";
                 legacy -> "no_sessions legacy\n"
             end,
    assert_eq(fresh_node, Expect, Out).

bad_options_test(_Config) ->
    {error, {badopt, bogus}} = beamtrace_tracing:open(#{bogus => 1}),
    {error, {badopt, {backend, nope}}} = beamtrace_tracing:open(#{backend => nope}),
    case beamtrace_tracing:backend() of
        legacy ->
            Rel = erlang:system_info(otp_release),
            {error, {no_trace_sessions, Rel}} = beamtrace_tracing:open(#{backend => session});
        session ->
            {error, {badopt, name}} = beamtrace_tracing:open(#{name => "x"})
    end,
    T = open(#{}),
    {error, {badopt, {tracer, _}}} = beamtrace_tracing:process(T, self(), true, [{tracer, self()}]),
    {error, {badopt, {meta, _, _}}} = beamtrace_tracing:function(T, {?MODULE, f, 1}, true,
                                                                 [{meta, beamtrace, []}]),
    {error, {badarg, _}} = beamtrace_tracing:process(T, self(), true, [no_such_flag]),
    {error, badarg} = beamtrace_tracing:process(T, self(), maybe_not, [procs]),
    ok = beamtrace_tracing:close(T).

%% Last: every trace the cases above wrote reads back the same later.
traces_reread_test(_Config) ->
    bmt_test_lib:reread_traces().
