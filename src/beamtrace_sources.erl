%% @doc A session's own sources: events the VM reports to a process rather
%% than to a tracer, recorded as org_erlang_beamtrace tracepoints.
%%
%% ```
%% {ok, S} = beamtrace:start(#{system_monitor => #{long_gc => 50, busy_port => true},
%%                             samples => #{schedulers => 1000, memory => 5000},
%%                             distribution => true}),
%% ...,
%% beamtrace:stop(S).
%% '''
%%
%% == Options (beamtrace:start/1 and trace/2) ==
%% <dl>
%% <dt>`system_monitor => #{...}'</dt><dd>erlang:system_monitor/2's
%%   settings: `long_gc => Ms', `long_schedule => Ms', `large_heap => Words',
%%   `busy_port => true', `busy_dist_port => true', `long_message_queue =>
%%   {Disable, Enable}' (OTP 27+; refused with
%%   `{system_monitor, {unsupported, long_message_queue}}' where the VM does
%%   not have it). Tracepoints long_gc, large_heap, long_schedule,
%%   busy_port, busy_dist_port, long_message_queue.</dd>
%% <dt>`samples => #{...}'</dt><dd>periodic `counter' events:
%%   `schedulers => Ms' (utilisation of each scheduler, normal and dirty,
%%   and the total, ppm of wall time, from statistics(scheduler_wall_time_all)),
%%   `run_queues => Ms' (run queue lengths), `memory => Ms' (erlang:memory/0
%%   categories, bytes), `message_queues => {Ms, TopN}' (the TopN longest
%%   message queues, TopN =&lt; 100; a process that drops out of the top
%%   gets one 0). The first sample is one interval after start.</dd>
%% <dt>`distribution => true'</dt><dd>`dist_monitor' events at each
%%   nodeup and nodedown, with the reason (net_kernel:monitor_nodes/2 with
%%   nodedown_reason).</dd>
%% <dt>`file_io => true | [pid()]'</dt><dd>`file_op' events: one per file
%%   operation (file:open, read, write, pread, pwrite, close, read_file,
%%   write_file, read_file_info, list_dir, delete, rename, ...) of every
%%   process, or of the processes listed, with path, bytes, result or
%%   error reason, latency and the caller's user tag (beamtrace_sources_io
%%   has how and what it costs).</dd>
%% <dt>`ets => [Table | all] | all'</dt><dd>`ets_op' events: each insert,
%%   lookup, delete, match, select, update_counter, ... on the named tables
%%   (names or tids), or on every table with `all', with its latency; a
%%   table that does not exist is refused, `{ets, {no_table, Table}}'.
%%   Opt-in: every operation on those tables sends the helper two
%%   messages.</dd>
%% </dl>
%% A source not asked for costs nothing: no process, no setting.
%%
%% == The system monitor is one per node ==
%% erlang:system_monitor/2 is a single global setting. beamtrace chains: if
%% another process is the system monitor when a session starts, the session
%% installs the union of both settings (smaller thresholds, either's
%% booleans) and forwards to the previous monitor every message its own
%% settings asked for, unchanged; at stop the previous monitor and its
%% settings are back. A second beamtrace session asking for the system
%% monitor while another holds it is refused:
%% `{system_monitor, {in_use, OtherHelper}}'; so is a long_message_queue
%% setting that differs from the previous monitor's
%% (`{system_monitor, {conflict, long_message_queue}}').
%%
%% == Structure ==
%% Two processes per session with sources, neither linked to the caller:
%% the helper (receives the VM's messages and the sample timers, records
%% the events) and the keeper (holds what must be undone: the previous
%% system monitor). Whenever the helper ends (stop, a crash, a kill) the
%% keeper puts the previous system monitor back and removes the meta trace
%% patterns of file_io and ets; net_kernel's subscription
%% and the scheduler_wall_time flag belong to the helper and the VM drops
%% them when it exits (the flag is counted per process: it stays on if
%% someone else turned it on). If the keeper dies first, the helper undoes
%% and exits. The helper also exits when its session stops by itself (a
%% cap). Events are stamped when the helper records them, after the VM
%% reported them (the figures are the VM's). What the helper does with the
%% system monitor's reports is beamtrace_sources_monitor's, the samples
%% beamtrace_sources_samples', the file and ETS operations
%% beamtrace_sources_io's.
-module(beamtrace_sources).

-export([validate/1, start/3, stop/1, helpers/1]).
%% The processes.
-export([keeper/1, helper/4]).

-import(beamtrace_sources_monitor, [monitor_list/1, merge/2, wanted/3, forward/4, report/4]).
-import(beamtrace_sources_samples, [sample/2, scheduler_times/0]).

-export_type([options/0]).

-type options() :: #{system_monitor => map(), samples => map(), distribution => boolean(),
                     file_io => boolean() | [pid()], ets => [atom() | ets:tid() | all]}.

