%% The reference implementation of the message matching rule of
%% docs/cluster.md ("Matching a send to its receipt"), over the traces of a
%% cluster as babeltrace2 prints them: what `beamtrace messages' and the
%% chrome flows are to compute, written plainly, step by step as the
%% document says it.
%%
%% match(Traces) with Traces = [{Node, [Event]}] or [{Node, [Event],
%% Losses}], each node's events in its trace's order (Event = {TsNs, Name,
%% Fields}, Fields as bmt_test_lib:parse_line/1 gives them; Losses the
%% [{FromNs, ToNs}] ranges where the trace discarded events), returns
%% #{links => [{Send, Receipt}], uncertain => [{Send, Receipt}] (links
%% also counted in links, not to be drawn), unmatched => [Receipt],
%% ambiguous => [Receipt], not_received => [Send], in_flight => [Send],
%% dead => [Send], external_sends => [Send], external_receipts =>
%% [Receipt], unresolved => [Send]}, where Send = #{node, ts, from, to,
%% message, fingerprint, receiver} and Receipt = #{node, ts, to, from,
%% from_node, message, fingerprint}.
-module(bmt_links).

-export([read/1, match/1, sender/1]).

%%% Reading

%% The traces of a cluster directory: [{Node, [Event], Losses}].
read(ClusterDir) ->
    {ok, Subdirs} = file:list_dir(ClusterDir),
    [read_trace(filename:join(ClusterDir, D)) || D <- lists:sort(Subdirs)].

read_trace(Dir) ->
    {0, Lines, Err} = bmt_test_lib:cmd("babeltrace2", ["--clock-seconds", Dir]),
    Events = [begin
                  {Name, Fields} = bmt_test_lib:parse_line(L),
                  {ts(L), Name, Fields}
              end || L <- Lines],
    [Node | _] = [binary_to_atom(N) || {_, node_info, #{index := 0, node := N}} <- Events],
    %% "WARNING: Tracer discarded N events between [t1] and [t2] in trace ..."
    Losses = case re:run(Err, <<"discarded [0-9]+ events? between \\[([0-9]+)\\.([0-9]{9})\\] "
                                "and \\[([0-9]+)\\.([0-9]{9})\\]">>,
                         [global, {capture, all_but_first, binary}]) of
                 {match, Ms} -> [{ns(S1, N1), ns(S2, N2)} || [S1, N1, S2, N2] <- Ms];
                 nomatch -> []
             end,
    {Node, Events, Losses}.

ts(Line) ->
    {match, [S, Ns]} = re:run(Line, <<"^\\[([0-9]+)\\.([0-9]{9})\\]">>,
                              [{capture, all_but_first, binary}]),
    ns(S, Ns).

ns(S, Ns) ->
    binary_to_integer(S) * 1000000000 + binary_to_integer(Ns).

%%% The rule

match(Traces0) ->
    Traces = [{N, Es} || T <- Traces0, {N, Es} <- [{element(1, T), element(2, T)}]],
    Losses = maps:from_list([{element(1, T), case T of {_, _, L} -> L; _ -> [] end}
                             || T <- Traces0]),
    Starts = maps:from_list([{N, case Es of [{Ts, _, _} | _] -> Ts; [] -> 0 end}
                             || {N, Es} <- Traces]),
    Traced = [N || {N, _} <- Traces],
    %% 1. Node tables: index -> node, per trace; registered names per node.
    Tables = maps:from_list([{N, node_table(N, Es)} || {N, Es} <- Traces]),
    Names = maps:from_list([{N, names(Es)} || {N, Es} <- Traces]),
    %% 2. Sends, their receivers resolved; 3. queues per (sender, receiver).
    Sends0 = [send(N, Ts, F, Tables, Names)
              || {N, Es} <- Traces, {Ts, message_send_link, F} <- Es],
    {Dead, Sends1} = lists:partition(fun(S) -> maps:get(type, S) =:= <<"send_to_non_existing_process">> end,
                                     Sends0),
    {Unresolved, Sends2} = lists:partition(fun(S) -> maps:get(receiver, S) =:= unresolved end,
                                           Sends1),
    {External, Sends} = lists:partition(
                          fun(#{receiver := {RN, _}}) -> not lists:member(RN, Traced) end, Sends2),
    Queues = lists:foldl(fun(S, Q) ->
                                 Key = {sender(S), maps:get(receiver, S)},
                                 maps:update_with(Key, fun(L) -> L ++ [S] end, [S], Q)
                         end, #{}, Sends),
    %% 4. Receipts, each receiver's in its trace's order.
    Receipts0 = [receipt(N, Ts, F) || {N, Es} <- Traces, {Ts, message_receive_link, F} <- Es],
    {ExternalR, Receipts} = lists:partition(
                              fun(#{from_node := FN}) -> not lists:member(FN, Traced) end,
                              Receipts0),
    Acc0 = #{queues => Queues, links => [], uncertain => [], unmatched => [], ambiguous => [],
             not_received => [], losses => Losses, starts => Starts},
    Acc = lists:foldl(fun step/2, Acc0, Receipts),
    %% A send whose receiver has no receipt at all: receiver not traced.
    Receiving = lists:usort([{N, To} || #{node := N, to := To} <- Receipts ++ ExternalR]),
    {InFlight, NotTraced} = lists:partition(fun(#{receiver := {_, {alias, _}}}) -> true;
                                               (#{receiver := Rcv}) -> lists:member(Rcv, Receiving)
                                            end, lists:append(maps:values(maps:get(queues, Acc)))),
    #{links => lists:reverse(maps:get(links, Acc)),
      uncertain => maps:get(uncertain, Acc),
      receiver_not_traced => NotTraced,
      unmatched => maps:get(unmatched, Acc),
      ambiguous => maps:get(ambiguous, Acc),
      not_received => maps:get(not_received, Acc),
      in_flight => InFlight,
      dead => Dead, unresolved => Unresolved,
      external_sends => External, external_receipts => ExternalR}.

%% One receipt against the queues.
step(#{to := To, node := RN, from := From, from_node := FN, fingerprint := FP} = R,
     #{queues := Qs} = Acc) ->
    Receiver = {RN, To},
    Candidates = [{Key, Q} || {{{SN, SP}, Rcv} = Key, Q} <- maps:to_list(Qs),
                              Rcv =:= Receiver orelse alias_on(RN, Rcv), SN =:= FN,
                              From =:= <<"undefined">> orelse SP =:= From],
    Hits = [{Key, Before, S, After} || {Key, Q} <- Candidates,
                                       {Before, [S | After]} <- [lists:splitwith(
                                           fun(X) -> maps:get(fingerprint, X) =/= FP end, Q)]],
    case Hits of
        [{Key, Before, S, After}] ->
            Acc1 = Acc#{queues := Qs#{Key := After},
                        links := [{S, R} | maps:get(links, Acc)],
                        not_received := Before ++ maps:get(not_received, Acc)},
            case uncertain(S, R, After, Acc) of
                true -> Acc1#{uncertain := [{S, R} | maps:get(uncertain, Acc)]};
                false -> Acc1
            end;
        [] ->
            Acc#{unmatched := [R | maps:get(unmatched, Acc)]};
        _ ->
            Acc#{ambiguous := [R | maps:get(ambiguous, Acc)]}
    end.

%% Another send with the same fingerprint still queued after the linked
%% one, and a receipt may be missing between them: a loss on either node
%% between the send and the receipt, or the send made before the
%% receiver's trace began.
uncertain(#{node := SN, ts := ST, fingerprint := FP}, #{node := RN, ts := RT}, After,
          #{losses := Losses, starts := Starts}) ->
    Twin = lists:any(fun(X) -> maps:get(fingerprint, X) =:= FP end, After),
    Lost = lists:any(fun({From, To}) -> From =< RT andalso To >= ST end,
                     maps:get(SN, Losses, []) ++ maps:get(RN, Losses, [])),
    Twin andalso (Lost orelse ST < maps:get(RN, Starts, 0)).

sender(#{node := N, from := F}) -> {N, F}.

%% A send to a process alias of node Node (its owner is not in the trace:
%% any receiver of that node may be it).
alias_on(Node, {Node, {alias, _}}) -> true;
alias_on(_, _) -> false.

send(Node, Ts, #{from := From, to := To, message := M, type := Type, fingerprint := FP},
     Tables, Names) ->
    #{node => Node, ts => Ts, from => From, to => To, message => M, type => Type,
      fingerprint => FP, receiver => receiver(Node, Ts, To, Tables, Names)}.

receipt(Node, Ts, #{to := To, from := From, from_node := FN, message := M,
                    fingerprint := FP}) ->
    #{node => Node, ts => Ts, to => To, from => From, from_node => binary_to_atom(FN),
      message => M, fingerprint => FP}.

%% The receiving process of a send: {Node, <<"<0.X.Y>">>} or unresolved.
receiver(Node, Ts, To, Tables, Names) ->
    case re:run(To, <<"^(<|#Ref<)([0-9]+)(\\.[0-9.]+>)$">>, [{capture, all_but_first, binary}]) of
        {match, [Kind, I, Rest]} ->
            case {index_node(Node, binary_to_integer(I), Tables), Kind} of
                {unknown, _} -> unresolved;
                {DN, <<"<">>} -> {DN, <<"<0", Rest/binary>>};
                %% A reference: a process alias (gen_server replies).
                {DN, _} -> {DN, {alias, <<"#Ref<0", Rest/binary>>}}
            end;
        nomatch ->
            case parse_term(To) of
                {ok, Name} when is_atom(Name) -> by_name(Node, Name, Ts, Names);
                {ok, {Name, DN}} when is_atom(Name), is_atom(DN) -> by_name(DN, Name, Ts, Names);
                _ -> unresolved     %% a port, or text this rule does not know
            end
    end.

index_node(Node, 0, _Tables) -> Node;
index_node(Node, I, Tables) -> maps:get(I, maps:get(Node, Tables), unknown).

%% The pid registered as Name on Node at Ts (its trace's names), or
%% unresolved (no trace of Node, or no such name).
by_name(Node, Name, Ts, Names) ->
    case maps:find(Node, Names) of
        {ok, Regs} ->
            case [P || {T, N, P} <- Regs, N =:= Name, T =< Ts] of
                [] -> case [P || {_, N, P} <- Regs, N =:= Name] of
                          [P | _] -> {Node, P};
                          [] -> unresolved
                      end;
                Ps -> {Node, lists:last(Ps)}
            end;
        error ->
            {Node, {name, Name}}   %% a node without a trace: external
    end.

parse_term(Text) ->
    case erl_scan:string(binary_to_list(Text) ++ ".") of
        {ok, Toks, _} -> erl_parse:parse_term(Toks);
        _ -> error
    end.

node_table(_Node, Events) ->
    maps:from_list([{I, binary_to_atom(N)} || {_, node_info, #{index := I, node := N}} <- Events,
                                              I =/= 0]).

%% [{Ts, Name, Pid}]: registrations from the state dump and register events.
names(Events) ->
    [{Ts, name(N), P} || {Ts, process_info, #{pid := P, name := N}} <- Events,
                         N =/= <<"undefined">>]
        ++ [{Ts, name(N), P}
            || {Ts, process_register, #{pid := P, name := N, type := <<"register">>}} <- Events].

%% A name as printed (quoted when Erlang quotes it).
name(Text) ->
    {ok, A} = parse_term(Text),
    A.
