%% @doc What beamtrace:trace/2 traces, parsed: call specs in Erlang's or
%% Elixir's spelling (`M:F/A', `M:F/A -> return', `Mod.fun/2', `{M, F, A}')
%% and kinds of events (procs, send, 'receive', ...). Runs where the trace
%% runs (shipped by `beamtrace record'): beamtrace_trace's first step.
-module(beamtrace_trace_spec).

-export([parse/1, parse_for/2]).

-define(KINDS, [procs, send, 'receive', running, garbage_collection, ports, call]).

%%% Spec parsing

%% An empty spec traces nothing, which is fine when a session source
%% (system_monitor, samples, ...) is what the caller wants recorded.
parse_for(Spec, Opts) ->
    case {parse(Spec), is_map(Opts) andalso has_source(Opts)} of
        {{error, {badspec, [], _}}, true} -> {ok, #{calls => [], kinds => []}};
        {Parsed, _} -> Parsed
    end.

has_source(Opts) ->
    lists:any(fun(K) -> not lists:member(maps:get(K, Opts, false), [false, #{}, []]) end,
              [system_monitor, samples, distribution, file_io, ets]).

%% @doc Parses a spec: `{ok, #{calls => [{M, F, A, Return, Text}], kinds =>
%% [Kind]}}' or `{error, {badspec, Item, Why}}'.
-spec parse(beamtrace_trace:spec()) -> {ok, map()} | {error, term()}.
parse(Spec) ->
    Items = case Spec of
                [] -> [];
                _ when is_list(Spec) ->
                    case io_lib:printable_unicode_list(Spec) of
                        true -> [Spec];
                        false -> Spec
                    end;
                _ -> [Spec]
            end,
    parse_items(Items, [], []).

parse_items([], [], []) ->
    {error, {badspec, [], "nothing to trace: give a call spec such as \"my_mod:handle_call/3\" "
                          "or an event kind (procs, send, 'receive', running, "
                          "garbage_collection, ports)"}};
