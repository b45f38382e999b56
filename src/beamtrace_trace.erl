%% @doc One call that sets up a recording, trace flags and trace patterns,
%% with guard rails, and takes all of it down again: what
%% beamtrace:trace/2, trace_async/2, stop_trace/1 and trace_info/1 run.
%%
%% ```
%% %% What is the p99 of my_mod:handle_call/3 over the next 10 s?
%% {ok, #{dir := Dir}} = beamtrace:trace("my_mod:handle_call/3 -> return",
%%                                       #{duration => 10000}).
%% %% then, in a shell: beamtrace calls Dir
%% '''
%%
%% == Structure ==
%% The caller (or `owner') starts a controller process. The controller
%% parses the spec, loads the modules named in it, starts a recorder
%% session (beamtrace:start/1, with the caps as options: the consumer thread
%% enforces them, nothing is added per event), opens a beamtrace_tracing
%% handle it owns (its own trace session on OTP 27+, exact undo on the
%% legacy session on OTP 25/26), sets the patterns, then the process and
%% port flags. It stops on the first of: the duration elapsing (its own
%% timer), a cap tripping (the recorder's `{beamtrace_stopped, ...}'
%% notification), stop_trace/1, the owner's exit, the tracing handle's
%% exit. The duration is the controller's so that the flags go before the
%% session stops: a trace that simply ran its course has no event cut at
%% its end (a cap tripping cuts, and counts what it cut as discarded). The
%% session's own duration cap is set later (beamtrace_trace_options), as a backstop. Stopping closes the handle first (every flag
%% and pattern gone), then stops the session (every buffer written) and
%% answers with the session's figures and why it stopped.
%%
%% == Hot code loading ==
%% Loading a module (a hot upgrade, the shell's `l(M)') drops the call
%% patterns on its functions: the calls would stop being traced, silently.
%% A trace with call specs looks at each traced module at the recorder's
%% flush interval (one trace_info call per module); when its patterns are
%% gone it sets them again on the new code and records a
%% `org_erlang_beamtrace:code_load' event (what was set again, what the new
%% code no longer has). The calls between the load and that look are not
%% in the trace. The result counts them (`code_loads') and lists the specs
%% it could not set again (`not_reapplied': `{Spec, no_match | not_loaded}').
%%
%% If the controller itself is killed, the handle's owner is gone and it
%% closes itself (flags and patterns removed); the session stops at its
%% backstop duration cap (the duration + 5 s) and stays listed by
%% beamtrace:sessions/0 until collected.
-module(beamtrace_trace).

-export([trace/2, trace_async/2, stop/1, info/1, snapshot/1, monitor/1]).
-export([await_start/3]).
%% The controller process.
-export([init/3]).

%% The spec is parsed by beamtrace_trace_spec (parse/1), the options
%% checked by beamtrace_trace_options.
-import(beamtrace_trace_spec, [parse_for/2]).
-import(beamtrace_trace_options, [options/1, resolve_procs/1, resolve_exclude/1]).

-export_type([spec/0, options/0, trace/0, result/0]).

-opaque trace() :: pid().
-type call_spec() :: string() | binary()
                   | {module(), atom(), arity() | '_'}
                   | {module(), atom(), arity() | '_', return}.
-type kind() :: procs | send | 'receive' | running | garbage_collection | ports | call.
-type spec() :: call_spec() | kind() | [call_spec() | kind()].
-type procs() :: all | new | existing | pid() | atom() | [pid() | atom()].
-type options() :: #{procs => procs(), return_to => boolean(), owner => pid(),
                     backend => auto | session | legacy, links => boolean(),
                     exclude => [pid() | atom()],
                     nodes => [node()], atom() => term()}.
-type result() :: {ok, map()} | {error, term()}.

%% The 'receive' pattern links need: OTP's head is [Node, Sender, Message];
%% the result reaches the tracer as match_spec_result: the sender when it
%% is on this node (OTP gives no remote sender), else its node. Immediates
%% both: no term is built per message.
-define(LINKS_RECV_MS, [{['$1', '$2', '_'], [{'==', '$1', {node}}], [{message, '$2'}]},
                        {['$1', '_', '_'], [], [{message, '$1'}]}]).

%%% API

