%% A get request, as Riak's get FSM coordinates it: one process per
%% request asks every vnode of the key's preference list (N = 3 replicas)
%% at once and answers when all have replied (R = N).
-module(kv_get_fsm).
-export([get/2, run/2]).

-define(N, 3).

%% Runs one get of Key over Partitions partitions in a new process, as the
%% caller's request: returns the value.
get(Key, Partitions) ->
    Client = self(),
    Pid = spawn(fun() -> Client ! {self(), ?MODULE:run(Key, preflist(Key, Partitions))} end),
    receive
        {Pid, Value} -> Value
    end.

%% The FSM's work: a request to each vnode, then every reply.
run(Key, Preflist) ->
    Refs = [begin Ref = make_ref(), kv_vnode:get(I, Key, Ref), Ref end || I <- Preflist],
    [Value | _] = [receive {Ref, V} -> V end || Ref <- Refs],
    Value.

%% ?N consecutive partitions from the key's hash.
preflist(Key, Partitions) ->
    First = erlang:phash2(Key, Partitions),
    [(First + J) rem Partitions + 1 || J <- lists:seq(0, ?N - 1)].
