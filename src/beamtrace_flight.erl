%% @doc The flight recorder: a recording left on that writes a capture, a
%% trace of its own, around each moment that matters (beamtrace:flight/2,
%% docs/flight-recorder.md).
%%
%% ```
%% %% Catch the next slow kv:get/2, with the 10 s that led to it:
%% {ok, F} = beamtrace:flight("kv:get/2 -> return",
%%                            #{triggers => ["kv:get/2>10ms"], window => 10000}),
%% ...,
%% {ok, #{captures := [Capture | _]}} = beamtrace:stop_flight(F).
%% %% then, in a shell: beamtrace calls --breakdown Capture
%% '''
%%
%% == Structure ==
%% A controller process (this module) owns one trace/2 recording
%% (beamtrace_trace:trace_async/2 with `mode => overwrite', the captures
%% and the triggers in the session's `flight' option, `duration => until'),
%% so every guard rail of trace/2 applies. Triggers are decided where they
%% are seen: a call's return in the tracer (a meta trace pattern whose
%% tracer state is the trigger, through a beamtrace_tracing handle of its
%% own), a system monitor report in the session's sources helper
%% (beamtrace_sources, which hands it to the NIF), beamtrace:trigger/1 in
%% the NIF, a message queue in this controller (sampled). The captures are
%% written by the session's consumer thread. The controller stops with the
%% recording (until, a cap), on stop/1, or when its owner exits; the
%% recording's controller is linked to nothing but watches this one: if
%% this one is killed, it takes the recording down.
-module(beamtrace_flight).

-export([start/2, stop/1, info/1, parse_trigger/1, captures/1, sealed/2]).
%% The controller process.
-export([init/3]).

-export_type([flight/0, trigger/0]).

-opaque flight() :: pid().
-type trigger() :: {call, mfa(), pos_integer()}            %% bound in ns
                 | {long_gc | long_schedule, pos_integer()} %% ms
                 | {large_heap, pos_integer()}              %% words
                 | busy_port | busy_dist_port
                 | {long_message_queue, {non_neg_integer(), pos_integer()}}
                 | probe | {probe, binary()}
                 | {message_queue, pos_integer()}.

-define(OWN, [window, 'after', triggers, max_captures, until, sample_interval, owner]).
-define(DEFAULT_WINDOW_MS, 10000).
-define(DEFAULT_AFTER_MS, 1000).
-define(DEFAULT_UNTIL_MS, (7 * 24 * 3600 * 1000)).
-define(DEFAULT_MAX_CAPTURES, 6).
-define(DEFAULT_SAMPLE_MS, 1000).
%% Processes whose queue length is read per sampling interval, at most.
-define(SAMPLE_BUDGET, 20000).
-define(MAX_WINDOW_MS, (24 * 3600 * 1000)).

%%% API

%% @doc See beamtrace:flight/2.
-spec start(beamtrace_trace:spec(), map() | list()) -> {ok, flight()} | {error, term()}.
start(Spec, Opts) when is_list(Opts) ->
    try maps:from_list(Opts) of
        Map -> start(Spec, Map)
    catch error:_ -> {error, {badopt, Opts}}
    end;
start(Spec, Opts) when is_map(Opts) ->
    case options(Opts) of
        {ok, Own, TraceOpts} ->
            Caller = self(),
            Ref = make_ref(),
            {Pid, Mon} = spawn_monitor(?MODULE, init, [Caller, Ref, {Spec, Own, TraceOpts}]),
            beamtrace_trace:await_start(Ref, Pid, Mon);
        Error ->
            Error
    end;
start(_Spec, _Opts) ->
    {error, {badopt, options}}.

%% @doc Stops the recording now: trace/2's result, with `captures' (the
%% capture directories, oldest first) and `flight' (the capture figures).
-spec stop(flight()) -> {ok, map()} | {error, term()}.
stop(F) when is_pid(F) ->
    case call(F, stop) of
        {ok, Result} ->
            Result;
        {error, not_running} ->
            receive {beamtrace_flight, F, Result} -> Result
            after 0 -> {error, not_running}
            end
    end.

%% @doc Live figures: trace_info/1's, `captures', `flight' (the capture
%% figures), `triggers', `until_ms' (left).
-spec info(flight()) -> map() | {error, not_running}.
info(F) when is_pid(F) ->
    case call(F, info) of
        {ok, Info} -> Info;
        Error -> Error
    end.

