%% @doc The flight agent: what `beamtrace record --flight ... --detach'
%% leaves running on a node after the command exits, and what `flights',
%% `fetch' and `stop --node' talk to (beamtrace_flight_remote, in the
%% command's hidden node).
%%
%% == Structure ==
%% One process per node, registered `beamtrace_flight_agent', linked to
%% nothing. It owns one flight recording (beamtrace:flight/2, whose owner
%% it is), the private directory `record' made on the node
%% (`<tmp>/beamtrace-flight-<node>-<random>', 0700: the NIF library, the
%% recording in `flight/', `flight.info') and the modules `record'
%% shipped. The recording's own guard rails (until, max_bytes, max_rate)
%% end it; so does `stop'.
%%
%% When the recording ends by itself, the agent retires: the shipped
%% modules are deleted and purged (by a process running OTP code only, as
%% beamtrace_remote does: the purge kills the agent, which runs their
%% code) and the NIF library file is removed; the captures and
%% `flight.info' stay in the private directory for `fetch'. After `stop',
%% the agent waits (at most ?REMOVE_WAIT_MS) for `remove', which the
%% command sends once it has copied the captures: then everything goes.
%% Nothing persists across a restart of the node: a VM that restarts has
%% no agent and no beamtrace code; the private directory is on disk.
-module(beamtrace_flight_agent).

-export([start/1, list/0, stop/0, remove/0, info_file/0]).
%% The agent process.
-export([init/2]).

-define(NAME, beamtrace_flight_agent).
-define(INFO_FILE, "flight.info").
-define(REMOVE_WAIT_MS, 600000).
-define(CALL_MS, 60000).

%%% API (called on the node, by erpc from the command's hidden node)

%% @doc Starts the agent and its flight recording. Opts: `dir' (the
%% private directory), `modules' (shipped: purged at the end), `spec',
%% `flight' (beamtrace:flight/2's options; its dir is set here), `node'
%% (the controller, for the info file). `{ok, Info}' (list/0's) or
%% `{error, Reason}': `already_running' when an agent runs.
-spec start(map()) -> {ok, map()} | {error, term()}.
start(#{dir := Dir} = Opts) ->
    case whereis(?NAME) of
        P when is_pid(P) ->
            {error, {already_running, P}};
        undefined ->
            Caller = self(),
            Ref = make_ref(),
            {Pid, Mon} = spawn_monitor(?MODULE, init, [{Caller, Ref}, Opts#{dir => to_list(Dir)}]),
            receive
                {Ref, {ok, Info}} -> demonitor(Mon, [flush]), {ok, Info};
                {Ref, Error} -> demonitor(Mon, [flush]), Error;
                {'DOWN', Mon, process, Pid, Why} -> {error, {agent_down, Why}}
            end
    end.

%% @doc The running agent's recording: `[Info]' (empty when none runs).
%% Info: `dir' (private directory), `flight_dir', `state' (running |
%% stopped), `started' (UTC text), `until_ms' (left), `triggers', `spec',
%% `captures' (sealed ones), `flight' (the capture figures), `events',
%% `discarded', `written_bytes', `reason' (once stopped).
-spec list() -> [map()].
list() ->
    case call(list) of
        {ok, Info} -> [Info];
        {error, not_running} -> []
    end.

%% @doc Stops the recording (every capture sealed): `{ok, Info}'. The agent
%% then waits for remove/0.
-spec stop() -> {ok, map()} | {error, not_running}.
stop() ->
    call(stop).

%% @doc Removes the private directory and the shipped modules; the agent
%% exits. `{ok, #{dir, modules}}' (what went).
-spec remove() -> {ok, map()} | {error, not_running}.
remove() ->
    call(remove).

%% @doc The name of the file in a private directory that says what the
%% recording was (an Erlang term, file:consult/1).
-spec info_file() -> string().
info_file() ->
    ?INFO_FILE.

call(Req) ->
    case whereis(?NAME) of
        undefined ->
            {error, not_running};
        P ->
            Ref = monitor(process, P),
            P ! {self(), Ref, Req},
            receive
                {Ref, Reply} -> demonitor(Ref, [flush]), Reply;
                {'DOWN', Ref, process, P, _} -> {error, not_running}
            after ?CALL_MS ->
                demonitor(Ref, [flush]),
                {error, timeout}
            end
    end.

%%% The agent

-record(st, {dir, flight_dir, modules, flight, info, result}).

%% @private
-spec init({pid(), reference()}, map()) -> ok.
init({Caller, Ref}, #{dir := Dir} = Opts) ->
    %% 'catch Expr' is deprecated from OTP 29 (warnings are errors here).
    Registered = try register(?NAME, self())
                 catch error:badarg -> false
                 end,
    case Registered of
        true ->
            beamtrace_label:set_label(?NAME),
            FlightDir = filename:join(Dir, "flight"),
            FlightOpts = (maps:get(flight, Opts))#{dir => FlightDir, owner => self()},
            case beamtrace:flight(maps:get(spec, Opts), FlightOpts) of
                {ok, F} ->
                    Triggers = case beamtrace:flight_info(F) of
                                   #{triggers := Ts} -> Ts;
                                   _ -> []
                               end,
                    Info = #{dir => list_to_binary(Dir), flight_dir => list_to_binary(FlightDir),
                             started => utc_now(), spec => maps:get(spec, Opts),
                             triggers => Triggers,
                             until => maps:get(until, FlightOpts, undefined),
                             controller => maps:get(node, Opts, undefined),
                             node => node()},
                    ok = write_info(Dir, Info#{state => running}),
                    St = #st{dir = Dir, flight_dir = FlightDir, modules = maps:get(modules, Opts, []),
                             flight = F, info = Info#{state => running}},
                    Caller ! {Ref, {ok, describe(St)}},
                    loop(St);
                {error, _} = Error ->
                    Caller ! {Ref, Error},
                    ok
            end;
        _ ->
            Caller ! {Ref, {error, {already_running, whereis(?NAME)}}},
            ok
    end.

loop(#st{flight = F} = St) ->
    receive
        {From, Ref, list} ->
            From ! {Ref, {ok, describe(St)}},
            loop(St);
        {From, Ref, stop} when F =/= undefined ->
            St1 = ended(St, beamtrace:stop_flight(F)),
            From ! {Ref, {ok, describe(St1)}},
            wait_remove(St1);
        {From, Ref, stop} ->
            From ! {Ref, {ok, describe(St)}},
            wait_remove(St);
        {From, Ref, remove} ->
            remove(St, From, Ref);
        {beamtrace_flight, F, Result} ->
            %% until, or a cap: what stays is the captures.
            retire(ended(St#st{flight = undefined}, Result));
        _ ->
            loop(St)
    end.

%% After stop: the command copies the captures, then asks to remove.
wait_remove(St) ->
    receive
        {From, Ref, remove} -> remove(St, From, Ref);
        {From, Ref, list} -> From ! {Ref, {ok, describe(St)}}, wait_remove(St);
        {From, Ref, stop} -> From ! {Ref, {ok, describe(St)}}, wait_remove(St)
    after ?REMOVE_WAIT_MS ->
        retire(St)
    end.

ended(St, Result) ->
    Summary = case Result of
                  {ok, M} -> summary(M);
                  {error, {Posix, M}} when is_map(M) -> (summary(M))#{error => Posix};
                  {error, Why} -> #{error => Why}
              end,
    Info = maps:merge(St#st.info, Summary#{state => stopped}),
    _ = write_info(St#st.dir, Info),
    St#st{flight = undefined, info = Info, result = Result}.

summary(M) ->
    maps:with([reason, events, discarded, written_bytes, flight, elapsed_ms], M).

%% Everything goes: the private directory (captures included: the
%% command copied them) and the shipped modules.
-spec remove(#st{}, pid(), reference()) -> no_return().
remove(St, From, Ref) ->
    _ = St#st.flight =/= undefined andalso beamtrace:stop_flight(St#st.flight),
    Removed = file:del_dir_r(St#st.dir) =:= ok,
    From ! {Ref, {ok, #{dir => list_to_binary(St#st.dir), dir_removed => Removed,
                        modules => St#st.modules}}},
    purge_and_exit(St#st.modules).

%% The recording ended by itself, or nobody came to remove: the code goes,
%% the captures stay for `fetch'.
-spec retire(#st{}) -> no_return().
retire(St) ->
    _ = file:delete(filename:join(St#st.dir, "beamtrace_nif.so")),
    purge_and_exit(St#st.modules).

%% Deletes the shipped modules (this process runs their old code) and
%% leaves the purge to a process running OTP code only.
-spec purge_and_exit([module()]) -> no_return().
purge_and_exit(Mods) ->
    unregister(?NAME),
    _ = [code:delete(M) || M <- Mods],
    _ = spawn(lists, foreach, [fun code:purge/1, Mods]),
    exit(normal).

describe(#st{flight = F, flight_dir = FD} = St) ->
    Live = case F of
               undefined -> #{};
               _ ->
                   case beamtrace:flight_info(F) of
                       M when is_map(M) ->
                           maps:with([until_ms, flight, events, discarded, written_bytes], M);
                       _ -> #{}
                   end
           end,
    Caps = [C || C <- beamtrace_flight:captures(FD),
                 beamtrace_flight:sealed(C, fun filelib:is_regular/1)],
    maps:merge(St#st.info, Live#{captures => Caps}).

write_info(Dir, Info) ->
    Path = filename:join(Dir, ?INFO_FILE),
    Tmp = Path ++ ".tmp",
    _ = file:delete(Tmp),
    case file:open(Tmp, [write, exclusive, raw]) of
        {ok, Fd} ->
            ok = file:write(Fd, io_lib:format("~0p.~n", [Info])),
            ok = file:close(Fd),
            _ = file:change_mode(Tmp, 8#600),
            file:rename(Tmp, Path);
        Error ->
            Error
    end.

utc_now() ->
    list_to_binary(calendar:system_time_to_rfc3339(erlang:system_time(second),
                                                   [{offset, "Z"}])).

to_list(B) when is_binary(B) -> unicode:characters_to_list(B);
to_list(L) -> L.

