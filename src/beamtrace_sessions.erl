%% @doc Recording sessions: beamtrace:start/1, stop/0,1 and snapshot/1,2,
%% which are these (beamtrace documents them). start/1's options are checked
%% against their defaults here, the trace directory is named and made, the
%% NIF's options are built, and the state dump and the session's own sources
%% (beamtrace_statedump, beamtrace_sources) start and stop with the session.
%% The NIFs are beamtrace's (its library is loaded for that module): they
%% are called there. Runs where the session runs (shipped by `beamtrace
%% record', preloaded with beamtrace).
-module(beamtrace_sessions).

-export([start/1, stop/0, stop/1, snapshot/1, snapshot/2]).

-import(beamtrace, [start_nif/2, stop_nif/1, snapshot_nif/2, info/1]).
%% stop_session/1 tells a stale handle (a reference) from a caller's
%% mistake: it looks inside beamtrace:session(), opaque outside beamtrace.
-dialyzer({no_opaque, stop_session/1}).

%% Streaming options, absent from the defaults: relayd (none), live
%% (false), local (false when streaming), relayd_session ("beamtrace"),
%% relayd_buffer (4 MiB).
-include("beamtrace_relayd.hrl").
%% beamtrace's own: a cluster controller's clock estimate that aligns a
%% streamed trace to its clock from the start (beamtrace_cluster).
-define(OWN_OPTS, [clock]).

-define(DEFAULTS, #{events => ["*"],
                    mode => discard,
                    buffer_size => 4 bsl 20,
                    subbuffers => 8,
                    message_length => 255,
                    default => false,
                    file_mode => 8#600,
                    max_bytes => 1 bsl 30,
                    max_events => infinity,
                    duration => infinity,
                    max_rate => infinity,
                    tracefile_size => infinity,
                    tracefile_count => infinity,
                    flush_interval => 1000,
                    links => false,
                    results => false,
                    args => false,
                    notify => undefined,
                    %% Captures (overwrite mode only): see flight/2, which
                    %% sets it; #{window, after, max_captures, triggers}.
                    flight => none,
                    %% Sampling: none, N (1 in N of call, send, receive,
                    %% running, garbage_collection) or #{Kind => N}; and
                    %% what passing max_rate does: stop, or sample more.
                    sample => none,
                    on_max_rate => stop,
                    %% Test mode: false makes writers not wake the consumer,
                    %% which then drains only every 10 ms, so a tiny buffer
                    %% really overflows and drop accounting can be tested.
                    '$consumer_wakeups' => true,
                    %% beamtrace's own processes, [{Pid, Role}] (trace/2's
                    %% controller): recorded first (beamtrace_statedump).
                    '$own' => [],
                    %% trace/2 sets the state dump going itself, once its
                    %% flags are set (beamtrace_statedump:dump_go/1).
                    '$dump_go' => true}).

%% @doc beamtrace:start/1.
-spec start(#{atom() => term()} | [beamtrace:option()]) ->
          {ok, beamtrace:session()} | {error, term()}.
start(Opts) when is_list(Opts) ->
    try maps:from_list(Opts) of
        Map -> start(Map)
    catch error:_ -> {error, {badopt, Opts}}
    end;
start(Opts) when is_map(Opts) ->
    case [K || K <- maps:keys(Opts), not is_map_key(K, ?DEFAULTS), K =/= dir,
               not lists:member(K, [system_monitor, samples, distribution, file_io, ets]),
               not lists:member(K, ?RELAYD_OPTS), not lists:member(K, ?OWN_OPTS)] of
        [Bad | _] ->
            {error, {badopt, Bad}};
        [] when is_map_key('$own', Opts), not is_list(map_get('$own', Opts)) ->
            {error, {badopt, '$own'}};
        [] ->
            case beamtrace_sources:validate(Opts) of
                {ok, Sources, Rest} ->
                    O = live(maps:merge(?DEFAULTS, Rest)),
                    start_in(O, local_dir(O), Sources);
                Error ->
                    Error
            end
    end;
start(_) ->
    {error, {badopt, options}}.

start_in(_O, {error, _} = Error, _Sources) ->
    Error;
start_in(O, {ok, Dir}, Sources) ->
    case start_nif(Dir, nif_options(O)) of
        {ok, Session} ->
            beamtrace_statedump:at_start(Session, maps:get('$own', O)),
            case beamtrace_sources:start(Session, Dir, Sources) of
                ok ->
                    _ = maps:get('$dump_go', O) =:= true andalso
                        beamtrace_statedump:dump_go(Session),
                    {ok, Session};
                {error, _} = Error ->
                    %% Nothing of a session that could not start stays:
                    %% its state-dump workers (waiting for dump_go) go too.
                    _ = beamtrace_statedump:at_stop(Session),
                    _ = stop_nif(Session),
                    beamtrace_statedump:after_stop(),
                    _ = is_binary(Dir) andalso file:del_dir_r(Dir),
                    Error
            end;
        {error, {Taken, _}} when (Taken =:= eexist orelse Taken =:= enotempty),
                                  is_binary(Dir), not is_map_key(dir, O) ->
            %% Another start took the same default name first.
            start_in(O, local_dir(O), Sources);
        Error ->
            Error
    end.

nif_options(O) ->
    %% Links record the link variants of the message events: the session
    %% records them when it records the message events at all.
    %% So do results and arguments: function_result, function_call_args.
    %% An `events' that is not a proper list is left for the NIF to refuse.
    Variants = [<<"org_erlang_beamtrace:message_*_link">> || maps:get(links, O) =:= true]
        ++ [<<"org_erlang_beamtrace:function_result">> || maps:get(results, O) =:= true]
        ++ [<<"org_erlang_beamtrace:function_call_args">> || maps:get(args, O) =:= true],
    Given = maps:get(events, O),
    Events = case Variants =/= [] andalso is_list(Given) andalso proper_length(Given) of
                 false -> Given;
                 _ -> Given ++ Variants
             end,
    (maps:without(['$consumer_wakeups', '$own', '$dump_go', dir, local], O))#{
        events => Events,
        wakeups => maps:get('$consumer_wakeups', O),
        node => atom_to_binary(node(), utf8),
        schedulers => {erlang:system_info(schedulers), erlang:system_info(dirty_cpu_schedulers),
                       erlang:system_info(dirty_io_schedulers)}}.

