%% Session lifecycle: several sessions, the default session, trace_status
%% after stop, overwrite mode, code upgrade/purge and unload with a
%% session running, and nothing ever sent to a traced process.
-module(bmt_lifecycle_SUITE).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([two_sessions_test/1, alternating_handles_test/1, default_session_test/1, trace_status_remove_test/1,
         stale_handle_test/1, overwrite_test/1, reload_purge_test/1, reload_other_file_test/1,
         nothing_sent_to_tracee_test/1, delete_purge_test/1,
         traces_reread_test/1]).
-export([sender/0, pong/1]).

%% OTP 25's spec of erlang:trace_info/2 gives a tracer module as
%% {tracer, Module, State}; the VM answers {tracer, {Module, State}} (dialyzer).
-dialyzer({[no_match, no_return], trace_status_remove_test/1}).

-import(bmt_test_lib, [start/1, stop_check/1, select/2, assert_eq/3]).
-import(bmt_workload, [wait_waiting/1]).

%%% Common Test

%% Each case runs alone in CT's process with a time limit; the node is left
%% as the next case expects it (no flags, patterns or sessions).
suite() -> [{timetrap, {seconds, 90}}].

all() ->
    [two_sessions_test, alternating_handles_test, default_session_test, trace_status_remove_test,
     stale_handle_test, overwrite_test, reload_purge_test, reload_other_file_test,
     nothing_sent_to_tracee_test, delete_purge_test,
     traces_reread_test].

%% The traces the cases write are listed for traces_reread_test.
init_per_suite(Config) -> bmt_test_lib:reread_init(Config).

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

t(P) -> list_to_binary(pid_to_list(P)).

delivered() ->
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok end.

%% A process that, on {send, N, Tag}, sends N messages {Tag, I} to itself
%% and receives them, then replies done.
sender() ->
    receive
        {From, {send, N, Tag}} ->
            [self() ! {Tag, I} || I <- lists:seq(1, N)],
            [receive {Tag, I} -> ok end || I <- lists:seq(1, N)],
            From ! {self(), done},
            sender();
        {_, stop} -> ok
    end.

new_sender() ->
    P = spawn(?MODULE, sender, []),
    wait_waiting(P),
    P.

do_send(P, N, Tag) ->
    wait_waiting(P),
    P ! {self(), {send, N, Tag}},
    receive {P, done} -> ok end.

stop_proc(P) ->
    R = erlang:monitor(process, P),
    P ! {self(), stop},
    receive {'DOWN', R, _, _, _} -> ok end.