parse_items([], Calls, Kinds) ->
    {ok, #{calls => lists:reverse(Calls), kinds => lists:usort(Kinds)}};
parse_items([Kind | Rest], Calls, Kinds) when is_atom(Kind) ->
    case lists:member(Kind, ?KINDS) of
        true -> parse_items(Rest, Calls, [Kind | Kinds]);
        false -> {error, {badspec, Kind, "unknown event kind (procs, send, 'receive', running, "
                                         "garbage_collection, ports, call)"}}
    end;
parse_items([Item | Rest], Calls, Kinds) ->
    case parse_call(Item) of
        {ok, Call} -> parse_items(Rest, [Call | Calls], Kinds);
        {error, Why} -> {error, {badspec, Item, Why}}
    end;
parse_items(Other, _, _) ->
    {error, {badspec, Other, "not a list"}}.

parse_call({M, F, A}) ->
    parse_call({M, F, A, call});
parse_call({M, F, A, Action} = T) when is_atom(M), is_atom(F) ->
    Text = lists:flatten(io_lib:format("~p", [T])),
    case check_mfa(M, F, A) of
        ok when Action =:= return -> {ok, {M, F, A, true, Text}};
        ok when Action =:= call -> {ok, {M, F, A, false, Text}};
        ok -> {error, "the fourth element may only be return"};
        Error -> Error
    end;
parse_call(Bin) when is_binary(Bin) ->
    case unicode:characters_to_list(Bin) of
        L when is_list(L) -> parse_call(L);
        _ -> {error, "not UTF-8"}
    end;
parse_call(S) when is_list(S) ->
    case io_lib:printable_unicode_list(S) of
        false -> {error, "not a string, an MFA tuple or an event kind"};
        true -> parse_call_text(S)
    end;
parse_call(_) ->
    {error, "not a string, an MFA tuple or an event kind"}.

parse_call_text(S) ->
    {MfaText, Action} = case string:split(S, "->") of
                            [Mfa, Act] -> {Mfa, string:trim(Act)};
                            [Mfa] -> {Mfa, none}
                        end,
    case {parse_mfa(string:trim(MfaText)), Action} of
        {{ok, {M, F, A}}, none} -> {ok, {M, F, A, false, S}};
        {{ok, {M, F, A}}, "return"} -> {ok, {M, F, A, true, S}};
        {{ok, _}, Other} ->
            {error, "unknown action \"" ++ Other ++ "\" after '->' (only \"return\"; "
                    "for timing without return_trace, see the return_to option)"};
        {Error, _} -> Error
    end.

%% "m", "m:f", "m:f/3", "m:f/_", "m:'_'/2", quoted atoms anywhere; or
%% Elixir's spelling (elixir/1).
parse_mfa([C | _] = S) when C >= $A, C =< $Z; C =:= $: ->
    elixir(S);
parse_mfa(S) ->
    case atom_text(S) of
        {ok, M, ""} -> mfa(M, '_', '_');
        {ok, M, ":" ++ R1} ->
            case atom_text(R1) of
                {ok, F, ""} -> mfa(M, F, '_');
                {ok, F, "/" ++ R2} -> arity(M, F, string:trim(R2));
                {ok, _, _} -> {error, "expected module:function/arity"};
                Error -> Error
            end;
        {ok, _, _} -> {error, "expected module:function/arity"};
        Error -> Error
    end.

arity(M, F, A) when A =:= "_"; A =:= "'_'" ->
    mfa(M, F, '_');
arity(M, F, A) ->
    case string:to_integer(A) of
        {N, ""} when N >= 0, N =< 255 -> mfa(M, F, N);
        _ -> {error, "the arity must be an integer 0..255 or _"}
    end.

mfa(M, F, A) ->
    case check_mfa(M, F, A) of
        ok -> {ok, {M, F, A}};
        Error -> Error
    end.

check_mfa('_', _, _) ->
    {error, "a module is needed (tracing every module is a tsunami)"};
check_mfa(M, F, A) when is_atom(M), is_atom(F),
                        (A =:= '_' orelse (is_integer(A) andalso A >= 0 andalso A =< 255)) ->
    ok;
check_mfa(_, _, _) ->
    {error, "expected {Module, Function, Arity}, '_' allowed for Function and Arity"}.

%% Elixir's spelling: "MyApp.Worker.run/1", "MyApp.Worker.run" (any
%% arity), "MyApp.Worker" (every function), "MyApp.Worker.valid?/1"; an
%% Erlang module as Elixir writes it, ":ets.lookup/2". Module segments are
%% capitalised, the function is the last segment when it is not.
elixir(S) ->
    {Path, Arity} = case string:split(S, "/", trailing) of
                        [P, A] -> {P, {arity, string:trim(A)}};
                        [P] -> {P, any}
                    end,
    {Mod, Fun} =
        case Path of
            ":" ++ Erl ->
                case string:split(Erl, ".") of
                    [M, F] when M =/= "", F =/= "" -> {{ok, list_to_atom(M)}, {ok, list_to_atom(F)}};
                    [M] when M =/= "" -> {{ok, list_to_atom(M)}, none};
                    _ -> {error, error}
                end;
            _ ->
                Segs = string:split(Path, ".", all),
                {Mods, Funs} = lists:splitwith(fun([C | _]) -> C >= $A andalso C =< $Z;
                                                  ([]) -> false
                                               end, Segs),
                case {Mods, Funs} of
                    {[_ | _], []} -> {{ok, elixir_module(Mods)}, none};
                    {[_ | _], [F]} when F =/= "" -> {{ok, elixir_module(Mods)}, {ok, list_to_atom(F)}};
                    _ -> {error, error}
                end
        end,
    case {Mod, Fun, Arity} of
        {{ok, M1}, none, any} -> mfa(M1, '_', '_');
        {{ok, M1}, {ok, F1}, any} -> mfa(M1, F1, '_');
        {{ok, M1}, {ok, F1}, {arity, A1}} -> arity(M1, F1, A1);
        _ -> {error, "expected Module.function/arity in Elixir's spelling (MyApp.Worker.run/1, "
                     ":ets.lookup/2) or module:function/arity"}
    end.

elixir_module(Segs) ->
    list_to_atom(lists:flatten(["Elixir." | lists:join(".", Segs)])).

%% A quoted atom ('...' with \ escapes) or a run of characters up to ':',
%% '/' or white space; "_" is the wildcard.
atom_text([$' | R]) ->
    quoted(R, []);
atom_text(S) ->
    {Name, Rest} = lists:splitwith(fun(C) -> not lists:member(C, ":/ \t") end, S),
    case Name of
        "" -> {error, "expected module:function/arity"};
        "_" -> {ok, '_', string:trim(Rest, leading)};
        _ -> {ok, list_to_atom(Name), string:trim(Rest, leading)}
    end.

quoted([$\\, C | R], Acc) -> quoted(R, [C | Acc]);
quoted([$' | R], Acc) -> {ok, list_to_atom(lists:reverse(Acc)), string:trim(R, leading)};
quoted([C | R], Acc) -> quoted(R, [C | Acc]);
quoted([], _) -> {error, "unterminated quoted atom"}.
