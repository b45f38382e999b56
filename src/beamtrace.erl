%% @doc beamtrace: OTP's `org_erlang_dyntrace' tracepoints on a stock VM.
%%
%% This module is both the API and the tracer module. Use it as
%% `{tracer, beamtrace, []}' (events go to the default session) or
%% `{tracer, beamtrace, Session}' in `erlang:trace/3':
%%
%% ```
%% {ok, S} = beamtrace:start(#{events => ["org_erlang_dyntrace:process_*"]}),
%% erlang:trace(new, true, [procs, {tracer, beamtrace, []}]),
%% ...,
%% {ok, #{dir := Dir, events := N, discarded := 0}} = beamtrace:stop().
%% '''
%%
%% A session records into a CTF trace directory readable by `beamtrace view',
%% babeltrace2 and Trace Compass. The recording never blocks a traced
%% process: when a thread's buffer is full, events are dropped and counted.
-module(beamtrace).
%% Implements the erl_tracer behaviour (its callbacks are the NIFs below;
%% erl_tracer.erl ships no behaviour_info in Debian's OTP 25).

-export([start/0, start/1, stop/0, stop/1, info/0, info/1, sessions/0]).
-export([enabled/3, trace/5,
         enabled_procs/3, trace_procs/5,
         enabled_ports/3, trace_ports/5,
         enabled_running_procs/3, trace_running_procs/5,
         enabled_running_ports/3, trace_running_ports/5,
         enabled_call/3, trace_call/5,
         enabled_send/3, trace_send/5,
         enabled_receive/3, trace_receive/5,
         enabled_garbage_collection/3, trace_garbage_collection/5]).

-nifs([enabled/3, trace/5,
       enabled_procs/3, trace_procs/5,
       enabled_ports/3, trace_ports/5,
       enabled_running_procs/3, trace_running_procs/5,
       enabled_running_ports/3, trace_running_ports/5,
       enabled_call/3, trace_call/5,
       enabled_send/3, trace_send/5,
       enabled_receive/3, trace_receive/5,
       enabled_garbage_collection/3, trace_garbage_collection/5,
       start_nif/7, stop_nif/1, info_nif/1, sessions_nif/0]).

-on_load(load_nif/0).

-export_type([session/0, option/0, stats/0]).

-opaque session() :: reference().
-type option() ::
        {dir, file:name_all()}
      | {events, [string() | binary()]}
      | {mode, discard | overwrite}
      | {buffer_size, pos_integer()}
      | {subbuffers, 2..1024}
      | {message_length, 0..16384 | size_only}
      | {default, boolean()}.
-type stats() :: #{dir := binary(), events := non_neg_integer(),
                   discarded := non_neg_integer(), overwritten := non_neg_integer(),
                   written_bytes := non_neg_integer()}.

-define(DEFAULTS, #{events => ["*"],
                    mode => discard,
                    buffer_size => 1 bsl 20,
                    subbuffers => 4,
                    message_length => 255,
                    default => false}).

%%% API

