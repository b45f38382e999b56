%% The workload of a cluster node (no beamtrace on its code path): a vnode
%% server, registered `bmt_vnode', answering requests from any node, a
%% gen_server `bmt_kv', and request fan-outs: each request is an FSM
%% process that sends one request to the vnode of every other node (one by
%% name, `{bmt_vnode, Node}', the others by pid), waits for every reply,
%% then calls the bmt_kv of the first other node (gen_server:call: the
%% reply goes to a process alias, a reference). Every process counts the
%% messages it sends to another node, so a test knows exactly how many
%% cross-node messages the workload sent. The node halts when the driver
%% node goes.
-module(bmt_cluster_target).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([start/1, mesh/1, run/3, vnode_sent/0, make_atoms/1, send_map/2, send_kinds/1,
         latency/2, latency_result/0, traced/0, beamtrace_left/0]).
%% bmt_kv, a gen_server: calls across nodes, replies to process aliases.
-export([init/1, handle_call/3, handle_cast/2]).

%% send_kinds/1 sends improper lists on purpose (dialyzer).
-dialyzer({no_improper_lists, send_kinds/1}).

%% -eval'd at boot. The driver is connected hidden: it is no part of the
%% cluster (nodes() here, so --cluster, leaves it out).
start(Driver) ->
    spawn(fun() ->
                  true = net_kernel:hidden_connect_node(Driver),
                  monitor_node(Driver, true),
                  receive {nodedown, Driver} -> erlang:halt() end
          end),
    register(bmt_vnode, spawn(fun() -> vnode(0) end)),
    register(bmt_lat, spawn(fun() -> lat([]) end)),
    {ok, _} = gen_server:start({local, bmt_kv}, ?MODULE, [], []),
    ok.

init([]) ->
    {ok, 0}.

handle_call({get, J}, {From, _Tag}, Sent) ->
    {reply, {value, J, node()}, Sent + cross(From)};
handle_call(sent, _From, Sent) ->
    {reply, Sent, Sent}.

handle_cast(_Msg, Sent) ->
    {noreply, Sent}.

%% Connects this node to every node of Nodes.
mesh(Nodes) ->
    [true = net_kernel:connect_node(N) || N <- Nodes, N =/= node()],
    ok.

vnode(Sent) ->
    receive
        {req, From, Ref, Payload} ->
            From ! {rep, Ref, node(), Payload},
            vnode(Sent + cross(From));
        {map, _Ref, _Map} ->
            vnode(Sent);
        {any, _, _} ->
            vnode(Sent);
        {sent, From} ->
            From ! {vnode_sent, Sent},
            vnode(Sent)
    end.

%% The latency probe: each message carries the time its send began, the
%% sender also notes when its send returned, and the receiver notes when it
%% has taken it. One host, so os:system_time/1 is one clock on every node. While
%% a probe runs (N messages announced) the receiver polls its mailbox
%% instead of sleeping in `receive': a trace's receipt is the message's
%% arrival in the mailbox, and a sleeping receiver would add its wake-up
%% (its scheduler's too) to what it measures.
lat(Acc) ->
    receive
        {lat_expect, N} ->
            lat(spin(N, Acc));
        {lat_get, From} ->
            From ! {lat_result, lists:reverse(Acc)},
            lat([])
    end.

spin(0, Acc) ->
    Acc;
spin(N, Acc) ->
    %% Not `receive ... after 0': a traced timeout is an event each time.
    case erlang:process_info(self(), message_queue_len) of
        {message_queue_len, 0} ->
            spin(N, Acc);
        _ ->
            %% Noted once taken: the VM traces the receipt as the receive
            %% takes the message in, just before it returns here.
            receive {lat, I, T0} -> spin(N - 1, [{I, T0, os:system_time(nanosecond)} | Acc]) end
    end.

%% N timestamped messages to the latency probe of Node, 2 ms apart (never
%% queued behind each other): [{I, SendReturnedNs}].
latency(Node, N) ->
    Pid = erpc:call(Node, erlang, whereis, [bmt_lat]),
    Pid ! {lat_expect, N},
    timer:sleep(10),
    [begin
         Pid ! {lat, I, os:system_time(nanosecond)},
         T1 = os:system_time(nanosecond),
         timer:sleep(2),
         {I, T1}
     end || I <- lists:seq(1, N)].

%% What the probe here saw: [{I, SendBeganNs, SeenNs}], oldest first.
latency_result() ->
    bmt_lat ! {lat_get, self()},
    receive {lat_result, L} -> L end.

cross(Pid) when node(Pid) =/= node() -> 1;
cross(_) -> 0.

%% N requests, Batch at a time, each fanned out to the vnodes of Others:
%% returns the cross-node messages the FSMs sent.
run(N, Batch, Others) ->
    Vnodes = [case I of
                  1 -> {bmt_vnode, O};
                  _ -> erpc:call(O, erlang, whereis, [bmt_vnode])
              end || {I, O} <- lists:zip(lists:seq(1, length(Others)), Others)],
    run(1, N, Batch, Vnodes, 0).

run(I, N, _Batch, _Vnodes, Sent) when I > N ->
    Sent;
run(I, N, Batch, Vnodes, Sent) ->
    Last = min(N, I + Batch - 1),
    Self = self(),
    Fsms = [spawn(fun() -> Self ! {fsm_done, self(), fsm(J, Vnodes)} end)
            || J <- lists:seq(I, Last)],
    More = lists:sum([receive {fsm_done, F, S} -> S end || F <- Fsms]),
    run(Last + 1, N, Batch, Vnodes, Sent + More).

fsm(J, [First | _] = Vnodes) ->
    Refs = [begin
                Ref = make_ref(),
                V ! {req, self(), Ref, {J, node()}},
                Ref
            end || V <- Vnodes],
    [receive {rep, Ref, _, _} -> ok end || Ref <- Refs],
    KvNode = dest_node(First),
    {value, J, KvNode} = gen_server:call({bmt_kv, KvNode}, {get, J}),
    length([V || V <- Vnodes, dest_node(V) =/= node()]) + 1.

%% Atoms made here in the order given: a map keyed by them is laid out by
%% atom index on OTP 26+, so its order here differs from a node that made
%% them in another order.
make_atoms(Names) ->
    _ = [list_to_atom(N) || N <- Names],
    ok.

%% One message holding a map keyed by atoms of Names to the vnode of Node:
%% 1 (it went to another node).
send_map(Node, Names) ->
    Map = maps:from_list([{list_to_atom(N), I} || {I, N} <- lists:zip(lists:seq(1, length(Names)), Names)]),
    {bmt_vnode, Node} ! {map, make_ref(), Map},
    1.

%% One message of each kind of term to the vnode of Node, `{any, I, Term}':
%% the fingerprint's both ways (one phash2, or the bounded walk) on every
%% kind of term. Returns how many.
send_kinds(Node) ->
    Deep = lists:foldl(fun(_, Acc) -> {Acc} end, leaf, lists:seq(1, 40)),
    Kinds = [{small, 1, 2.5, -7, "text"},
             1 bsl 100,
             [a, b | c],
             binary:copy(<<"0123456789abcdef">>, 320),   %% 5 KiB: the walk
             <<1:3>>,
             Deep,
             maps:from_list([{K, {K}} || K <- lists:seq(1, 200)]),
             lists:seq(1, 1000),
             fun(X) -> {X, node()} end,
             {self(), make_ref(), hd(erlang:ports())},
             #{a => 1, <<"b">> => [2], {c} => #{d => 3.0}}],
    [{bmt_vnode, Node} ! {any, I, K} || {I, K} <- lists:zip(lists:seq(1, length(Kinds)), Kinds)],
    length(Kinds).

%% The vnode is traced by beamtrace (legacy session or a trace session).
traced() ->
    V = whereis(bmt_vnode),
    Legacy = case catch erlang:trace_info(V, tracer) of
                 {tracer, {beamtrace, _}} -> true;
                 _ -> false
             end,
    _ = code:ensure_loaded(trace),
    Legacy orelse (erlang:function_exported(trace, session_info, 1) andalso
                   case catch trace:session_info(V) of
                       L when is_list(L) -> lists:keymember(beamtrace_trace, 1, L);
                       _ -> false
                   end).

dest_node({_Name, Node}) -> Node;
dest_node(Pid) -> node(Pid).

%% The cross-node messages the vnode and bmt_kv sent (replies).
vnode_sent() ->
    bmt_vnode ! {sent, self()},
    receive {vnode_sent, N} -> N + gen_server:call(bmt_kv, sent) end.

%% bmt_beamtrace_left:check/0 (test/lib), compiled beside this module.
beamtrace_left() ->
    bmt_beamtrace_left:check().
