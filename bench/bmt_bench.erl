%% @doc beamtrace benchmarks, driven by bench/run.sh.
%%
%% `timing': three workloads (call, send, spawn) under these tracers, several
%% interleaved rounds, medians printed side by side with ratios and the
%% beamtrace - null difference per event:
%%   untraced          no trace flags, no trace pattern
%%   null              bench/null_tracer.c: the VM's dispatch floor
%%   beamtrace         default options (1 MiB per thread, discard mode)
%%   beamtrace_big     32 MiB per thread, so nothing is dropped
%%   beamtrace_handle  as _big, tracer state = the session handle instead of []
%%   beamtrace_msg0    as _big, message_length 0 (send only: no message text)
%%   pid               the VM's pid tracer, a process that drops messages
%% The two last beamtrace variants use only public options; they isolate the
%% cost of resolving a handle and of printing the message.
%%
%% `flood Kind': 4 processes sending as fast as they can for a few seconds
%% under one tracer; peak RSS of this node, events recorded or queued. Each
%% kind runs in its own node (run.sh), since VmHWM only ever rises.
%%
%% Timings are printed, never asserted (STYLE.md).
-module(bmt_bench).
-export([main/1]).

-define(WORKLOADS, [call, send, spawn]).
-define(TRACERS, [untraced, null, beamtrace, beamtrace_big, beamtrace_handle,
                  beamtrace_msg0, pid]).
-define(BIG_BUFFER, (32 bsl 20)).

main([Mode | Args]) ->
    Out = os:getenv("BENCH_OUT", "bench/out"),
    try
        case Mode of
            "timing" -> timing(Out, Args);
            "flood" -> flood(Out, Args);
            "profile" -> profile(Out, Args)
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
                end, Acc, [{W, T} || W <- ?WORKLOADS, T <- Order, applies(W, T)])
        end, #{}, lists:seq(1, Rounds)),
    report(Samples, Ns).

rotate(L, K) ->
    K1 = K rem length(L),
    {A, B} = lists:split(K1, L),
    B ++ A.

applies(send, beamtrace_msg0) -> true;
applies(_, beamtrace_msg0) -> false;
applies(_, _) -> true.

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
    Big = Opts0#{buffer_size => ?BIG_BUFFER},
    Opts = case Beamtrace of
               beamtrace -> Opts0;
               beamtrace_big -> Big;
               beamtrace_handle -> Big;
               beamtrace_msg0 -> Big#{message_length => 0}
           end,
    {ok, S} = beamtrace:start(Opts),
    State = case Beamtrace of beamtrace_handle -> S; _ -> [] end,
    {beamtrace, S, Dir, State}.

tracer_spec(untraced) -> none;
tracer_spec(null) -> {tracer, bmt_null_tracer, []};
tracer_spec({pid, Tr}) -> {tracer, Tr};
tracer_spec({beamtrace, _, _, State}) -> {tracer, beamtrace, State}.

teardown({beamtrace, S, Dir, _}) ->
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

is_bt(T) -> lists:member(T, [beamtrace, beamtrace_big, beamtrace_handle, beamtrace_msg0]).

report(Samples, Ns) ->
    Get = fun(W, T, Key) -> [maps:get(Key, R, 0) || R <- maps:get({W, T}, Samples)] end,
    Med = fun(W, T, Key) -> median(Get(W, T, Key)) end,
    %% Events per operation as the tracer saw them: the null tracer is
    %% offered what the VM sends the pid tracer (its enabled* say trace to
    %% every tag); beamtrace counts recorded + discarded.
    EvOp = fun(_, untraced) -> 0.0;
              (W, null) -> Med(W, pid, events) / maps:get(W, Ns);
              (W, T) -> (Med(W, T, events) + Med(W, T, discarded)) / maps:get(W, Ns)
           end,
    io:format("~n~-6s ~-17s ~8s ~7s ~6s ~8s ~7s ~6s  ~s~n",
              ["work", "tracer", "ns/op", "spread", "ev/op", "ns/event", "x untr", "x null", "notes"]),
    io:format("~s~n", [lists:duplicate(100, $-)]),
    [begin
         NsOp = Med(W, T, ns_op),
         All = Get(W, T, ns_op),
         Ev = EvOp(W, T),
         io:format("~-6s ~-17s ~8.1f ~6.1f% ~6.2f ~8s ~7.2f ~6s  ~s~n",
                   [W, T, NsOp, 100 * (lists:max(All) - lists:min(All)) / NsOp, Ev,
                    if Ev > 0 -> io_lib:format("~.1f", [NsOp / Ev]); true -> "-" end,
                    NsOp / Med(W, untraced, ns_op),
                    if T =:= untraced -> "-";
                       true -> io_lib:format("~.2f", [NsOp / Med(W, null, ns_op)])
                    end,
                    notes(T, W, Get)])
     end || W <- ?WORKLOADS, T <- ?TRACERS, applies(W, T)],
    io:format("(spread = (max - min) / median over the rounds)~n"),
    io:format("~n== beamtrace - null (the VM's dispatch floor); target <= 60 ns/event ==~n"),
    io:format("~-6s ~-17s ~11s ~8s ~11s  ~s~n",
              ["work", "tracer", "delta ns/op", "bt ev/op", "delta ns/ev", "verdict"]),
    Deltas = [begin
                  D = Med(W, T, ns_op) - Med(W, null, ns_op),
                  E = EvOp(W, T),
                  DE = D / max(E, 1.0e-9),
                  io:format("~-6s ~-17s ~11.1f ~8.2f ~11.1f  ~s~n",
                            [W, T, D, E, DE,
                             if DE =< 60 -> "within target"; true -> "OVER target" end]),
                  {{W, T}, DE}
              end || W <- ?WORKLOADS, T <- ?TRACERS, is_bt(T), applies(W, T)],
    io:format("~-6s ~-17s", ["", "pid tracer:"]),
    [io:format(" ~s +~.1f ns/op;", [W, Med(W, pid, ns_op) - Med(W, null, ns_op)]) || W <- ?WORKLOADS],
    io:format("~n(reference above the floor: OTP dyntrace+LTTng call +370, send +360, spawn +540 ns;"
              " pid tracer ~~+450 ns for call)~n"),
    Summary = string:join([io_lib:format("~s +~b ns/ev", [W, round(DE)])
                           || {{W, beamtrace_big}, DE} <- Deltas], ", "),
    io:format("TIMING-SUMMARY beamtrace(no drops)-null: ~s~n", [Summary]).

