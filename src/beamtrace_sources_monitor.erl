%% @doc The system monitor's part of a session's sources (beamtrace_sources
%% has the whole story): our settings merged with a previous monitor's
%% (chaining), which reports the settings asked for, what is forwarded to
%% the previous monitor, and each report's event and flight recorder
%% trigger. Runs in the sources' helper process, where the session runs.
-module(beamtrace_sources_monitor).

-export([monitor_list/1, merge/2, wanted/3, forward/4, report/4]).
%% A process's or port's name, for the samples too.
-export([name/1]).

monitor_list(M) ->
    [case {K, V} of
         {_, true} -> K;
         _ -> {K, V}
     end || {K, V} <- lists:sort(maps:to_list(M)), V =/= false].

merge(Ours, undefined) ->
    {ok, Ours};
merge(Ours, {Pid, PrevOpts}) ->
    case is_helper(Pid) of
        true ->
            {error, {system_monitor, {in_use, Pid}}};
        false ->
            LmqOurs = lists:keyfind(long_message_queue, 1, Ours),
            LmqPrev = lists:keyfind(long_message_queue, 1, PrevOpts),
            case LmqOurs =/= false andalso LmqPrev =/= false andalso LmqOurs =/= LmqPrev of
                true -> {error, {system_monitor, {conflict, long_message_queue}}};
                false -> {ok, union(Ours, PrevOpts)}
            end
    end.

union(A, B) ->
    Flags = lists:usort([F || F <- A ++ B, is_atom(F)]),
    Keys = lists:usort([K || {K, _} <- A ++ B]),
    Flags ++ [{K, combine(K, [V || {K1, V} <- A ++ B, K1 =:= K])} || K <- Keys].

combine(long_message_queue, [V | _]) -> V;
combine(_, Vs) -> lists:min(Vs).

