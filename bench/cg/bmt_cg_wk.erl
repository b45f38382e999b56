%% @doc One traced workload under one tracer, for instruction counts
%% (bench/callgrind.sh runs it under callgrind; only the workload's window
%% is counted, bmt_cgctl switching collection on and off around it).
%%
%% call, send and spawn are ../shared/tools/instructions/hotpath.sh's
%% workloads exactly (the same flags, message and session options), so the
%% two count the same thing; receive, running and gc extend them:
%%   call     N local calls of a traced function              [call]
%%   send     N sends of {Self, ping, I} to an untraced sink    [send]
%%   spawn    N spawns of a process that returns at once       [procs]
%%   receive  N messages {Sender, ping, I} queued to a traced sink ['receive']
%%   running  N round trips to an untraced echo process: the traced process
%%            is scheduled out (waiting) and in again        [running]
%%   gc       N erlang:garbage_collect() calls: a major GC start and end
%%                                                    [garbage_collection]
%%   handle   N calls of the traced function under a match spec with
%%            return_trace, a call and a return each, traced with the
%%            session's handle as tracer state: `beamtrace record --calls
%%            "M:F/A -> return"`'s path (the null tracer gets a reference,
%%            a boxed state as well)                                [call]
%% Tracer: beamtrace (beamtrace:start/1 with the defaults and dir CG_DIR,
%% tracer state [], or the session for handle) or null
%% (bench/null_tracer.c, the dispatch floor).
%% The beamtrace run's trace stays in CG_DIR, for the caller to count the
%% events per operation.
-module(bmt_cg_wk).
-export([main/1, f/1]).

f(X) -> X + 1.

call_loop(0) -> ok;
call_loop(N) -> bmt_cg_wk:f(N), call_loop(N - 1).

send_loop(_, 0) -> ok;
send_loop(P, N) -> P ! {self(), ping, N}, send_loop(P, N - 1).

spawn_loop(0) -> ok;
spawn_loop(N) -> spawn(fun() -> ok end), spawn_loop(N - 1).

gc_loop(0) -> ok;
gc_loop(N) -> erlang:garbage_collect(), gc_loop(N - 1).

echo_loop(_, 0) -> ok;
echo_loop(Echo, N) ->
    Echo ! {self(), N},
    receive N -> echo_loop(Echo, N - 1) end.

sink() -> receive _ -> sink() end.

%% Takes N messages, then tells Driver.
counting_sink(Driver, 0) -> Driver ! counted, sink();
counting_sink(Driver, N) -> receive _ -> counting_sink(Driver, N - 1) end.

echo() -> receive {P, N} -> P ! N, echo() end.

flags(call) -> [call];
flags(handle) -> [call];
flags(send) -> [send];
flags(spawn) -> [procs];
flags(receive_) -> ['receive'];
flags(running) -> [running];
flags(gc) -> [garbage_collection].

main([Kind0, Tracer0, N0]) ->
    Kind = case list_to_atom(Kind0) of 'receive' -> receive_; K -> K end,
    Tracer = list_to_atom(Tracer0),
    N = list_to_integer(N0),
    Pattern = case Kind of
                  handle -> [{'_', [], [{return_trace}]}];
                  _ -> true
              end,
    erlang:trace_pattern({?MODULE, f, 1}, Pattern, [local]),
    Tr = case Tracer of
             beamtrace ->
                 {ok, Session} = beamtrace:start(#{dir => os:getenv("CG_DIR")}),
                 {tracer, beamtrace, case Kind of handle -> Session; _ -> [] end};
             null ->
                 {tracer, bmt_null_tracer, case Kind of handle -> make_ref(); _ -> [] end}
         end,
    Self = self(),
    Sink = spawn(fun sink/0),
    Echo = spawn(fun echo/0),
    {Driver, Go} =
        case Kind of
            receive_ ->
                P = spawn(fun() ->
                                  receive {go, CS} -> ok end,
                                  bmt_cgctl:on(),
                                  send_loop(CS, N),
                                  receive counted -> ok end,
                                  bmt_cgctl:off(),
                                  Self ! done
                          end),
                CS = spawn(fun() -> counting_sink(P, N) end),
                erlang:trace(CS, true, flags(Kind) ++ [Tr]),
                {P, {go, CS}};
            _ ->
                W = case Kind of
                        call -> fun() -> call_loop(N) end;
                        handle -> fun() -> call_loop(N) end;
                        send -> fun() -> send_loop(Sink, N) end;
                        spawn -> fun() -> spawn_loop(N) end;
                        running -> fun() -> echo_loop(Echo, N) end;
                        gc -> fun() -> gc_loop(N) end
                    end,
                P = spawn(fun() ->
                                  receive go -> ok end,
                                  bmt_cgctl:on(), W(), bmt_cgctl:off(),
                                  Self ! done
                          end),
                erlang:trace(P, true, flags(Kind) ++ [Tr]),
                {P, go}
        end,
    Driver ! Go,
    receive done -> ok end,
    Tracer =:= beamtrace andalso beamtrace:stop(),
    halt().
