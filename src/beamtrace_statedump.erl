%% @doc The state dump: what a trace needs to name what its events refer
%% to, recorded at session start (as LTTng's state dump) and kept current.
%%
%% == Processes ==
%% One `org_erlang_beamtrace:process_info' event per process alive when the
%% dump starts, so analyses can name the processes of a trace (spawn and
%% register events keep the names current afterwards). Asking a busy
%% process for its names is a signal it answers only once scheduled: on a
%% node whose schedulers are saturated that is 0.1 to 2 ms per process,
%% whoever asks (measured on OTP 25 at 100,000 busy processes: 10.5 s for
%% the registered names alone from one process at high priority; 9.3 s for
%% 100,000 idle ones at load 26). So nothing of it happens before the trace
%% flags are on, and nothing of it delays their removal:
%% <ul>
%% <li>at_start/2 makes ?DUMP_WORKERS processes of beamtrace's own, at low
%% priority (the dump must not take the node's time: a saturated node
%% stays responsive), and lists no process: the start costs the same
%% whatever the number of processes. The workers are made before any flag
%% is set and are never traced (workers/0).</li>
%% <li>dump_go/1 (trace/2 says go once its flags are set; beamtrace:start/1
%% at once) sets them going: the first lists the processes (registered ones
%% first) and deals them out; their waits overlap.</li>
%% <li>at_stop/1 stops them where they are: the trace has the names they
%% recorded, and the session's result says how many processes alive when
%% the dump started were left unnamed (`names_missing'; every process
%% alive at the stop when the dump had not started). Those are named only
%% by the events that name them.</li>
%% </ul>
%%
%% == Nodes ==
%% OTP prints a pid of another node as `<N.x.y>', a port as `#Port<N.x>'
%% and a reference as `#Ref<N.a.b.c>', where N is a number of the printing
%% node's own: the index of the other node's name in its atom table
%% (measured on OTP 25, 27 and 29: the N of a node name made when the atom
%% table held K atoms is K, whatever the node's creation). The local node is
%% 0, for any creation. So, within one VM's life, N and the node name are
%% one-to-one and never reused (atoms are never freed); the same node has a
%% different N on every other node, and two incarnations of one node (a
%% restart, a new creation) print alike.
%%
%% A session records that mapping as `org_erlang_beamtrace:node_info'
%% events: at start, for this node and every node it knows (connected, or
%% referred to by a pid, port or reference it holds); when a node connects
%% or disconnects while a session runs (a watcher process, registered
%% `beamtrace_nodes', subscribed with net_kernel:monitor_nodes/2, started
%% with the first session and gone with the last); and at stop, for nodes
%% that became known without connecting (a pid in a message).
%%
%% == beamtrace's own processes ==
%% One `org_erlang_beamtrace:own_process' event per process of beamtrace's
%% own on the node (the trace controller, the tracing handle, `beamtrace
%% record''s agent, the watcher, the sources' helper and keeper), recorded
%% before any trace flag is set: they are never traced, and the command
%% leaves every event one of them takes part in out of every analysis (a
%% send to one of them by a traced process, say).
-module(beamtrace_statedump).

-export([at_start/1, at_start/2, at_stop/1, after_stop/0, own/2, node_index/1, watcher/0,
         workers/0, dump_go/1, dump_done/1]).
%% The watcher's and the dump workers' processes.
-export([watch/1, dump/2]).

-define(WATCHER, beamtrace_nodes).
%% How often the watcher looks whether any session is left, ms.
-define(IDLE_CHECK_MS, 5000).

%% @equiv at_start(Session, [])
-spec at_start(beamtrace:session()) -> ok.
at_start(Session) ->
    at_start(Session, []).

%% @doc At a session's start: beamtrace's own processes the caller names
%% (`{Pid, Role}'), every known node, the watcher running (and named as
%% beamtrace's), and the dump's workers waiting for dump_go/1.
-spec at_start(beamtrace:session(), [{pid(), atom()}]) -> ok.
at_start(Session, Own) ->
    own(Session, Own),
    _ = node_table(Session, start),
    ensure_watcher(),
    case watcher() of
        W when is_pid(W) -> own(Session, [{W, nodes_watcher}]);
        undefined -> ok
    end,
    processes(Session).

%% @doc Records `{Pid, Role}' pairs as beamtrace's own processes.
-spec own(beamtrace:session() | [], [{pid(), atom()}]) -> ok.
own(Session, Own) ->
    _ = [beamtrace:emit_nif(Session, own_process, [Pid, Role, registered_name(Pid)])
         || {Pid, Role} <- Own, is_pid(Pid), node(Pid) =:= node()],
    ok.

%% From the name table, not erlang:process_info/2: asking another process
%% is a signal it answers once scheduled, one turn of the run queue later
%% on a saturated node for one of normal priority (the sources' helper).
registered_name(Pid) when Pid =:= self() ->
    case erlang:process_info(Pid, registered_name) of
        {registered_name, Name} -> Name;
        _ -> undefined
    end;
registered_name(Pid) ->
    case [N || N <- registered(), whereis(N) =:= Pid] of
        [Name | _] -> Name;
        [] -> undefined
    end.

%% @doc Before a session stops: the dump's workers still at work are
%% stopped, then the node table again. Not into a session that stopped by
%% itself (a cap): they would only be counted after_stop, and its trace is
%% complete as it is. Returns how many processes the dump did not name
%% (the module doc).
-spec at_stop(beamtrace:session() | []) -> non_neg_integer().
at_stop(Session) ->
    Missing = stop_workers(Session),
    _ = case beamtrace:info(Session) of
            #{state := running} -> node_table(Session, stop);
            _ -> false
        end,
    Missing.

%% @doc After a session stopped: the watcher goes with the last session.
-spec after_stop() -> ok.
after_stop() ->
    case {beamtrace:sessions(), whereis(?WATCHER)} of
        {[], W} when is_pid(W) ->
            Mon = monitor(process, W),
            W ! {self(), stop},
            receive {'DOWN', Mon, process, W, _} -> ok
            after 5000 -> exit(W, kill), ok
            end;
        _ ->
            ok
    end.

%% @doc The N this node prints in `<N.x.y>' for pids of Node.
-spec node_index(node()) -> non_neg_integer().
node_index(Node) when Node =:= node() ->
    0;
node_index(Node) ->
    %% A pid of Node made here (NEW_PID_EXT, creation 1): its text gives N.
    %% It makes no connection; the node table entry goes with the term.
    Name = atom_to_binary(Node, latin1),
    Pid = binary_to_term(<<131, 88, 100, (byte_size(Name)):16, Name/binary, 0:32, 0:32, 1:32>>),
    "<" ++ Text = pid_to_list(Pid),
    {N, "." ++ _} = string:to_integer(Text),
    N.

%% @doc The watcher's pid, or undefined.
-spec watcher() -> pid() | undefined.
watcher() ->
    whereis(?WATCHER).

%%% Processes

%% The dump's workers (the module doc): ?DUMP_WORKERS, each given at
%% least ?DUMP_CHUNK_MIN processes.
-define(DUMP_WORKERS, 8).
-define(DUMP_CHUNK_MIN, 64).
%% The dump of every session, by key/1, in beamtrace_registry (kind
%% `dump_workers'; not the application environment, whose changes wait on
%% the application controller): {Workers, Progress}.
%% Progress, a counters array: ?LISTED the processes listed (0 until the
%% dump started), ?NAMED those done (named, or gone before asked),
%% ?UNRECORDED 1 when the session does not record the dump, ?STOPPED 1
%% once at_stop/1 cut it.
-define(WORKERS, dump_workers).
-define(LISTED, 1).
-define(NAMED, 2).
-define(UNRECORDED, 3).
-define(STOPPED, 4).

processes(Session) ->
    Progress = counters:new(4, [write_concurrency]),
    Workers = [spawn_opt(?MODULE, dump, [Session, Progress], [{priority, low}])
               || _ <- lists:seq(1, ?DUMP_WORKERS)],
    beamtrace_registry:put(?WORKERS, key(Session), {Workers, Progress}),
    %% Their own events first. Not through own/2: asking a low-priority
    %% process for its name waits for it to be scheduled, behind every
    %% runnable process of a busy node; these have none.
    _ = [beamtrace:emit_nif(Session, own_process, [W, state_dump, undefined]) || W <- Workers],
    ok.

%% @private A dump worker: from dump_go/1 on, the processes of its chunk,
%% in order. The first worker lists them (after the flags are on, never
%% before) and deals them out.
-spec dump(beamtrace:session(), counters:counters_ref()) -> ok.
dump(Session, Progress) ->
    receive
        {?MODULE, go, Workers} ->
            %% Its own name first: the answer says whether the session
            %% records the dump at all.
            case dump_process(Session, self()) of
                false -> counters:put(Progress, ?UNRECORDED, 1);
                true -> deal(Workers, Progress)
            end,
            dump(Session, Progress);
        {?MODULE, chunk, Chunk} ->
            dump_chunk(Session, Progress, Chunk)
    end.

dump_chunk(Session, Progress, [P | Rest]) ->
    case counters:get(Progress, ?STOPPED) of
        1 -> ok;
        0 -> _ = dump_process(Session, P),
             counters:add(Progress, ?NAMED, 1),
             dump_chunk(Session, Progress, Rest)
    end;
dump_chunk(_Session, _Progress, []) ->
    ok.

deal(Workers, Progress) ->
    Registered = [P || N <- registered(), P <- [whereis(N)], is_pid(P)],
    Own = workers(),
    Rest = erlang:processes() -- (Registered ++ Own),
    All = (Registered -- Own) ++ Rest,
    counters:add(Progress, ?LISTED, length(All)),
    Size = max(?DUMP_CHUNK_MIN, -(-length(All) div length(Workers))),
    Chunks = chunks(All, Size),
    _ = [W ! {?MODULE, chunk, C} || {W, C} <- lists:zip(lists:sublist(Workers, length(Chunks)),
                                                         Chunks)],
    ok.

%% @doc Sets the dump of a session's processes going (at_start/2 made its
%% workers).
-spec dump_go(beamtrace:session() | []) -> ok.
dump_go(Session) ->
    case workers_of(key(Session)) of
        {[First | _] = Workers, _} -> First ! {?MODULE, go, Workers};
        _ -> ok
    end,
    ok.

%% @doc Whether the dump of a session's processes has named every process
%% it listed (or the session does not record it): from then on stop/1
%% cuts nothing (`names_missing' 0).
-spec dump_done(beamtrace:session() | []) -> boolean().
dump_done(Session) ->
    case workers_of(key(Session)) of
        {_, Progress} ->
            Listed = counters:get(Progress, ?LISTED),
            counters:get(Progress, ?UNRECORDED) =:= 1 orelse
                (Listed > 0 andalso counters:get(Progress, ?NAMED) >= Listed);
        none ->
            false
    end.

%% @doc The dump's workers of every session, for the flags to leave alone.
-spec workers() -> [pid()].
workers() ->
    lists:append([Ws || {Ws, _} <- beamtrace_registry:values(?WORKERS)]).

workers_of(Key) ->
    beamtrace_registry:get(?WORKERS, Key).

%% The processes the dump did not name: those listed and not done, or, when
%% it had not listed them yet, every process but beamtrace's. The workers
%% are told to stop and killed, not waited for: at low priority on a
%% saturated node each would take a full turn of the run queue to go (tens
%% of seconds at 100,000 busy processes). One that was already asking a
%% process may still record that one name (up to ?DUMP_WORKERS names
%% counted missing that the trace has).
stop_workers(Session) ->
    case beamtrace_registry:take(?WORKERS, key(Session)) of
        none ->
            0;
        {Workers, Progress} ->
            counters:put(Progress, ?STOPPED, 1),
            _ = [exit(W, kill) || W <- Workers],
            case {counters:get(Progress, ?UNRECORDED), counters:get(Progress, ?LISTED)} of
                {1, _} -> 0;
                {0, 0} -> max(0, erlang:system_info(process_count) - length(Workers) - 1);
                {0, Listed} -> max(0, Listed - counters:get(Progress, ?NAMED))
            end
    end.

%% A session by its trace directory: the same whether a caller names it by
%% its handle or as the default session ([]).
key(Session) ->
    case beamtrace:info(Session) of
        #{dir := Dir} -> Dir;
        _ -> Session
    end.

chunks(List, Size) ->
    chunks(List, Size, 0, [], []).

%% In order: the first chunk holds the first Size elements, in order.
chunks([], _Size, _N, [], Acc) -> lists:reverse(Acc);
chunks([], _Size, _N, Chunk, Acc) -> lists:reverse([lists:reverse(Chunk) | Acc]);
chunks(List, Size, Size, Chunk, Acc) -> chunks(List, Size, 0, [], [lists:reverse(Chunk) | Acc]);
chunks([X | Rest], Size, N, Chunk, Acc) -> chunks(Rest, Size, N + 1, [X | Chunk], Acc).

dump_process(Session, Pid) ->
    case erlang:process_info(Pid, [registered_name, initial_call]) of
        undefined ->
            true;
        [{registered_name, Name}, {initial_call, Initial}] ->
            beamtrace:emit_nif(Session, process_info,
                     [Pid, name_text(Name), initial_call(Pid, Initial), label_text(Pid)])
    end.

%% An absent name or label is "undefined", as Erlang says it, never "":
%% babeltrace2 2.0 prints an empty string field as the previous event's
%% value of that field.
name_text([]) -> undefined;
name_text(Name) -> Name.

%% proc_lib processes all start in proc_lib:init_p/5, and some processes
%% started with a fun in erlang:apply/2; the function they run is in their
%% dictionary. One key is read where the VM allows it (OTP 26+), the whole
%% dictionary otherwise.
initial_call(Pid, Initial) when Initial =:= {proc_lib, init_p, 5};
                                Initial =:= {erlang, apply, 2} ->
    case dictionary_value(Pid, '$initial_call') of
        {M, F, A} when is_atom(M), is_atom(F), is_integer(A) -> {M, F, A};
        {M, F, Args} when is_atom(M), is_atom(F), is_list(Args) -> {M, F, length(Args)};
        _ -> Initial
    end;
initial_call(_Pid, Initial) ->
    Initial.

%% proc_lib labels (OTP 27+: proc_lib:set_label/1).
label_text(Pid) ->
    case erlang:function_exported(proc_lib, get_label, 1) of
        false -> undefined;
        true -> {term, dictionary_value(Pid, '$process_label')}
    end.

%% erlang:process_info(Pid, {dictionary, Key}) reads one key without copying
%% the whole dictionary, from OTP 26; OTP 25 raises badarg (the callers
%% fall back), and its spec does not have the item, so dialyzer there calls
%% the call failing.
-dialyzer({[no_fail_call, no_return], dictionary_item/2}).
dictionary_item(Pid, Key) ->
    erlang:process_info(Pid, {dictionary, Key}).

dictionary_value(Pid, Key) ->
    try dictionary_item(Pid, Key) of
        {{dictionary, Key}, Value} -> Value;
        _ -> undefined
    catch error:badarg ->
        case erlang:process_info(Pid, dictionary) of
            {dictionary, Dict} -> proplists:get_value(Key, Dict);
            undefined -> undefined
        end
    end.

%%% Nodes

%% Returns false when the session does not record node_info.
node_table(Session, Event) ->
    Visible = erlang:nodes(visible),
    Hidden = erlang:nodes(hidden),
    node_info(Session, node(), this, Event) andalso
        begin
            _ = [node_info(Session, N, node_type(N, Visible, Hidden), Event)
                 || N <- lists:usort(erlang:nodes(known)), N =/= node()],
            true
        end.

node_type(N, Visible, Hidden) ->
    case {lists:member(N, Visible), lists:member(N, Hidden)} of
        {true, _} -> visible;
        {_, true} -> hidden;
        _ -> known
    end.

node_info(Session, Node, Type, Event) ->
    beamtrace:emit_nif(Session, node_info,
                       [node_index(Node), atom_to_binary(Node, latin1), Type, Event]).

%% Starts the watcher unless it runs, or this node is not alive (no node
%% can connect to it).
ensure_watcher() ->
    case is_alive() andalso whereis(?WATCHER) =:= undefined of
        false -> ok;
        true ->
            Ref = make_ref(),
            %% High priority: the start waits for it to register, and the
            %% last stop for it to go (after_stop/0); at normal priority
            %% each is a turn of a saturated node's run queue. Its work is
            %% a few events at each nodeup and nodedown.
            {Pid, Mon} = spawn_opt(?MODULE, watch, [{self(), Ref}], [monitor, {priority, high}]),
            receive
                {Ref, _} -> demonitor(Mon, [flush]), ok;
                {'DOWN', Mon, process, Pid, _} -> ok
            end
    end.

%% @private The watcher: node_info into every session at each nodeup and
%% nodedown. Gone when no session is left (after_stop/0, or its own check).
-spec watch({pid(), reference()}) -> ok.
watch({From, Ref}) ->
    %% A start racing this one may have registered first: then this goes.
    try register(?WATCHER, self()) of
        true ->
            ok = net_kernel:monitor_nodes(true, #{node_type => all}),
            From ! {Ref, started},
            beamtrace_label:set_label(?WATCHER),
            erlang:send_after(?IDLE_CHECK_MS, self(), idle_check),
            watch_loop()
    catch error:badarg ->
            From ! {Ref, already_running},
            ok
    end.

watch_loop() ->
    receive
        {NodeEvent, Node, Info} when NodeEvent =:= nodeup; NodeEvent =:= nodedown ->
            Type = maps:get(node_type, Info, visible),
            _ = [node_info(S, Node, Type, NodeEvent) || S <- beamtrace:sessions()],
            watch_loop();
        idle_check ->
            case beamtrace:sessions() of
                [] -> ok;
                _ -> erlang:send_after(?IDLE_CHECK_MS, self(), idle_check), watch_loop()
            end;
        {_From, stop} ->
            ok;
        _ ->
            watch_loop()
    end.

