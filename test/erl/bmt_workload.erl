%% A deterministic traced workload, and the pid tracer that counts what the
%% VM itself reports for it.
%%
%% Determinism: the traced processes ("workers") never talk to each other.
%% An untraced controller (the caller of run/2) drives them one command at a
%% time and sends a command only once the worker is waiting in receive, so
%% each worker's scheduling in/out, receives and GCs are the same on every
%% run. Workers use off-heap message queues so that message allocation does
%% not depend on lock timing.
-module(bmt_workload).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([run/2, run/3, worker/1, traced_ok/1, traced_error/1, traced_throw/1,
         pid_tracer/0, pid_tracer_counts/1, tag_tracepoint/2, tracepoints/0,
         flags/0, events_total/1, cmd/2, cmd_noreply/2, wait_waiting/1,
         collector/0, collected/1]).

-define(SPAWN_OPTS, [{message_queue_data, off_heap}]).

tracepoints() ->
    [process_spawn, process_link, process_exit, process_register,
     process_scheduled, port_open, port_exit, port_link, port_scheduled,
     function_call, function_return, function_exception, message_send,
     message_receive, gc_minor_start, gc_minor_end, gc_major_start, gc_major_end].

flags() ->
    [procs, running, call, return_to, send, 'receive', garbage_collection, set_on_spawn].

port_flags() ->
    [ports, running_ports].

%% Runs the workload traced by Tracer ({tracer, ...} term). Rounds scales
%% it. Returns when every traced process has exited and every trace event
%% has been delivered.
run(Tracer, Rounds) ->
    run(Tracer, Rounds, #{}).

run(Tracer, Rounds, Opts) ->
    Ctl = self(),
    MsgSize = maps:get(msg_size, Opts, 8),
    Burst = maps:get(burst, Opts, 0),
    1 = erlang:trace_pattern({?MODULE, traced_ok, 1}, [{'_', [], [{return_trace}, {exception_trace}]}], [local]),
    1 = erlang:trace_pattern({?MODULE, traced_error, 1}, [{'_', [], [{return_trace}, {exception_trace}]}], [local]),
    1 = erlang:trace_pattern({?MODULE, traced_throw, 1}, [{'_', [], [{exception_trace}]}], [local]),
    Root = erlang:spawn_opt(?MODULE, worker, [Ctl], ?SPAWN_OPTS),
    wait_waiting(Root),
    1 = erlang:trace(Root, true, [Tracer | flags()]),
    erlang:trace(new_ports, true, [Tracer | port_flags()]),
    Workers = lists:foldl(fun(I, Acc) -> round(Root, I, MsgSize, Burst) ++ Acc end, [], lists:seq(1, Rounds)),
    erlang:trace(new_ports, false, [Tracer | port_flags()]),
    Refs = [erlang:monitor(process, P) || P <- [Root | Workers]],
    [cmd_noreply(P, stop) || P <- [Root | Workers]],
    [receive {'DOWN', R, _, _, _} -> ok end || R <- Refs],
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok end,
    erlang:trace_pattern({?MODULE, '_', '_'}, false, [local]),
    ok.

%% One round: the root spawns two workers; they register, link, unlink,
%% exchange messages through the controller, call traced functions (one
%% returns, one raises, one throws), garbage collect, open a port; one of
%% them exits with a known reason.
round(Root, I, MsgSize, Burst) ->
    A = cmd(Root, {spawn, self()}),
    B = cmd(Root, {spawn, self()}),
    wait_waiting(A),
    wait_waiting(B),
    Name = list_to_atom("bmt_w_" ++ integer_to_list(I)),
    true = cmd(A, {apply, fun() -> register(Name, self()) end}),
    true = cmd(A, {apply, fun() -> unregister(Name) end}),
    true = cmd(A, {link, B}),
    true = cmd(B, {unlink, A}),
    Big = lists:duplicate(MsgSize, I),
    ok = cmd(A, {send, B, {hello, Big}}),
    {hello, Big} = cmd(B, recv),
    {ok, I} = cmd(A, {apply, fun() -> traced_ok(I) end}),
    {'EXIT', {badarith, _}} = cmd(A, {apply, fun() -> catch traced_error(I) end}),
    {thrown, I} = cmd(B, {apply, fun() -> catch traced_throw(I) end}),
    true = cmd(B, {apply, fun() -> erlang:garbage_collect() end}),
    _ = cmd(B, {apply, fun() -> length(lists:reverse(lists:seq(1, 3000))) end}),
    %% A port with no external I/O (a listening socket that is closed at
    %% once): its scheduling is driven by our calls only. A spawned
    %% program's port is scheduled a varying number of times (pipe EOF
    %% and exit status may come in one or two I/O events).
    %% The controller (not traced) opens it: gen_tcp talks to other
    %% processes, which would make the opener's own events vary.
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    ok = gen_tcp:close(L),
    %% A burst of self-sends: many events in a moment, to overflow small
    %% buffers faster than the consumer drains them.
    Burst = cmd(A, {apply, fun() -> burst(Burst, 0) end}),
    MRef = erlang:monitor(process, B),
    cmd_noreply(B, {exit, {shutdown, I}}),
    receive {'DOWN', MRef, _, _, {shutdown, I}} -> ok end,
    [A].