is_helper(Pid) ->
    lists:any(fun(#{helper := H}) -> H =:= Pid end,
              beamtrace_registry:values(sources)).

%% Whether a monitor message meets the settings `Opts' (an erlang:
%% system_monitor/2 option list).
wanted(long_gc, Info, Opts) -> over(long_gc, get(timeout, Info), Opts);
wanted(long_schedule, Info, Opts) -> over(long_schedule, get(timeout, Info), Opts);
wanted(large_heap, Info, Opts) ->
    over(large_heap, get(heap_block_size, Info) + get(old_heap_block_size, Info)
         + get(mbuf_size, Info), Opts);
wanted(Kind, _Info, Opts) -> lists:member(Kind, Opts) orelse lists:keymember(Kind, 1, Opts).

over(Key, Value, Opts) ->
    case lists:keyfind(Key, 1, Opts) of
        {Key, Threshold} -> Value >= Threshold;
        false -> false
    end.

get(Key, Info) when is_list(Info) ->
    case lists:keyfind(Key, 1, Info) of
        {Key, V} when is_integer(V) -> V;
        _ -> 0
    end;
get(_, _) -> 0.

%% Every message the previous monitor's own settings asked for, unchanged.
forward(Msg, Kind, Info, #{prev := {Pid, Opts}}) ->
    _ = wanted(Kind, Info, Opts) andalso (Pid ! Msg),
    ok;
forward(_, _, _, _) ->
    ok.

%% A report: its event, then the flight recorder's trigger if the session
%% has one for it (the NIF compares with the trigger's bound; false for a
%% session without).
report(S, Who, Kind, Info) ->
    monitor_event(S, Who, Kind, Info),
    offer(S, Who, Kind, Info).

offer(S, Who, long_gc, Info) ->
    beamtrace:flight_offer_nif(S, long_gc, get(timeout, Info), Who, location(Who));
offer(S, Who, long_schedule, Info) ->
    beamtrace:flight_offer_nif(S, long_schedule, get(timeout, Info), Who, where(in, Info));
offer(S, Who, large_heap, Info) ->
    Words = get(heap_block_size, Info) + get(old_heap_block_size, Info) + get(mbuf_size, Info),
    beamtrace:flight_offer_nif(S, large_heap, Words, Who, location(Who));
offer(S, Who, Busy, Port) when Busy =:= busy_port; Busy =:= busy_dist_port ->
    beamtrace:flight_offer_nif(S, Busy, 1, Who, name(Port));
offer(S, Who, long_message_queue, true) ->
    Len = case is_pid(Who) andalso erlang:process_info(Who, message_queue_len) of
              {message_queue_len, L} -> L;
              _ -> 0
          end,
    beamtrace:flight_offer_nif(S, long_message_queue, Len, Who, location(Who));
offer(_, _, _, _) ->
    false.

monitor_event(S, Who, Kind, Info) when Kind =:= long_gc; Kind =:= large_heap ->
    Figures = [get(K, Info) || K <- [heap_size, heap_block_size, old_heap_size,
                                      old_heap_block_size, stack_size, mbuf_size]],
    Timeout = case Kind of long_gc -> [get(timeout, Info)]; large_heap -> [] end,
    beamtrace:emit_nif(S, Kind, [Who, name(Who)] ++ Timeout ++ Figures ++ [location(Who)]);
monitor_event(S, Who, long_schedule, Info) ->
    beamtrace:emit_nif(S, long_schedule, [Who, name(Who), get(timeout, Info),
                                          where(in, Info), where(out, Info)]);
monitor_event(S, Who, busy_port, Port) ->
    beamtrace:emit_nif(S, busy_port, [Who, name(Who), Port, name(Port)]);
monitor_event(S, Who, busy_dist_port, Port) ->
    Remote = case [N || {N, P} <- erlang:system_info(dist_ctrl), P =:= Port] of
                 [N | _] -> atom_to_binary(N, utf8);
                 [] -> undefined
             end,
    beamtrace:emit_nif(S, busy_dist_port, [atom_to_binary(node(), utf8), Who, name(Who), Port, Remote]);
monitor_event(S, Who, long_message_queue, Long) ->
    Len = case is_pid(Who) andalso erlang:process_info(Who, message_queue_len) of
              {message_queue_len, L} -> L;
              _ -> 0
          end,
    beamtrace:emit_nif(S, long_message_queue, [Who, name(Who), Long, Len]);
monitor_event(_, _, _, _) ->
    false.

where(Key, Info) ->
    case lists:keyfind(Key, 1, Info) of
        {Key, {M, F, A}} when is_atom(M), is_atom(F), is_integer(A) -> {M, F, A};
        {Key, Atom} when is_atom(Atom) -> Atom;
        _ -> undefined
    end.

name(Pid) when is_pid(Pid) ->
    case erlang:process_info(Pid, registered_name) of
        {registered_name, Name} -> Name;
        _ -> undefined
    end;
name(Port) when is_port(Port) ->
    case erlang:port_info(Port, registered_name) of
        {registered_name, Name} -> Name;
        _ ->
            case erlang:port_info(Port, name) of
                {name, Command} -> unicode:characters_to_binary(Command);
                _ -> undefined
            end
    end;
name(_) ->
    undefined.

location(Pid) when is_pid(Pid) ->
    case erlang:process_info(Pid, current_function) of
        {current_function, {M, F, A}} -> {M, F, A};
        %% undefined while the VM has it between functions (the helper, at
        %% high priority, can ask right as a collection ends): its stack's
        %% top then says where it is.
        {current_function, undefined} ->
            case erlang:process_info(Pid, current_stacktrace) of
                {current_stacktrace, [{M, F, A, _} | _]} when is_integer(A) -> {M, F, A};
                {current_stacktrace, [{M, F, Args, _} | _]} -> {M, F, length(Args)};
                _ -> undefined
            end;
        _ -> undefined
    end;
location(_) ->
    undefined.