%% @equiv start(#{})
-spec start() -> {ok, session()} | {error, term()}.
start() ->
    start(#{}).

%% @doc Starts a recording session.
%%
%% Options (a map or a proplist):
%% <dl>
%% <dt>`dir'</dt><dd>trace directory (created); default a new
%%   `./beamtrace-traces/beamtrace-YYYYMMDD-HHMMSS'.</dd>
%% <dt>`events'</dt><dd>LTTng-style patterns, e.g.
%%   `["org_erlang_dyntrace:process_*"]'; default all tracepoints.</dd>
%% <dt>`mode'</dt><dd>`discard' (keep the oldest, drop new events when full;
%%   default) or `overwrite' (flight recorder: keep the newest).</dd>
%% <dt>`buffer_size'</dt><dd>bytes of buffer per recording thread (default
%%   1 MiB), split into `subbuffers' packets (default 4).</dd>
%% <dt>`message_length'</dt><dd>bytes of each printed message kept
%%   (default 255), 0 for none, or `size_only' for its size in words.</dd>
%% <dt>`default'</dt><dd>make this the session `{tracer, beamtrace, []}'
%%   feeds; the first session started is the default anyway.</dd>
%% </dl>
-spec start(#{atom() => term()} | [option()]) -> {ok, session()} | {error, term()}.
start(Opts) when is_list(Opts) ->
    try maps:from_list(Opts) of
        Map -> start(Map)
    catch error:_ -> {error, {badopt, Opts}}
    end;
start(Opts) when is_map(Opts) ->
    case [K || K <- maps:keys(Opts), not is_map_key(K, ?DEFAULTS), K =/= dir] of
        [Bad | _] ->
            {error, {badopt, Bad}};
        [] ->
            O = maps:merge(?DEFAULTS, Opts),
            case dir(O) of
                {ok, Dir} ->
                    start_nif(Dir, maps:get(events, O), maps:get(mode, O),
                              maps:get(buffer_size, O), maps:get(subbuffers, O),
                              maps:get(message_length, O), maps:get(default, O));
                Error ->
                    Error
            end
    end;
start(_) ->
    {error, {badopt, options}}.

%% @doc Stops the default session and returns its figures.
-spec stop() -> {ok, stats()} | {error, term()}.
stop() ->
    stop_nif([]).

%% @doc Stops a session: waits for events in flight, writes every buffer
%% out, closes the trace. `events' were recorded, `discarded' were lost
%% (full buffers, overwritten packets, write failures), so together they are
%% every event the session was offered.
-spec stop(session()) -> {ok, stats()} | {error, term()}.
stop(Session) ->
    stop_nif(Session).

%% @doc Live state of the default session.
-spec info() -> map() | {error, not_running}.
info() ->
    info_nif([]).

-spec info(session()) -> map() | {error, not_running}.
info(Session) ->
    info_nif(Session).

%% @doc Every running session.
-spec sessions() -> [session()].
sessions() ->
    sessions_nif().

%%% Internals

dir(#{dir := Dir}) ->
    try {ok, unicode:characters_to_binary(filename:absname(Dir))}
    catch _:_ -> {error, {badopt, dir}}
    end;
dir(#{}) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:local_time(),
    Base = lists:flatten(io_lib:format("beamtrace-~4..0w~2..0w~2..0w-~2..0w~2..0w~2..0w",
                                       [Y, Mo, D, H, Mi, S])),
    Root = filename:absname("beamtrace-traces"),
    {ok, unicode:characters_to_binary(unique(filename:join(Root, Base), 1))}.

unique(Path, 1) ->
    case filelib:is_file(Path) of
        false -> Path;
        true -> unique(Path, 2)
    end;
unique(Path, N) ->
    Candidate = Path ++ "-" ++ integer_to_list(N),
    case filelib:is_file(Candidate) of
        false -> Candidate;
        true -> unique(Path, N + 1)
    end.

load_nif() ->
    %% The priv directory also holds the optional sink libraries.
    Priv = priv_dir(),
    erlang:load_nif(filename:join(Priv, "beamtrace_nif"), Priv).

priv_dir() ->
    case code:priv_dir(beamtrace) of
        {error, bad_name} ->
            filename:join(filename:dirname(filename:dirname(code:which(?MODULE))), "priv");
        Dir ->
            Dir
    end.

%%% NIF stubs: replaced when the library loads.

start_nif(_Dir, _Events, _Mode, _Bytes, _Subbuffers, _MessageLength, _Default) ->
    erlang:nif_error(nif_not_loaded).
stop_nif(_Session) -> erlang:nif_error(nif_not_loaded).
info_nif(_Session) -> erlang:nif_error(nif_not_loaded).
sessions_nif() -> erlang:nif_error(nif_not_loaded).

enabled(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_procs(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_procs(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_ports(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_ports(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_running_procs(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_running_procs(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_running_ports(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_running_ports(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_call(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_call(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_send(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_send(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_receive(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_receive(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
enabled_garbage_collection(_, _, _) -> erlang:nif_error(nif_not_loaded).
trace_garbage_collection(_, _, _, _, _) -> erlang:nif_error(nif_not_loaded).