two_sessions_test(_Config) ->
    S1 = start(#{}),
    S2 = start(#{}),
    P1 = new_sender(),
    P2 = new_sender(),
    1 = erlang:trace(P1, true, [send, 'receive', {tracer, beamtrace, S1}]),
    1 = erlang:trace(P2, true, [send, 'receive', {tracer, beamtrace, S2}]),
    do_send(P1, 10, one),
    do_send(P2, 20, two),
    delivered(),
    {_, E1} = stop_check(S1),
    {_, E2} = stop_check(S2),
    %% each: N self-sends, N receives, the command received, done sent
    assert_eq(s1_count, 22, length(E1)),
    assert_eq(s2_count, 42, length(E2)),
    [] = [E || {_, F} = E <- E1, maps:get(from, F, maps:get(to, F, t(P1))) =/= t(P1)],
    [] = [E || {message_receive, #{to := To}} = E <- E2, To =/= t(P2)],
    [] = [E || {message_send, #{from := Fr}} = E <- E2, Fr =/= t(P2)],
    10 = length(select(E1, #{'$name' => message_send, to => t(P1)})),
    20 = length(select(E2, #{'$name' => message_send, to => t(P2)})),
    stop_proc(P1), stop_proc(P2).

%% Two sessions' handles on two processes that take turns (a ping-pong,
%% mostly on one scheduler thread, whose cache of the last handle then
%% changes hands at every event), under return_trace, where the VM hands
%% the tracer a copy of the handle: each session gets exactly its own
%% process's calls and returns, well past the cache's first checked
%% answers (nif_session.h).
alternating_handles_test(_Config) ->
    N = 400,
    1 = erlang:trace_pattern({?MODULE, pong, 1}, [{'_', [], [{return_trace}]}], [local]),
    S1 = start(#{}),
    S2 = start(#{}),
    P2 = spawn(fun pong_loop/0),
    P1 = spawn(fun() -> receive go -> ping(P2, N) end end),
    1 = erlang:trace(P1, true, [call, {tracer, beamtrace, S1}]),
    1 = erlang:trace(P2, true, [call, {tracer, beamtrace, S2}]),
    R = erlang:monitor(process, P1),
    P1 ! go,
    receive {'DOWN', R, _, _, _} -> ok end,
    erlang:trace_pattern({?MODULE, pong, 1}, false, [local]),
    delivered(),
    {_, E1} = stop_check(S1),
    {_, E2} = stop_check(S2),
    Entry = <<"bmt_lifecycle_SUITE:pong/1">>,
    [begin
         Calls = [x || {function_call, #{pid := Pid, entry := En}} <- Es, Pid =:= t(P),
                       En =:= Entry],
         Returns = [x || {function_return, #{pid := Pid, entry := En}} <- Es, Pid =:= t(P),
                         En =:= Entry],
         Others = [E || {Name, #{pid := Pid}} = E <- Es, Pid =/= t(P),
                        Name =:= function_call orelse Name =:= function_return],
         assert_eq({calls, Which}, N, length(Calls)),
         assert_eq({returns, Which}, N, length(Returns)),
         assert_eq({others, Which}, [], Others)
     end || {Which, P, Es} <- [{s1, P1, E1}, {s2, P2, E2}]],
    ok.

ping(Q, 0) ->
    Q ! stop;
ping(Q, K) ->
    K = ?MODULE:pong(K),
    Q ! {self(), K},
    receive K -> ping(Q, K - 1) end.

pong_loop() ->
    receive
        {From, K} ->
            K = ?MODULE:pong(K),
            From ! K,
            pong_loop();
        stop ->
            ok
    end.

pong(K) -> K.

default_session_test(_Config) ->
    [] = beamtrace:sessions(),
    {error, not_running} = beamtrace:info(),
    {error, not_running} = beamtrace:stop(),
    A = start(#{}),
    #{default := true, state := running} = beamtrace:info(A),
    #{default := true} = beamtrace:info(),
    B = start(#{}),
    %% the first session stays the default...
    #{default := false} = beamtrace:info(B),
    C = start(#{default => true}),
    %% ...until one is started with default => true
    #{default := false} = beamtrace:info(A),
    #{default := true} = beamtrace:info(C),
    3 = length(beamtrace:sessions()),
    P = new_sender(),
    1 = erlang:trace(P, true, [send, {tracer, beamtrace, []}]),
    do_send(P, 5, d),
    delivered(),
    %% stop/0 stops the default session, C
    {ok, #{events := 6} = StC} = beamtrace:stop(),
    bmt_test_lib:check_trace(StC),
    {error, not_running} = beamtrace:info(C),
    {error, not_running} = beamtrace:info(),
    {error, not_running} = beamtrace:stop(),
    %% No default now: the [] flags' events go to no session (each thread's
    %% cached decision for [] follows the change)...
    do_send(P, 3, none),
    delivered(),
    %% ...until a new default, which gets them from its start on.
    D = start(#{default => true}),
    do_send(P, 4, d),
    delivered(),
    {#{events := 5}, _} = stop_check(D),
    %% the others are still running and got nothing
    #{state := running, default := false} = beamtrace:info(A),
    {#{events := 0}, []} = stop_check(A),
    {#{events := 0}, []} = stop_check(B),
    [] = beamtrace:sessions(),
    stop_proc(P).

%% After stop, enabled(trace_status, ...) answers remove: the VM drops the
%% tracer and the flags from the process as soon as it asks (trace_info
%% asks).
trace_status_remove_test(_Config) ->
    S = start(#{}),
    P = new_sender(),
    1 = erlang:trace(P, true, [send, 'receive', procs, {tracer, beamtrace, S}]),
    {tracer, {beamtrace, S}} = erlang:trace_info(P, tracer),
    {flags, [_ | _]} = erlang:trace_info(P, flags),
    trace = beamtrace:enabled(trace_status, S, P),
    do_send(P, 3, x),
    {_, Ev} = stop_check(S),
    8 = length(Ev),
    remove = beamtrace:enabled(trace_status, S, P),
    %% (enabled_send may still answer trace: other sinks, e.g. an LTTng
    %% session enabled on the host, can want the tracepoint.)
    {tracer, []} = erlang:trace_info(P, tracer),
    {flags, []} = erlang:trace_info(P, flags),
    stop_proc(P).

%% A process still holding a stopped session's handle (the VM has not
%% asked trace_status yet) must not feed a new session that reuses the
%% same slot.
stale_handle_test(_Config) ->
    S = start(#{}),
    P = new_sender(),
    1 = erlang:trace(P, true, [send, 'receive', {tracer, beamtrace, S}]),
    {_, []} = stop_check(S),
    S2 = start(#{}),
    do_send(P, 5, stale),
    delivered(),
    {#{events := 0}, []} = stop_check(S2),
    stop_proc(P).

%% Overwrite mode keeps the newest events.
overwrite_test(_Config) ->
    N = 3000,
    S = start(#{mode => overwrite, buffer_size => 2 * 4096, subbuffers => 2,
                events => ["org_erlang_dyntrace:process_register"]}),
    Ctl = self(),
    P = spawn(fun() ->
                      receive go -> ok end,
                      [begin
                           Name = list_to_atom("bmt_ow_" ++ integer_to_list(I)),
                           true = register(Name, self()),
                           true = unregister(Name)
                       end || I <- lists:seq(1, N)],
                      Ctl ! {self(), done},
                      receive stop -> ok end
              end),
    wait_waiting(P),
    1 = erlang:trace(P, true, [procs, {tracer, beamtrace, S}]),
    P ! go,
    receive {P, done} -> ok end,
    delivered(),
    {#{events := E, discarded := D, overwritten := O}, Ev} = stop_check(S),
    io:format("# overwrite: events=~w discarded=~w overwritten=~w of ~w~n", [E, D, O, 2 * N]),
    true = O > 0,
    true = E < 2 * N,
    Last = iolist_to_binary(["bmt_ow_", integer_to_list(N)]),
    [_, _] = select(Ev, #{name => Last}),
    [] = select(Ev, #{name => <<"bmt_ow_1">>}),
    [] = select(Ev, #{name => <<"bmt_ow_2">>}),
    %% what is kept is the newest, in order, with no gap
    Nums = [binary_to_integer(binary:part(Nm, 7, byte_size(Nm) - 7)) || {_, #{name := Nm}} <- Ev],
    First = hd(Nums),
    true = lists:usort(Nums) =:= lists:seq(First, N),
    assert_eq(events_plus_lost, 2 * N, E + D),
    P ! stop.

%% A code upgrade (load_file) while a session records: events keep
%% flowing into the same session; purging the old code leaves it running.
reload_purge_test(_Config) ->
    S = start(#{}),
    P = new_sender(),
    1 = erlang:trace(P, true, [send, 'receive', {tracer, beamtrace, S}]),
    do_send(P, 100, before),
    {module, beamtrace} = code:load_file(beamtrace),
    do_send(P, 100, during),
    true = code:soft_purge(beamtrace),
    do_send(P, 100, afterwards),
    false = code:purge(beamtrace),
    do_send(P, 100, purged),
    #{state := running} = beamtrace:info(S),
    delivered(),
    {#{events := N, discarded := 0}, Ev} = stop_check(S),
    assert_eq(events, 4 * (2 * 100 + 2), N),
    [assert_eq({tag, Tag}, 100,
               length([x || {message_send, #{to := To, message := M}} <- Ev, To =:= t(P),
                            binary:match(M, atom_to_binary(Tag)) =/= nomatch]))
     || Tag <- [before, during, afterwards, purged]],
    stop_proc(P).

%% A code upgrade from another file (another copy of the library, as a
%% second `beamtrace record' ships one) while a session records: the new
%% copy takes the session over, and the old copy, whose consumer thread
%% runs the session, stays mapped when the VM closes it after the purge
%% (without that, the thread's next return lands in unmapped code and the
%% VM dies). The session records on, stops cleanly, reads back whole.
reload_other_file_test(_Config) ->
    Priv = filename:join(filename:dirname(filename:dirname(code:which(beamtrace))), "priv"),
    Copy = bmt_test_lib:tmpdir("other-copy"),
    ok = filelib:ensure_path(Copy),
    {ok, _} = file:copy(filename:join(Priv, "beamtrace_nif.so"),
                        filename:join(Copy, "beamtrace_nif.so")),
    S = start(#{}),
    P = new_sender(),
    1 = erlang:trace(P, true, [send, 'receive', {tracer, beamtrace, S}]),
    do_send(P, 100, before),
    ok = application:set_env(beamtrace, priv_dir, Copy),
    try
        {module, beamtrace} = code:load_file(beamtrace),
        do_send(P, 100, during),
        true = code:soft_purge(beamtrace),
        %% The consumer's next flushes run in the old copy, closed now.
        timer:sleep(300),
        do_send(P, 100, afterwards),
        #{state := running} = beamtrace:info(S),
        Maps = nif_maps(),
        assert_eq({both_copies_mapped, Maps}, true,
                  lists:any(fun(L) -> binary:match(L, list_to_binary(Copy)) =/= nomatch end, Maps)
                  andalso lists:any(fun(L) -> binary:match(L, list_to_binary(Priv)) =/= nomatch end,
                                    Maps)),
        delivered(),
        {#{events := N, discarded := 0}, _} = stop_check(S),
        assert_eq(events, 3 * (2 * 100 + 2), N)
    after
        ok = application:unset_env(beamtrace, priv_dir),
        {module, beamtrace} = code:load_file(beamtrace),
        _ = code:soft_purge(beamtrace),
        stop_proc(P)
    end.

%% The lines of this VM's memory map that are a copy of the NIF library.
nif_maps() ->
    {ok, B} = file:read_file("/proc/self/maps"),
    [L || L <- binary:split(B, <<"\n">>, [global]), binary:match(L, <<"beamtrace_nif">>) =/= nomatch].

%% Nothing is ever sent to a traced process: with every flag on, its
%% mailbox holds only what the workload sent.
nothing_sent_to_tracee_test(_Config) ->
    S = start(#{}),
    Ctl = self(),
    P = spawn(fun() ->
                      receive go -> ok end,
                      _ = lists:reverse(lists:seq(1, 5000)),
                      erlang:garbage_collect(),
                      Ctl ! {self(), done},
                      receive stop -> ok end
              end),
    wait_waiting(P),
    1 = erlang:trace(P, true, [all, {tracer, beamtrace, S}]),
    P ! go,
    receive {P, done} -> ok end,
    wait_waiting(P),
    {messages, []} = erlang:process_info(P, messages),
    P ! hello_1, P ! hello_2,
    wait_waiting(P),
    {messages, [hello_1, hello_2]} = erlang:process_info(P, messages),
    {message_queue_len, 0} = erlang:process_info(Ctl, message_queue_len),
    {Stats, Ev} = stop_check(S),
    true = maps:get(events, Stats) > 0,
    [_ | _] = select(Ev, #{'$name' => message_receive, message => <<"hello_1">>}),
    exit(P, kill).

%% Unloading the module (delete + purge) with a session running: the VM
%% survives, and the unload drains the session so the trace directory is
%% complete and readable. Runs last; reloads the module at the end.
delete_purge_test(_Config) ->
    Dir = bmt_test_lib:tmpdir("unload"),
    S = start(#{dir => Dir}),
    P = new_sender(),
    1 = erlang:trace(P, true, [send, 'receive', {tracer, beamtrace, S}]),
    do_send(P, 500, unload),
    delivered(),
    true = code:delete(beamtrace),
    _ = code:purge(beamtrace), % true only if it had to kill processes
    false = erlang:module_loaded(beamtrace),
    false = erlang:check_old_code(beamtrace),
    %% the process lives on, its tracer gone or inert
    do_send(P, 10, gone),
    {Status, Lines, Err} = bmt_test_lib:babeltrace(Dir),
    assert_eq(babeltrace_status, 0, Status),
    assert_eq(babeltrace_stderr, <<>>, Err),
    %% every event recorded before the unload is on disk
    assert_eq(events_on_disk, 2 * 500 + 2, length(Lines)),
    ok = file:write_file(bmt_test_lib:traces_list_file(),
                         [Dir, $\s, integer_to_list(length(Lines)), $\n], [append]),
    {module, beamtrace} = code:ensure_loaded(beamtrace),
    [] = beamtrace:sessions(),
    %% a handle from the unloaded library: an answer, not an exception
    assert_eq(stale_handle_stop, {error, not_running}, catch beamtrace:stop(S)),
    assert_eq(stale_handle_info, {error, not_running}, catch beamtrace:info(S)),
    stop_proc(P).

%% Last: every trace the cases above wrote reads back the same later.
traces_reread_test(_Config) ->
    bmt_test_lib:reread_traces().
