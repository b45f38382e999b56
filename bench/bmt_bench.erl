%% @doc beamtrace benchmarks, driven by bench/run.sh.
%%
%% `timing': three workloads (call, send, spawn) under five tracers
%% (untraced, the null NIF tracer, beamtrace with default options,
%% beamtrace with big buffers, the VM's pid tracer), several interleaved
%% rounds, medians printed side by side with ratios and the beamtrace - null
%% difference per event.
%%
%% `flood Kind': 4 processes sending as fast as they can for a few seconds
%% under one tracer; peak RSS of this node, events recorded or queued. Each
%% kind runs in its own node (run.sh), since VmHWM only ever rises.
%%
%% Timings are printed, never asserted (STYLE.md).
-module(bmt_bench).
-export([main/1]).

-define(WORKLOADS, [call, send, spawn]).
-define(TRACERS, [untraced, null, beamtrace, beamtrace_big, pid]).
-define(BIG_BUFFER, (32 bsl 20)).

main([Mode | Args]) ->
    Out = os:getenv("BENCH_OUT", "bench/out"),
    try
        case Mode of
            "timing" -> timing(Out, Args);
            "flood" -> flood(Out, Args)
        end
    catch C:R:St ->
        io:format("bench failed: ~p:~p~n~p~n", [C, R, St]),
        halt(1)
    end,
    halt(0).

%%% ---- timing ----

ops(call) -> 1000000;
ops(send) -> 1000000;
ops(spawn) -> 100000.

