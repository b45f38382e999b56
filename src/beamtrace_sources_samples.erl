%% @doc A session's samples (`samples => #{...}', beamtrace_sources):
%% scheduler utilisation, run queue lengths, memory and the longest message
%% queues, each recorded as `counter' events. Runs in the sources' helper
%% process, at each sample's timer.
-module(beamtrace_sources_samples).

-export([sample/2, scheduler_times/0]).

-import(beamtrace_sources_monitor, [name/1]).

sample(schedulers, #{session := S, swt := Prev} = St) ->
    Now = scheduler_times(),
    Deltas = [{Id, A1 - A0, T1 - T0} || {{Id, A1, T1}, {Id, A0, T0}} <- lists:zip(Now, Prev)],
    _ = [counter(S, scheduler_utilization, Name, ppm(A, T), ppm)
         || {Name, A, T} <- scheduler_names(Deltas)],
    {As, Ts} = lists:foldl(fun({_, A, T}, {SA, ST}) -> {SA + A, ST + T} end, {0, 0}, Deltas),
    counter(S, scheduler_utilization, total, ppm(As, Ts), ppm),
    St#{swt => Now};
sample(run_queues, #{session := S} = St) ->
    Lengths = statistics(run_queue_lengths_all),
    Normal = erlang:system_info(schedulers),
    {Ns, Dirty} = lists:split(min(Normal, length(Lengths)), Lengths),
    _ = [counter(S, run_queue, integer_to_binary(I), L, count)
         || {I, L} <- lists:zip(lists:seq(1, length(Ns)), Ns)],
    _ = [counter(S, run_queue, Name, L, count)
         || {Name, L} <- lists:zip(lists:sublist([dirty_cpu, dirty_io], length(Dirty)), Dirty)],
    St;
sample(memory, #{session := S} = St) ->
    _ = [counter(S, memory, K, V, bytes) || {K, V} <- erlang:memory()],
    St;
sample(message_queues, #{session := S, samples := #{message_queues := {_, N}}, top := Top0} = St) ->
    %% A walk over every process: at normal priority, so that on a node of
    %% 100,000 processes it takes turns with the node's work instead of
    %% holding a scheduler ahead of all of it.
    High = process_flag(priority, normal),
    Lens = [{L, P} || P <- erlang:processes(), P =/= self(),
                      {message_queue_len, L} <- [erlang:process_info(P, message_queue_len)],
                      L > 0],
    _ = process_flag(priority, High),
    Top = lists:sublist(lists:reverse(lists:sort(Lens)), N),
    Shown = [{P, queue_instance(P)} || {_, P} <- Top],
    _ = [counter(S, message_queue, I, L, messages) || {{L, _}, {_, I}} <- lists:zip(Top, Shown)],
    %% A process that left the top: its track falls to 0 once.
    _ = [counter(S, message_queue, I, 0, messages)
         || {P, I} <- Top0, not lists:keymember(P, 1, Shown)],
    St#{top => Shown}.

scheduler_times() ->
    case statistics(scheduler_wall_time_all) of
        undefined -> [];
        List -> lists:sort(List)
    end.

%% Scheduler ids 1..N are normal, then dirty CPU, then dirty I/O.
scheduler_names(Deltas) ->
    Normal = erlang:system_info(schedulers),
    DirtyCpu = erlang:system_info(dirty_cpu_schedulers),
    [{if Id =< Normal -> integer_to_binary(Id);
         Id =< Normal + DirtyCpu -> <<"dirty_cpu ", (integer_to_binary(Id - Normal))/binary>>;
         true -> <<"dirty_io ", (integer_to_binary(Id - Normal - DirtyCpu))/binary>>
      end, A, T} || {Id, A, T} <- Deltas].

ppm(_, 0) -> 0;
ppm(Active, Total) -> Active * 1000000 div Total.

queue_instance(P) ->
    Pid = list_to_binary(pid_to_list(P)),
    case name(P) of
        undefined -> Pid;
        Name -> <<Pid/binary, " ", (atom_to_binary(Name, utf8))/binary>>
    end.

counter(S, Counter, Instance, Value, Unit) ->
    beamtrace:emit_nif(S, counter, [atom_to_binary(Counter, utf8), text(Instance), Value, Unit]).

text(A) when is_atom(A) -> atom_to_binary(A, utf8);
text(B) -> B.
