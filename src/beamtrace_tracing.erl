%% @doc One way for beamtrace to set trace flags and trace patterns, and to
%% take all of them down again, on every OTP release we support.
%%
%% ```
%% {ok, S} = beamtrace:start(#{events => ["org_erlang_dyntrace:function_*"]}),
%% {ok, T} = beamtrace:trace_session(#{tracer_state => S}),
%% {ok, _} = beamtrace_tracing:process(T, all, true, [call]),
%% {ok, _} = beamtrace_tracing:function(T, {my_mod, '_', '_'},
%%                                      [{'_', [], [{return_trace}]}], [local]),
%% ...,
%% ok = beamtrace_tracing:close(T),
%% {ok, Stats} = beamtrace:stop(S).
%% '''
%%
%% == Backends ==
%% <dl>
%% <dt>`session' (OTP 27 and later)</dt><dd>A trace session of its own,
%%   `trace:session_create(Name, {beamtrace, TracerState}, [])', whose
%%   handle only the handle's process holds. Other tools never touch it:
%%   recon_trace and redbug clear the legacy session when they stop, dbg,
%%   tprof and the debugger use sessions of their own. `close/1' destroys
%%   it, which removes every flag and pattern it set at once.</dd>
%% <dt>`legacy' (OTP 25 and 26, or `backend => legacy')</dt><dd>The node's
%%   one global session, `erlang:trace/3' and `erlang:trace_pattern/3', with
%%   `{tracer, beamtrace, TracerState}'. The handle records what it set, and
%%   `close/1' undoes exactly that (below). Anything else using the legacy
%%   session shares it: a process has one tracer and one set of flags there,
%%   a function one pattern, so recon_trace:clear/0 or redbug stopping
%%   removes beamtrace's flags and patterns too, and a pattern set here on a
%%   function replaces another tool's pattern on that function.</dd>
%% </dl>
%% The backend is chosen by what the VM has (the trace sessions' BIF
%% erts_internal:trace_session_create/3, behind trace:session_create/3),
%% not by its version number; asking costs no call to the code server.
%%
%% == Contract ==
%% <ul>
%% <li>`open/1' starts a process (the handle) that owns everything set
%%   through it. The tracer module is loaded first, so session creation
%%   never fails with `badarg' because beamtrace was not loaded yet.</li>
%% <li>`close/1' returns `ok' once nothing set through the handle remains:
%%   session backend, the session is destroyed (every flag on every process
%%   and port, every pattern, gone); legacy backend, the flags this handle
%%   set are cleared on every process and port whose tracer is this
%%   handle's `{beamtrace, TracerState}' (children that inherited them
%%   through `set_on_spawn'/`set_on_link' included) and on new processes and
%%   ports if they would get them, the call patterns it set are removed, and
%%   the `send'/`receive' patterns are restored to what they were before the
%%   handle first changed them. Flags a process got from another tracer are
%%   left alone. `close/1' on a closed handle is `ok'.</li>
%% <li>Flags are set and cleared in a number of VM calls that does not
%%   depend on the number of processes: `process/4,5' with `all',
%%   `existing' or `new' is one call (`erlang:trace/3' or
%%   `trace:process/4', which the VM runs over its process table), plus one
%%   per pid in `process/5''s exceptions; `close/1' is one call per kind
%%   (processes, new processes, ports, new ports) and one per pattern. The
%%   handle's process runs at high priority, so on a node whose schedulers
%%   are saturated it does not wait behind the runnable processes between
%%   those calls.</li>
%% <li>When the owner (the caller of `open/1', or `owner') exits, for any
%%   reason, the handle closes itself exactly as `close/1' would.</li>
%% <li>When the handle's process is killed, the session backend's session
%%   handle is garbage with it and the VM destroys the session: nothing set
%%   remains. The legacy backend cannot undo anything then: what was set
%%   stays until cleared by hand (`erlang:trace(all, false, [all])').</li>
%% <li>Every call answers `{ok, Count}' (the VM's count of processes, ports
%%   or functions matched) or `{error, Reason}'; it never raises for a bad
%%   argument (`{error, {badarg, Call}}').</li>
%% <li>OTP defect erlang/otp#11624 (fix: PR #11623): on releases with trace
%%   sessions, two sessions tracing `garbage_collection' on one process make
%%   the VM use freed memory at that process's next collection (it aborted
%%   27.3.4.1 every time here). `process/4' with `garbage_collection' (or
%%   `all') refuses, on such a VM and with either backend, with `{error, {otp_gc_multi_session_defect,
%%   Info}}', while any other session (the legacy one included) traces
%%   garbage collection on a process the call covers, or on new processes
%%   when the call covers them. The check and the set are not atomic, and a
%%   tool enabling GC tracing afterwards is not stopped: best effort.</li>
%% </ul>
-module(beamtrace_tracing).
-behaviour(gen_server).

