%% @doc beamtrace benchmarks, driven by bench/run.sh.
%%
%% `timing': three workloads (call, send, spawn) under these tracers, several
%% interleaved rounds, medians printed side by side with ratios and the
%% beamtrace - null difference per event:
%%   untraced          no trace flags, no trace pattern
%%   null              bench/null_tracer.c: the VM's dispatch floor
%%   null_discard      the null tracer answering `discard' to every event:
%%                     the floor of a loaded tracer nobody listens to
%%   beamtrace_idle    {tracer, beamtrace, []} with no session, no LTTng
%%                     session and no USDT tracer: beamtrace loaded, idle
%%   beamtrace         default options (1 MiB per thread, discard mode)
%%   beamtrace_big     32 MiB per thread, so nothing is dropped
%%   beamtrace_handle  as _big, tracer state = the session handle instead of []
%%   beamtrace_msg0    as _big, message_length 0 (send only: no message text)
%%   pid               the VM's pid tracer, a process that drops messages
%%   lttng             {tracer, beamtrace, []} with NO recorder session: the
%%                     LTTng-UST sink alone (run.sh's lttng-sessiond, one
%%                     session per workload, `org_erlang_dyntrace:*' enabled,
%%                     started just for this run and stopped after it)
%%   usdt              {tracer, beamtrace, []} with NO recorder session and
%%                     a bpftrace attached to the workload's USDT probe
%%                     (`@n = count();'), attached for this run only
%% The beamtrace_handle/_msg0 variants use only public options; they isolate
%% the cost of resolving a handle and of printing the message. lttng and usdt
%% are in the rounds only when run.sh could set them up (BENCH_LTTNG=1, a
%% bpftrace that attaches); otherwise a line says why they are skipped.
%%
%% `timing' also times user probes (beamtrace:p(1, "x")) with no listener
%% and with one recorder session listening, against an empty NIF of our own
%% (bmt_null_tracer:noop/0), and prints `SUMMARY|...' lines run.sh gathers.
%%
%% `flood Kind': 4 processes sending as fast as they can for a few seconds
%% under one tracer; peak RSS of this node, events recorded or queued. Each
%% kind runs in its own node (run.sh), since VmHWM only ever rises.
%%
%% Timings are printed, never asserted (STYLE.md).
-module(bmt_bench).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).
-export([main/1]).

-define(WORKLOADS, [call, send, spawn]).
-define(TRACERS, [untraced, null, null_discard, beamtrace_idle, beamtrace, beamtrace_big,
                  beamtrace_handle, beamtrace_msg0, pid]).
%% Optional sinks, added to the rounds when available.
-define(SINKS, [lttng, usdt]).
-define(USER_OPS, 1000000).
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
    {module, beamtrace} = code:ensure_loaded(beamtrace),
    %% BENCH_TRACERS=a,b,c: only those (run.sh's +S 1 pass).
    Tracers = case os:getenv("BENCH_TRACERS") of
                  false -> ?TRACERS ++ [S || S <- ?SINKS, sink_available(S)];
                  Only -> [list_to_atom(T) || T <- string:tokens(Only, ",")]
              end,
    put(tracers, Tracers),
    %% Warm-up: JIT, allocators, first session.
    [run(W, T, Out, 2000) || W <- ?WORKLOADS, T <- Tracers],
    Ns = maps:from_list([{W, max(1000, round(ops(W) * Scale))} || W <- ?WORKLOADS]),
    io:format("ops per run: ~p~n", [Ns]),
    Samples = lists:foldl(
        fun(Round, Acc) ->
            Order = rotate(Tracers, Round - 1),
            lists:foldl(
                fun({W, T}, A) ->
                    Res = run(W, T, Out, maps:get(W, Ns)),
                    maps:update_with({W, T}, fun(L) -> [Res | L] end, [Res], A)
                end, Acc, [{W, T} || W <- ?WORKLOADS, T <- Order, applies(W, T)])
        end, #{}, lists:seq(1, Rounds)),
    Lttng = lists:member(lttng, Tracers) andalso lttng_counts(),
    report(Samples, Ns, Lttng),
    os:getenv("BENCH_USER") =:= "0" orelse user_probes(Out, Rounds, round(?USER_OPS * Scale)).

%% lttng: run.sh started a session daemon and created one session per
%% workload (BENCH_LTTNG=1), and the NIF loaded the LTTng provider.
%% usdt: bpftrace attaches to this node's global__function__entry probe.
sink_available(lttng) ->
    Why = case {os:getenv("BENCH_LTTNG"), beamtrace:sinks()} of
              {"1", #{lttng := true}} -> ok;
              {"1", #{lttng := {unavailable, B}}} -> io_lib:format("LTTng provider unavailable: ~s", [B]);
              {false, _} -> "BENCH_LTTNG unset (run through bench/run.sh)";
              {Reason, _} -> Reason
          end,
    Why =:= ok orelse io:format("lttng sink: SKIPPED: ~s~n", [Why]),
    Why =:= ok;
sink_available(usdt) ->
    try
        os:getenv("BENCH_USDT") =:= "0" andalso throw(bench_usdt_0),
        {usdt, _, _} = U = usdt_attach(call),
        #{events := 0} = usdt_detach(U),
        true
    catch
        throw:bench_usdt_0 ->
            io:format("usdt sink: SKIPPED: BENCH_USDT=0~n"),
            false;
        _:R ->
            io:format("usdt sink: SKIPPED: bpftrace cannot attach: ~p~n", [R]),
            false
    end.

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

%% The USDT probe each workload fires once per operation.
usdt_probe(call) -> "global__function__entry";
usdt_probe(send) -> "message__send";
usdt_probe(spawn) -> "process__spawn".

lttng_session(W) -> "bmt-" ++ atom_to_list(W).

%% One timed run of workload W under tracer T: #{ns_op, ...}.
run(W, T, Out, N) ->
    Setup = setup(T, W, Out),
    W =:= call andalso T =/= untraced andalso
        erlang:trace_pattern({bench_mod, f, 1}, true, [local]),
    T =:= lttng andalso put({lttng_ops, W}, get({lttng_ops, W}) + N),
    T =:= lttng andalso put({lttng_runs, W}, [N | get_default({lttng_runs, W}, [])]),
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
    Cpu0 = thread_cpu(),
    Pid ! go,
    {Dt, Qlen} = receive {'DOWN', Ref, process, Pid, {done, D, Q}} -> {D, Q};
                         {'DOWN', Ref, process, Pid, Other} -> error({worker, Other})
                 end,
    %% Read before teardown: stopping joins the consumer thread.
    Cpu1 = thread_cpu(),
    W =:= call andalso erlang:trace_pattern({bench_mod, f, 1}, false, [local]),
    Extra0 = teardown(Setup),
    Extra = Extra0#{sched_ns_op => (maps:get(sched, Cpu1) - maps:get(sched, Cpu0)) / N,
                    cons_ns_op => (maps:get(cons, Cpu1, 0) - maps:get(cons, Cpu0, 0)) / N},
    %% What the recorder took for a run of N ops, the LTTng count's
    %% expectation (the traced worker's own exit is one more for spawn).
    T =:= beamtrace_big andalso
        put({rec_events, W, N}, maps:get(events, Extra) + maps:get(discarded, Extra)),
    Extra#{ns_op => Dt / N, qlen => Qlen, n => N}.

%% On-CPU nanoseconds so far of this node's normal scheduler threads
%% (`N_scheduler') and of beamtrace's consumer threads (`beamtrace_cons'),
%% from /proc/self/task/*/schedstat (first field: time on CPU, ns). CPU time
%% is what a thread used, whatever else the machine does: steadier than wall
%% time on a shared machine, and it tells the scheduler's cost (the traced
%% processes pay it) from the consumer's (another core, when there is one).
thread_cpu() ->
    {ok, Tasks} = file:list_dir("/proc/self/task"),
    lists:foldl(
      fun(T, Acc) ->
              Base = "/proc/self/task/" ++ T,
              case {file:read_file(Base ++ "/comm"), file:read_file(Base ++ "/schedstat")} of
                  {{ok, Comm}, {ok, Stat}} ->
                      [Ns | _] = binary:split(Stat, <<" ">>),
                      Key = case string:trim(Comm) of
                                <<"beamtrace_cons">> -> cons;
                                C -> case binary:match(C, <<"_scheduler">>) of
                                         nomatch -> other;
                                         _ -> sched
                                     end
                            end,
                      maps:update_with(Key, fun(V) -> V + binary_to_integer(Ns) end,
                                       binary_to_integer(Ns), Acc);
                  _ -> Acc % the thread ended meanwhile
              end
      end, #{sched => 0, cons => 0}, Tasks).

setup(untraced, _, _) -> untraced;
setup(null, _, _) -> null;
setup(null_discard, _, _) -> null_discard;
setup(beamtrace_idle, _, _) -> beamtrace_idle;
setup(lttng, W, _) ->
    lttng(["start", lttng_session(W)]),
    put({lttng_ops, W}, get_default({lttng_ops, W}, 0)),
    {lttng, W};
setup(usdt, W, _) -> usdt_attach(W);
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
tracer_spec({lttng, _}) -> {tracer, beamtrace, []};
tracer_spec({usdt, _, _}) -> {tracer, beamtrace, []};
tracer_spec(null) -> {tracer, bmt_null_tracer, []};
tracer_spec(null_discard) -> {tracer, bmt_null_tracer, discard};
tracer_spec(beamtrace_idle) -> {tracer, beamtrace, []};
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
teardown({lttng, W}) ->
    %% `lttng stop' waits until the consumer has written what was recorded.
    lttng(["stop", lttng_session(W)]),
    #{};
teardown({usdt, _, _} = U) ->
    usdt_detach(U);
teardown(_) ->
    #{}.

get_default(K, D) -> case get(K) of undefined -> D; V -> V end.

%%% ---- LTTng: the client, the counts ----

lttng(Args) ->
    {Rc, Out} = cmd(os:find_executable("lttng"), Args),
    Rc =:= 0 orelse error({lttng, Args, Rc, Out}),
    Out.

%% Runs an executable with arguments, no shell: {ExitStatus, Output}.
cmd(Exe, Args) ->
    P = open_port({spawn_executable, Exe},
                  [{args, Args}, exit_status, stderr_to_stdout, binary]),
    cmd_collect(P, []).

cmd_collect(P, Acc) ->
    receive
        {P, {data, D}} -> cmd_collect(P, [Acc, D]);
        {P, {exit_status, S}} -> {S, binary_to_list(iolist_to_binary(Acc))}
    after 120000 -> error({timeout, P})
    end.

%% Per workload: events in its session's trace (babeltrace2's counter) and
%% the discarded events LTTng reports, with the ops its runs did.
lttng_counts() ->
    maps:from_list(
      [begin
           S = lttng_session(W),
           Listing = lttng(["list", S]),
           Disc = lists:sum([list_to_integer(D) || [D] <- re_all("Discarded events: *([0-9]+)", Listing)]),
           Dir = case re_all("Trace output: *(\\S+)", Listing) of
                     [[D0] | _] -> D0;
                     [] -> error({lttng_output_dir, Listing})
                 end,
           {_, Count} = cmd(os:find_executable("babeltrace2"),
                            [Dir, "-c", "sink.utils.counter", "-p", "step=+0"]),
           Events = case re_all("([0-9]+) Event messages", Count) of
                        [[E]] -> list_to_integer(E);
                        _ -> error({babeltrace2_counter, Count})
                    end,
           {W, #{events => Events, discarded => Disc, ops => get_default({lttng_ops, W}, 0)}}
       end || W <- ?WORKLOADS]).

re_all(Re, Text) ->
    case re:run(Text, Re, [global, {capture, all_but_first, list}]) of
        {match, L} -> L;
        nomatch -> []
    end.

%%% ---- USDT: a bpftrace per run ----

%% bpftrace counting the workload's probe in this node; returns once the
%% probe is attached (bpftrace prints __BPFTRACE_NOTIFY_PROBES_ATTACHED).
usdt_attach(W) ->
    Exe = case os:find_executable("bpftrace") of
              false -> error(no_bpftrace_in_path);
              E -> E
          end,
    Nif = loaded_nif(),
    Prog = io_lib:format("usdt:~s:erlang:~s { @n = count(); }", [Nif, usdt_probe(W)]),
    P = open_port({spawn_executable, Exe},
                  [{args, ["-p", os:getpid(), "-e", lists:flatten(Prog)]},
                   {env, [{"__BPFTRACE_NOTIFY_PROBES_ATTACHED", "1"}]},
                   exit_status, stderr_to_stdout, {line, 4096}]),
    usdt_wait(P, W, []).

%% The beamtrace NIF library this node has mapped (/proc/self/maps).
loaded_nif() ->
    {ok, Maps} = file:read_file("/proc/self/maps"),
    case re_all("(/\\S*/beamtrace_nif\\.so)\\n", binary_to_list(Maps)) of
        [[Path] | _] -> Path;
        [] -> error(beamtrace_nif_not_mapped)
    end.

usdt_wait(P, W, Lines) ->
    receive
        {P, {data, {eol, "__BPFTRACE_NOTIFY_PROBES_ATTACHED"}}} -> {usdt, P, W};
        {P, {data, {_, L}}} -> usdt_wait(P, W, [L | Lines]);
        {P, {exit_status, S}} -> error({bpftrace_exit, S, lists:reverse(Lines)})
    after 30000 ->
        catch port_close(P),
        error({bpftrace_attach_timeout, lists:reverse(Lines)})
    end.

%% SIGINT: bpftrace detaches and prints `@n: Count' (nothing when 0).
usdt_detach({usdt, P, _}) ->
    {os_pid, Os} = erlang:port_info(P, os_pid),
    {0, _} = cmd(os:find_executable("kill"), ["-INT", integer_to_list(Os)]),
    usdt_count(P, 0).

usdt_count(P, C) ->
    receive
        {P, {data, {eol, "@n: " ++ N}}} -> usdt_count(P, list_to_integer(string:trim(N)));
        {P, {data, _}} -> usdt_count(P, C);
        {P, {exit_status, _}} -> #{events => C, discarded => 0}
    after 30000 ->
        %% A bpftrace stuck detaching must not sink the whole run: kill it
        %% and report what it had counted (the count check then says so).
        {os_pid, Os} = erlang:port_info(P, os_pid),
        _ = cmd(os:find_executable("kill"), ["-KILL", integer_to_list(Os)]),
        io:format("usdt: bpftrace did not detach within 30 s; killed~n"),
        #{events => C, discarded => 0}
    end.

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

%% Target above the null tracer, ns per event: the recorder's (issue 2) and
%% the LTTng sink's (issue 3); none for USDT (a uprobe trap per event).
target(lttng) -> 150;
target(usdt) -> none;
target(_) -> 60.

report(Samples, Ns, Lttng) ->
    Tracers = get(tracers),
    Has = fun(T) -> lists:member(T, Tracers) end,
    Get = fun(W, T, Key) -> [maps:get(Key, R, 0) || R <- maps:get({W, T}, Samples)] end,
    Med = fun(W, T, Key) -> median(Get(W, T, Key)) end,
    %% Events per operation as the tracer saw them: the null tracer is
    %% offered what the VM sends the pid tracer (its enabled* say trace to
    %% every tag); beamtrace counts recorded + discarded; the LTTng sink what
    %% its session recorded + discarded over all its runs; USDT bpftrace's
    %% count of the one probe attached.
    EvOp = fun(_, untraced) -> 0.0;
              (_, null_discard) -> 0.0;
              (_, beamtrace_idle) -> 0.0;
              (W, null) ->
                   case Has(pid) of
                       true -> Med(W, pid, events) / maps:get(W, Ns);
                       false -> 1.0 % only ratios to it are printed
                   end;
              (W, lttng) ->
                   #{events := E, discarded := D, ops := O} = maps:get(W, Lttng),
                   (E + D) / max(O, 1);
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
                    notes(T, W, Get, Ns, Lttng)])
     end || W <- ?WORKLOADS, T <- Tracers, applies(W, T)],
    io:format("(spread = (max - min) / median over the rounds)~n"),
    io:format("~n== CPU time per operation (schedstat, medians): scheduler threads"
              " (the traced processes') and beamtrace's consumer thread ==~n"),
    io:format("(min: the least of the rounds, the figure another process's load disturbs least)~n"),
    io:format("~-6s ~-17s ~12s ~9s ~9s ~14s ~11s ~14s~n",
              ["work", "tracer", "sched ns/op", "spread", "min", "sched - null", "min - min",
               "consumer ns/op"]),
    MinOf = fun(W, T) -> lists:min(Get(W, T, sched_ns_op)) end,
    CpuDeltas =
        [begin
             SchedAll = Get(W, T, sched_ns_op),
             Sched = median(SchedAll),
             Cons = Med(W, T, cons_ns_op),
             Delta = Sched - Med(W, null, sched_ns_op),
             MinDelta = MinOf(W, T) - MinOf(W, null),
             io:format("~-6s ~-17s ~12.1f ~8.1f% ~9.1f ~14s ~11s ~14.1f~n",
                       [W, T, Sched, 100 * (lists:max(SchedAll) - lists:min(SchedAll)) / max(Sched, 1.0e-9),
                        MinOf(W, T),
                        if T =:= untraced; T =:= null -> "-"; true -> signed(Delta, 1) end,
                        if T =:= untraced; T =:= null -> "-"; true -> signed(MinDelta, 1) end,
                        Cons]),
             {{W, T}, Delta / max(EvOp(W, T), 1.0e-9), Cons / max(EvOp(W, T), 1.0e-9),
              MinDelta / max(EvOp(W, T), 1.0e-9)}
         end || W <- ?WORKLOADS, T <- Tracers, applies(W, T)],
    [summary(io_lib:format("~s recorder (default options) - null, scheduler CPU (~b schedulers)",
                           [W, erlang:system_info(schedulers_online)]),
             [signed(DE, 1), " ns/ev median, ", signed(MinDE, 1), " min"], "<= 50 ns/ev",
             verdict(DE, 50))
     || {{W, beamtrace}, DE, _, MinDE} <- CpuDeltas],
    [summary(io_lib:format("~s loaded, idle - discarding null tracer, scheduler CPU (~b schedulers)",
                           [W, erlang:system_info(schedulers_online)]),
             [signed(Med(W, beamtrace_idle, sched_ns_op) - Med(W, null_discard, sched_ns_op), 1),
              " ns/op"], "<= 5 ns/op",
             verdict(Med(W, beamtrace_idle, sched_ns_op) - Med(W, null_discard, sched_ns_op), 5))
     || W <- ?WORKLOADS, Has(beamtrace_idle), Has(null_discard)],
    [summary(io_lib:format("~s recorder (32 MiB), consumer CPU (~b schedulers)",
                           [W, erlang:system_info(schedulers_online)]),
             [io_lib:format("~.1f", [C]), " ns/ev"], "reference", "")
     || {{W, beamtrace_big}, _, C, _} <- CpuDeltas],
    io:format("~n== beamtrace - null (the VM's dispatch floor); targets: recorder <= 60,"
              " LTTng sink <= 150 ns/event, USDT none ==~n"),
    io:format("~-6s ~-17s ~11s ~8s ~11s  ~s~n",
              ["work", "tracer", "delta ns/op", "bt ev/op", "delta ns/ev", "verdict"]),
    Deltas = [begin
                  D = Med(W, T, ns_op) - Med(W, null, ns_op),
                  E = EvOp(W, T),
                  DE = D / max(E, 1.0e-9),
                  io:format("~-6s ~-17s ~11.1f ~8.2f ~11.1f  ~s~n",
                            [W, T, D, E, DE, verdict(DE, target(T))]),
                  {{W, T}, DE}
              end || W <- ?WORKLOADS, T <- Tracers, is_bt(T) orelse T =:= lttng orelse T =:= usdt,
                     applies(W, T)],
    Has(pid) andalso io:format("~-6s ~-17s", ["", "pid tracer:"]),
    [io:format(" ~s +~.1f ns/op;", [W, Med(W, pid, ns_op) - Med(W, null, ns_op)])
     || W <- ?WORKLOADS, Has(pid)],
    io:format("~n(reference above the floor: OTP dyntrace+LTTng call +370, send +360, spawn +540 ns;"
              " pid tracer ~~+450 ns for call)~n"),
    case Has(usdt) of
        true -> io:format("(usdt: only the workload's probe is attached, so for spawn beamtrace answers"
                          " discard to the exit events the null tracer takes: its ns/op can be below the floor's)~n");
        false -> ok
    end,
    Summary = string:join([io_lib:format("~s ~s ns/ev", [W, signed(DE, 0)])
                           || {{W, beamtrace_big}, DE} <- Deltas], ", "),
    io:format("TIMING-SUMMARY beamtrace(no drops)-null: ~s~n", [Summary]),
    [summary(io_lib:format("~s recorder (32 MiB) - null, wall time (~b schedulers)",
                           [W, erlang:system_info(schedulers_online)]),
             [signed(DE, 1), " ns/ev"], "<= 50 ns/ev", verdict(DE, 50))
     || {{W, beamtrace_big}, DE} <- Deltas],
    [summary(io_lib:format("~s LTTng sink - null", [W]),
             [signed(DE, 1), " ns/ev"], "<= 150 ns/ev", verdict(DE, 150))
     || {{W, lttng}, DE} <- Deltas],
    Has(lttng) orelse summary("LTTng sink - null", "skipped", "<= 150 ns/ev", "SKIPPED (see above)"),
    lttng_report(Lttng, Get, Med, EvOp),
    [summary(io_lib:format("~s USDT (bpftrace attached) - null", [W]),
             [signed(DE, 1), " ns/ev"], "none (OTP: n/a)",
             case lists:usort(Get(W, usdt, events)) of
                 [C] when C =:= map_get(W, Ns) -> "count ok";
                 Cs -> io_lib:format("COUNT MISMATCH ~w", [Cs])
             end)
     || {{W, usdt}, DE} <- Deltas],
    Has(usdt) orelse summary("USDT - null", "skipped", "none", "SKIPPED (see above)"),
    ok.

verdict(_, none) -> "no target";
verdict(DE, Target) when DE =< Target -> "within target";
verdict(_, _) -> "OVER target".

summary(What, Measured, Target, Verdict) ->
    io:format("SUMMARY|~s|~s|~s|~s~n", [What, Measured, Target, Verdict]).

%% What reached LTTng: per workload session, events and LTTng's discarded
%% count against what the recorder saw per op in the same rounds.
lttng_report(false, _, _, _) -> ok;
lttng_report(Lttng, _Get, _Med, _EvOp) ->
    io:format("~n== LTTng sink: what reached the sessions (babeltrace2 sink.utils.counter,"
              " lttng list) ==~n"),
    [begin
         #{events := E, discarded := D, ops := O} = maps:get(W, Lttng),
         %% The recorder's beamtrace_big runs record the same tracepoints
         %% (its events/1 cover every one these flags produce): the sum of
         %% its count for a run of each size the lttng runs had.
         Runs = get_default({lttng_runs, W}, []),
         Expect = lists:sum([get_default({rec_events, W, N}, 0) || N <- Runs]),
         io:format("~-6s session ~-10s ~10b events + ~b discarded by LTTng, over ~b runs, ~b ops"
                   " (the recorder took ~b in runs of the same sizes): ~s~n",
                   [W, lttng_session(W), E, D, length(Runs), O, Expect,
                    if E + D =:= Expect -> "all accounted for";
                       true -> io_lib:format("MISMATCH (~s)", [signed(E + D - Expect, 0)])
                    end]),
         summary(io_lib:format("~s LTTng events recorded / discarded", [W]),
                 io_lib:format("~b / ~b", [E, D]), io_lib:format("= recorder's ~b", [Expect]),
                 if E + D =:= Expect -> "ok"; true -> "MISMATCH" end)
     end || W <- ?WORKLOADS],
    ok.

%% A number with its sign, always.
signed(X, 0) -> [if X >= 0 -> "+"; true -> "" end, io_lib:format("~b", [round(X)])];
signed(X, D) -> [if X >= 0 -> "+"; true -> "" end, io_lib:format("~.*f", [D, float(X)])].

notes(pid, W, Get, _, _) ->
    Q = Get(W, pid, qlen),
    io_lib:format("tracer mailbox at loop end: median ~b, max ~b msgs", [median(Q), lists:max(Q)]);
notes(lttng, W, _, _, Lttng) ->
    #{events := E, discarded := D, ops := O} = maps:get(W, Lttng),
    io_lib:format("LTTng only: ~b events, ~b discarded by LTTng over ~b ops", [E, D, O]);
notes(usdt, W, Get, Ns, _) ->
    N = maps:get(W, Ns),
    Cs = Get(W, usdt, events),
    case lists:usort(Cs) of
        [N] -> io_lib:format("bpftrace @n = ~b = ops in all ~b runs", [N, length(Cs)]);
        _ -> io_lib:format("bpftrace @n /= ops (~b): ~w", [N, Cs])
    end;
notes(T, W, Get, _, _) ->
    case is_bt(T) of
        true ->
            Disc = Get(W, T, discarded),
            io_lib:format("recorded ~b, discarded ~b (medians; max discarded ~b)",
                          [median(Get(W, T, events)), median(Disc), lists:max(Disc)]);
        false -> ""
    end.

%%% ---- user probes ----

%% ns per call of beamtrace:p(1, "x") with no listener and with a recorder
%% session enabling user_trace_*, against an empty NIF (bmt_null_tracer:
%% noop/0) and an empty loop; variants interleaved, medians.
-define(PROBE_VARIANTS, [empty, noop, probe_none, probe_listener]).

user_probes(Out, Rounds, N) ->
    io:format("~n== User probes: ns per call, ~b calls per run, ~b rounds interleaved, medians ==~n",
              [N, Rounds]),
    [probe_run(V, Out, 1000) || V <- ?PROBE_VARIANTS],
    Samples = lists:foldl(
        fun(Round, Acc) ->
            lists:foldl(fun(V, A) ->
                                R = probe_run(V, Out, N),
                                maps:update_with(V, fun(L) -> [R | L] end, [R], A)
                        end, Acc, rotate(?PROBE_VARIANTS, Round - 1))
        end, #{}, lists:seq(1, Rounds)),
    Med = fun(V) -> median([maps:get(ns, R) || R <- maps:get(V, Samples)]) end,
    Empty = Med(empty),
    Noop = Med(noop),
    io:format("~-16s ~8s ~13s  ~s~n", ["loop", "ns/call", "- empty loop", "notes"]),
    [begin
         Rs = maps:get(V, Samples),
         Rets = lists:usort([maps:get(ret, R) || R <- Rs]),
         Note = case V of
                    probe_none -> io_lib:format("p/2 returned ~w (no sink listening)", [Rets]);
                    probe_listener ->
                        Evs = lists:usort([maps:get(events, R) || R <- Rs]),
                        io_lib:format("p/2 returned ~w; recorder events per run ~w", [Rets, Evs]);
                    noop -> "bmt_null_tracer:noop/0, an empty NIF";
                    empty -> "loop overhead"
                end,
         io:format("~-16s ~8.1f ~13.1f  ~s~n", [V, Med(V), Med(V) - Empty, Note])
     end || V <- ?PROBE_VARIANTS],
    Nif = max(Noop - Empty, 0.1),
    Ratio = (Med(probe_none) - Empty) / Nif,
    RawRatio = Med(probe_none) / Noop,
    io:format("no listener: ~.2fx an empty NIF call (loop overhead subtracted; ~.2fx with it);"
              " target <= 2x: ~s~n",
              [Ratio, RawRatio, if Ratio =< 2 -> "within target"; true -> "OVER target" end]),
    io:format("one listener (recorder): ~.1f ns per probe, ~.1fx an empty NIF call~n",
              [Med(probe_listener) - Empty, (Med(probe_listener) - Empty) / Nif]),
    summary("user probe p(1,\"x\"), no listener / empty NIF",
            io_lib:format("~.2fx (~.1f / ~.1f ns)", [Ratio, Med(probe_none) - Empty, Noop - Empty]),
            "<= 2x", if Ratio =< 2 -> "within target"; true -> "OVER target" end),
    summary("user probe p(1,\"x\"), one recorder listener",
            io_lib:format("~.1f ns/call", [Med(probe_listener) - Empty]), "none", "reference"),
    ok.

probe_run(V, Out, N) ->
    Session = case V of
                  probe_listener ->
                      Dir = filename:join([Out, "traces", "user-" ++ integer_to_list(erlang:unique_integer([positive]))]),
                      {ok, S} = beamtrace:start(#{dir => Dir, events => ["org_erlang_dyntrace:user_trace_*"],
                                                  buffer_size => ?BIG_BUFFER}),
                      {S, Dir};
                  _ -> none
              end,
    {Pid, Ref} = spawn_monitor(
        fun() ->
            T0 = erlang:monotonic_time(nanosecond),
            Ret = case V of
                      empty -> bench_mod:empty_loop(N, ok);
                      noop -> bench_mod:noop_loop(N, ok);
                      _ -> bench_mod:probe_loop(N, undefined)
                  end,
            T1 = erlang:monotonic_time(nanosecond),
            exit({done, T1 - T0, Ret})
        end),
    {Dt, Ret} = receive {'DOWN', Ref, process, Pid, {done, D, R}} -> {D, R};
                        {'DOWN', Ref, process, Pid, Other} -> error({worker, Other})
                end,
    Extra = case Session of
                none -> #{};
                {S1, Dir1} ->
                    {ok, #{events := E, discarded := Disc}} = beamtrace:stop(S1),
                    ok = file:del_dir_r(Dir1),
                    #{events => E + Disc}
            end,
    Extra#{ns => Dt / N, ret => Ret}.

%%% ---- profile: one workload under one tracer, for perf record ----

profile(Out, ["user", VS, NS]) ->
    V = list_to_atom(VS),
    N = list_to_integer(NS),
    probe_run(V, Out, 1000),
    R = probe_run(V, Out, N),
    io:format("PROFILE user ~s: ~p~n", [V, R#{ns_op => maps:get(ns, R)}]);
profile(Out, [WS, TS, NS]) ->
    W = list_to_atom(WS),
    T = list_to_atom(TS),
    N = list_to_integer(NS),
    {module, beamtrace} = code:ensure_loaded(beamtrace),
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