%% @doc The capture directories in a flight recording's directory, oldest
%% first.
-spec captures(file:name_all()) -> [binary()].
captures(Dir) ->
    D = unicode:characters_to_binary(Dir),
    case file:list_dir(D) of
        {ok, Names} ->
            Caps = [{capture_number(N), N} || N0 <- Names,
                                               N <- [unicode:characters_to_binary(N0)],
                                               capture_number(N) =/= undefined,
                                               filelib:is_dir(filename:join(D, N))],
            [filename:join(D, N) || {_, N} <- lists:sort(Caps)];
        {error, _} ->
            []
    end.

%% @doc Whether capture directory Dir is sealed (complete), IsFile telling
%% whether a file in it is a regular file (here or on another node). A
%% capture being written has its incomplete marker from before its
%% metadata is written until it is sealed (core/trace_dir.c), so: the
%% metadata first, then no marker; in that order, since the marker goes
%% only once the trace is whole.
-spec sealed(file:name_all(), fun((file:name_all()) -> boolean())) -> boolean().
sealed(Dir, IsFile) ->
    IsFile(filename:join(Dir, "metadata")) andalso
        not IsFile(filename:join(Dir, "channel0_incomplete")).

capture_number(<<"capture-", Rest/binary>>) ->
    case binary:split(Rest, <<"-">>) of
        [N, _] ->
            try binary_to_integer(N) catch error:badarg -> undefined end;
        _ -> undefined
    end;
capture_number(_) ->
    undefined.

%%% Triggers

%% @doc Parses one trigger, as the command spells it
%% (`"kv:get/2>10ms"', `"long_gc=50ms"', `"large_heap=1000000"',
%% `"busy_port"', `"busy_dist_port"', `"long_message_queue=100/1000"',
%% `"probe"', `"probe=checkout"', `"message_queue=10000"') or as a
%% trigger() tuple. `{ok, trigger()}' or `{error, {badtrigger, T, Why}}'.
-spec parse_trigger(term()) -> {ok, trigger()} | {error, term()}.
parse_trigger(T) when is_binary(T) ->
    case unicode:characters_to_list(T) of
        L when is_list(L) -> parse_trigger(L);
        _ -> {error, {badtrigger, T, "not UTF-8"}}
    end;
parse_trigger([C | _] = T) when is_integer(C) ->
    case io_lib:printable_unicode_list(T) of
        true -> text_trigger(string:trim(T), T);
        false -> {error, {badtrigger, T, "not a trigger"}}
    end;
parse_trigger(T) ->
    case check_trigger(T) of
        ok -> {ok, T};
        {error, Why} -> {error, {badtrigger, T, Why}}
    end.

text_trigger(S, Orig) ->
    Result = case string:split(S, ">") of
                 [Mfa, Bound] -> call_trigger(string:trim(Mfa), string:trim(Bound));
                 [_] ->
                     case string:split(S, "=") of
                         [K, V] -> kv_trigger(string:trim(K), string:trim(V));
                         [K] -> word_trigger(K)
                     end
             end,
    case Result of
        {ok, T} ->
            case check_trigger(T) of
                ok -> {ok, T};
                {error, Why} -> {error, {badtrigger, Orig, Why}}
            end;
        {error, Why} -> {error, {badtrigger, Orig, Why}}
    end.

