%% OTP's dyntrace_lttng_SUITE ported to beamtrace, strengthened, plus the
%% seed's workflow, both sinks at once, and session daemon faults.
%%
%% A Common Test suite. Each group runs on a fresh peer node of its own
%% (started by init_per_group with `peer'; the cases run there through
%% erpc), because what it tests happens when beamtrace loads into a VM:
%%   otp       OTP's twelve cases and t_send_message_bound
%%   seed      the seed's workflow
%%   both      both sinks at once
%%   disabled  BEAMTRACE_LTTNG=0 in the VM's environment
%%   reload    purge and load again
%%   killed    the session daemon killed mid-trace, then restarted
%%   absent    no session daemon when the VM starts
%% killed and absent stop the session daemon: they run only where it is
%% ours to stop, which test/lttng/run.sh says with BMT_LTTNG_OWN_SESSIOND=1
%% (it starts its own in a private mount namespace); elsewhere, as under
%% `rebar3 ct', they are skipped with that reason. The cases of reload,
%% killed and absent build on each other and run in sequence.
%%
%% Differences from OTP's suite, on purpose:
%%  - `{tracer, beamtrace, []}' instead of dyntrace;
%%  - the `dynamic_trace' skip guard is replaced by: beamtrace's provider
%%    library is mapped in this VM and an lttng-sessiond answers. When
%%    priv/beamtrace_lttng.so was built but is not loaded, that is a
%%    failure, not a skip;
%%  - field values are checked (pids are pid_to_list/1 of the workload's
%%    own processes, names, types, entries, messages), not only event names;
%%  - t_call_silent expects no event at all; t_call_return_to expects
%%    function_return too (OTP's enabled_call discarded return_to).
%%
%% The lttng client talks to whichever session daemon the environment
%% selects; run.sh runs us in a private mount namespace with our own.
%% BMT_LTTNG_BACKEND=recorder runs the twelve cases against a beamtrace
%% recorder session read with babeltrace2 instead (a development aid: the
%% same assertions, no LTTng).
-module(bmt_lttng_SUITE).

-export([all/0, groups/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_group/2,
         end_per_group/2, init_per_testcase/2, end_per_testcase/2]).
-export([t_lttng_list/1, t_procs/1, t_ports/1, t_running_process/1, t_running_port/1,
         t_call/1, t_call_return_to/1, t_call_silent/1, t_send/1, t_receive/1,
         t_garbage_collection/1, t_all/1, t_send_message_bound/1, seed_workflow/1,
         both_sinks/1, beamtrace_lttng_0_not_loaded/1, beamtrace_lttng_0_recorder_works/1,
         purge_unregisters_provider/1, reload_registers_and_traces/1,
         sessiond_killed_mid_trace_vm_runs/1, sessiond_killed_recorder_keeps_recording/1,
         sessiond_restarted_sees_vm/1, sessiond_restarted_gets_events/1,
         load_without_sessiond/1, sessiond_started_later_sees_vm/1,
         sessiond_started_later_gets_events/1, recorder_unaffected_by_absent_sessiond/1]).
%% Run on the peer node.
-export([peer_init/1, peer_case/2, peer_cleanup/0]).
%% Workload processes, spawned by name so their entries are predictable.
-export([waiter/0, gcfier/0, gcfier/1, foo_clause_exception/1, registrar/1]).

-define(PIDS, bmt_lttng_pids).
%% What a case in a sequence leaves for the next one (killed, absent).
-define(STATE, bmt_lttng_state).
-define(OTP_CASES, [t_lttng_list, t_procs, t_ports, t_running_process, t_running_port, t_call,
                    t_call_return_to, t_call_silent, t_send, t_receive, t_garbage_collection,
                    t_all, t_send_message_bound]).

%%% Common Test

suite() -> [{timetrap, {seconds, 120}}].

all() ->
    [{group, G} || G <- [otp, seed, both, disabled, reload, killed, absent]].

groups() ->
    [{otp, [], ?OTP_CASES},
     {seed, [], [seed_workflow]},
     {both, [], [both_sinks]},
     {disabled, [], [beamtrace_lttng_0_not_loaded, beamtrace_lttng_0_recorder_works]},
     {reload, [sequence], [purge_unregisters_provider, reload_registers_and_traces]},
     {killed, [sequence], [sessiond_killed_mid_trace_vm_runs,
                           sessiond_killed_recorder_keeps_recording,
                           sessiond_restarted_sees_vm, sessiond_restarted_gets_events]},
     {absent, [sequence], [load_without_sessiond, sessiond_started_later_sees_vm,
                           sessiond_started_later_gets_events,
                           recorder_unaffected_by_absent_sessiond]}].

%% The peers talk to this node over distribution.
init_per_suite(Config) ->
    ok = bmt_test_lib:ensure_distributed("bmt_lttng_"),
    Config.

end_per_suite(_Config) -> ok.

%% A fresh peer node for the group, with its environment, after the
%% group's own checks on this node (the daemon's state).
init_per_group(G, Config) ->
    case group_precondition(G) of
        ok ->
            Out = filename:join(bmt_test_lib:tmp_base(), atom_to_list(G)),
            ok = filelib:ensure_path(Out),
            {ok, Peer, Node} = peer:start(#{name => peer:random_name(bmt_lttng),
                                                 args => peer_args(), env => peer_env(G),
                                                 wait_boot => 60000}),
            Cfg = [{peer, Peer}, {node, Node}, {out, Out} | Config],
            case on_peer(Cfg, ?MODULE, peer_init, [Out]) of
                ok -> Cfg;
                Refused -> peer:stop(Peer), Refused
            end;
        Refused ->
            Refused
    end.

end_per_group(_G, Config) ->
    case proplists:get_value(peer, Config) of
        undefined -> ok;
        Peer -> peer:stop(Peer)
    end.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, Config) ->
    on_peer(Config, ?MODULE, peer_cleanup, []).

%% ok, {skip, Why} or {fail, Why} for a group, on this node, before its peer.
group_precondition(G) when G =:= killed; G =:= absent ->
    case {os:getenv("BMT_LTTNG_OWN_SESSIOND"), G, sessiond_running()} of
        {"1", killed, true} -> ok;
        {"1", killed, false} -> {skip, "no lttng-sessiond answers"};
        {"1", absent, _} -> stop_sessiond();
        _ -> {skip, "the session daemon is not ours to stop (test/lttng/run.sh starts its own)"}
    end;
group_precondition(_) ->
    ok.