-export([open/1, close/1, process/4, process/5, port/4, function/4, function_info/3, send/3,
         recv/3, info/1, backend/0, gc_multi_session_safe/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-export_type([handle/0, options/0, process_spec/0, port_spec/0]).

%% The handle is its process: a caller may monitor it (beamtrace_trace
%% does) or kill it (what that undoes is said above).
-type handle() :: pid().
-type options() :: #{tracer_state => [] | beamtrace:session() | pos_integer(),
                     name => atom(),
                     backend => auto | session | legacy,
                     owner => pid()}.
%% `tracer_state': `[]' (default) feeds beamtrace's default session, a
%% session from beamtrace:start/1 that session, a flight call trigger's
%% integer (beamtrace_flight) that trigger. `name': the trace session's
%% name on OTP 27+ (default `beamtrace'). `backend': `auto' (default) is
%% `session' where the VM has trace sessions, else `legacy'. `owner': the
%% process whose exit closes the handle (default the caller).
-type process_spec() :: pid() | all | existing | new.
-type port_spec() :: port() | all | existing | new.
-type how() :: boolean().
-type result() :: {ok, non_neg_integer()} | {error, term()}.

%%% API

%% @doc Starts a handle. `{error, {beamtrace_not_loaded, Reason}}' when the
%% tracer module cannot be loaded (no NIF library, say); `{error,
%% {no_trace_sessions, Release}}' for `backend => session' on OTP 25/26.
-spec open(options()) -> {ok, handle()} | {error, term()}.
open(Opts) when is_map(Opts) ->
    %% Caller mistakes are answered here, so the handle's process starts
    %% only to succeed (a failing init/1 would log a crash report).
    case [K || K <- maps:keys(Opts), not lists:member(K, [tracer_state, name, backend, owner])] of
        [Bad | _] ->
            {error, {badopt, Bad}};
        [] ->
            Name = maps:get(name, Opts, beamtrace),
            Owner = maps:get(owner, Opts, self()),
            Backend = case maps:get(backend, Opts, auto) of
                          auto -> backend();
                          B -> B
                      end,
            if
                not is_atom(Name) -> {error, {badopt, name}};
                not is_pid(Owner) -> {error, {badopt, owner}};
                Backend =/= session, Backend =/= legacy -> {error, {badopt, {backend, Backend}}};
                true -> open(Backend, Owner, {beamtrace, maps:get(tracer_state, Opts, [])}, Name)
            end
    end;
open(_) ->
    {error, {badopt, options}}.

open(Backend, Owner, Tracer, Name) ->
    %% trace:session_create/3 does not load a tracer module (badarg if it
    %% is not loaded yet); erlang:trace/3 does, but load it for both.
    case {code:ensure_loaded(beamtrace), Backend, backend()} of
        {{error, Reason}, _, _} ->
            {error, {beamtrace_not_loaded, Reason}};
        {_, session, legacy} ->
            {error, {no_trace_sessions, erlang:system_info(otp_release)}};
        {{module, beamtrace}, _, _} ->
            %% High priority from birth (init/1 says why).
            gen_server:start(?MODULE, {Owner, Backend, Tracer, Name},
                             [{spawn_opt, [{priority, high}]}])
    end.

%% @doc Removes everything set through the handle (see the contract) and
%% stops it.
-spec close(handle()) -> ok.
close(H) ->
    case call(H, close) of
        ok -> ok;
        {error, closed} -> ok
    end.

%% @doc Sets (`true') or clears (`false') trace flags on processes, as
%% trace:process/4 or erlang:trace/3 (`all', `existing', `new' cover
%% processes only). Flags never name a tracer: the handle's is used.
-spec process(handle(), process_spec(), how(), [atom()]) -> result().
process(H, Spec, How, Flags) ->
    call(H, {process, Spec, How, Flags}).

%% @doc process/4 with `true', then the same flags cleared on each pid of
%% `Except' that `Spec' covered, in the same request to the handle: no
%% message between the two, so the excepted processes (beamtrace's own, the
%% caller among them) make no event for the flags but what the calls
%% themselves cause. Returns process/4's count.
-spec process(handle(), process_spec(), true, [atom()], [pid()]) -> result().
process(H, Spec, true, Flags, Except) when is_list(Except) ->
    call(H, {process, Spec, true, Flags, Except}).

%% @doc The same for ports (trace:port/4).
-spec port(handle(), port_spec(), how(), [atom()]) -> result().
port(H, Spec, How, Flags) ->
    call(H, {port, Spec, How, Flags}).

%% @doc Sets a call trace pattern, as trace:function/4 or
%% erlang:trace_pattern/3; `meta' in Flags means meta tracing to this
%% handle's tracer.
-spec function(handle(), {module() | '_', atom() | '_', arity() | '_'} | on_load,
               [tuple()] | boolean() | restart | pause, [atom()]) -> result().
function(H, MFA, MatchSpec, Flags) ->
    call(H, {function, MFA, MatchSpec, Flags}).

%% @doc What the handle's session says of a function: trace:info/3's or
%% erlang:trace_info/2's answer for `Item' (`traced', `all', ...); on the
%% legacy backend that is the node's one legacy session.
-spec function_info(handle(), mfa(), atom()) -> {atom(), term()} | {error, term()}.
function_info(H, MFA, Item) ->
    call(H, {function_info, MFA, Item}).

%% @doc Sets the pattern for traced sends (trace:send/3).
-spec send(handle(), [tuple()] | boolean(), []) -> result().
send(H, MatchSpec, Flags) ->
    call(H, {event, send, MatchSpec, Flags}).

%% @doc Sets the pattern for traced receives (trace:recv/3).
-spec recv(handle(), [tuple()] | boolean(), []) -> result().
recv(H, MatchSpec, Flags) ->
    call(H, {event, 'receive', MatchSpec, Flags}).

%% @doc What the handle is: its backend, tracer, owner, the trace session's
%% `{Name, Id}' as trace:session_info/1 shows it (session backend), and
%% what it set (legacy backend).
-spec info(handle()) -> map() | {error, closed}.
info(H) ->
    call(H, info).

%% @doc The backend `auto' picks on this VM.
-spec backend() -> session | legacy.
backend() ->
    case erlang:is_builtin(erts_internal, trace_session_create, 3) of
        true -> session;
        false -> legacy
    end.

%% @doc false where two trace sessions tracing garbage collection on one
%% process can crash the VM (erlang/otp#11624): every VM with trace
%% sessions, unless its erts is at or past a release carrying the fix
%% (erlang/otp PR #11623; none is known to this version of beamtrace), or
%% the application environment says the VM was patched:
%% `{beamtrace, [{gc_multi_session_fixed, true}]}'.
-spec gc_multi_session_safe() -> boolean().
gc_multi_session_safe() ->
    backend() =:= legacy orelse
        application:get_env(beamtrace, gc_multi_session_fixed, false) =:= true orelse
        erts_has_gc_multi_session_fix(erlang:system_info(version)).

%%% The handle's process

-record(st, {owner :: pid(),
             monitor :: reference(),
             backend :: session | legacy,
             tracer :: {beamtrace, term()},
             %% session backend: the handle keeping the session alive, and
             %% the {Name, Id} trace:session_info/1 shows for it
             session :: term(),
             session_id :: term(),
             %% legacy backend: flags set on processes and ports (union),
             %% whether new processes / ports were given flags, the call
             %% patterns set ({MFA, disable flags}), and the send/receive
             %% patterns as they were before the first change
             proc_flags = [] :: [atom()],
             port_flags = [] :: [atom()],
             patterns = [] :: [{term(), [atom()]}],
             events = #{} :: #{send | 'receive' => term()}}).

%% @private
init({Owner, Backend, Tracer, Name}) ->
    beamtrace_label:set_label({beamtrace_tracing, Owner}),
    %% Started at high priority: its calls are few and short (see the
    %% contract); at normal priority each one would wait behind every
    %% runnable process of a busy node.
    St = #st{owner = Owner, monitor = monitor(process, Owner), backend = Backend, tracer = Tracer},
    case Backend of
        legacy ->
            {ok, St};
        session ->
            {module, trace} = code:ensure_loaded(trace),
            try trace:session_create(Name, Tracer, []) of
                S -> {ok, St#st{session = S, session_id = session_id(S)}}
            catch error:Reason ->
                    {stop, {session_create, Reason}}
            end
    end.

%% trace:session_create/3 returns {Ref, {Name, Id}} on OTP 27 to 29; the
%% second element is what session_info/1 lists.
session_id({_Ref, {_, _} = Id}) -> Id;
session_id(_) -> undefined.

%% @private
handle_call(close, _From, St) ->
    ok = teardown(St),
    {stop, normal, ok, St};
handle_call(info, _From, St) ->
    {reply, info_map(St), St};
handle_call({function_info, MFA, Item}, _From, St) ->
    Reply = try
                case St of
                    #st{backend = session, session = S} -> trace:info(S, MFA, Item);
                    #st{backend = legacy} -> erlang:trace_info(MFA, Item)
                end
            catch error:Why -> {error, {Why, MFA}}
            end,
    {reply, Reply, St};
handle_call(Req, _From, St) ->
    case check(Req) of
        ok ->
            try apply_req(Req, St) of
                {error, _} = Error -> {reply, Error, St};
                {Count, St1} -> {reply, {ok, Count}, St1}
            catch error:Reason ->
                    {reply, {error, {Reason, Req}}, St}
            end;
        Error ->
            {reply, Error, St}
    end.

%% @private
handle_cast(_Msg, St) ->
    {noreply, St}.

%% @private
handle_info({'DOWN', Ref, process, _, _}, #st{monitor = Ref} = St) ->
    ok = teardown(St),
    {stop, normal, St};
handle_info(_Msg, St) ->
    {noreply, St}.

%% @private
terminate(_Why, _St) ->
    ok.

%%% Requests

%% Flags and patterns never name a tracer: the handle's tracer is the
%% only one, as in a trace session.
check({process, Spec, true, Flags, Except}) ->
    case lists:all(fun is_pid/1, Except) of
        true -> check({process, Spec, true, Flags});
        false -> {error, badarg}
    end;
check({Kind, _Spec, How, Flags}) when Kind =:= process; Kind =:= port ->
    case is_boolean(How) andalso is_list(Flags) of
        false -> {error, badarg};
        true ->
            case [F || F <- Flags, is_tuple(F) orelse F =:= tracer] of
                [] -> ok;
                [F | _] -> {error, {badopt, F}}
            end
    end;
check({function, _MFA, _MS, Flags}) when is_list(Flags) ->
    case [F || F <- Flags, is_tuple(F)] of
        [] -> ok;
        [F | _] -> {error, {badopt, F}}
    end;
check({event, _, _MS, []}) ->
    ok;
check(_) ->
    {error, badarg}.

apply_req({process, Spec, true, Flags, Except}, St) ->
    case apply_req({process, Spec, true, Flags}, St) of
        {error, _} = Error ->
            Error;
        {N, St1} when Spec =:= all; Spec =:= existing ->
            _ = [catch_badarg(fun() -> set_process(P, false, Flags, St1) end) || P <- Except],
            {N, St1};
        {N, St1} ->
            {N, St1}
    end;
apply_req({process, Spec, true, Flags} = Req, St) ->
    case gc_conflict(Spec, Flags, St) of
        none -> set_process(Spec, true, Flags, St);
        Conflict -> {error, gc_defect_error(Req, Conflict)}
    end;
apply_req({process, Spec, How, Flags}, St) ->
    set_process(Spec, How, Flags, St);
apply_req({port, Spec, How, Flags}, #st{backend = session} = St) ->
    {trace:port(St#st.session, Spec, How, Flags), St};
apply_req({function, MFA, MS, Flags}, #st{backend = session} = St) ->
    {trace:function(St#st.session, MFA, MS, Flags), St};
apply_req({event, send, MS, Flags}, #st{backend = session} = St) ->
    {trace:send(St#st.session, MS, Flags), St};
apply_req({event, 'receive', MS, Flags}, #st{backend = session} = St) ->
    {trace:recv(St#st.session, MS, Flags), St};
apply_req({port, Spec, How, Flags}, #st{backend = legacy, tracer = {M, S}} = St) ->
    N = erlang:trace(legacy_spec(port, Spec), How, [{tracer, M, S} | Flags]),
    {N, record_flags(How, #st.port_flags, Flags, St)};
apply_req({function, MFA, MS, Flags}, #st{backend = legacy, tracer = {M, S}} = St) ->
    LegacyFlags = [case F of meta -> {meta, M, S}; _ -> F end || F <- Flags],
    N = erlang:trace_pattern(MFA, MS, LegacyFlags),
    Patterns = case MS of
                   false -> St#st.patterns;
                   _ -> [{MFA, disable_flags(Flags)} | St#st.patterns]
               end,
    {N, St#st{patterns = Patterns}};
apply_req({event, Event, MS, Flags}, #st{backend = legacy, events = Events} = St) ->
    Before = case Events of
                 #{Event := Saved} -> Saved;
                 #{} -> element(2, erlang:trace_info(Event, match_spec))
             end,
    N = erlang:trace_pattern(Event, MS, Flags),
    {N, St#st{events = Events#{Event => Before}}}.

set_process(Spec, How, Flags, #st{backend = session} = St) ->
    {trace:process(St#st.session, Spec, How, Flags), St};
set_process(Spec, How, Flags, #st{backend = legacy, tracer = {M, S}} = St) ->
    N = erlang:trace(legacy_spec(process, Spec), How, [{tracer, M, S} | Flags]),
    {N, record_flags(How, #st.proc_flags, Flags, St)}.

%% OTP's table (trace module docs): erlang:trace/3's spec for each of
%% trace:process/4's and trace:port/4's.
legacy_spec(process, all) -> processes;
legacy_spec(process, existing) -> existing_processes;
legacy_spec(process, new) -> new_processes;
legacy_spec(port, all) -> ports;
legacy_spec(port, existing) -> existing_ports;
legacy_spec(port, new) -> new_ports;
legacy_spec(_, PidOrPort) -> PidOrPort.

record_flags(true, Field, Flags, St) ->
    setelement(Field, St, lists:usort(element(Field, St) ++ Flags));
record_flags(false, _Field, _Flags, St) ->
    St.

%% The flags erlang:trace_pattern(MFA, false, Flags) needs to remove a
%% pattern set with Flags: the kind of tracing, no tracer.
disable_flags(Flags) ->
    [case F of {meta, _, _} -> meta; {meta, _} -> meta; _ -> F end || F <- Flags].

%%% Taking everything down

teardown(#st{backend = session, session = S}) ->
    _ = trace:session_destroy(S),
    ok;
teardown(#st{backend = legacy, tracer = Tracer} = St) ->
    clear_flags(existing_processes, new_processes, St#st.proc_flags, Tracer),
    clear_flags(existing_ports, new_ports, St#st.port_flags, Tracer),
    [catch_badarg(fun() -> erlang:trace_pattern(MFA, false, Flags) end)
     || {MFA, Flags} <- lists:reverse(St#st.patterns)],
    [catch_badarg(fun() -> erlang:trace_pattern(Event, MS, []) end)
     || {Event, MS} <- maps:to_list(St#st.events)],
    ok.

%% Clears Flags on every process or port (Existing) whose tracer is ours,
%% in one call: given a tracer, erlang:trace/3 leaves alone every tracee
%% whose tracer is another, live one (erts start_trace/5; measured on OTP
%% 25, 27 and 29). The new ones (New) only if they would get our tracer:
%% there the VM would clear another tool's default flags too. (OTP 25's
%% spec of erlang:trace_info/2 gives a tracer module as {tracer, Module,
%% State}; the VM answers {tracer, {Module, State}}, which Tracer is.)
%% On a VM with trace sessions (OTP 27+, where this backend is chosen only
%% on request), OTP 29 gives such a tracee our tracer instead (seen with
%% 29.1.2: another tool's traced process kept its flags but got beamtrace
%% as its tracer), so there the processes or ports whose tracer is ours are
%% cleared one by one.
-dialyzer({no_match, clear_flags/4}).
clear_flags(_Existing, _New, [], _Tracer) ->
    ok;
clear_flags(Existing, New, Flags, {M, S} = Tracer) ->
    _ = case backend() =:= session of
            false ->
                erlang:trace(Existing, false, [{tracer, M, S} | Flags]);
            true ->
                [catch_badarg(fun() -> erlang:trace(I, false, Flags) end)
                 || I <- tracees(Existing), erlang:trace_info(I, tracer) =:= {tracer, Tracer}]
        end,
    case erlang:trace_info(New, tracer) of
        {tracer, Tracer} -> _ = erlang:trace(New, false, Flags), ok;
        _ -> ok
    end.

tracees(existing_processes) -> erlang:processes();
tracees(existing_ports) -> erlang:ports().

%% A process or port may exit between the listing and the clearing.
catch_badarg(F) ->
    try F() catch error:badarg -> 0 end.

%%% The GC double-session defect (erlang/otp#11624)

%% none, or {SessionId, Where}: another session tracing garbage collection
%% on a process Spec covers (Where the pid), or on new processes (Where
%% `new') when Spec covers those. The legacy backend is a session too on a
%% VM that has sessions: {legacy, default}.
gc_conflict(Spec, Flags, #st{backend = Backend, session_id = Id}) ->
    Own = case Backend of
              session -> Id;
              legacy -> {legacy, default}
          end,
    Gc = lists:member(garbage_collection, Flags) orelse lists:member(all, Flags),
    case Gc andalso not gc_multi_session_safe() of
        false -> none;
        true -> first_conflict(covered(Spec), Own)
    end.

covered(Pid) when is_pid(Pid) -> [Pid];
covered(new) -> [new];
covered(existing) -> erlang:processes();
covered(all) -> [new | erlang:processes()].

first_conflict([], _Own) ->
    none;
first_conflict([Where | Rest], Own) ->
    Others = case trace:session_info(Where) of
                 L when is_list(L) -> L -- [Own];
                 undefined -> []
             end,
    case [S || S <- Others, traces_gc(S, Where)] of
        [S | _] -> {S, Where};
        [] -> first_conflict(Rest, Own)
    end.

%% trace:info/3 refuses the legacy session's id; erlang:trace_info/2 is
%% that session's.
traces_gc(Session, Where) ->
    Flags = try
                case Session of
                    {legacy, _} -> erlang:trace_info(legacy_where(Where), flags);
                    _ -> trace:info(Session, Where, flags)
                end
            catch error:badarg -> undefined
            end,
    case Flags of
        {flags, L} -> lists:member(garbage_collection, L);
        _ -> false
    end.

legacy_where(new) -> new_processes;
legacy_where(Pid) -> Pid.

gc_defect_error(Req, {Session, Where}) ->
    {otp_gc_multi_session_defect,
     #{request => Req,
       other_session => Session,
       traced => Where,
       erts => list_to_binary(erlang:system_info(version)),
       why => <<"two trace sessions tracing garbage_collection on the same process make this VM "
                "use freed memory at that process's next garbage collection and can crash it "
                "(erlang/otp issue #11624, fixed by PR #11623, present since OTP 27.0); another "
                "session already traces garbage collection here">>,
       fix => <<"stop the other session's garbage_collection tracing (dbg, tprof, a legacy "
                "erlang:trace/3 user), or run a VM with the fix and set the beamtrace "
                "application environment gc_multi_session_fixed to true">>}}.

%% The first erts of each erts branch that carries erlang/otp PR #11623, as
%% {Branch, FirstFixed} integer lists, e.g. {[15, 2], [15, 2, 7, 5]}. None
%% was released when this was written (issue #11624: OTP 27, 28, 29 and
%% master affected; measured: 27.3.4.1 aborted 5 runs of 5). Add a pair
%% per branch as patch releases appear.
-define(GC_MULTI_SESSION_FIXED_ERTS, []).

erts_has_gc_multi_session_fix(Vsn) ->
    V = [list_to_integer(X) || X <- string:lexemes(Vsn, ".")],
    lists:any(fun({Branch, First}) -> lists:prefix(Branch, V) andalso V >= First end,
              ?GC_MULTI_SESSION_FIXED_ERTS).

%%% Internals


%% Calls the handle's process; {error, closed} once it is gone. No timeout:
%% a pattern on every function of a large node can take seconds.
call(H, Req) ->
    try gen_server:call(H, Req, infinity)
    catch exit:{noproc, _} -> {error, closed};
          exit:{normal, _} -> {error, closed}
    end.

info_map(#st{backend = session} = St) ->
    #{backend => session, tracer => St#st.tracer, owner => St#st.owner,
      session => St#st.session_id};
info_map(#st{backend = legacy} = St) ->
    #{backend => legacy, tracer => St#st.tracer, owner => St#st.owner,
      process_flags => St#st.proc_flags, port_flags => St#st.port_flags,
      patterns => [MFA || {MFA, _} <- St#st.patterns],
      event_patterns => maps:keys(St#st.events)}.