notes(pid, W, Get) ->
    Q = Get(W, pid, qlen),
    io_lib:format("tracer mailbox at loop end: median ~b, max ~b msgs", [median(Q), lists:max(Q)]);
notes(T, W, Get) ->
    case is_bt(T) of
        true ->
            Disc = Get(W, T, discarded),
            io_lib:format("recorded ~b, discarded ~b (medians; max discarded ~b)",
                          [median(Get(W, T, events)), median(Disc), lists:max(Disc)]);
        false -> ""
    end.

%%% ---- profile: one workload under one tracer, for perf record ----

profile(Out, [WS, TS, NS]) ->
    W = list_to_atom(WS),
    T = list_to_atom(TS),
    N = list_to_integer(NS),
    run(W, T, Out, 2000),
    R = run(W, T, Out, N),
    io:format("PROFILE ~s ~s: ~p~n", [W, T, R]).

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
    Tracer = case Setup of {pid, Tr0} -> Tr0; _ -> undefined end,
    {PeakTotal, PeakQ, Capped} = watch(T0 + Ms, Tracer, 0, 0),
    atomics:put(Stop, 1, 1),
    Sent = lists:sum([receive {'DOWN', R, process, P, {sent, C}} -> C end || {P, R} <- Senders]),
    Secs = (erlang:monotonic_time(millisecond) - T0) / 1000,
    Hwm = rss_kb("VmHWM"),
    Extra = case Setup of
                {pid, Tr} ->
                    {message_queue_len, Q} = process_info(Tr, message_queue_len),
                    {memory, M} = process_info(Tr, memory),
                    exit(Tr, kill),
                    io_lib:format("pid tracer mailbox ~b msgs at end (peak sampled ~b), "
                                  "tracer process memory ~.1f MiB~s",
                                  [Q, PeakQ, M / 1048576, if Capped -> " (stopped early at the memory cap)"; true -> "" end]);
                {beamtrace, _, _, _} ->
                    #{events := E, discarded := D} = teardown(Setup),
                    io_lib:format("beamtrace recorded ~b, discarded ~b", [E, D]);
                _ -> ""
            end,
    io:format("FLOOD ~-9s ~5.2f s, ~b sends (~.2f M/s); peak RSS ~.1f MiB (start ~.1f); "
              "peak erlang:memory(total) ~.1f MiB; ~s~n",
              [Kind, Secs, Sent, Sent / Secs / 1.0e6, Hwm / 1024, Base / 1024,
               PeakTotal / 1048576, Extra]).

%% Samples erlang:memory(total) and the pid tracer's mailbox every 20 ms
%% until Deadline or the memory cap.
watch(Deadline, Tracer, Peak, PeakQ) ->
    Total = erlang:memory(total),
    P = max(Peak, Total),
    Q = case Tracer of
            undefined -> PeakQ;
            _ -> max(PeakQ, element(2, process_info(Tracer, message_queue_len)))
        end,
    Now = erlang:monotonic_time(millisecond),
    if
        Total > ?MEM_CAP -> {P, Q, true};
        Now >= Deadline -> {P, Q, false};
        true -> timer:sleep(20), watch(Deadline, Tracer, P, Q)
    end.

rss_kb(Key) ->
    {ok, Bin} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- binary:split(Bin, <<"\n">>, [global]),
                   binary:match(L, list_to_binary(Key ++ ":")) =/= nomatch],
    [_, V | _] = string:lexemes(binary_to_list(Line), " \t"),
    list_to_integer(V).