peer_args() ->
    Paths = lists:usort([filename:dirname(code:which(M)) || M <- [beamtrace, ?MODULE, bmt_test_lib]]),
    lists:append([["-pa", P] || P <- Paths]).

%% absent: LTTNG_UST_REGISTER_TIMEOUT=-1 makes lttng-ust wait for a session
%% daemon without end; the VM still loading beamtrace at once shows that
%% nothing waits for a daemon that is not there.
peer_env(disabled) -> [{"BEAMTRACE_LTTNG", "0"}];
peer_env(absent) -> [{"LTTNG_UST_REGISTER_TIMEOUT", "-1"}];
peer_env(_) -> [].

on_peer(Config, M, F, A) ->
    erpc:call(proplists:get_value(node, Config), M, F, A).

%% Each case runs its body on the group's peer.
case_on_peer(Config, Case) ->
    on_peer(Config, ?MODULE, peer_case, [Case, proplists:get_value(out, Config)]).

%%% On the peer

%% The tables the workload and the sequences write, owned by a process that
%% lives as long as the node, and the group's guard (OTP's skip guard,
%% replaced: our provider in this VM, and a daemon).
peer_init(Out) ->
    logger:set_primary_config(level, none), %% crash reports of the workloads
    Self = self(),
    spawn(fun() ->
                  ?PIDS = ets:new(?PIDS, [named_table, public, bag]),
                  ?STATE = ets:new(?STATE, [named_table, public, set]),
                  Self ! {self(), tables},
                  receive never -> ok end
          end),
    receive {_, tables} -> ok end,
    put(out, Out),
    guard().

peer_case(Case, Out) ->
    put(out, Out),
    ets:delete_all_objects(?PIDS),
    run(Case).

peer_cleanup() ->
    cleanup_tracing().

%% The guard: ok, {skip, Why} or {fail, Why}; init_per_group hands it to
%% Common Test.
guard() ->
    case code:ensure_loaded(beamtrace) of
        {module, beamtrace} -> guard(backend());
        Error -> {fail, lists:flatten(io_lib:format("beamtrace does not load: ~p", [Error]))}
    end.

guard(recorder) ->
    ok;
guard(lttng) ->
    Built = filelib:is_regular(provider_file()),
    case {Built, provider_mapped(), sessiond_running(), env_lttng()} of
        {_, _, _, "0"} -> ok;
        {false, _, _, _} -> {skip, "priv/beamtrace_lttng.so not built (no lttng-ust)"};
        {true, false, _, _} -> {fail, "beamtrace_lttng.so is built but not loaded: " ++ sinks_why()};
        {true, true, false, _} -> absent_or_skip();
        {true, true, true, _} -> ok
    end.

env_lttng() -> os:getenv("BEAMTRACE_LTTNG", "").

%% absent starts with no daemon on purpose.
absent_or_skip() ->
    case os:getenv("LTTNG_UST_REGISTER_TIMEOUT") of
        "-1" -> ok;
        _ -> {skip, "no lttng-sessiond answers"}
    end.

backend() ->
    case os:getenv("BMT_LTTNG_BACKEND") of
        "recorder" -> recorder;
        _ -> lttng
    end.

diag(Fmt, Args) ->
    io:format(Fmt ++ "~n", Args).

cleanup_tracing() ->
    erlang:trace(all, false, [all]),
    erlang:trace_pattern({'_', '_', '_'}, false, [local]),
    erlang:trace_pattern({'_', '_', '_'}, false, []),
    ok.

%%% The cases (on this node): each runs on the group's peer.

t_lttng_list(C) -> case_on_peer(C, t_lttng_list).
t_procs(C) -> case_on_peer(C, t_procs).
t_ports(C) -> case_on_peer(C, t_ports).
t_running_process(C) -> case_on_peer(C, t_running_process).
t_running_port(C) -> case_on_peer(C, t_running_port).
t_call(C) -> case_on_peer(C, t_call).
t_call_return_to(C) -> case_on_peer(C, t_call_return_to).
t_call_silent(C) -> case_on_peer(C, t_call_silent).
t_send(C) -> case_on_peer(C, t_send).
t_receive(C) -> case_on_peer(C, t_receive).
t_garbage_collection(C) -> case_on_peer(C, t_garbage_collection).
t_all(C) -> case_on_peer(C, t_all).
t_send_message_bound(C) -> case_on_peer(C, t_send_message_bound).
seed_workflow(C) -> case_on_peer(C, seed_workflow).
both_sinks(C) -> case_on_peer(C, both_sinks).
beamtrace_lttng_0_not_loaded(C) -> case_on_peer(C, beamtrace_lttng_0_not_loaded).
beamtrace_lttng_0_recorder_works(C) -> case_on_peer(C, beamtrace_lttng_0_recorder_works).
purge_unregisters_provider(C) -> case_on_peer(C, purge_unregisters_provider).
reload_registers_and_traces(C) -> case_on_peer(C, reload_registers_and_traces).
sessiond_killed_mid_trace_vm_runs(C) -> case_on_peer(C, sessiond_killed_mid_trace_vm_runs).
sessiond_killed_recorder_keeps_recording(C) ->
    case_on_peer(C, sessiond_killed_recorder_keeps_recording).
sessiond_restarted_sees_vm(C) -> case_on_peer(C, sessiond_restarted_sees_vm).
sessiond_restarted_gets_events(C) -> case_on_peer(C, sessiond_restarted_gets_events).
load_without_sessiond(C) -> case_on_peer(C, load_without_sessiond).
sessiond_started_later_sees_vm(C) -> case_on_peer(C, sessiond_started_later_sees_vm).
sessiond_started_later_gets_events(C) -> case_on_peer(C, sessiond_started_later_gets_events).
recorder_unaffected_by_absent_sessiond(C) ->
    case_on_peer(C, recorder_unaffected_by_absent_sessiond).

%% A case's body, on the peer.
run(Case) ->
    case lists:member(Case, ?OTP_CASES) of
        true -> testcase(Case);
        false -> body(Case)
    end.

%%% The twelve cases of OTP's dyntrace_lttng_SUITE