call_trigger(MfaText, BoundText) ->
    case {beamtrace_trace_spec:parse(MfaText), duration_ns(BoundText)} of
        {{ok, #{calls := [{M, F, A, _, _}]}}, {ok, Ns}} -> {ok, {call, {M, F, A}, Ns}};
        {{ok, _}, {ok, _}} -> {error, "expected Module:Function/Arity>Bound"};
        {{error, {badspec, _, Why}}, _} -> {error, Why};
        {_, {error, Why}} -> {error, Why}
    end.

kv_trigger(K, V) when K =:= "long_gc"; K =:= "long_schedule" ->
    case duration_ns(V) of
        {ok, Ns} when Ns >= 1000000 -> {ok, {list_to_atom(K), Ns div 1000000}};
        {ok, _} -> {error, "the system monitor counts whole milliseconds (1ms or more)"};
        Error -> Error
    end;
kv_trigger("large_heap", V) ->
    count_trigger(large_heap, V, "large_heap=Words");
kv_trigger("message_queue", V) ->
    count_trigger(message_queue, V, "message_queue=Messages");
kv_trigger("long_message_queue", V) ->
    case string:split(V, "/") of
        [D, E] ->
            case {string:to_integer(D), string:to_integer(E)} of
                {{Di, ""}, {Ei, ""}} -> {ok, {long_message_queue, {Di, Ei}}};
                _ -> {error, "expected long_message_queue=Disable/Enable (queue lengths)"}
            end;
        _ -> {error, "expected long_message_queue=Disable/Enable (queue lengths)"}
    end;
kv_trigger("probe", "") ->
    {error, "probe=Label needs a label"};
kv_trigger("probe", Label) ->
    {ok, {probe, unicode:characters_to_binary(Label)}};
kv_trigger(K, _) ->
    {error, "unknown trigger " ++ K ++ " (" ++ kinds_text() ++ ")"}.

word_trigger("busy_port") -> {ok, busy_port};
word_trigger("busy_dist_port") -> {ok, busy_dist_port};
word_trigger("probe") -> {ok, probe};
word_trigger(K) when K =:= "long_gc"; K =:= "long_schedule"; K =:= "large_heap";
                     K =:= "message_queue"; K =:= "long_message_queue" ->
    {error, K ++ " needs its bound (" ++ K ++ "=...)"};
word_trigger(K) ->
    {error, "unknown trigger " ++ K ++ " (" ++ kinds_text() ++ ")"}.

kinds_text() ->
    "Mod:Fun/Arity>15ms, long_gc=50ms, long_schedule=50ms, large_heap=Words, busy_port, "
    "busy_dist_port, long_message_queue=D/E, probe, probe=Label, message_queue=N".

count_trigger(Kind, V, Form) ->
    case string:to_integer(V) of
        {N, ""} when N > 0 -> {ok, {Kind, N}};
        _ -> {error, "expected " ++ Form ++ " (a positive integer)"}
    end.

%% "15ms", "1.5s", "500us", "200ns": a duration with its unit.
duration_ns(Text) ->
    {Num, Unit} = lists:splitwith(fun(C) -> (C >= $0 andalso C =< $9) orelse C =:= $. end, Text),
    Scale = case string:trim(Unit) of
                "ns" -> 1;
                "us" -> 1000;
                "ms" -> 1000000;
                "s" -> 1000000000;
                _ -> undefined
            end,
    Value = case {string:to_integer(Num), string:to_float(Num)} of
                {{I, ""}, _} -> I;
                {_, {F, ""}} -> F;
                _ -> undefined
            end,
    if
        Scale =:= undefined; Value =:= undefined ->
            {error, "a duration needs its unit: 15ms, 1.5s, 500us, 200ns"};
        Value * Scale < 1 ->
            {error, "the bound must be positive"};
        true ->
            {ok, round(Value * Scale)}
    end.

check_trigger({call, {M, F, A}, Ns}) when is_atom(M), is_atom(F), is_integer(A), A >= 0,
                                          A =< 255, is_integer(Ns), Ns > 0 ->
    case M =:= '_' orelse F =:= '_' of
        true -> {error, "a call trigger names one function: Module:Function/Arity"};
        false -> ok
    end;
check_trigger({call, _, _}) ->
    {error, "a call trigger names one function: Module:Function/Arity>Bound"};
check_trigger({K, Ms}) when (K =:= long_gc orelse K =:= long_schedule), is_integer(Ms), Ms > 0,
                           Ms < 1 bsl 32 ->
    ok;
check_trigger({K, N}) when (K =:= large_heap orelse K =:= message_queue), is_integer(N), N > 0,
                          N < 1 bsl 60 ->
    ok;
check_trigger({long_message_queue, {D, E}}) when is_integer(D), is_integer(E), D >= 0, E > D ->
    ok;
check_trigger(T) when T =:= busy_port; T =:= busy_dist_port; T =:= probe ->
    ok;
check_trigger({probe, L}) when is_binary(L), byte_size(L) > 0, byte_size(L) < 64 ->
    ok;
check_trigger({probe, L}) when is_atom(L) ->
    ok;
check_trigger(_) ->
    {error, "not a trigger (" ++ kinds_text() ++ ")"}.

%%% Options

options(Opts) ->
    Own = maps:with(?OWN, Opts),
    Rest = maps:without(?OWN, Opts),
    Window = maps:get(window, Own, ?DEFAULT_WINDOW_MS),
    After = maps:get('after', Own, ?DEFAULT_AFTER_MS),
    MaxCaptures = maps:get(max_captures, Own, ?DEFAULT_MAX_CAPTURES),
    Until = maps:get(until, Own, ?DEFAULT_UNTIL_MS),
    Interval = maps:get(sample_interval, Own, ?DEFAULT_SAMPLE_MS),
    Owner = maps:get(owner, Own, self()),
    if
        not (is_integer(Window) andalso Window > 0 andalso Window =< ?MAX_WINDOW_MS) ->
            {error, {badopt, window}};
        not (is_integer(After) andalso After > 0 andalso After =< ?MAX_WINDOW_MS) ->
            {error, {badopt, 'after'}};
        not (MaxCaptures =:= infinity orelse
             (is_integer(MaxCaptures) andalso MaxCaptures > 0 andalso MaxCaptures =< 3600)) ->
            {error, {badopt, max_captures}};
        not (is_integer(Until) andalso Until > 0) ->
            {error, {badopt, until}};
        not (is_integer(Interval) andalso Interval > 0) ->
            {error, {badopt, sample_interval}};
        not is_pid(Owner) ->
            {error, {badopt, owner}};
        true ->
            case maps:get(mode, Rest, overwrite) of
                overwrite ->
                    case parse_triggers(maps:get(triggers, Own, [])) of
                        {ok, Triggers} ->
                            trace_options(Rest, Triggers, #{window => Window, 'after' => After,
                                                            max_captures => MaxCaptures,
                                                            until => Until, owner => Owner,
                                                            sample_interval => Interval});
                        Error ->
                            Error
                    end;
                _ ->
                    {error, {badopt, mode}}
            end
    end.

parse_triggers([]) ->
    {error, {badopt, triggers}};
parse_triggers(L) when is_list(L) ->
    case io_lib:printable_unicode_list(L) of
        true -> parse_triggers([L]);
        false -> parse_each(L, [])
    end;
parse_triggers(T) ->
    parse_triggers([T]).

parse_each([], Acc) ->
    Triggers = lists:reverse(Acc),
    Kinds = [kind(T) || T <- Triggers, kind(T) =/= call],
    case Kinds -- lists:usort(Kinds) of
        [] -> {ok, Triggers};
        [K | _] -> {error, {badtrigger, K, "one trigger per kind"}}
    end;
parse_each([T | Rest], Acc) ->
    case parse_trigger(T) of
        {ok, P} -> parse_each(Rest, [P | Acc]);
        Error -> Error
    end.

kind({K, _, _}) -> K;
kind({K, _}) -> K;
kind(K) -> K.

%% The recording's options: overwrite rings, the captures and the NIF's
%% triggers in `flight', the system monitor settings the triggers need
%% (with the caller's own, the lower bound of each), the `until' as the
%% duration.
trace_options(Rest, Triggers, Own) ->
    Monitor = lists:foldl(fun monitor_setting/2, maps:get(system_monitor, Rest, #{}), Triggers),
    Nif = lists:usort([nif_trigger(T) || T <- Triggers]),
    Flight = #{window => maps:get(window, Own), 'after' => maps:get('after', Own),
               max_captures => maps:get(max_captures, Own), triggers => Nif},
    %% A flight recording left on through a traffic peak samples instead
    %% of stopping, unless told otherwise.
    Trace = maps:merge(#{on_max_rate => sample},
                       Rest#{mode => overwrite, duration => maps:get(until, Own), flight => Flight}),
    Trace1 = case map_size(Monitor) of
                 0 -> Trace;
                 _ -> Trace#{system_monitor => Monitor}
             end,
    {ok, Own#{triggers => Triggers}, Trace1}.

monitor_setting({K, V}, M) when K =:= long_gc; K =:= long_schedule; K =:= large_heap ->
    M#{K => min(V, maps:get(K, M, V))};
monitor_setting(K, M) when K =:= busy_port; K =:= busy_dist_port ->
    M#{K => true};
monitor_setting({long_message_queue, DE}, M) ->
    M#{long_message_queue => DE};
monitor_setting(_, M) ->
    M.

nif_trigger({call, _, _}) -> call;
nif_trigger({long_message_queue, _}) -> long_message_queue;
nif_trigger({probe, L}) when is_atom(L) -> {probe, atom_to_binary(L, utf8)};
nif_trigger(T) -> T.

%%% The controller

-record(st, {owner, owner_mon, reply_to, trace, trace_mon, session, dir, triggers,
             until_ms, started_ms, interval, mq_bound, mq_left = [], exclude = [],
             calls = [] :: [{mfa(), term(), beamtrace_tracing:handle()}], %% call triggers: MFA, trigger, handle
             reloads = 0}).                                 %% call trigger patterns set again
%% The call triggers' entries of processes that died inside the function
%% are freed this often, once their call is that old.
-define(SWEEP_MS, 60000).
-define(CALL_MS, [{'_', [], [{return_trace}, {exception_trace}]}]).
%% How often the call triggers' patterns are looked at: a hot code load of
%% their module drops them, and they are set again on the new code.
-define(PATTERN_CHECK_MS, 1000).

%% @private
-spec init(pid(), reference(), {term(), map(), map()}) -> ok.
init(Caller, Ref, {Spec, Own, TraceOpts}) ->
    beamtrace_label:set_label(beamtrace_flight),
    Owner = maps:get(owner, Own),
    OwnerMon = monitor(process, Owner),
    Exclude = [self() | maps:get(exclude, TraceOpts, [])],
    case beamtrace_trace:trace_async(Spec, TraceOpts#{owner => self(), exclude => Exclude}) of
        {ok, T} ->
            #{session := S, dir := Dir} = beamtrace:trace_info(T),
            Triggers = maps:get(triggers, Own),
            St0 = #st{owner = Owner, owner_mon = OwnerMon, reply_to = Caller, trace = T,
                      trace_mon = beamtrace_trace:monitor(T), session = S, dir = Dir,
                      triggers = Triggers, until_ms = maps:get(until, Own),
                      started_ms = erlang:monotonic_time(millisecond),
                      interval = maps:get(sample_interval, Own),
                      mq_bound = proplists:get_value(message_queue, Triggers),
                      exclude = Exclude},
            case call_triggers([T1 || {call, _, _} = T1 <- Triggers], St0) of
                {ok, St} ->
                    _ = St#st.mq_bound =/= undefined andalso
                        erlang:send_after(St#st.interval, self(), sample),
                    _ = St#st.calls =/= [] andalso erlang:send_after(?SWEEP_MS, self(), sweep),
                    _ = St#st.calls =/= [] andalso
                        erlang:send_after(?PATTERN_CHECK_MS, self(), patterns),
                    Caller ! {Ref, started},
                    loop(St);
                {error, _} = Error ->
                    demonitor(St0#st.trace_mon, [flush]),
                    _ = beamtrace:stop_trace(T),
                    _ = file:del_dir_r(Dir),
                    Caller ! {Ref, Error},
                    ok
            end;
        {error, _} = Error ->
            Caller ! {Ref, Error},
            ok
    end.

loop(#st{trace = T} = St) ->
    receive
        {beamtrace_trace, T, Result} ->
            %% The recording ended by itself: until, or a cap.
            demonitor(St#st.trace_mon, [flush]),
            Calls = call_figures(St),
            close_calls(St),
            Final = case result(St, Result) of
                        {ok, R} -> {ok, with_calls(R, Calls)};
                        Other -> Other
                    end,
            St#st.reply_to ! {beamtrace_flight, self(), Final},
            ok;
        sample ->
            erlang:send_after(St#st.interval, self(), sample),
            loop(sample(St));
        patterns ->
            erlang:send_after(?PATTERN_CHECK_MS, self(), patterns),
            loop(reapply(St));
        sweep ->
            erlang:send_after(?SWEEP_MS, self(), sweep),
            _ = [beamtrace:flight_call_sweep_nif(Trig, ?SWEEP_MS) || {_, Trig, _} <- St#st.calls],
            loop(St);
        {From, Ref, stop} ->
            From ! {Ref, {ok, finish(St)}},
            ok;
        {From, Ref, info} ->
            From ! {Ref, {ok, live_info(St)}},
            loop(St);
        {'DOWN', Ref, process, _, _} when Ref =:= St#st.owner_mon ->
            _ = finish(St),
            ok;
        {'DOWN', Ref, process, _, Why} when Ref =:= St#st.trace_mon ->
            close_calls(St),
            St#st.reply_to ! {beamtrace_flight, self(), {error, {trace_down, Why}}},
            ok;
        _ ->
            loop(St)
    end.

finish(St) ->
    demonitor(St#st.trace_mon, [flush]),
    Calls = call_figures(St),
    close_calls(St),
    case result(St, beamtrace:stop_trace(St#st.trace)) of
        {ok, R} -> {ok, with_reloads(with_calls(R, Calls), St)};
        {error, {Posix, R}} when is_map(R) -> {error, {Posix, with_calls(R, Calls)}};
        Error -> Error
    end.

with_calls(R, []) -> R;
with_calls(R, Calls) -> R#{call_triggers => Calls}.

with_reloads(R, #st{reloads = 0}) -> R;
with_reloads(R, #st{reloads = N}) -> R#{trigger_patterns_reapplied => N}.

%% The call triggers: a trigger each (the NIF's resource, which holds
%% its slot while this process keeps it), whose small integer names it as
%% the tracer state of a meta trace pattern on its function, set through a tracing
%% handle of its own (on OTP 27+ a trace session of its own, whose tracer
%% is that state).
call_triggers([], St) ->
    {ok, St};
call_triggers([{call, {M, _, _} = MFA, Ns} | Rest], #st{session = S} = St) ->
    Text = lists:flatten(io_lib:format("~tw:~tw/~b", tuple_to_list(MFA))),
    Result = case code:ensure_loaded(M) of
                 {module, M} ->
                     case beamtrace:flight_call_trigger_nif(S, MFA, Ns) of
                         {ok, Trig, State} ->
                             %% State, a small integer, names Trig's slot:
                             %% an immediate is what the VM copies and
                             %% compares cheapest on every call.
                             case beamtrace_tracing:open(#{tracer_state => State, owner => self(),
                                                           name => beamtrace_flight}) of
                                 {ok, H} ->
                                     case beamtrace_tracing:function(H, MFA, ?CALL_MS, [meta]) of
                                         {ok, N} when N > 0 -> {ok, {MFA, Trig, H}};
                                         {ok, 0} ->
                                             beamtrace_tracing:close(H),
                                             {error, {trigger, {no_match, Text}}};
                                         Error ->
                                             beamtrace_tracing:close(H),
                                             Error
                                     end;
                                 Error -> Error
                             end;
                         Error -> Error
                     end;
                 _ ->
                     {error, {trigger, {not_loaded, M}}}
             end,
    case Result of
        {ok, Call} ->
            call_triggers(Rest, St#st{calls = [Call | St#st.calls]});
        {error, _} = Err ->
            close_calls(St),
            Err
    end.

%% A call trigger's pattern gone (a hot code load of its module replaced
%% the code it was set on): set again on the new code, and counted.
reapply(St) ->
    lists:foldl(fun({MFA, _Trig, H}, Acc) ->
                        case beamtrace_tracing:function_info(H, MFA, meta) of
                            {meta, {beamtrace, _}} ->
                                Acc;
                            _ ->
                                _ = beamtrace_tracing:function(H, MFA, ?CALL_MS, [meta]),
                                Acc#st{reloads = Acc#st.reloads + 1}
                        end
                end, St, St#st.calls).

close_calls(St) ->
    _ = [beamtrace_tracing:close(H) || {_, _, H} <- St#st.calls],
    ok.

%% Each call trigger's figures: calls seen, slow ones, unmeasured
%% (no room), unmatched returns, calls deeper than timed, calls in
%% progress.
call_figures(St) ->
    [{MFA, maps:without([swept], beamtrace:flight_call_sweep_nif(Trig, 1 bsl 50))}
     || {MFA, Trig, _} <- St#st.calls].

result(St, {ok, Stats}) ->
    {ok, with_captures(St, Stats)};
result(St, {error, {Posix, Stats}}) when is_map(Stats) ->
    {error, {Posix, with_captures(St, Stats)}};
result(_St, Error) ->
    Error.

with_captures(St, Stats) ->
    Stats#{captures => captures(St#st.dir), triggers => St#st.triggers}.

live_info(#st{trace = T, session = S} = St) ->
    Info = case beamtrace:trace_info(T) of
               M when is_map(M) -> maps:without([session], M);
               _ -> #{}
           end,
    Flight = case beamtrace:flight_info_nif(S) of
                 F when is_map(F) -> F;
                 _ -> #{}
             end,
    Elapsed = erlang:monotonic_time(millisecond) - St#st.started_ms,
    with_reloads(with_calls(Info#{captures => captures(St#st.dir), flight => Flight,
                                  triggers => St#st.triggers,
                                  until_ms => max(0, St#st.until_ms - Elapsed)},
                            call_figures(St)), St).

%% Queue lengths, sampled: at most ?SAMPLE_BUDGET processes a turn, the
%% next turn going on where this one stopped.
sample(#st{mq_left = [], exclude = Exclude} = St) ->
    sample(St#st{mq_left = erlang:processes() -- Exclude}, ?SAMPLE_BUDGET);
sample(St) ->
    sample(St, ?SAMPLE_BUDGET).

sample(#st{mq_left = []} = St, _) ->
    St;
sample(St, 0) ->
    St;
sample(#st{mq_left = [P | Rest], mq_bound = Bound, session = S} = St, N) ->
    case erlang:process_info(P, message_queue_len) of
        {message_queue_len, L} when L >= Bound ->
            Where = case erlang:process_info(P, current_function) of
                        {current_function, MFA} -> MFA;
                        _ -> undefined
                    end,
            _ = beamtrace:flight_offer_nif(S, message_queue, L, P, Where);
        _ ->
            ok
    end,
    sample(St#st{mq_left = Rest}, N - 1).

%%% Internals


call(F, Req) ->
    Ref = monitor(process, F),
    F ! {self(), Ref, Req},
    receive
        {Ref, Reply} ->
            demonitor(Ref, [flush]),
            Reply;
        {'DOWN', Ref, process, F, _} ->
            {error, not_running}
    end.

