%% Workloads with known answers for test/analyses/run.sh. Each records one
%% trace with beamtrace and writes what the node itself measured to
%% Dir ++ ".expect" as "key value" lines, so the test compares the CLI's
%% answers with the VM's own measurements, not with machine speed.
-module(bmt_an_workload).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).
-export([main/1, sleep2/0, busy/0, outer/1, middle/1, ping_loop/0, sched_loop/0, composed/1,
         ask/1]).
-behaviour(gen_server).
-export([init/1, handle_call/3, handle_cast/2]).

main([Kind, Dir]) ->
    Before = before_start(list_to_atom(Kind)),
    {ok, _} = beamtrace:start(#{dir => Dir, buffer_size => 1 bsl 22}),
    Expect = run(list_to_atom(Kind), Before),
    {ok, #{discarded := Discarded, events := Events}} = beamtrace:stop(),
    Lines = [io_lib:format("~s ~p~n", [K, V]) || {K, V} <- Expect],
    ok = file:write_file(Dir ++ ".expect",
                         [Lines, io_lib:format("events ~p~ndiscarded ~p~n", [Events, Discarded])]),
    halt(0).

-define(MS, [{'_', [], [{return_trace}, {exception_trace}]}]).

%% What must exist before the recorder starts (the state dump names it).
before_start(names) ->
    Early = spawn(fun() -> register(bmt_an_early, self()), worker_loop() end),
    Elixir = spawn(fun() -> put('$initial_call', {'Elixir.BmtAn.Worker', init, 1}),
                            worker_loop() end),
    sync(Early), sync(Elixir),
    {Early, Elixir};
before_start(waker) ->
    %% Alive at start: the state dump names it, as a node's servers are.
    {ok, S} = gen_server:start({local, bmt_an_server}, ?MODULE, [], []),
    S;
before_start(_) ->
    none.

run(names, {Early, Elixir}) ->
    %% A module named as Elixir names modules, compiled here.
    A = erl_anno:new(1),
    Forms = [{attribute, A, module, 'Elixir.BmtAn.Worker'},
             {attribute, A, export, [{handle_call, 3}]},
             {function, A, handle_call, 3,
              [{clause, A, [{var, A, '_'}, {var, A, '_'}, {var, A, 'S'}], [],
                [{call, A, {remote, A, {atom, A, timer}, {atom, A, sleep}}, [{integer, A, 1}]},
                 {tuple, A, [{atom, A, reply}, {atom, A, ok}, {var, A, 'S'}]}]}]}],
    {ok, Mod, Bin} = compile:forms(Forms),
    {module, Mod} = code:load_binary(Mod, "bmt_an_worker.erl", Bin),
    trace_funs([{?MODULE, sleep2, 0}, {?MODULE, busy, 0}, {Mod, handle_call, 3}]),
    Late = spawn(fun worker_loop/0),
    sync(Late),
    [erlang:trace(P, true, [call, {tracer, beamtrace, []}]) || P <- [Early, Elixir]],
    erlang:trace(Late, true, [call, procs, {tracer, beamtrace, []}]),
    do(Early, fun() -> [sleep2() || _ <- lists:seq(1, 5)] end),
    do(Elixir, fun() -> [Mod:handle_call(x, y, z) || _ <- lists:seq(1, 3)] end),
    do(Late, fun() -> [busy() || _ <- lists:seq(1, 7)] end),
    do(Late, fun() -> register(bmt_an_late, self()) end),
    do(Late, fun() -> [busy() || _ <- lists:seq(1, 4)] end),
    untrace(),
    [{early_pid, pid_text(Early)}, {elixir_pid, pid_text(Elixir)}, {late_pid, pid_text(Late)}];
%% Who ended the waits (issue 16): a client calls ask/1, a gen_server:call
%% to the registered server bmt_an_server (started before the recorder, so
%% the state dump names it), which sleeps 5 ms before it replies (to the
%% call's alias, OTP 24 on): ask/1 waits on messages, and the reply that
%% ends each wait is the server's.
run(waker, S) ->
    trace_funs([{?MODULE, ask, 1}]),
    Self = self(),
    C = spawn(fun() -> receive go -> ok end,
                       T = [ask(I) || I <- lists:seq(1, 20)],
                       Self ! {done, T} end),
    erlang:trace(C, true, [call, send, 'receive', running, {tracer, beamtrace, []}]),
    erlang:trace(S, true, [send, 'receive', running, {tracer, beamtrace, []}]),
    C ! go,
    receive {done, T} -> ok end,
    untrace(),
    gen_server:stop(S),
    [{server_pid, pid_text(S)}, {client_pid, pid_text(C)}, {asks, length(T)}];
run(Kind, none) ->
    run(Kind).

pid_text(P) -> lists:flatten(io_lib:format("~p", [P])).

worker_loop() ->
    receive
        {do, From, F} -> F(), From ! {done, self()}, worker_loop();
        {sync, From} -> From ! {synced, self()}, worker_loop()
    end.

do(P, F) -> P ! {do, self(), F}, receive {done, P} -> ok end.
sync(P) -> P ! {sync, self()}, receive {synced, P} -> ok end.

%% sleep2/0 (2 ms) called 100 times and busy/0 (~10 us) 10 000 times; each
%% returns its own duration measured inside the call.
run(calls) ->
    trace_funs([{?MODULE, sleep2, 0}, {?MODULE, busy, 0}]),
    Self = self(),
    P = spawn(fun() -> receive go -> ok end,
                       S = [sleep2() || _ <- lists:seq(1, 100)],
                       B = [busy() || _ <- lists:seq(1, 10000)],
                       Self ! {done, S, B} end),
    erlang:trace(P, true, [call, {tracer, beamtrace, []}]),
    P ! go,
    receive {done, S, B} -> ok end,
    untrace(),
    [{sleep2_p50_ns, median(S)}, {busy_p50_ns, median(B)}];
%% Ping-pong where the receiver is suspended for ~5 ms after each ping is
%% sent: send -> scheduled-in latency is that delay.
run(sched) ->
    B = spawn(fun sched_loop/0),
    Self = self(),
    A = spawn(fun() -> receive go -> ok end, Self ! {lat, [pingpong(B) || _ <- lists:seq(1, 20)]} end),
    erlang:trace(A, true, [send, {tracer, beamtrace, []}]),
    erlang:trace(B, true, [running, {tracer, beamtrace, []}]),
    A ! go,
    receive {lat, L} -> ok end,
    untrace(),
    [{sched_p50_ns, median([Lo || {Lo, _} <- L])},
     {sched_woken_p50_ns, median([Hi || {_, Hi} <- L])}, {rounds, length(L)}];
%% N spawns by one traced parent; children inherit the flags and exit.
run(procs) ->
    N = 500,
    Self = self(),
    P = spawn(fun() -> receive go -> ok end,
                       Pids = [spawn(fun() -> receive stop -> ok end end) || _ <- lists:seq(1, N)],
                       [begin Q ! stop, Ref = monitor(process, Q),
                              receive {'DOWN', Ref, _, _, _} -> ok end end || Q <- Pids],
                       Self ! done end),
    erlang:trace(P, true, [procs, set_on_spawn, {tracer, beamtrace, []}]),
    P ! go,
    receive done -> ok end,
    untrace(),
    [{spawns, N}];
%% Known composition, on one scheduler (the node runs with +S 1): each
%% composed/1 call computes for 2 ms (on CPU), then waits for a reply that
%% the replier sends 5 ms later (waiting), then stays runnable while the
%% replier, at high priority, computes for 3 ms right after sending
%% (runnable). Each call returns the three durations measured by the node
%% itself; the expectations are their medians.
run(breakdown) ->
    trace_funs([{?MODULE, composed, 1}]),
    Self = self(),
    R = spawn(fun replier/0),
    W = spawn(fun() -> receive go -> ok end,
                       Parts = [composed(R) || _ <- lists:seq(1, 30)],
                       Self ! {parts, Parts} end),
    erlang:trace(W, true, [call, running, 'receive', garbage_collection,
                           {tracer, beamtrace, []}]),
    erlang:trace(R, true, [send, {tracer, beamtrace, []}]),
    W ! go,
    receive {parts, Parts} -> ok end,
    untrace(),
    R ! stop,
    [{on_cpu_p50_ns, median([C || {C, _, _} <- Parts])},
     {waiting_p50_ns, median([Wt || {_, Wt, _} <- Parts])},
     {runnable_p50_ns, median([Rn || {_, _, Rn} <- Parts])},
     {calls, length(Parts)}];
%% Everything at once: calls (nested, with an exception and a process that
%% dies mid-call), messages, scheduling, gc, spawns and registrations.
run(all) ->
    trace_funs([{?MODULE, outer, 1}, {?MODULE, middle, 1}, {?MODULE, sleep2, 0},
                {?MODULE, busy, 0}, {lists, seq, 2}]),
    Self = self(),
    Flags = [call, procs, send, 'receive', running, garbage_collection, set_on_spawn,
             {tracer, beamtrace, []}],
    P = spawn(fun() ->
                  receive go -> ok end,
                  register(bmt_an_main, self()),
                  B = spawn(fun ping_loop/0),
                  [begin B ! {ping, self(), I}, receive {pong, I} -> ok end end
                   || I <- lists:seq(1, 50)],
                  [outer(I) || I <- lists:seq(1, 20)],
                  catch middle(crash),
                  D = spawn(fun() -> middle(die) end),
                  Ref = monitor(process, D),
                  receive {'DOWN', Ref, _, _, _} -> ok end,
                  erlang:garbage_collect(),
                  B ! stop,
                  Self ! done
              end),
    erlang:trace(P, true, Flags),
    P ! go,
    receive done -> ok end,
    untrace(),
    [].

trace_funs(MFAs) ->
    [begin {module, M} = code:ensure_loaded(M), 1 = erlang:trace_pattern(MFA, ?MS, [local]) end
     || {M, _, _} = MFA <- MFAs].

untrace() ->
    erlang:trace(all, false, [all]),
    erlang:trace_pattern({'_', '_', '_'}, false, [local]).

median(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)).

now_ns() -> erlang:monotonic_time(nanosecond).

sleep2() ->
    T0 = now_ns(),
    timer:sleep(2),
    now_ns() - T0.

busy() ->
    T0 = now_ns(),
    spin(T0 + 10000),
    now_ns() - T0.

spin(Until) ->
    case now_ns() >= Until of
        true -> ok;
        false -> spin(Until)
    end.

composed(R) ->
    T0 = now_ns(),
    spin(T0 + 2000000),
    T1 = now_ns(),
    R ! {req, self()},
    receive {reply, Tsend} -> ok end,
    T2 = now_ns(),
    {T1 - T0, Tsend - T1, T2 - Tsend}.

replier() ->
    process_flag(priority, high),
    receive
        {req, W} ->
            timer:sleep(5),
            Tsend = now_ns(),
            W ! {reply, Tsend},
            spin(now_ns() + 3000000),
            replier();
        stop -> ok
    end.

ask(I) ->
    T0 = now_ns(),
    {ok, I} = gen_server:call(bmt_an_server, {ask, I}),
    now_ns() - T0.

init([]) -> {ok, nil}.
handle_call({ask, I}, _From, S) -> timer:sleep(5), {reply, {ok, I}, S}.
handle_cast(_, S) -> {noreply, S}.

%% One round: {T1 - T0, Tb - T0}, from before the send to the resume (B
%% cannot run before it) and to B's handling of the ping (after it was
%% scheduled in).
pingpong(B) ->
    erlang:suspend_process(B),
    T0 = now_ns(),
    B ! {ping, self(), x},
    timer:sleep(5),
    T1 = now_ns(),
    true = erlang:resume_process(B),
    receive {pong, x, Tb} -> ok end,
    {T1 - T0, Tb - T0}.

%% ping_loop that says when it handled each ping.
sched_loop() ->
    receive
        {ping, From, I} -> From ! {pong, I, now_ns()}, sched_loop();
        stop -> ok
    end.

ping_loop() ->
    receive
        {ping, From, I} -> From ! {pong, I}, ping_loop();
        stop -> ok
    end.

outer(I) ->
    L = lists:seq(1, 100 + I),
    middle(length(L)).

middle(crash) -> error(crash);
middle(die) -> timer:sleep(1), exit(died_mid_call);
middle(N) -> sleep2(), N.