%% @doc Traces for the duration (default 15 s) or until a cap trips, then
%% returns the figures. See beamtrace:trace/2.
-spec trace(spec(), options() | list()) -> result().
trace(Spec, #{nodes := Nodes} = Opts) ->
    beamtrace_cluster:trace(Spec, Nodes, maps:remove(nodes, Opts));
trace(Spec, Opts) ->
    case start(Spec, Opts) of
        {ok, T} ->
            Ref = monitor(process, T),
            receive
                {beamtrace_trace, T, Result} ->
                    demonitor(Ref, [flush]),
                    Result;
                {'DOWN', Ref, process, T, Why} ->
                    {error, {controller_down, Why}}
            end;
        Error ->
            Error
    end.

%% @doc Sets everything up and returns; `{beamtrace_trace, Trace, Result}'
%% goes to the caller when it stops other than by stop/1.
-spec trace_async(spec(), options() | list()) -> {ok, trace()} | {error, term()}.
trace_async(_Spec, #{nodes := _}) ->
    {error, {badopt, nodes}};
trace_async(Spec, Opts) ->
    start(Spec, Opts).

%% @doc Stops now and returns the result. A trace that already stopped by
%% itself: its result, if the caller started it and has not received it
%% yet; else `{error, not_running}'. A live process that is no trace:
%% `{error, not_a_trace}', at once, and nothing is sent to it.
-spec stop(trace() | term()) -> result().
stop(T) when is_pid(T) ->
    case call(T, stop) of
        {ok, Result} ->
            Result;
        {error, not_running} ->
            receive {beamtrace_trace, T, Result} -> Result
            after 0 -> {error, not_running}
            end;
        {error, not_a_trace} = Error ->
            Error
    end;
stop(_) ->
    {error, not_a_trace}.

%% @doc Live figures: `#{state, elapsed_ms, dir, events, discarded,
%% written_bytes, functions, processes, backend, session, code_loads}'
%% (session: the recorder session's handle, for beamtrace_flight);
%% `{error, not_a_trace}' for a live process that is no trace (nothing is
%% sent to it).
-spec info(trace() | term()) -> map() | {error, not_running | not_a_trace}.
info(T) when is_pid(T) ->
    case call(T, info) of
        {ok, Info} -> Info;
        Error -> Error
    end;
info(_) ->
    {error, not_a_trace}.

%% @doc Writes what a flight-recorder trace (`mode => overwrite') holds now
%% into a new trace directory next to its own, without stopping it:
%% beamtrace:snapshot/1's answer, `{error, not_running}' once it is over,
%% `{error, not_a_trace}' for anything else.
-spec snapshot(trace() | term()) -> {ok, map()} | {error, term()}.
snapshot(T) when is_pid(T) ->
    case call(T, snapshot) of
        {ok, Result} -> Result;
        Error -> Error
    end;
snapshot(_) ->
    {error, not_a_trace}.

%% @doc A monitor on a trace_async/2 trace (its controller process):
%% `{'DOWN', Ref, process, _, Why}' when it is gone.
-spec monitor(trace()) -> reference().
monitor(T) ->
    erlang:monitor(process, T).

%%% Starting

start(Spec, Opts) ->
    case {parse_for(Spec, Opts), options(Opts)} of
        {{ok, Parsed}, {ok, Own, Rec}} ->
            Caller = self(),
            Ref = make_ref(),
            %% High priority from birth: see init/3.
            {Pid, Mon} = spawn_opt(?MODULE, init, [Caller, Ref, {Parsed, Own, Rec}],
                                   [monitor, {priority, high}]),
            await_start(Ref, Pid, Mon);
        {{error, _} = Error, _} -> Error;
        {_, {error, _} = Error} -> Error
    end.

%% @private The answer of a controller spawned (and monitored as Mon) with
%% Ref: its pid once it says `started', its error, or why it died first.
%% beamtrace_flight's controller answers the same way.
-spec await_start(reference(), pid(), reference()) -> {ok, pid()} | {error, term()}.
await_start(Ref, Pid, Mon) ->
    receive
        {Ref, started} ->
            demonitor(Mon, [flush]),
            {ok, Pid};
        {Ref, {error, _} = Error} ->
            demonitor(Mon, [flush]),
            Error;
        {'DOWN', Mon, process, Pid, Why} ->
            {error, {controller_down, Why}}
    end.

%% started_ms: the flags are on (setup done); the duration runs from there
%% to the flags going off (finish/3), which elapsed_ms measures.
%% calls: the call specs; watch: Module => {a function of it that had a
%% pattern (or undefined), the MD5 of that code}; code_loads, not_reapplied:
%% what the hot code loading watch did (module doc).
-record(st, {owner, owner_mon, reply_to, handle, handle_mon, session, dir, started_ms,
             functions = 0, processes = 0, backend, calls = [], watch = #{}, watch_ms = 1000,
             code_loads = 0, not_reapplied = []}).

%% @private The controller: sets up, answers the caller, waits for a reason
%% to stop.
-spec init(pid(), reference(), {map(), map(), map()}) -> ok.
init(Caller, Ref, {#{calls := Calls, kinds := Kinds}, Own, Rec}) ->
    %% It runs at high priority (start/2): setting up and taking down are a
    %% few calls each, but at normal priority each waits behind every
    %% runnable process of a saturated node (measured: minutes at 10,000
    %% busy processes); waiting for a reason to stop, it costs nothing.
    beamtrace_label:set_label(beamtrace_trace),
    #{owner := Owner} = Own,
    OwnerMon = monitor(process, Owner),
    case setup(Calls, Kinds, Own, Rec) of
        {ok, St0} ->
            St = St0#st{owner = Owner, owner_mon = OwnerMon, reply_to = Caller,
                        started_ms = erlang:monotonic_time(millisecond),
                        calls = Calls, watch_ms = maps:get(flush_interval, Rec, 1000),
                        watch = maps:from_list([{M, watch_point(M, Calls)}
                                                || M <- lists:usort([M || {M, _, _, _, _} <- Calls])])},
            _ = is_integer(maps:get(duration, Own)) andalso
                erlang:send_after(maps:get(duration, Own), self(), duration_elapsed),
            _ = Calls =/= [] andalso erlang:send_after(St#st.watch_ms, self(), code_watch),
            Caller ! {Ref, started},
            loop(St);
        {error, _} = Error ->
            Caller ! {Ref, Error}
    end.

setup(Calls, Kinds, #{procs := Procs, return_to := ReturnTo, backend := Backend,
                      exclude := Exclude0, '$own' := Own}, Rec) ->
    Has = fun(K) -> lists:member(K, Kinds) end,
    Links = maps:get(links, Rec, false),
    Messages = Has(send) orelse Has('receive'),
    if
        Calls =:= [], ReturnTo -> {error, {badopt, return_to}};
        Links =/= false, Links =/= true -> {error, {badopt, links}};
        Links, not Messages -> {error, {badopt, links}};
        true ->
            maybe_setup([fun() -> check_call_kind(Calls, Kinds) end,
                         fun() -> load_modules(Calls) end,
                         fun() -> resolve_procs(Procs) end,
                         fun() -> resolve_exclude(Exclude0) end],
                        fun([_, _, Targets, Exclude]) ->
                                ProcFlags = [K || K <- [procs, send, 'receive', running,
                                                        garbage_collection], Has(K)]
                                    ++ [call || Calls =/= []]
                                    ++ [return_to || ReturnTo],
                                start_session(Rec#{'$own' => [{self(), trace_controller} | Own]},
                                              Calls, {Targets, Exclude ++ [P || {P, _} <- Own]},
                                              ProcFlags, Has(ports), Backend,
                                              Links andalso Has('receive'))
                        end)
    end.

maybe_setup(Steps, Then) ->
    maybe_setup(Steps, Then, []).

maybe_setup([], Then, Acc) ->
    Then(lists:reverse(Acc));
maybe_setup([Step | Rest], Then, Acc) ->
    case Step() of
        {error, _} = Error -> Error;
        ok -> maybe_setup(Rest, Then, [ok | Acc]);
        {ok, V} -> maybe_setup(Rest, Then, [V | Acc])
    end.

check_call_kind([], Kinds) ->
    case lists:member(call, Kinds) of
        true -> {error, {badspec, call, "the call kind needs call specs "
                                        "(\"my_mod:handle_call/3\")"}};
        false -> ok
    end;
check_call_kind(_, _) ->
    ok.

%% Modules named in call specs are loaded first: a pattern on a module that
%% is not loaded matches nothing and would record nothing, silently.
load_modules(Calls) ->
    Mods = lists:usort([M || {M, _, _, _, _} <- Calls]),
    case [M || M <- Mods, not loaded(M)] of
        [] -> ok;
        [M | _] -> {error, {not_loaded, M}}
    end.

loaded(M) ->
    case code:ensure_loaded(M) of
        {module, M} -> true;
        _ -> false
    end.

start_session(Rec, Calls, Targets, ProcFlags, Ports, Backend, RecvPattern) ->
    case beamtrace:start(Rec#{notify => self(), '$dump_go' => false}) of
        {ok, S} ->
            Dir = maps:get(dir, beamtrace:info(S)),
            Opts = #{tracer_state => S, owner => self(), name => beamtrace_trace,
                     backend => Backend},
            case beamtrace_tracing:open(Opts) of
                {ok, H} ->
                    beamtrace_statedump:own(S, [{H, tracing}]),
                    St = #st{handle = H, handle_mon = monitor(process, H), session = S,
                             dir = Dir, started_ms = erlang:monotonic_time(millisecond),
                             backend = maps:get(backend, beamtrace_tracing:info(H))},
                    case set_all(St, Calls, Targets, ProcFlags, Ports, RecvPattern) of
                        {ok, St1} ->
                            %% The flags are set: the state dump may now
                            %% take the schedulers' time it needs.
                            beamtrace_statedump:dump_go(S),
                            {ok, St1};
                        {error, _} = Error ->
                            undo(St),
                            Error
                    end;
                {error, _} = Error ->
                    undo(#st{session = S, dir = Dir}),
                    Error
            end;
        {error, _} = Error ->
            Error
    end.

%% Patterns first, then flags: a process gets call flags only once the
%% patterns say which calls to report (and receive flags once the links'
%% pattern says the sender).
set_all(St, Calls, {Targets, Exclude}, ProcFlags, Ports, RecvPattern) ->
    H = St#st.handle,
    Patterns = case RecvPattern of
                   true ->
                       case beamtrace_tracing:recv(H, ?LINKS_RECV_MS, []) of
                           {ok, _} -> set_patterns(H, Calls, 0);
                           Error0 -> Error0
                       end;
                   false ->
                       set_patterns(H, Calls, 0)
               end,
    case Patterns of
        {ok, NF} ->
            case set_procs(H, Targets, Exclude, ProcFlags) of
                {ok, NP} when Ports ->
                    PortSpec = case Targets of
                                   [new] -> new;
                                   [existing] -> existing;
                                   _ -> all
                               end,
                    case beamtrace_tracing:port(H, PortSpec, true, [ports]) of
                        {ok, _} -> {ok, St#st{functions = NF, processes = NP}};
                        Error -> Error
                    end;
                {ok, NP} ->
                    {ok, St#st{functions = NF, processes = NP}};
                Error ->
                    Error
            end;
        Error ->
            Error
    end.

set_patterns(_H, [], N) ->
    {ok, N};
set_patterns(H, [{M, F, A, Return, Text} | Rest], N) ->
    MS = case Return of
             true -> [{'_', [], [{return_trace}, {exception_trace}]}];
             false -> true
         end,
    case set_pattern(H, expand(M, F, A), MS, 0) of
        {ok, 0} -> {error, {no_match, Text}};
        {ok, K} -> set_patterns(H, Rest, N + K);
        Error -> Error
    end.

set_pattern(_H, [], _MS, N) ->
    {ok, N};
set_pattern(H, [MFA | Rest], MS, N) ->
    case beamtrace_tracing:function(H, MFA, MS, [local]) of
        {ok, K} -> set_pattern(H, Rest, MS, N + K);
        Error -> Error
    end.

%% trace_pattern/3 takes {M, '_', '_'} and {M, F, '_'}, not {M, '_', A}:
%% that one is every function of M of arity A.
expand(M, '_', A) when is_integer(A) ->
    [{M, F, A} || {F, Ar} <- M:module_info(functions), Ar =:= A,
                  hd(atom_to_list(F)) =/= $-];
expand(M, F, A) ->
    [{M, F, A}].

%% `all' and `existing' are one call each (the VM walks its process
%% table), followed in the same request by the few calls that clear the
%% flags again on beamtrace's own processes and those the caller excludes:
%% this controller, the handle, the node table's watcher, the state dump's
%% workers, the sources' helper and keeper, beamtrace record's agent. Their messages are
%% beamtrace's business, not the trace's (and any event of theirs that
%% still lands in the trace is left out by the analyses: own_process).
set_procs(H, Targets, Exclude, Flags) when Flags =/= [] ->
    Watcher = [W || W <- [beamtrace_statedump:watcher()], is_pid(W)],
    Except = lists:usort([self(), H | Watcher ++ Exclude ++ sources_helpers()
                          ++ beamtrace_statedump:workers()]),
    set_procs1(H, Targets, Flags, Except, 0);
set_procs(_H, _Targets, _Exclude, []) ->
    {ok, 0}.

%% Every session's source helpers (beamtrace_sources keeps them in
%% beamtrace_registry, by session), and the registry's holder.
sources_helpers() ->
    [P || #{helper := Hp, keeper := K} <- beamtrace_registry:values(sources), P <- [Hp, K]]
        ++ [H || H <- [beamtrace_registry:holder()], is_pid(H)].

set_procs1(_H, _Targets, [], _Except, N) ->
    {ok, N};
set_procs1(_H, [], _Flags, _Except, N) ->
    {ok, N};
set_procs1(H, [P | Rest], Flags, Except, N) when P =:= all; P =:= existing ->
    case beamtrace_tracing:process(H, P, true, Flags, Except) of
        {ok, K} -> set_procs1(H, Rest, Flags, Except, N + K);
        {error, _} = Error -> Error
    end;
set_procs1(H, [P | Rest], Flags, Except, N) ->
    case beamtrace_tracing:process(H, P, true, Flags) of
        {ok, 0} when is_pid(P) ->
            {error, {already_traced, P, erlang:trace_info(P, tracer)}};
        {ok, K} -> set_procs1(H, Rest, Flags, Except, N + K);
        {error, _} = Error -> Error
    end.

%% Takes down a trace that did not get going: flags, patterns, the session
%% and its directory (it holds no trace anyone asked for).
undo(#st{handle = H, session = S, dir = Dir}) ->
    _ = H =/= undefined andalso beamtrace_tracing:close(H),
    _ = beamtrace:stop(S),
    %% A session that only streams has no directory (undefined: an atom
    %% would name ./undefined).
    _ = is_binary(Dir) andalso file:del_dir_r(Dir),
    ok.

%%% Running

loop(St) ->
    receive
        %% The controller has one session (the handle in the message is
        %% another term for it: a resource made afresh compares unequal).
        duration_elapsed ->
            finish(St, duration, notify);
        {beamtrace_stopped, _, _Reason} ->
            finish(St, undefined, notify);
        {'DOWN', Ref, process, _, _} when Ref =:= St#st.owner_mon ->
            finish(St, owner_exit, notify);
        {'DOWN', Ref, process, _, Why} when Ref =:= St#st.handle_mon ->
            finish(St, {tracing_down, Why}, notify);
        {From, Ref, stop} ->
            Result = finish(St, stop, quiet),
            From ! {Ref, {ok, Result}},
            ok;
        {From, Ref, info} ->
            From ! {Ref, {ok, live_info(St)}},
            loop(St);
        code_watch ->
            erlang:send_after(St#st.watch_ms, self(), code_watch),
            loop(code_watch(St));
        {From, Ref, snapshot} ->
            From ! {Ref, {ok, beamtrace:snapshot(St#st.session)}},
            loop(St);
        _ ->
            loop(St)
    end.

%%% Hot code loading (the module doc)

%% {A function of M that the specs cover (it gets a pattern), the MD5 of
%% M's code}, or {undefined, undefined} when M is not loaded.
watch_point(M, Calls) ->
    case erlang:module_loaded(M) of
        false ->
            {undefined, undefined};
        true ->
            Specs = [{F, A} || {M1, F, A, _, _} <- Calls, M1 =:= M],
            Fs = [{M, F, A} || {F, A} <- M:module_info(functions),
                               hd(atom_to_list(F)) =/= $-,
                               lists:any(fun({SF, SA}) -> (SF =:= '_' orelse SF =:= F) andalso
                                                              (SA =:= '_' orelse SA =:= A)
                                         end, Specs)],
            %% module_info/0,1 last: its own functions say more.
            {Own, Info} = lists:partition(fun({_, F, _}) -> F =/= module_info end, Fs),
            {case Own ++ Info of [MFA | _] -> MFA; [] -> undefined end, M:module_info(md5)}
    end.

code_watch(St) ->
    maps:fold(fun(M, Point, St0) -> watch_module(M, Point, St0) end, St, St#st.watch).

%% Lost: unloaded since the last look; loaded again after that, or new code
%% where nothing matched before (by its MD5: not again for the same code);
%% or the pattern on the watched function is gone.
watch_module(M, {MFA, Md5}, #st{handle = H} = St) ->
    Loaded = erlang:module_loaded(M),
    Lost = case {Loaded, MFA} of
               {false, _} -> Md5 =/= undefined;
               {true, undefined} -> M:module_info(md5) =/= Md5;
               {true, _} ->
                   case beamtrace_tracing:function_info(H, MFA, traced) of
                       {traced, false} -> true;
                       {traced, undefined} -> true;
                       _ -> false
                   end
           end,
    case Lost of
        false -> St;
        true -> reapply(M, Loaded, Md5, St)
    end.

%% Sets M's patterns again (on the code loaded now) and records it.
reapply(M, Loaded, OldMd5, #st{handle = H, session = S, calls = Calls} = St) ->
    Specs = [C || {M1, _, _, _, _} = C <- Calls, M1 =:= M],
    {Set, Missing} =
        case Loaded of
            false ->
                {0, [{Text, not_loaded} || {_, _, _, _, Text} <- Specs]};
            true ->
                lists:foldl(fun(Spec, {N, Miss}) ->
                                    case set_patterns(H, [Spec], 0) of
                                        {ok, K} -> {N + K, Miss};
                                        {error, {no_match, Text}} -> {N, [{Text, no_match} | Miss]};
                                        {error, Why} -> {N, [{element(5, Spec), Why} | Miss]}
                                    end
                            end, {0, []}, Specs)
        end,
    {NewMFA, NewMd5} = Point = watch_point(M, Calls),
    _ = NewMFA,
    Code = if not Loaded -> unloaded;
              NewMd5 =/= OldMd5 -> new;
              true -> same
           end,
    MissingText = unicode:characters_to_binary(
                    io_lib:format("~0p", [[T || {T, _} <- lists:reverse(Missing)]])),
    _ = beamtrace:emit_nif(S, code_load, [M, Set, MissingText, Code]),
    St#st{watch = (St#st.watch)#{M => Point}, code_loads = St#st.code_loads + 1,
          not_reapplied = lists:usort(Missing ++ St#st.not_reapplied)}.

%% Closes the handle (every flag and pattern removed), then stops the
%% session. Reason undefined: the session's own (a cap it tripped).
finish(St, Reason, How) ->
    demonitor(St#st.handle_mon, [flush]),
    ok = beamtrace_tracing:close(St#st.handle),
    Elapsed = erlang:monotonic_time(millisecond) - St#st.started_ms,
    Result = case beamtrace:stop(St#st.session) of
                 {ok, Stats} -> {ok, result_map(St, Stats, Reason, Elapsed)};
                 {error, {Posix, Stats}} when is_map(Stats) ->
                     {error, {Posix, result_map(St, Stats, Reason, Elapsed)}};
                 {error, _} = Error -> Error
             end,
    case How of
        notify -> St#st.reply_to ! {beamtrace_trace, self(), Result};
        quiet -> ok
    end,
    Result.

result_map(St, Stats, Reason, Elapsed) ->
    R = case Reason of
            undefined -> maps:get(reason, Stats);
            _ -> Reason
        end,
    Stats#{reason => R, functions => St#st.functions, processes => St#st.processes,
           backend => St#st.backend, elapsed_ms => Elapsed, code_loads => St#st.code_loads,
           not_reapplied => St#st.not_reapplied}.

live_info(St) ->
    Info = case beamtrace:info(St#st.session) of
               M when is_map(M) ->
                   maps:with([state, events, discarded, written_bytes, reason, relayd], M);
               _ -> #{}
           end,
    Info#{dir => St#st.dir, functions => St#st.functions, processes => St#st.processes,
          backend => St#st.backend, session => St#st.session, code_loads => St#st.code_loads,
          elapsed_ms => erlang:monotonic_time(millisecond) - St#st.started_ms}.

%%% Internals

%% A request to controller T. Only a controller is sent one: any other
%% live process would keep the message and never answer. A controller is
%% told by its initial call (spawn_opt(?MODULE, init, ...) in start/2);
%% one on another node is asked there.
call(T, Req) ->
    case is_controller(T) of
        false ->
            {error, not_a_trace};
        gone ->
            {error, not_running};
        true ->
            Ref = monitor(process, T),
            T ! {self(), Ref, Req},
            receive
                {Ref, Reply} ->
                    demonitor(Ref, [flush]),
                    Reply;
                {'DOWN', Ref, process, T, _} ->
                    {error, not_running}
            end
    end.

is_controller(T) ->
    Info = case node(T) =:= node() of
               true -> erlang:process_info(T, initial_call);
               false -> try erpc:call(node(T), erlang, process_info, [T, initial_call], 5000)
                        catch _:_ -> undefined
                        end
           end,
    case Info of
        {initial_call, {?MODULE, init, 3}} -> true;
        undefined -> gone;
        _ -> false
    end.