timing(Out, Args) ->
    Rounds = case Args of [R | _] -> list_to_integer(R); [] -> 5 end,
    Scale = list_to_float(os:getenv("BENCH_SCALE", "1.0")),
    io:format("~n== Per-operation cost: ~b rounds, tracers interleaved, medians ==~n", [Rounds]),
    io:format("OTP ~s, erts ~s, ~b schedulers, JIT: ~p~n",
              [erlang:system_info(otp_release), erlang:system_info(version),
               erlang:system_info(schedulers_online),
               erlang:system_info(emu_flavor)]),
    %% Warm-up: JIT, allocators, first session.
    [run(W, T, Out, 2000) || W <- ?WORKLOADS, T <- ?TRACERS],
    Ns = maps:from_list([{W, max(1000, round(ops(W) * Scale))} || W <- ?WORKLOADS]),
    io:format("ops per run: ~p~n", [Ns]),
    Samples = lists:foldl(
        fun(Round, Acc) ->
            Order = rotate(?TRACERS, Round - 1),
            lists:foldl(
                fun({W, T}, A) ->
                    Res = run(W, T, Out, maps:get(W, Ns)),
                    maps:update_with({W, T}, fun(L) -> [Res | L] end, [Res], A)
                end, Acc, [{W, T} || W <- ?WORKLOADS, T <- Order])
        end, #{}, lists:seq(1, Rounds)),
    report(Samples, Ns).

rotate(L, K) ->
    K1 = K rem length(L),
    {A, B} = lists:split(K1, L),
    B ++ A.

flags(call) -> [call];
flags(send) -> [send];
flags(spawn) -> [procs, set_on_spawn].

events(call) -> ["org_erlang_dyntrace:function_*"];
events(send) -> ["org_erlang_dyntrace:message_*"];
events(spawn) -> ["org_erlang_dyntrace:process_*"].

%% One timed run of workload W under tracer T: #{ns_op, ...}.
run(W, T, Out, N) ->
    Setup = setup(T, W, Out),
    W =:= call andalso T =/= untraced andalso
        erlang:trace_pattern({bench_mod, f, 1}, true, [local]),
    {Pid, Ref} = spawn_monitor(
        fun() ->
            receive go -> ok end,
            T0 = erlang:monotonic_time(nanosecond),
            case W of
                call -> bench_mod:call_loop(N);
                send -> bench_mod:send_loop(N);
                spawn -> bench_mod:spawn_loop(N)
            end,
            T1 = erlang:monotonic_time(nanosecond),
            %% Queue length of the pid tracer right at the end of the loop.
            Q = case Setup of
                    {pid, Tr} -> element(2, process_info(Tr, message_queue_len));
                    _ -> 0
                end,
            exit({done, T1 - T0, Q})
        end),
    case tracer_spec(Setup) of
        none -> ok;
        Spec -> 1 = erlang:trace(Pid, true, [Spec | flags(W)])
    end,
    Pid ! go,
    {Dt, Qlen} = receive {'DOWN', Ref, process, Pid, {done, D, Q}} -> {D, Q};
                         {'DOWN', Ref, process, Pid, Other} -> error({worker, Other})
                 end,
    W =:= call andalso erlang:trace_pattern({bench_mod, f, 1}, false, [local]),
    Extra = teardown(Setup),
    Extra#{ns_op => Dt / N, qlen => Qlen, n => N}.

setup(untraced, _, _) -> untraced;
setup(null, _, _) -> null;
setup(pid, _, _) -> {pid, spawn(fun() -> pid_tracer(0) end)};
setup(Beamtrace, W, Out) ->
    Dir = filename:join([Out, "traces", atom_to_list(W) ++ "-" ++ integer_to_list(erlang:unique_integer([positive]))]),
    Opts0 = #{dir => Dir, events => events(W), default => true},
    Opts = case Beamtrace of
               beamtrace -> Opts0;
               beamtrace_big -> Opts0#{buffer_size => ?BIG_BUFFER}
           end,
    {ok, S} = beamtrace:start(Opts),
    {beamtrace, S, Dir}.

tracer_spec(untraced) -> none;
tracer_spec(null) -> {tracer, bmt_null_tracer, []};
tracer_spec({pid, Tr}) -> {tracer, Tr};
tracer_spec({beamtrace, _, _}) -> {tracer, beamtrace, []}.

teardown({beamtrace, S, Dir}) ->
    {ok, #{events := E, discarded := D}} = beamtrace:stop(S),
    ok = file:del_dir_r(Dir),
    #{events => E, discarded => D};
teardown({pid, Tr}) ->
    %% Every trace message is in the tracer's mailbox before our request.
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok end,
    Tr ! {count, self()},
    receive {count, C} -> ok end,
    exit(Tr, kill),
    #{events => C, discarded => 0};
teardown(_) ->
    #{}.

%% The pid tracer: receives and drops, counting.
pid_tracer(C) ->
    receive
        {count, From} -> From ! {count, C}, pid_tracer(C);
        _ -> pid_tracer(C + 1)
    end.

median(L) ->
    S = lists:sort(L),
    lists:nth((length(S) + 1) div 2, S).

report(Samples, Ns) ->
    Med = fun(W, T, Key) ->
                  median([maps:get(Key, R, 0) || R <- maps:get({W, T}, Samples)])
          end,
    io:format("~n~-7s ~-14s ~9s ~7s ~9s ~8s ~7s  ~s~n",
              ["work", "tracer", "ns/op", "ev/op", "ns/event", "x untr", "x null", "notes"]),
    io:format("~s~n", [lists:duplicate(90, $-)]),
    Rows = [begin
                N = maps:get(W, Ns),
                NsOp = Med(W, T, ns_op),
                Ev = case T of
                         untraced -> 0.0;
                         %% The null tracer sees what the VM sends the pid tracer.
                         null -> Med(W, pid, events) / N;
                         _ -> (Med(W, T, events) + Med(W, T, discarded)) / N
                     end,
                Untr = Med(W, untraced, ns_op),
                Null = Med(W, null, ns_op),
                Notes = notes(T, W, Samples, Med),
                io:format("~-7s ~-14s ~9.1f ~7.2f ~9s ~8.2f ~7s  ~s~n",
                          [W, T, NsOp, Ev,
                           if Ev > 0 -> io_lib:format("~.1f", [NsOp / Ev]); true -> "-" end,
                           NsOp / Untr,
                           if T =:= untraced -> "-"; true -> io_lib:format("~.2f", [NsOp / Null]) end,
                           Notes]),
                {{W, T}, #{ns_op => NsOp, ev_op => Ev}}
            end || W <- ?WORKLOADS, T <- ?TRACERS],
    R = maps:from_list(Rows),
    io:format("~n== beamtrace - null (the VM's dispatch floor); target <= 60 ns/event ==~n"),
    io:format("~-7s ~-14s ~10s ~9s ~11s ~13s  ~s~n",
              ["work", "tracer", "delta ns/op", "bt ev/op", "delta ns/ev", "pid-null ns/op", "verdict"]),
    Deltas = [begin
                  #{ns_op := B, ev_op := E} = maps:get({W, T}, R),
                  #{ns_op := Nl} = maps:get({W, null}, R),
                  #{ns_op := P} = maps:get({W, pid}, R),
                  D = B - Nl,
                  DE = D / max(E, 1.0e-9),
                  io:format("~-7s ~-14s ~10.1f ~9.2f ~11.1f ~13.1f  ~s~n",
                            [W, T, D, E, DE, P - Nl,
                             if DE =< 60 -> "within target"; true -> "OVER target" end]),
                  {{W, T}, DE}
              end || W <- ?WORKLOADS, T <- [beamtrace, beamtrace_big]],
    io:format("(reference, OTP dyntrace+LTTng above the floor: call +370, send +360, spawn +540 ns;"
              " pid tracer ~~+450 ns for call)~n"),
    Summary = string:join([io_lib:format("~s +~b ns/ev", [W, round(DE)])
                           || {{W, beamtrace}, DE} <- Deltas], ", "),
    io:format("TIMING-SUMMARY beamtrace-null: ~s~n", [Summary]).

notes(T, W, Samples, Med) when T =:= beamtrace; T =:= beamtrace_big ->
    Disc = [maps:get(discarded, X) || X <- maps:get({W, T}, Samples)],
    Evs = [maps:get(events, X) || X <- maps:get({W, T}, Samples)],
    _ = Med,
    io_lib:format("recorded ~b, discarded ~b (median; max discarded ~b)",
                  [median(Evs), median(Disc), lists:max(Disc)]);
notes(pid, W, Samples, _) ->
    Q = [maps:get(qlen, X) || X <- maps:get({W, pid}, Samples)],
    io_lib:format("tracer mailbox at loop end: median ~b, max ~b msgs", [median(Q), lists:max(Q)]);
notes(_, _, _, _) -> "".

%%% ---- flood ----

-define(FLOOD_SENDERS, 4).
-define(MEM_CAP, (4 bsl 30)).

flood(Out, [KindS, MsS]) ->
    Kind = list_to_atom(KindS),
    Ms = list_to_integer(MsS),
    Base = rss_kb("VmRSS"),
    Setup = case Kind of
                untraced -> untraced;
                pid -> {pid, spawn(fun() -> pid_tracer(0) end)};
                beamtrace -> setup(beamtrace, send, Out)
            end,
    Stop = atomics:new(1, []),
    Senders = [spawn_monitor(fun() -> exit({sent, bench_mod:flood_sender(Stop)}) end)
               || _ <- lists:seq(1, ?FLOOD_SENDERS)],
    case tracer_spec(Setup) of
        none -> ok;
        Spec -> [1 = erlang:trace(P, true, [Spec, send]) || {P, _} <- Senders]
    end,
    T0 = erlang:monotonic_time(millisecond),
    {PeakTotal, Capped} = watch(T0 + Ms, 0),
    atomics:put(Stop, 1, 1),
    Sent = lists:sum([receive {'DOWN', R, process, P, {sent, C}} -> C end || {P, R} <- Senders]),
    Secs = (erlang:monotonic_time(millisecond) - T0) / 1000,
    Hwm = rss_kb("VmHWM"),
    Extra = case Setup of
                {pid, Tr} ->
                    {message_queue_len, Q} = process_info(Tr, message_queue_len),
                    {memory, M} = process_info(Tr, memory),
                    exit(Tr, kill),
                    io_lib:format("pid tracer mailbox ~b msgs, tracer process memory ~.1f MiB~s",
                                  [Q, M / 1048576, if Capped -> " (stopped early at the memory cap)"; true -> "" end]);
                {beamtrace, _, _} ->
                    #{events := E, discarded := D} = teardown(Setup),
                    io_lib:format("beamtrace recorded ~b, discarded ~b", [E, D]);
                _ -> ""
            end,
    io:format("FLOOD ~-9s ~5.2f s, ~b sends (~.2f M/s); peak RSS ~.1f MiB (start ~.1f); "
              "peak erlang:memory(total) ~.1f MiB; ~s~n",
              [Kind, Secs, Sent, Sent / Secs / 1.0e6, Hwm / 1024, Base / 1024,
               PeakTotal / 1048576, Extra]).

%% Samples erlang:memory(total) every 20 ms until Deadline or the cap.
watch(Deadline, Peak) ->
    Total = erlang:memory(total),
    P = max(Peak, Total),
    Now = erlang:monotonic_time(millisecond),
    if
        Total > ?MEM_CAP -> {P, true};
        Now >= Deadline -> {P, false};
        true -> timer:sleep(20), watch(Deadline, P)
    end.

rss_kb(Key) ->
    {ok, Bin} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- binary:split(Bin, <<"\n">>, [global]),
                   binary:match(L, list_to_binary(Key ++ ":")) =/= nomatch],
    [_, V | _] = string:lexemes(binary_to_list(Line), " \t"),
    list_to_integer(V).