-define(KEYS, [system_monitor, samples, distribution, file_io, ets]).
%% How often the helper looks whether its session still runs, ms.
-define(ALIVE_CHECK_MS, 1000).
-define(MAX_TOP, 100).
%% The stop flushes (flush_monitor/1, flush_io/1): the large_heap limit
%% while flushing (the VM's smallest: it raises lower ones to 16384 words),
%% the marker's first heap, below it, and how long the helper waits for each
%% at most.
-define(MARKER_LIMIT, 16384).
-define(MARKER_HEAP, 10000).
-define(FLUSH_MS, 2000).

%%% API

%% @doc Splits the sources' options off beamtrace:start/1's and checks
%% them: `{ok, Sources, Rest}' or `{error, {badopt, {Key, SubKey}}}'.
-spec validate(map()) -> {ok, options(), map()} | {error, term()}.
validate(Opts) ->
    Src = maps:with(?KEYS, Opts),
    case check(maps:to_list(Src)) of
        ok -> {ok, maps:filter(fun(_, V) -> V =/= false andalso V =/= #{} end, Src),
               maps:without(?KEYS, Opts)};
        Error -> Error
    end.

check([]) -> ok;
check([{system_monitor, M} | T]) when is_map(M) ->
    case [K || {K, V} <- maps:to_list(M), not monitor_opt(K, V)] of
        [] -> check(T);
        [K | _] -> {error, {badopt, {system_monitor, K}}}
    end;
check([{samples, M} | T]) when is_map(M) ->
    case [K || {K, V} <- maps:to_list(M), not sample_opt(K, V)] of
        [] -> check(T);
        [K | _] -> {error, {badopt, {samples, K}}}
    end;
check([{distribution, B} | T]) when is_boolean(B) -> check(T);
check([{K, V} | T]) when K =:= file_io; K =:= ets ->
    case beamtrace_sources_io:check(K, V) of
        ok -> check(T);
        Error -> Error
    end;
check([{K, _} | _]) -> {error, {badopt, K}}.

monitor_opt(K, V) when K =:= long_gc; K =:= long_schedule; K =:= large_heap ->
    is_integer(V) andalso V > 0 andalso V < 1 bsl 32;
monitor_opt(K, V) when K =:= busy_port; K =:= busy_dist_port -> is_boolean(V);
monitor_opt(long_message_queue, {D, E}) ->
    is_integer(D) andalso is_integer(E) andalso D >= 0 andalso E > D;
monitor_opt(_, _) -> false.

sample_opt(K, V) when K =:= schedulers; K =:= run_queues; K =:= memory ->
    is_integer(V) andalso V > 0;
sample_opt(message_queues, {Ms, N}) ->
    is_integer(Ms) andalso Ms > 0 andalso is_integer(N) andalso N > 0 andalso N =< ?MAX_TOP;
sample_opt(_, _) -> false.

%% @doc Starts the sources `Src' (from validate/1) of a session that just
%% started with trace directory `Dir' (undefined: it only streams). ok, or
%% `{error, Reason}' with nothing left set.
-spec start(beamtrace:session(), binary() | undefined, options()) -> ok | {error, term()}.
start(_Session, _Dir, Src) when map_size(Src) =:= 0 ->
    ok;
start(Session, Dir0, Src) ->
    Dir = key(Session, Dir0),
    %% High priority from birth, as the sessions' other processes: the
    %% start waits for the helper's setup and the stop for both to go, and
    %% at normal priority each wait is a turn of a saturated node's run
    %% queue (the helper's one long job, the message queue top, runs at
    %% normal priority: sample/2).
    Keeper = spawn_opt(?MODULE, keeper, [self()], [{priority, high}]),
    Ref = make_ref(),
    {Helper, Mon} = spawn_opt(?MODULE, helper, [{self(), Ref}, Keeper, Session, Src],
                              [monitor, {priority, high}]),
    Keeper ! {helper, Helper},
    receive
        {Ref, ok} ->
            demonitor(Mon, [flush]),
            put_helpers(Dir, #{helper => Helper, keeper => Keeper}),
            beamtrace_statedump:own(Session, [{Helper, sources_helper}, {Keeper, sources_keeper}]),
            ok;
        {Ref, {error, _} = Error} ->
            receive {'DOWN', Mon, process, Helper, _} -> ok end,
            wait_down(Keeper),
            Error;
        {'DOWN', Mon, process, Helper, Why} ->
            wait_down(Keeper),
            {error, {sources, Why}}
    end.

%% @doc Takes down the sources of `Session' (or the default session, `[]'):
%% the helper goes, the keeper undoes, both are waited for.
-spec stop(beamtrace:session() | []) -> ok.
stop(Session) ->
    case beamtrace:info(Session) of
        #{dir := Dir0} ->
            case take_helpers(key(Session, Dir0)) of
                #{helper := H, keeper := K} ->
                    H ! stop,
                    wait_down(H),
                    wait_down(K);
                none ->
                    ok
            end;
        _ ->
            ok
    end.

%% @doc The helper and keeper of a session, for tests and introspection.
-spec helpers(beamtrace:session() | []) -> #{helper := pid(), keeper := pid()} | none.
helpers(Session) ->
    case beamtrace:info(Session) of
        #{dir := Dir0} ->
            beamtrace_registry:get(sources, key(Session, Dir0));
        _ -> none
    end.

%% What the sources of a session are kept under: its directory, or for a
%% session that only streams, its handle (the default session's for []).
key(_Session, Dir) when is_binary(Dir) ->
    Dir;
key([], undefined) ->
    case [S || S <- beamtrace:sessions(), maps:get(default, beamtrace:info(S), false)] of
        [S | _] -> S;
        [] -> undefined
    end;
key(Session, undefined) ->
    Session.

%% The helpers of every session with sources, by key/2 (the trace
%% directory, or the handle of a session that only streams), in
%% beamtrace_registry (kind `sources'): sessions start and stop in any
%% process at once, and a stop takes its entry atomically. Not the
%% application environment under a global lock: both are calls to
%% processes of normal priority (the application controller, global's
%% name server), each a turn of a saturated node's run queue.
put_helpers(Dir, Helpers) ->
    beamtrace_registry:put(sources, Dir, Helpers).

take_helpers(Dir) ->
    beamtrace_registry:take(sources, Dir).

wait_down(Pid) ->
    Mon = monitor(process, Pid),
    receive {'DOWN', Mon, process, Pid, _} -> ok
    after 5000 -> exit(Pid, kill), receive {'DOWN', Mon, process, Pid, _} -> ok end
    end.

%%% The keeper

%% @private
-spec keeper(pid()) -> ok.
keeper(_Starter) ->
    receive {helper, Helper} -> ok end,
    Mon = monitor(process, Helper),
    keeper_loop(Helper, Mon, []).

keeper_loop(Helper, Mon, Undo) ->
    receive
        {undo, Item, From, Ref} ->
            From ! {Ref, ok},
            keeper_loop(Helper, Mon, [Item | Undo]);
        {'DOWN', Mon, process, Helper, _} ->
            undo_all(Undo, Helper)
    end.

undo_all(Undo, Helper) ->
    lists:foreach(fun(Item) -> undo(Item, Helper) end, Undo).

%% The previous monitor comes back if the setting is still ours, or gone
%% (the VM clears it when its process exits); one a user set since stays.
undo({system_monitor, Prev}, Helper) ->
    case erlang:system_monitor() of
        {Helper, _} -> erlang:system_monitor(restorable(Prev));
        undefined -> erlang:system_monitor(restorable(Prev));
        _ -> undefined
    end,
    ok;
undo({meta_patterns, MFAs}, Helper) ->
    beamtrace_sources_io:undo(MFAs, Helper).

restorable({Pid, Opts}) when is_pid(Pid) ->
    case is_process_alive(Pid) of
        true -> {Pid, Opts};
        false -> undefined
    end;
restorable(_) ->
    undefined.

%% Before a change: the keeper knows how to undo it.
keep(Keeper, Item) ->
    Ref = make_ref(),
    Keeper ! {undo, Item, self(), Ref},
    receive {Ref, ok} -> ok
    after 5000 -> exit(keeper_unresponsive)
    end.

%%% The helper

%% @private
-spec helper({pid(), reference()}, pid(), beamtrace:session(), options()) -> ok.
helper({From, Ref}, Keeper, Session, Src) ->
    KMon = monitor(process, Keeper),
    beamtrace_label:set_label(beamtrace_sources),
    St0 = #{session => Session, keeper => Keeper, keeper_mon => KMon, prev => undefined,
            ours => [], swt => undefined, top => [], undo => [],
            io => beamtrace_sources_io:init()},
    case setup(maps:to_list(Src), St0) of
        {ok, St} ->
            From ! {Ref, ok},
            erlang:send_after(?ALIVE_CHECK_MS, self(), alive_check),
            loop(St);
        {error, _} = Error ->
            From ! {Ref, Error},
            ok
    end.

setup([], St) ->
    {ok, St};
setup([{system_monitor, M} | T], St) ->
    case setup_monitor(M, St) of
        {ok, St1} -> setup(T, St1);
        Error -> Error
    end;
setup([{samples, M} | T], St) ->
    Now = erlang:monotonic_time(millisecond),
    St1 = case is_map_key(schedulers, M) of
              true ->
                  _ = erlang:system_flag(scheduler_wall_time, true),
                  St#{swt => scheduler_times()};
              false -> St
          end,
    _ = [erlang:start_timer(Now + ms(V), self(), {sample, K, ms(V), Now + ms(V)}, [{abs, true}])
         || {K, V} <- maps:to_list(M)],
    setup(T, St1#{samples => M});
setup([{distribution, true} | T], St) ->
    case net_kernel:monitor_nodes(true, #{node_type => all, nodedown_reason => true}) of
        ok -> setup(T, St);
        Other -> {error, {distribution, Other}}
    end;
setup([{Source, Spec} | T], #{keeper := Keeper, undo := Undo} = St0)
  when Source =:= file_io; Source =:= ets ->
    %% Files already open, before their operations can be seen.
    St = case Source of
             file_io -> St0#{io := beamtrace_sources_io:open_files(maps:get(session, St0),
                                                                   maps:get(io, St0))};
             ets -> St0
         end,
    Patterns = beamtrace_sources_io:patterns(
                 {Source, beamtrace_sources_io:normalize(Source, Spec)}, self()),
    Item = {meta_patterns, [MFA || {MFA, _} <- Patterns]},
    keep(Keeper, Item),
    case beamtrace_sources_io:set(Source, Patterns, self()) of
        ok -> setup(T, St#{undo := [Item | Undo]});
        Error -> Error
    end.

ms({Ms, _}) -> Ms;
ms(Ms) -> Ms.

setup_monitor(M, #{keeper := Keeper} = St) ->
    Ours = monitor_list(M),
    Prev = erlang:system_monitor(),
    case merge(Ours, Prev) of
        {error, _} = Error ->
            Error;
        {ok, Merged} ->
            keep(Keeper, {system_monitor, Prev}),
            try erlang:system_monitor(self(), Merged) of
                _ -> {ok, St#{prev => Prev, ours => Ours}}
            catch error:badarg ->
                case lists:keymember(long_message_queue, 1, Merged) of
                    true -> {error, {system_monitor, {unsupported, long_message_queue}}};
                    false -> {error, {system_monitor, {badarg, Merged}}}
                end
            end
    end.

loop(#{session := S, keeper := Keeper, keeper_mon := KMon} = St) ->
    receive
        {monitor, Who, Kind, Info} = Msg ->
            forward(Msg, Kind, Info, St),
            _ = wanted(Kind, Info, maps:get(ours, St)) andalso report(S, Who, Kind, Info),
            loop(St);
        {timeout, _, {sample, Kind, Interval, Due}} ->
            Next = Due + Interval,
            erlang:start_timer(Next, self(), {sample, Kind, Interval, Next}, [{abs, true}]),
            loop(sample(Kind, St));
        Trace when element(1, Trace) =:= trace_ts ->
            loop(St#{io := beamtrace_sources_io:handle(Trace, S, maps:get(io, St))});
        {NodeEvent, Node, Info} when NodeEvent =:= nodeup; NodeEvent =:= nodedown ->
            beamtrace:emit_nif(S, dist_monitor,
                               [atom_to_binary(node(), utf8), NodeEvent,
                                atom_to_binary(Node, utf8), maps:get(node_type, Info, visible),
                                {term, maps:get(nodedown_reason, Info, undefined)}]),
            loop(St);
        alive_check ->
            case beamtrace:info(S) of
                #{state := running} ->
                    erlang:send_after(?ALIVE_CHECK_MS, self(), alive_check),
                    loop(St#{io := beamtrace_sources_io:prune(maps:get(io, St))});
                _ ->
                    ok
            end;
        stop ->
            %% Its own patterns while it is still their tracer (the
            %% keeper does it again, for a helper that dies instead),
            %% then what was traced before them, then the system monitor
            %% (its reports wait in the mailbox meanwhile).
            _ = [undo(Item, self()) || Item <- maps:get(undo, St)],
            flush_io(St),
            flush_monitor(St);
        {'DOWN', KMon, process, Keeper, _} ->
            %% Nobody is left to undo: the helper does it and goes.
            _ = maps:get(prev, St) =/= undefined andalso undo({system_monitor, maps:get(prev, St)}, self()),
            _ = [undo(Item, self()) || Item <- maps:get(undo, St)],
            ok;
        _ ->
            loop(St)
    end.

%% The VM sends system monitor reports through its message dispatcher
%% thread, after the event, to whoever is the monitor when the report is
%% dispatched: the last reports before a stop (milliseconds late on a
%% loaded machine) would reach nobody, or the previous monitor, once the
%% keeper has put it back. So before the helper goes, a process of ours
%% provokes a large_heap report, which comes through the same queue behind
%% every earlier one; the helper handles every report until it arrives.
%% Meanwhile the large_heap limit may be lower than asked: the reports are
%% filtered by the settings asked for, as always (wanted/3).
flush_monitor(#{ours := []}) ->
    ok;
flush_monitor(St) ->
    Self = self(),
    case erlang:system_monitor() of
        {Self, Opts} ->
            _ = erlang:system_monitor(Self, lists:keystore(large_heap, 1, Opts,
                                                           {large_heap, ?MARKER_LIMIT})),
            Marker = spawn_opt(fun() -> marker(Self) end, [{min_heap_size, ?MARKER_HEAP}]),
            case drain_monitor(Marker, erlang:monotonic_time(millisecond) + ?FLUSH_MS, St) of
                marker -> ok;
                timeout -> logger:warning("beamtrace: the system monitor's reports of the "
                                          "last ~b ms before the stop may be missing from "
                                          "the trace (the VM did not deliver them in time)",
                                          [?FLUSH_MS])
            end,
            exit(Marker, kill),
            %% Our own settings back, unless someone set theirs meanwhile.
            case erlang:system_monitor() of
                {Self, _} -> _ = erlang:system_monitor(Self, Opts);
                _ -> ok
            end,
            ok;
        _ ->
            %% Taken over since: no report of ours can come any more.
            ok
    end.

%% The marker: its first heap (below ?MARKER_LIMIT) fills once, and the one
%% natural GC that follows grows it past the limit: one large_heap report
%% (the VM checks large_heap in natural GCs, not in erlang:garbage_collect/0;
%% a heap already past the limit can get two reports, one GC's minor and
%% major). Then it waits, making no more, and goes with the helper.
marker(Helper) ->
    Mon = monitor(process, Helper),
    {heap_size, Words} = process_info(self(), heap_size),
    Live = lists:seq(1, Words div 2 + 100),
    receive {'DOWN', Mon, process, Helper, _} -> length(Live) end.

drain_monitor(Marker, Deadline, #{session := S} = St) ->
    receive
        {monitor, Marker, large_heap, _} ->
            marker;
        {monitor, Who, Kind, Info} = Msg ->
            forward(Msg, Kind, Info, St),
            _ = wanted(Kind, Info, maps:get(ours, St)) andalso report(S, Who, Kind, Info),
            drain_monitor(Marker, Deadline, St)
    after max(0, Deadline - erlang:monotonic_time(millisecond)) ->
        timeout
    end.

%% The meta trace messages of the calls made before the stop: the stop
%% request can overtake them (signals from different senders have no
%% order), so the helper records every one the VM says it has delivered
%% (erlang:trace_delivered/1) before it goes.
flush_io(#{undo := []}) ->
    ok;
flush_io(#{session := S, io := Io}) ->
    Ref = erlang:trace_delivered(all),
    drain_io(Ref, S, Io, erlang:monotonic_time(millisecond) + ?FLUSH_MS).

drain_io(Ref, S, Io, Deadline) ->
    receive
        {trace_delivered, all, Ref} ->
            ok;
        Trace when element(1, Trace) =:= trace_ts ->
            drain_io(Ref, S, beamtrace_sources_io:handle(Trace, S, Io), Deadline)
    after max(0, Deadline - erlang:monotonic_time(millisecond)) ->
        ok
    end.
