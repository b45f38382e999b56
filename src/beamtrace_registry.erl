%% @doc What beamtrace keeps between the call that starts a session and the
%% one that stops it, which may run in another process: a session's state
%% dump workers, its sources' helper and keeper. A public ETS table, held by
%% a process of beamtrace's own that does nothing else (labelled
%% `beamtrace_registry', made with the first entry, never traced, found as
%% the table's owner), and gone with the last entry: nothing of beamtrace
%% stays on a node after its last session.
%%
%% Not the application environment: application:set_env/3 is a call to the
%% application controller, a process of normal priority, and on a node
%% whose schedulers are saturated it answers one turn of the run queue
%% later (measured on OTP 25 at 100,000 busy processes: 5 to 12 s a call,
%% set_env's own 5 s timeout crashing the caller). Nothing on the way of a
%% start or a stop may wait on a process of normal priority; an ETS
%% operation waits on none, and ets:take/2 hands an entry to exactly one
%% taker with no lock.
%%
%% The holder is not registered: a first put while the last holder is
%% going makes a table and a holder of its own, with no name to contend
%% for. The holder goes by renaming the table first (atomic: a put after
%% that makes a new table), then looking at what it holds: an entry put in
%% between is moved to the table of that name, or the table is renamed
%% back. In that instant (microseconds, only right after the registry was
%% seen empty) a get of the entry just put answers none.
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
%% processes taking the same entry at once, one gets it. The last entry
%% taken, the holder is told to go.
-spec take(atom(), term()) -> term() | none.
take(Kind, Key) ->
    try ets:take(?TABLE, {Kind, Key}) of
        [{_, Value}] -> maybe_empty(), Value;
        [] -> none
    catch error:badarg -> none
    end.

maybe_empty() ->
    case ets:info(?TABLE, size) of
        0 ->
            case holder() of
                undefined -> ok;
                H -> H ! {?MODULE, maybe_empty}, ok
            end;
        _ -> ok
    end.

%% @doc Every value of Kind.
-spec values(atom()) -> [term()].
values(Kind) ->
    try ets:select(?TABLE, [{{{Kind, '_'}, '$1'}, [], ['$1']}])
    catch error:badarg -> []
    end.

%% @doc The process holding the table, or undefined when there is none.
-spec holder() -> pid() | undefined.
holder() ->
    case ets:info(?TABLE, owner) of
        Pid when is_pid(Pid) -> Pid;
        _ -> undefined
    end.

%% The table, made on first use. Made here and given to the holder: the
%% caller never waits for the holder to be scheduled. Two first uses at
%% once: the second's ets:new/2 fails, and it uses the first's table.
table() ->
    case ets:whereis(?TABLE) of
        undefined ->
            try ets:new(?TABLE, [named_table, public, set]) of
                T ->
                    %% High priority, as the sessions' processes: on a
                    %% saturated node its going is not one turn late.
                    Holder = spawn_opt(?MODULE, hold, [], [{priority, high}]),
                    true = ets:give_away(T, Holder, []),
                    T
            catch error:badarg ->
                    ets:whereis(?TABLE)
            end;
        T ->
            T
    end.

%% @private The holder: keeps the table alive until it is empty.
-spec hold() -> ok.
hold() ->
    beamtrace_label:set_label(?TABLE),
    hold_loop().

hold_loop() ->
    receive
        {?MODULE, maybe_empty} ->
            case going() of
                true -> ok;
                false -> hold_loop()
            end;
        _ ->
            hold_loop()
    end.

%% True when the table was empty: it is deleted as this process ends.
going() ->
    Mine = ets:rename(?TABLE, beamtrace_registry_going),
    case ets:tab2list(Mine) of
        [] ->
            true;
        Entries ->
            try ets:rename(Mine, ?TABLE) of
                _ -> false
            catch error:badarg ->
                    %% A put made a new table meanwhile: the entries go there.
                    true = ets:insert(table(), Entries),
                    true
            end
    end.