testcase(t_lttng_list) ->
    %% OTP only ran `lttng list -u`. We check that this VM is listed with
    %% every tracepoint, and with OTP's field names and types.
    Me = os:getpid(),
    {0, List} = lttng("list -u -f"),
    Block = pid_block(List, Me),
    Block =/= "" orelse error({vm_not_listed, Me, List}),
    %% `lttng list -f' prints fields in reverse; their order is checked on
    %% every line of every view (parse_line/1).
    [begin
         Fields = lists:sort(listed_fields(Block, Ev)),
         Fields =:= lists:sort(Expect) orelse error({fields, Ev, Expect, Fields})
     end || {Ev, Expect} <- expected_fields()],
    ok;

testcase(t_procs) ->
    S = session_start(t_procs, "org_erlang_dyntrace:process_*"),
    trace_new([procs]),
    W = spawn_link(?MODULE, waiter, []),
    round_trip(W),
    %% W returns after replying: its return is traced before it exits.
    wait_exited([W]),
    wait_exited([W, child_of(W)]),
    erlang:trace(all, false, [procs]),
    Evs = session_stop_view(S),
    Child = child_of(W),
    {Ws, Cs, Self} = {ps(W), ps(Child), ps(self())},
    want(Evs, process_spawn, #{"pid" => Cs, "parent" => Ws, "entry" => "erlang:apply/2"}),
    want(Evs, process_link, #{"from" => Ws, "to" => Cs, "type" => "link"}),
    want(Evs, process_link, #{"from" => Ws, "to" => Cs, "type" => "unlink"}),
    want(Evs, process_link, #{"from" => Self, "to" => Ws, "type" => "link"}),
    want(Evs, process_register, #{"pid" => Ws, "name" => "bmt_lttng_SUITE", "type" => "register"}),
    want(Evs, process_register, #{"pid" => Ws, "name" => "bmt_lttng_SUITE", "type" => "unregister"}),
    want(Evs, process_exit, #{"pid" => Ws, "reason" => "normal"}),
    want(Evs, process_exit, #{"pid" => Cs, "reason" => "normal"}),
    only(Evs, [process_spawn, process_link, process_exit, process_register]),
    %% Nothing from the untraced test process itself.
    none(Evs, process_exit, #{"pid" => Self}),
    ok;

testcase(t_ports) ->
    S = session_start(t_ports, "org_erlang_dyntrace:port_*"),
    trace_new([ports]),
    os:cmd("ls"),
    erlang:trace(all, false, [{tracer, beamtrace, []}, ports]),
    Evs = session_stop_view(S),
    [Open] = select(Evs, port_open),
    #{"driver" := "'/bin/sh -s unix:cmd'", "port" := Port, "pid" := Opener} = Open,
    match(Port, "^#Port<0\\.[0-9]+>$"),
    Opener =:= ps(self()) orelse error({port_opener, Opener, ps(self())}),
    want(Evs, port_exit, #{"port" => Port, "reason" => "normal"}),
    %% getting_linked by the opener at open: OTP swaps from/to for it.
    want(Evs, port_link, #{"from" => Opener, "to" => Port, "type" => "link"}),
    only(Evs, [port_open, port_link, port_exit]),
    ok;

testcase(t_running_process) ->
    S = session_start(t_running_process, "org_erlang_dyntrace:process_scheduled"),
    trace_new([running]),
    W = spawn_link(?MODULE, waiter, []),
    round_trip(W),
    %% W returns after replying: its return is traced before it exits.
    wait_exited([W]),
    wait_exited([W, child_of(W)]),
    Evs = session_stop_view(S),
    Ws = ps(W),
    %% The waiter may never wait (its message is sent at once), so only its
    %% first schedule-in is certain; out_exited needs the `exiting' flag.
    want(Evs, process_scheduled, #{"pid" => Ws, "type" => "in", "entry" => "bmt_lttng_SUITE:waiter/0"}),
    want(Evs, process_scheduled, #{"pid" => ps(child_of(W)), "type" => "in",
                                   "entry" => "erlang:apply/2"}),
    [lists:member(T, ["in", "out", "in_exiting", "out_exiting", "out_exited"])
         orelse error({bad_type, E})
     || #{"type" := T} = E <- select(Evs, process_scheduled)],
    only(Evs, [process_scheduled]),
    ok;

testcase(t_running_port) ->
    S = session_start(t_running_port, "org_erlang_dyntrace:port_scheduled"),
    trace_new([running_ports]),
    os:cmd("ls"),
    os:cmd("ls"),
    Evs = session_stop_view(S),
    Sched = select(Evs, port_scheduled),
    Ports = lists:usort([P || #{"pid" := P} <- Sched]),
    [match(P, "^#Port<0\\.[0-9]+>$") || P <- Ports],
    length(Ports) >= 2 orelse error({ports, Ports}),
    [P1 | _] = Ports,
    want(Evs, port_scheduled, #{"pid" => P1, "type" => "in", "entry" => "open"}),
    want(Evs, port_scheduled, #{"pid" => P1, "type" => "out", "entry" => "open"}),
    only(Evs, [port_scheduled]),
    ok;

testcase(t_call) ->
    S = session_start(t_call, "org_erlang_dyntrace:function_*"),
    {E, W} = call_workload([call]),
    Evs = session_stop_view(S),
    {Es, Ws} = {ps(E), ps(W)},
    Foo = "bmt_lttng_SUITE:foo_clause_exception/1",
    want(Evs, function_call, #{"pid" => Es, "entry" => Foo, "depth" => 0}),
    want(Evs, function_exception, #{"pid" => Es, "entry" => Foo, "class" => "error"}),
    want(Evs, function_call, #{"pid" => Ws, "entry" => "bmt_lttng_SUITE:waiter/0", "depth" => 0}),
    want(Evs, function_return, #{"pid" => Ws, "entry" => "bmt_lttng_SUITE:waiter/0", "depth" => 0}),
    none(Evs, function_return, #{"pid" => Es}),
    only(Evs, [function_call, function_return, function_exception]),
    ok;

testcase(t_call_return_to) ->
    S = session_start(t_call_return_to, "org_erlang_dyntrace:function_*"),
    trace_new([call, return_to]),
    erlang:trace_pattern({lists, '_', '_'}, true, [local]),
    erlang:trace_pattern({?MODULE, '_', '_'}, true, [local]),
    G = spawn_link(?MODULE, gcfier, [10]),
    round_trip(G),
    %% G returns after replying: its return is traced before it exits.
    wait_exited([G]),
    erlang:trace_pattern({lists, '_', '_'}, false, [local]),
    erlang:trace_pattern({?MODULE, '_', '_'}, false, [local]),
    Evs = session_stop_view(S),
    Gs = ps(G),
    want(Evs, function_call, #{"pid" => Gs, "entry" => "bmt_lttng_SUITE:gcfier/1", "depth" => 0}),
    want(Evs, function_call, #{"pid" => Gs, "entry" => "lists:seq/2"}),
    want(Evs, function_call, #{"pid" => Gs, "entry" => "lists:reverse/1"}),
    %% OTP discarded return_to; beamtrace reports it as function_return
    %% with the function returned to.
    want(Evs, function_return, #{"pid" => Gs, "entry" => "bmt_lttng_SUITE:gcfier/1", "depth" => 0}),
    none(Evs, function_exception, #{}),
    ok;

testcase(t_call_silent) ->
    S = session_start(t_call_silent, "org_erlang_dyntrace:function_*"),
    {_E, _W} = call_workload([call, silent]),
    Evs = session_stop_view(S),
    Evs =:= [] orelse error({silent_but_traced, lists:sublist(Evs, 5)}),
    ok;

testcase(t_send) ->
    S = session_start(t_send, "org_erlang_dyntrace:message_send"),
    trace_new([send]),
    W = spawn_link(?MODULE, waiter, []),
    round_trip(W),
    %% W returns after replying: its return is traced before it exits.
    wait_exited([W]),
    os:cmd("ls"),
    timer:sleep(10),
    Evs = session_stop_view(S),
    {Ws, Self, Cs} = {ps(W), ps(self()), ps(child_of(W))},
    want(Evs, message_send, #{"from" => Ws, "to" => Self, "message" => "{" ++ Ws ++ ",ok}"}),
    want(Evs, message_send, #{"from" => Ws, "to" => Cs, "message" => "ok"}),
    %% The os:cmd port sends its output to the (untraced) caller.
    case [M || #{"from" := "#Port<" ++ _, "to" := To} = M <- select(Evs, message_send),
               To =:= Self] of
        [#{"from" := Port, "message" := PortMsg} | _] ->
            lists:prefix("{" ++ Port ++ ",{data,", PortMsg) orelse error({port_message, PortMsg});
        [] ->
            error({no_port_send, Evs})
    end,
    only(Evs, [message_send]),
    ok;

testcase(t_receive) ->
    S = session_start(t_receive, "org_erlang_dyntrace:message_receive"),
    trace_new(['receive']),
    timer:sleep(20),
    W1 = spawn_link(?MODULE, waiter, []),
    round_trip(W1),
    W2 = spawn_link(?MODULE, waiter, []),
    round_trip(W2),
    wait_exited([W1, child_of(W1), W2, child_of(W2)]),
    Evs = session_stop_view(S),
    Self = ps(self()),
    [begin
         want(Evs, message_receive, #{"to" => ps(W), "message" => "{" ++ Self ++ ",ok}"}),
         want(Evs, message_receive, #{"to" => ps(child_of(W)), "message" => "ok"})
     end || W <- [W1, W2]],
    none(Evs, message_receive, #{"to" => Self}),
    only(Evs, [message_receive]),
    ok;

testcase(t_garbage_collection) ->
    S = session_start(t_garbage_collection, "org_erlang_dyntrace:gc_*"),
    trace_new([garbage_collection]),
    G = spawn_link(?MODULE, gcfier, []),
    round_trip(G),
    timer:sleep(10),
    Evs = session_stop_view(S),
    check_gc(Evs, ps(G)),
    only(Evs, [gc_minor_start, gc_minor_end, gc_major_start, gc_major_end]),
    ok;

testcase(t_all) ->
    S = session_start(t_all, "org_erlang_dyntrace:*"),
    trace_new([all]),
    W = spawn_link(?MODULE, waiter, []),
    round_trip(W),
    %% W returns after replying: its return is traced before it exits.
    wait_exited([W]),
    G = spawn_link(?MODULE, gcfier, []),
    round_trip(G),
    os:cmd("ls"),
    os:cmd("ls"),
    timer:sleep(10),
    erlang:trace(all, false, [all]),
    Evs = session_stop_view(S),
    {Ws, Cs, Gs, Self} = {ps(W), ps(child_of(W)), ps(G), ps(self())},
    [want(Evs, Tp, #{}) || Tp <- [process_spawn, process_link, process_exit, process_register,
                                   port_open, port_link, port_exit, process_scheduled,
                                   port_scheduled, message_send, message_receive,
                                   gc_major_start, gc_major_end, gc_minor_start, gc_minor_end]],
    want(Evs, process_spawn, #{"pid" => Cs, "parent" => Ws}),
    want(Evs, process_register, #{"pid" => Ws, "name" => "bmt_lttng_SUITE"}),
    want(Evs, process_scheduled, #{"pid" => Gs}),
    want(Evs, message_receive, #{"to" => Ws, "message" => "{" ++ Self ++ ",ok}"}),
    want(Evs, message_send, #{"from" => Gs, "to" => Self, "message" => "{" ++ Gs ++ ",ok}"}),
    want(Evs, port_open, #{"pid" => Self, "driver" => "'/bin/sh -s unix:cmd'"}),
    check_gc(Evs, Gs),
    %% `all' includes `silent': no function events.
    only(Evs, [process_spawn, process_link, process_exit, process_register, port_open,
               port_link, port_exit, process_scheduled, port_scheduled, message_send,
               message_receive, gc_major_start, gc_major_end, gc_minor_start, gc_minor_end]),
    ok;

%% Not OTP's: a long message with LTTng as the only sink is printed and cut
%% to OTP's 255 bytes (LTTNG_BUFFER_SZ less the NUL).
testcase(t_send_message_bound) ->
    S = session_start(t_send_message_bound, "org_erlang_dyntrace:message_send"),
    trace_new([send]),
    Self = self(),
    P = spawn(fun() -> Self ! {self(), lists:duplicate(1000, $a)} end),
    receive {P, _} -> ok end,
    timer:sleep(10),
    Evs = session_stop_view(S),
    [#{"from" := From, "to" := To, "message" := Msg}] = select(Evs, message_send),
    {From, To} =:= {ps(P), ps(Self)} orelse error({ends, From, To}),
    lists:prefix("{" ++ ps(P) ++ ",\"aaaa", Msg) orelse error({message, Msg}),
    length(Msg) =< 255 andalso length(Msg) >= 200 orelse error({message_length, length(Msg)}),
    ok.

%% t_call and t_call_silent: OTP's workload.
call_workload(Flags) ->
    trace_new(Flags),
    erlang:trace_pattern({?MODULE, '_', '_'}, [{'_', [], [{exception_trace}]}], [local]),
    {E, ERef} = spawn_monitor(?MODULE, foo_clause_exception, [nope]),
    W = spawn_link(?MODULE, waiter, []),
    round_trip(W),
    %% W returns after replying: its return is traced before it exits.
    wait_exited([W]),
    %% E has crashed (waited for: on a loaded machine it may not have run).
    receive {'DOWN', ERef, process, E, _} -> ok after 60000 -> error({e_never_ran, E}) end,
    erlang:trace_pattern({?MODULE, '_', '_'}, false, [local]),
    erlang:trace(all, false, [call]),
    {E, W}.

%% Every gc event is the gcfier's, starts and ends pair up, sizes are sane.
check_gc(Evs, Gs) ->
    Gc = [E || {N, _} = E <- Evs, lists:member(N, [gc_minor_start, gc_minor_end,
                                                  gc_major_start, gc_major_end])],
    [begin
         want(Evs, Tp, #{"pid" => Gs}),
         Start = length([x || {T, #{"pid" := P}} <- Gc, T =:= Tp, P =:= Gs]),
         End = length([x || {T, #{"pid" := P}} <- Gc, T =:= end_of(Tp), P =:= Gs]),
         Start =:= End orelse error({unpaired, Tp, Start, End})
     end || Tp <- [gc_minor_start, gc_major_start]],
    [begin
         is_integer(H) andalso H > 0 orelse error({heap, E}),
         is_integer(O) andalso O >= 0 orelse error({old_heap, E})
     end || {_, #{"heap" := H, "old_heap" := O}} = E <- Gc],
    [is_integer(N) andalso N >= 0 orelse error({need, E})
     || {_, #{"need" := N}} = E <- Gc],
    [is_integer(R) andalso R >= 0 orelse error({reclaimed, E})
     || {_, #{"reclaimed" := R}} = E <- Gc],
    ok.

end_of(gc_minor_start) -> gc_minor_end;
end_of(gc_major_start) -> gc_major_end.

%%% Workload processes (OTP's)

waiter() ->
    true = register(?MODULE, self()),
    receive
        {Pid, ok} ->
            Child = spawn(fun() -> receive ok -> ok end end),
            %% Remember the child for the field checks: ETS is not traced.
            ets:insert(?PIDS, {self(), Child}),
            true = link(Child),
            true = unlink(Child),
            _ = lists:seq(1, 1000),
            Child ! ok,
            true = unregister(?MODULE),
            Pid ! {self(), ok}
    end.

gcfier() ->
    gcfier(10000).

gcfier(N) ->
    receive
        {Pid, ok} ->
            _ = lists:reverse(lists:seq(1, N)),
            true = erlang:garbage_collect(),
            Pid ! {self(), ok}
    end.

foo_clause_exception({1, 2}) ->
    badness.

round_trip(Pid) ->
    Pid ! {self(), ok},
    receive {Pid, ok} -> ok end.

%% Until every one of Pids has exited (so has run all it does), not for a
%% time: on a loaded machine a child may not have run yet.
wait_exited(Pids) ->
    [begin
         R = monitor(process, P),
         receive {'DOWN', R, process, P, _} -> ok after 60000 -> error({still_running, P}) end
     end || P <- Pids],
    ok.

child_of(W) ->
    case ets:lookup(?PIDS, W) of
        [{W, Child}] -> Child;
        Other -> error({no_child_recorded, W, Other})
    end.

%% Registers names one by one until told to stop (fault cases): a steady
%% stream of process_register events whose names say when they happened.
registrar(Prefix) ->
    registrar(Prefix, 1).

registrar(Prefix, N) ->
    receive
        {stop, From} -> From ! {self(), N - 1};
        {count, From} -> From ! {self(), count, N - 1}, registrar(Prefix, N)
    after 5 ->
        Name = list_to_atom(Prefix ++ integer_to_list(N)),
        true = register(Name, self()),
        true = unregister(Name),
        registrar(Prefix, N + 1)
    end.

%%% The seed's workflow (seeds/000): only the tracer module name changed.

seed_workflow() ->
    Dir = filename:join(get(out), "erlang-demo"),
    lttng("destroy erlang-demo"), %% left over by an interrupted run
    {0, _} = lttng("create erlang-demo --output=" ++ Dir),
    try
        {0, _} = lttng("enable-event -u org_erlang_dyntrace:process_register"),
        %% The seed's `l(dyntrace).' is guard()'s code:ensure_loaded(beamtrace).
        erlang:trace(new, true, [procs, {tracer, beamtrace, []}]),
        {0, _} = lttng("start"),
        {ok, Started} = application:ensure_all_started(os_mon),
        lists:member(os_mon, Started) orelse error({os_mon_already_running, Started}),
        {0, _} = lttng("stop"),
        {0, Text} = lttng("view"),
        Evs = parse_view(Text),
        [begin
             Pid = whereis(Name),
             is_pid(Pid) orelse error({not_registered, Name}),
             want(Evs, process_register, #{"pid" => ps(Pid), "name" => atom_to_list(Name),
                                           "type" => "register"})
         end || Name <- [sasl_sup, alarm_handler, os_mon_sup, disksup, memsup, cpu_sup]],
        only(Evs, [process_register])
    after
        erlang:trace(all, false, [all]),
        lttng("destroy erlang-demo")
    end.

%%% Both sinks at once: a recorder session and an LTTng session on the same
%%% workload get the same events.

both_sinks() ->
    Dir = filename:join(get(out), "both-recorder"),
    Patterns = ["org_erlang_dyntrace:process_*", "org_erlang_dyntrace:message_*",
                "org_erlang_dyntrace:gc_*", "org_erlang_dyntrace:port_*"],
    {ok, Rec} = beamtrace:start(#{dir => Dir, events => Patterns, default => true}),
    S = lttng_session(both_lttng, Patterns),
    trace_new([procs, send, 'receive', garbage_collection, ports, running_ports]),
    W = spawn_link(?MODULE, waiter, []),
    round_trip(W),
    %% W returns after replying: its return is traced before it exits.
    wait_exited([W]),
    G = spawn_link(?MODULE, gcfier, []),
    round_trip(G),
    os:cmd("ls"),
    timer:sleep(100),
    erlang:trace(all, false, [all]),
    {ok, #{events := N, discarded := 0}} = beamtrace:stop(Rec),
    LEvs = session_stop_view(S),
    RText = os:cmd("babeltrace2 " ++ Dir),
    REvs = parse_view(RText),
    N =:= length(REvs) orelse error({recorder_count, N, length(REvs)}),
    N > 20 orelse error({too_few_events, N}),
    Strip = fun(Evs) -> lists:sort(Evs) end,
    case Strip(LEvs) =:= Strip(REvs) of
        true -> ok;
        false ->
            OnlyL = Strip(LEvs) -- Strip(REvs),
            OnlyR = Strip(REvs) -- Strip(LEvs),
            error({sinks_differ, {lttng, length(LEvs), lists:sublist(OnlyL, 5)},
                   {recorder, length(REvs), lists:sublist(OnlyR, 5)}})
    end.

%%% Faults

body(seed_workflow) -> seed_workflow();
body(both_sinks) -> both_sinks();

%% BEAMTRACE_LTTNG=0: the provider is not loaded, the recorder works.
body(beamtrace_lttng_0_not_loaded) ->
    "0" = os:getenv("BEAMTRACE_LTTNG"),
    false = provider_mapped(),
    false = lib_mapped("liblttng-ust"),
    #{lttng := {unavailable, Why}} = beamtrace:sinks(),
    string:find(Why, "BEAMTRACE_LTTNG") =/= nomatch orelse error({why, Why}),
    case sessiond_running() of
        true ->
            {0, List} = lttng("list -u"),
            pid_block(List, os:getpid()) =:= "" orelse error(listed_while_disabled);
        false -> ok
    end;
body(beamtrace_lttng_0_recorder_works) ->
    Dir = filename:join(get(out), "disabled-recorder"),
    {ok, Rec} = beamtrace:start(#{dir => Dir, events => ["org_erlang_dyntrace:process_*"]}),
    trace_new([procs]),
    W = spawn_link(?MODULE, waiter, []),
    round_trip(W),
    %% W returns after replying: its return is traced before it exits.
    wait_exited([W]),
    erlang:trace(all, false, [all]),
    {ok, #{events := N}} = beamtrace:stop(Rec),
    Evs = parse_view(os:cmd("babeltrace2 " ++ Dir)),
    N =:= length(Evs) orelse error({count, N, length(Evs)}),
    want(Evs, process_register, #{"pid" => ps(W), "name" => atom_to_list(?MODULE)});

%% Purge and reload of beamtrace: the NIF's unload dlcloses the provider
%% (lttng-ust unregisters its tracepoints), the next load registers again.
body(purge_unregisters_provider) ->
    wait_until(fun listed/0),
    true = code:delete(beamtrace),
    _ = code:purge(beamtrace),
    %% The VM closes a purged NIF library once the last of its resources is
    %% freed (sessions of earlier cases, freed by GC), not always by the
    %% time purge returns: seen once on OTP 27 under load.
    wait_until(fun() -> not provider_mapped() end),
    wait_until(fun() -> not listed() end);
body(reload_registers_and_traces) ->
    {module, beamtrace} = code:load_file(beamtrace),
    true = provider_mapped(),
    wait_until(fun listed/0),
    registered_seen(reloaded, "reloaded_");

%% A session daemon killed mid-trace, then restarted: the VM keeps running,
%% the recorder keeps recording, the new daemon sees the VM and gets events.
body(sessiond_killed_mid_trace_vm_runs) ->
    RecDir = filename:join(get(out), "killed-recorder"),
    {ok, Rec} = beamtrace:start(#{dir => RecDir,
                                  events => ["org_erlang_dyntrace:process_register"]}),
    _S = lttng_session(killed, ["org_erlang_dyntrace:process_register"]),
    trace_new([procs]),
    P1 = spawn(?MODULE, registrar, ["before_"]),
    registered(P1, 1),
    Killed = kill_sessiond(),
    diag("killed lttng-sessiond ~s mid-trace", [Killed]),
    P2 = spawn(?MODULE, registrar, ["after_kill_"]),
    %% The VM goes on: P2 registers names with the daemon gone.
    registered(P2, 10),
    false = sessiond_running(),
    [begin P ! {stop, self()}, receive {P, K} when K > 0 -> ok end end || P <- [P1, P2]],
    true = ets:insert(?STATE, [{rec, Rec, RecDir}, {p1, P1}, {p2, P2}]),
    ok;
body(sessiond_killed_recorder_keeps_recording) ->
    [{rec, Rec, RecDir}] = ets:lookup(?STATE, rec),
    [{p1, P1}] = ets:lookup(?STATE, p1),
    [{p2, P2}] = ets:lookup(?STATE, p2),
    erlang:trace(all, false, [all]),
    {ok, #{events := N, discarded := 0}} = beamtrace:stop(Rec),
    Evs = parse_view(os:cmd("babeltrace2 " ++ RecDir)),
    N =:= length(Evs) orelse error({count, N, length(Evs)}),
    want(Evs, process_register, #{"pid" => ps(P1), "name" => "before_1"}),
    want(Evs, process_register, #{"pid" => ps(P2), "name" => "after_kill_1"}),
    want(Evs, process_register, #{"pid" => ps(P2), "name" => "after_kill_10"});
body(sessiond_restarted_sees_vm) ->
    start_sessiond(),
    wait_listed(os:getpid());
body(sessiond_restarted_gets_events) ->
    [{p1, P1}] = ets:lookup(?STATE, p1),
    Evs = registered_seen(restarted, "restarted_"),
    none(Evs, process_register, #{"pid" => ps(P1)});

%% The VM started with no session daemon (init_per_group stopped ours) and
%% LTTNG_UST_REGISTER_TIMEOUT=-1: beamtrace loaded (peer_init) with its
%% provider, and the provider registers when a daemon appears.
body(load_without_sessiond) ->
    false = sessiond_running(),
    {module, beamtrace} = code:ensure_loaded(beamtrace),
    provider_mapped() orelse error({not_loaded, sinks_why()}),
    {ok, Rec} = beamtrace:start(#{dir => filename:join(get(out), "absent-recorder"),
                                 events => ["org_erlang_dyntrace:process_register"]}),
    true = ets:insert(?STATE, {rec, Rec}),
    ok;
body(sessiond_started_later_sees_vm) ->
    start_sessiond(),
    wait_listed(os:getpid());
body(sessiond_started_later_gets_events) ->
    registered_seen(absent_late, "late_");
body(recorder_unaffected_by_absent_sessiond) ->
    [{rec, Rec}] = ets:lookup(?STATE, rec),
    {ok, #{events := N}} = beamtrace:stop(Rec),
    N > 0 orelse error(no_events_recorded).

%% This VM's tracepoints are in `lttng list -u'.
listed() ->
    {0, L} = lttng("list -u"),
    string:find(pid_block(L, os:getpid()), "org_erlang_dyntrace:") =/= nomatch.

%% An LTTng session named Case gets the process_register event of a
%% registrar's first name; returns the session's events.
registered_seen(Case, Prefix) ->
    S = lttng_session(Case, ["org_erlang_dyntrace:process_register"]),
    trace_new([procs]),
    P = spawn(?MODULE, registrar, [Prefix]),
    registered(P, 1),
    P ! {stop, self()},
    receive {P, _} -> ok end,
    Evs = session_stop_view(S),
    want(Evs, process_register, #{"pid" => ps(P), "name" => Prefix ++ "1", "type" => "register"}),
    Evs.

%% Waits until registrar P has registered (and unregistered) N names.
registered(P, N) ->
    wait_until(fun() ->
                       P ! {count, self()},
                       receive {P, count, K} -> K >= N end
               end).

%%% Sessions: LTTng (OTP's helpers) or, as a development aid, the recorder.

session_start(Case, Event) ->
    case backend() of
        lttng -> lttng_session(Case, [Event]);
        recorder ->
            Dir = filename:join(get(out), atom_to_list(Case) ++ "-recorder"),
            os:cmd("rm -rf " ++ Dir),
            {ok, S} = beamtrace:start(#{dir => Dir, events => [Event], default => true}),
            {recorder, S, Dir}
    end.

lttng_session(Case, Events) ->
    Name = atom_to_list(Case),
    Dir = filename:join(get(out), Name),
    os:cmd("rm -rf " ++ Dir),
    lttng("destroy " ++ Name),
    {0, _} = lttng("create " ++ Name ++ " --output=" ++ Dir),
    [{0, _} = lttng("enable-event -u '" ++ E ++ "' --session=" ++ Name) || E <- Events],
    {0, _} = lttng("start " ++ Name),
    {lttng, Name}.

session_stop_view({lttng, Name}) ->
    {0, _} = lttng("stop " ++ Name),
    {0, Text} = lttng("view " ++ Name),
    lttng("destroy " ++ Name),
    parse_view(Text);
session_stop_view({recorder, S, Dir}) ->
    {ok, _} = beamtrace:stop(S),
    parse_view(os:cmd("babeltrace2 " ++ Dir)).

trace_new(Flags) ->
    erlang:trace(new, true, [{tracer, beamtrace, []} | Flags]).

%%% lttng and the session daemon

%% Runs `lttng Args'; returns {ExitStatus, Output}.
lttng(Args) ->
    Out = os:cmd("lttng " ++ Args ++ " 2>&1; echo \"@rc=$?\""),
    [Text, Rc] = string:split(Out, "@rc=", trailing),
    {list_to_integer(string:trim(Rc)), Text}.

sessiond_running() ->
    element(1, lttng("list")) =:= 0.

start_sessiond() ->
    "" = os:cmd("lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 </dev/null"),
    wait_until(fun sessiond_running/0).

kill_sessiond() ->
    kill_sessiond("-9").

%% Stops the daemon (on the test node, for absent): ok.
stop_sessiond() ->
    case sessiond_running() of
        true -> _ = kill_sessiond("-TERM"), ok;
        false -> ok
    end.

%% The daemon named by the pid file of our /run/lttng: its first line (a
%% daemon restarted in the same place can leave the tail of a longer pid
%% behind it: "479\n7" seen on trixie), and only if that process is an
%% lttng-sessiond.
kill_sessiond(Signal) ->
    {ok, Bin} = file:read_file("/run/lttng/lttng-sessiond.pid"),
    [Pid | _] = string:lexemes(binary_to_list(Bin), "\n"),
    match(Pid, "^[0-9]+$"),
    {ok, <<"lttng-sessiond\n">>} = file:read_file("/proc/" ++ Pid ++ "/comm"),
    os:cmd("kill " ++ Signal ++ " " ++ Pid),
    wait_until(fun() -> not sessiond_running() end),
    Pid.

wait_listed(OsPid) ->
    wait_until(fun() ->
                       {Rc, List} = lttng("list -u"),
                       Rc =:= 0 andalso string:find(pid_block(List, OsPid), "org_erlang_dyntrace:process_register") =/= nomatch
               end).

%% Polls Fun until it returns true; the case's time limit bounds the wait.
wait_until(Fun) ->
    case Fun() of
        true -> ok;
        false -> timer:sleep(100), wait_until(Fun)
    end.

%% The part of `lttng list -u' output about process OsPid ("" if absent).
%% lttng-tools up to 2.14 heads a process's block "PID: 123 - Name: ...",
%% 2.15+ "Process 123: `...`".
pid_block(List, OsPid) ->
    Blocks = string:split(List, "PID: ", all) ++ string:split(List, "Process ", all),
    case [B || B <- Blocks, lists:prefix(OsPid ++ " ", B) orelse lists:prefix(OsPid ++ ":", B)] of
        [B | _] -> B;
        [] -> ""
    end.

%% [{Field, Type}] that `lttng list -u -f' shows for event Ev in Block, Type
%% in lower case. Up to 2.14: an event line "org_erlang_dyntrace:EV (...)"
%% then lines "field: NAME (TYPE)"; 2.15+: "`org_erlang_dyntrace:EV` — ...",
%% a "Fields:" line, then lines "┆ `NAME`: TYPE".
listed_fields(Block, Ev) ->
    Lines = string:split(Block, "\n", all),
    Name = "org_erlang_dyntrace:" ++ atom_to_list(Ev),
    IsEvent = fun(L) -> string:find(L, Name ++ " ") =/= nomatch orelse
                            string:find(L, "`" ++ Name ++ "`") =/= nomatch end,
    Field = fun(L) ->
                    re:run(L, "(?:field: ([a-z0-9_]+) \\(([a-z ]+)\\)|`([a-z0-9_]+)`: +([A-Za-z ]+))",
                           [unicode, {capture, all_but_first, list}])
            end,
    case lists:dropwhile(fun(L) -> not IsEvent(L) end, Lines) of
        [] -> error({not_listed, Ev});
        [_ | Rest] ->
            Rest1 = lists:dropwhile(fun(L) -> string:find(L, "Fields:") =/= nomatch end, Rest),
            Fields = lists:takewhile(fun(L) -> Field(L) =/= nomatch end, Rest1),
            [case Field(F) of
                 {match, [N, T]} -> {N, T};
                 {match, ["", "", N, T]} -> {N, string:lowercase(string:trim(T))}
             end || F <- Fields]
    end.

%% OTP's provider (reference §1.2), written out here as an independent
%% oracle, plus beamtrace's user probes. `lttng list -f' says "string" or
%% "integer".
expected_fields() ->
    S = "string", I = "integer",
    [{process_spawn, [{"pid", S}, {"parent", S}, {"entry", S}]},
     {process_link, [{"from", S}, {"to", S}, {"type", S}]},
     {process_exit, [{"pid", S}, {"reason", S}]},
     {process_register, [{"pid", S}, {"name", S}, {"type", S}]},
     {process_scheduled, [{"pid", S}, {"entry", S}, {"type", S}]},
     {port_open, [{"pid", S}, {"driver", S}, {"port", S}]},
     {port_exit, [{"port", S}, {"reason", S}]},
     {port_link, [{"from", S}, {"to", S}, {"type", S}]},
     {port_scheduled, [{"pid", S}, {"entry", S}, {"type", S}]},
     {function_call, [{"pid", S}, {"entry", S}, {"depth", I}]},
     {function_return, [{"pid", S}, {"entry", S}, {"depth", I}]},
     {function_exception, [{"pid", S}, {"entry", S}, {"class", S}]},
     {message_send, [{"from", S}, {"to", S}, {"message", S}]},
     {message_receive, [{"to", S}, {"message", S}]},
     {gc_minor_start, [{"pid", S}, {"need", I}, {"heap", I}, {"old_heap", I}]},
     {gc_minor_end, [{"pid", S}, {"reclaimed", I}, {"heap", I}, {"old_heap", I}]},
     {gc_major_start, [{"pid", S}, {"need", I}, {"heap", I}, {"old_heap", I}]},
     {gc_major_end, [{"pid", S}, {"reclaimed", I}, {"heap", I}, {"old_heap", I}]},
     {user_trace_s1, [{"pid", S}, {"tag", S}, {"message", S}]},
     {user_trace_i4s4, [{"pid", S}, {"tag", S}, {"i1", I}, {"i2", I}, {"i3", I}, {"i4", I},
                        {"s1", S}, {"s2", S}, {"s3", S}, {"s4", S}]},
     {user_trace_n, [{"label", I}, {"pid", S}, {"tag", S}, {"i1", I}, {"i2", I}, {"i3", I},
                     {"i4", I}, {"s1", S}, {"s2", S}, {"s3", S}, {"s4", S}]}].

%%% This VM's provider

provider_file() ->
    Priv = case code:priv_dir(beamtrace) of
               {error, bad_name} ->
                   filename:join(filename:dirname(filename:dirname(code:which(beamtrace))), "priv");
               Dir -> Dir
           end,
    filename:join(Priv, "beamtrace_lttng.so").

provider_mapped() ->
    lib_mapped("/beamtrace_lttng.so").

lib_mapped(Name) ->
    {ok, Maps} = file:read_file("/proc/self/maps"),
    binary:match(Maps, list_to_binary(Name)) =/= nomatch.

sinks_why() ->
    case erlang:function_exported(beamtrace, sinks, 0) of
        true -> lists:flatten(io_lib:format("beamtrace:sinks() = ~p", [beamtrace:sinks()]));
        false -> "beamtrace:sinks/0 is not exported (the NIF does not load the provider yet?)"
    end.

%%% View text: [{Event, #{Field => string() | integer()}}]

parse_view(Text) ->
    Lines = string:split(Text, "\n", all),
    [parse_line(L) || L <- Lines, string:find(L, "org_erlang_dyntrace:") =/= nomatch].

parse_line(L) ->
    case re:run(L, "org_erlang_dyntrace:([a-z0-9_]+): \\{ cpu_id = [0-9]+ \\}, \\{ (.*) \\}$",
                [{capture, all_but_first, list}, unicode]) of
        {match, [Ev, Body]} ->
            {match, Pairs} = re:run(Body, "([a-z0-9_]+) = (\"(?:[^\"\\\\]|\\\\.)*\"|-?[0-9]+)(?:, |$)",
                                    [global, {capture, all_but_first, list}, unicode]),
            Name = list_to_atom(Ev),
            Order = [K || [K, _] <- Pairs],
            case lists:keyfind(Name, 1, expected_fields()) of
                {_, Expect} ->
                    Order =:= [F || {F, _} <- Expect] orelse error({field_order, Name, Order});
                false ->
                    error({unknown_event, L})
            end,
            {Name, maps:from_list([{K, value(V)} || [K, V] <- Pairs])};
        nomatch ->
            error({unparsed_view_line, L})
    end.

%% babeltrace2 escapes quotes, backslashes and control characters C-style.
value("\"" ++ Rest) -> unescape(lists:droplast(Rest));
value(Int) -> list_to_integer(Int).

unescape([$\\, $n | T]) -> [$\n | unescape(T)];
unescape([$\\, $t | T]) -> [$\t | unescape(T)];
unescape([$\\, $r | T]) -> [$\r | unescape(T)];
unescape([$\\, C | T]) -> [C | unescape(T)];
unescape([C | T]) -> [C | unescape(T)];
unescape([]) -> [].

%%% Assertions

ps(Pid) -> pid_to_list(Pid).

select(Evs, Name) -> [F || {N, F} <- Evs, N =:= Name].

matches(Fields, Want) ->
    maps:fold(fun(K, V, Acc) -> Acc andalso maps:get(K, Fields, '$none') =:= V end, true, Want).

want(Evs, Name, Want) ->
    case [F || F <- select(Evs, Name), matches(F, Want)] of
        [_ | _] -> ok;
        [] -> error({missing, Name, Want, {have, lists:sublist(select(Evs, Name), 8)},
                     {names, lists:usort([N || {N, _} <- Evs])}})
    end.

none(Evs, Name, Want) ->
    case [F || F <- select(Evs, Name), matches(F, Want)] of
        [] -> ok;
        Found -> error({unexpected, Name, Want, lists:sublist(Found, 5)})
    end.

only(Evs, Names) ->
    case [N || {N, _} <- Evs, not lists:member(N, Names)] of
        [] -> ok;
        Other -> error({unexpected_events, lists:usort(Other)})
    end.

match(S, Re) ->
    case re:run(S, Re) of
        {match, _} -> ok;
        nomatch -> error({no_match, S, Re})
    end.
