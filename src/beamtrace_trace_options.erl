%% @doc beamtrace:trace/2's options, checked and completed: its own
%% (procs, exclude, backend, ...) with their defaults and the processes they
%% name resolved, and the recorder's (beamtrace:start/1's) with trace/2's
%% caps and backstop. Runs where the trace runs (shipped by `beamtrace
%% record'): beamtrace_trace's first step.
-module(beamtrace_trace_options).

-export([options/1]).
%% For the controller, as it sets the flags.
-export([resolve_procs/1, resolve_exclude/1]).
%% For beamtrace record's hint after a session stopped by max_rate.
-export([default_max_rate/0]).

%% trace/2's own options; every other key is a beamtrace:start/1 option
%% (links is both: the recorder's, and the 'receive' pattern set here).
%% '$own': beamtrace's own processes besides the controller, as {Pid,
%% Role} (beamtrace record's agent): excluded as `exclude' is, and named
%% as beamtrace's in the trace (beamtrace_statedump:own/2).
-define(OWN, [procs, return_to, owner, backend, exclude, '$own']).
%% The recorder options trace/2 sets itself.
-define(RESERVED, [notify, default]).
-define(DEFAULT_DURATION_MS, 15000).
%% events/s: what a node on a 2-core machine records with no loss is 250k
%% to 330k events/s, each costing it 2 to 3 us (bench/flight.sh, a loaded
%% machine); 100k events/s keeps tracing near a tenth of such a machine.
%% Past it a trace stops (or samples: on_max_rate), and its result says so.
-define(DEFAULT_MAX_RATE, 100000).

%% The recorder's own duration cap, past the controller's timer.
-define(BACKSTOP_MS, 5000).

%%% Options

%% @doc The events a second past which a trace stops or samples, when
%% max_rate is not given.
-spec default_max_rate() -> pos_integer().
default_max_rate() -> ?DEFAULT_MAX_RATE.

%% {ok, Own, RecorderOptions} or {error, {badopt, Key}}.
options(Opts) when is_list(Opts) ->
    try maps:from_list(Opts) of
        Map -> options(Map)
    catch error:_ -> {error, {badopt, Opts}}
    end;
options(Opts) when is_map(Opts) ->
    Own = maps:with(?OWN, Opts),
    Rec = maps:without(?OWN, Opts),
    case [K || K <- maps:keys(Rec), lists:member(K, ?RESERVED)] of
        [K | _] -> {error, {badopt, K}};
        [] ->
            Duration = maps:get(duration, Rec, ?DEFAULT_DURATION_MS),
            Backstop = case Duration of
                           D when is_integer(D), D > 0 -> D + ?BACKSTOP_MS;
                           D -> D    %% infinity, or a bad value start/1 refuses
                       end,
            check_own(maps:merge(#{procs => all, return_to => false, owner => self(),
                                   backend => auto, exclude => [], '$own' => []},
                                 Own#{duration => Duration}),
                      maps:merge(rec_defaults(Rec), Rec#{duration => Backstop}))
    end;
options(_) ->
    {error, {badopt, options}}.

%% The caps count whole packets (buffer_size / subbuffers bytes, per
%% thread): the packet that would cross max_events or max_bytes is left out.
%% With a cap, smaller packets (64 KiB at the default 4 MiB) keep the trace
%% close to it.
rec_defaults(Rec) ->
    Capped = is_map_key(max_events, Rec) orelse is_map_key(max_bytes, Rec),
    Sized = is_map_key(buffer_size, Rec) orelse is_map_key(subbuffers, Rec),
    Packets = case Capped andalso not Sized of
                  true -> #{subbuffers => 64};
                  false -> #{}
              end,
    Packets#{max_rate => ?DEFAULT_MAX_RATE}.

check_own(#{return_to := R}, _) when not is_boolean(R) -> {error, {badopt, return_to}};
check_own(#{owner := O}, _) when not is_pid(O) -> {error, {badopt, owner}};
check_own(#{backend := B}, _) when B =/= auto, B =/= session, B =/= legacy ->
    {error, {badopt, backend}};
check_own(#{duration := D}, _) when D =/= infinity, not (is_integer(D) andalso D > 0) ->
    {error, {badopt, duration}};
check_own(#{exclude := X}, _) when not is_list(X) -> {error, {badopt, exclude}};
%% options/1 merged the defaults in: every key is there.
check_own(#{'$own' := O}, _) when not is_list(O) -> {error, {badopt, '$own'}};
check_own(#{exclude := X, '$own' := O} = Own, Rec) ->
    case lists:all(fun(P) -> is_pid(P) orelse is_atom(P) end, X) andalso
        lists:all(fun({P, R}) -> is_pid(P) andalso is_atom(R); (_) -> false end, O) of
        true -> {ok, Own, Rec};
        false -> {error, {badopt, exclude}}
    end.

%% The processes `exclude' names: pids, and registered names resolved now.
resolve_exclude(X) ->
    resolve_exclude(X, []).

resolve_exclude([], Acc) ->
    {ok, lists:usort(Acc)};
resolve_exclude([P | Rest], Acc) when is_pid(P) ->
    resolve_exclude(Rest, [P | Acc]);
resolve_exclude([Name | Rest], Acc) ->
    case whereis(Name) of
        P when is_pid(P) -> resolve_exclude(Rest, [P | Acc]);
        _ -> {error, {no_process, Name}}
    end.

%% The processes to set flags on: [all | new | existing | pid()].
resolve_procs(P) when P =:= all; P =:= new; P =:= existing -> {ok, [P]};
resolve_procs(P) when is_pid(P); is_atom(P) -> resolve_procs([P]);
resolve_procs(L) when is_list(L), L =/= [] -> resolve_list(L, []);
resolve_procs(_) -> {error, {badopt, procs}}.

resolve_list([], Acc) ->
    {ok, lists:usort(Acc)};
resolve_list([P | Rest], Acc) when is_pid(P), node(P) =:= node() ->
    case is_process_alive(P) of
        true -> resolve_list(Rest, [P | Acc]);
        false -> {error, {no_process, P}}
    end;
resolve_list([Name | Rest], Acc) when is_atom(Name), Name =/= all, Name =/= new,
                                      Name =/= existing ->
    case whereis(Name) of
        P when is_pid(P) -> resolve_list(Rest, [P | Acc]);
        _ -> {error, {no_process, Name}}
    end;
resolve_list(_, _) ->
    {error, {badopt, procs}}.
