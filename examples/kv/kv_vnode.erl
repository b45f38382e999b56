%% A vnode: one partition of the key space, a gen_server owning one
%% kv_store. Requests come as casts carrying the sender, and the answer is a
%% plain message to it, as riak_core's vnodes answer an FSM. They are served
%% one at a time, in arrival order, so a slow one (a merge) delays every
%% request queued behind it.
-module(kv_vnode).
-behaviour(gen_server).
-export([start/2, name/1, get/3]).
-export([init/1, handle_call/3, handle_cast/2, terminate/2]).

%% Starts partition I (registered kv_vnode_I) with Keys keys, its data file
%% in Dir.
start(I, {Dir, Keys}) ->
    {ok, _} = gen_server:start({local, name(I)}, ?MODULE, {I, Dir, Keys}, []),
    ok.

name(I) ->
    list_to_atom("kv_vnode_" ++ integer_to_list(I)).

%% Asks partition I for Key; the answer comes as {Ref, Value} to the caller.
get(I, Key, Ref) ->
    gen_server:cast(name(I), {get, Key, {self(), Ref}}).

init({I, Dir, Keys}) ->
    process_flag(trap_exit, true),
    {ok, kv_store:open(filename:join(Dir, "partition-" ++ integer_to_list(I)), Keys)}.

handle_cast({get, Key, {Pid, Ref}}, Store) ->
    {Value, Store1} = kv_store:get(Key, Store),
    Pid ! {Ref, Value},
    {noreply, Store1}.

handle_call(_Request, _From, Store) ->
    {reply, {error, unknown_request}, Store}.

terminate(_Reason, Store) ->
    kv_store:close(Store).