%% The length of a proper list, or false.
proper_length(L) ->
    try length(L) catch error:badarg -> false end.

%% Where a session writes: `{ok, Dir}', `{ok, undefined}' for one that
%% only streams (relayd, no dir, local not true), or `{error, _}'.
local_dir(#{relayd := _} = O) when not is_map_key(dir, O) ->
    case maps:get(local, O, false) of
        true -> dir(O);
        false -> {ok, undefined};
        _ -> {error, {badopt, local}}
    end;
local_dir(O) ->
    dir(O).

%% @doc beamtrace:stop/0.
-spec stop() -> {ok, beamtrace:stats()} | {error, term()}.
stop() ->
    beamtrace_sources:stop([]),
    Missing = beamtrace_statedump:at_stop([]),
    stopped(stop_nif([]), Missing).

%% @doc beamtrace:stop/1.
-spec stop(beamtrace:session()) -> {ok, beamtrace:stats()} | {error, term()}.
stop(Session) ->
    beamtrace_sources:stop(Session),
    Missing = beamtrace_statedump:at_stop(Session),
    stopped(stop_session(Session), Missing).

%% A handle of a library since unloaded (its module deleted and purged,
%% then loaded again) is a reference the NIF no longer knows: it names no
%% running session, as info/1 says; anything else is a caller's mistake.
stop_session(Session) ->
    try stop_nif(Session)
    catch error:badarg when is_reference(Session) -> {error, not_running}
    end.

%% names_missing: the processes the state dump did not name before the
%% stop cut it (beamtrace_statedump).
stopped(Result, Missing) ->
    beamtrace_statedump:after_stop(),
    case Result of
        {ok, Stats} -> {ok, Stats#{names_missing => Missing}};
        {error, {Posix, Stats}} when is_map(Stats) -> {error, {Posix, Stats#{names_missing => Missing}}};
        Error -> Error
    end.

%% @doc beamtrace:snapshot/1.
-spec snapshot(beamtrace:session()) -> {ok, map()} | {error, term()}.
snapshot(Session) ->
    case info(Session) of
        #{dir := undefined} -> {error, no_dir};
        #{dir := Dir} -> snapshot_to(Session, Dir, 1);
        Error -> Error
    end.

%% @doc beamtrace:snapshot/2.
-spec snapshot(beamtrace:session(), file:name_all()) -> {ok, map()} | {error, term()}.
snapshot(Session, Dir) ->
    try unicode:characters_to_binary(filename:absname(Dir)) of
        Path when is_binary(Path) -> snapshot_nif(Session, Path);
        _ -> erlang:error(badarg, [Session, Dir])
    catch
        error:_ -> erlang:error(badarg, [Session, Dir])
    end.

snapshot_to(Session, Dir, N) ->
    Path = <<Dir/binary, "-snapshot-", (integer_to_binary(N))/binary>>,
    case snapshot_nif(Session, Path) of
        {error, {Taken, _}} when Taken =:= eexist; Taken =:= enotempty ->
            snapshot_to(Session, Dir, N + 1);
        Result -> Result
    end.

%% live => true is LTTng's default live timer, 1 s.
live(#{live := true} = O) -> O#{live => 1000};
live(O) -> O.

dir(#{dir := Dir}) ->
    try {ok, unicode:characters_to_binary(absname(Dir))}
    catch _:_ -> {error, {badopt, dir}}
    end;
dir(#{}) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:local_time(),
    Base = lists:flatten(io_lib:format("beamtrace-~4..0w~2..0w~2..0w-~2..0w~2..0w~2..0w",
                                       [Y, Mo, D, H, Mi, S])),
    Root = absname("beamtrace-traces"),
    {ok, unicode:characters_to_binary(unique(filename:join(Root, Base), 1))}.

%% The file server answers filename:absname/1's and filelib:is_file/1's
%% questions, and it is a process of normal priority: on a saturated node
%% each is a turn of the run queue (seconds at 100,000 busy processes).
%% prim_file and `raw' ask the OS from the caller.
absname(Name) ->
    {ok, Cwd} = prim_file:get_cwd(),
    filename:absname(Name, Cwd).

taken(Path) ->
    element(1, file:read_link_info(Path, [raw])) =:= ok.

unique(Path, 1) ->
    case taken(Path) of
        false -> Path;
        true -> unique(Path, 2)
    end;
unique(Path, N) ->
    Candidate = Path ++ "-" ++ integer_to_list(N),
    case taken(Candidate) of
        false -> Candidate;
        true -> unique(Path, N + 1)
    end.
