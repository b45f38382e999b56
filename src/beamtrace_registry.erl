%% @doc What beamtrace keeps between the call that starts a session and the
%% one that stops it, which may run in another process: a session's state
%% dump workers, its sources' helper and keeper. A public ETS table, held by
%% a process of beamtrace's own that does nothing else (registered
%% `beamtrace_registry', made with the first entry, never traced).
%%
%% Not the application environment: application:set_env/3 is a call to the
%% application controller, a process of normal priority, and on a node
%% whose schedulers are saturated it answers one turn of the run queue
%% later (measured on OTP 25 at 100,000 busy processes: 5 to 12 s a call,
%% set_env's own 5 s timeout crashing the caller). Nothing on the way of a
%% start or a stop may wait on a process of normal priority; an ETS
%% operation waits on none, and ets:take/2 hands an entry to exactly one
%% taker with no lock.
-module(beamtrace_registry).

-export([put/3, get/2, take/2, values/1, holder/0]).
%% The holder's process.
-export([hold/0]).

-define(TABLE, beamtrace_registry).

%% @doc Stores Value under {Kind, Key}, replacing what was there.
-spec put(atom(), term(), term()) -> ok.
put(Kind, Key, Value) ->
    true = ets:insert(table(), {{Kind, Key}, Value}),
    ok.

%% @doc The value under {Kind, Key}, or none.
-spec get(atom(), term()) -> term() | none.
get(Kind, Key) ->
    try ets:lookup(?TABLE, {Kind, Key}) of
        [{_, Value}] -> Value;
        [] -> none
    catch error:badarg -> none    %% no table yet: nothing was put
    end.

%% @doc Removes and returns the value under {Kind, Key}, or none: of two
%% processes taking the same entry at once, one gets it.
-spec take(atom(), term()) -> term() | none.
take(Kind, Key) ->
    try ets:take(?TABLE, {Kind, Key}) of
        [{_, Value}] -> Value;
        [] -> none
    catch error:badarg -> none
    end.

%% @doc Every value of Kind.
-spec values(atom()) -> [term()].
values(Kind) ->
    try ets:select(?TABLE, [{{{Kind, '_'}, '$1'}, [], ['$1']}])
    catch error:badarg -> []
    end.

%% @doc The process holding the table, or undefined before the first put.
-spec holder() -> pid() | undefined.
holder() ->
    whereis(?TABLE).

%% The table, made on first use. Made here and given to the holder: the
%% caller never waits for the holder to be scheduled. Two first uses at
%% once: the second's ets:new/2 fails, and it uses the first's table.
table() ->
    case ets:whereis(?TABLE) of
        undefined ->
            try ets:new(?TABLE, [named_table, public, set]) of
                T ->
                    Holder = spawn(?MODULE, hold, []),
                    true = register(?TABLE, Holder),
                    true = ets:give_away(T, Holder, []),
                    T
            catch error:badarg ->
                    ets:whereis(?TABLE)
            end;
        T ->
            T
    end.

%% @private The holder: keeps the table alive, nothing else.
-spec hold() -> no_return().
hold() ->
    beamtrace_label:set_label(?TABLE),
    receive after infinity -> ok end.