%% Send-receive pairs to itself: two events each, the mailbox stays short.
burst(0, N) -> N;
burst(K, N) ->
    self() ! {burst, K},
    receive {burst, K} -> burst(K - 1, N + 1) end.

cmd(P, Cmd) ->
    cmd_noreply(P, Cmd),
    receive {P, done, R} -> R end.

cmd_noreply(P, Cmd) ->
    wait_waiting(P),
    P ! {self(), Cmd}.

wait_waiting(P) ->
    case erlang:process_info(P, status) of
        {status, waiting} -> ok;
        {status, _} -> erlang:yield(), wait_waiting(P)
    end.

worker(Ctl) ->
    receive
        {Ctl, stop} -> ok;
        {Ctl, {exit, Reason}} -> exit(Reason);
        {Ctl, recv} ->
            receive {msg, M} -> Ctl ! {self(), done, M} end,
            worker(Ctl);
        {Ctl, Cmd} ->
            Ctl ! {self(), done, do(Ctl, Cmd)},
            worker(Ctl)
    end.

do(Ctl, {spawn, Ctl}) -> erlang:spawn_opt(?MODULE, worker, [Ctl], ?SPAWN_OPTS);
do(_, {apply, F}) -> F();
do(_, {link, P}) -> link(P);
do(_, {unlink, P}) -> unlink(P);
do(_, {send, P, M}) -> P ! {msg, M}, ok.

traced_ok(I) -> {ok, I}.
traced_error(I) -> I / (I - I).
traced_throw(I) -> throw({thrown, I}).

%%% The VM's own pid tracer

pid_tracer() ->
    spawn(fun() -> pid_tracer_loop(#{}) end).

pid_tracer_loop(Counts) ->
    receive
        {get, From} -> From ! {counts, self(), Counts};
        Msg ->
            case trace_msg_tracepoint(Msg) of
                none -> pid_tracer_loop(Counts);
                Tp -> pid_tracer_loop(maps:update_with(Tp, fun(C) -> C + 1 end, 1, Counts))
            end
    end.

%% A pid tracer that keeps every trace message, in order.
collector() ->
    spawn(fun() -> collector_loop([]) end).

collector_loop(Acc) ->
    receive
        {get, From} -> From ! {collected, self(), lists:reverse(Acc)};
        Msg -> collector_loop([Msg | Acc])
    end.

collected(T) ->
    T ! {get, self()},
    receive {collected, T, L} -> L end.

pid_tracer_counts(T) ->
    T ! {get, self()},
    receive {counts, T, C} -> C end.

trace_msg_tracepoint(Msg) when element(1, Msg) =:= trace ->
    tag_tracepoint(element(3, Msg), element(2, Msg));
trace_msg_tracepoint(_) ->
    none.

%% The tracepoint a trace tag becomes, by the tracee's kind; as the NIF
%% maps it (spawned and port register/unregister are not tracepoints).
tag_tracepoint(Tag, Tracee) when is_port(Tracee) ->
    case Tag of
        open -> port_open;
        closed -> port_exit;
        L when L =:= link; L =:= unlink; L =:= getting_linked; L =:= getting_unlinked -> port_link;
        S when S =:= in; S =:= out; S =:= in_exiting; S =:= out_exiting; S =:= out_exited -> port_scheduled;
        S when S =:= send; S =:= send_to_non_existing_process -> message_send;
        'receive' -> message_receive;
        _ -> none
    end;
tag_tracepoint(Tag, _Pid) ->
    case Tag of
        spawn -> process_spawn;
        L when L =:= link; L =:= unlink; L =:= getting_linked; L =:= getting_unlinked -> process_link;
        exit -> process_exit;
        R when R =:= register; R =:= unregister -> process_register;
        S when S =:= in; S =:= out; S =:= in_exiting; S =:= out_exiting; S =:= out_exited -> process_scheduled;
        call -> function_call;
        R when R =:= return_from; R =:= return_to -> function_return;
        exception_from -> function_exception;
        S when S =:= send; S =:= send_to_non_existing_process -> message_send;
        'receive' -> message_receive;
        G when G =:= gc_minor_start; G =:= gc_minor_end; G =:= gc_major_start; G =:= gc_major_end -> G;
        _ -> none
    end.

events_total(Counts) ->
    maps:fold(fun(_, V, A) -> A + V end, 0, Counts).
