%% Runs every exported 0-arity function ending in `_test' of the given
%% modules, in source order, each in its own process with a timeout, and
%% prints one TAP line per test (or per sub-result):
%%   ok - Module:Function
%%   ok - Module:Function # SKIP reason
%%   not ok - Module:Function   followed by "# " diagnostic lines
%% A test passes by returning; it may return {skip, Reason}, or
%% {results, [{SubName, ok | {skip, Reason} | {fail, Reason}}]} for several
%% TAP lines. Halts with status 1 when any test failed.
-module(bmt_test_runner).
-export([main/1]).

%% Per test; BMT_TEST_TIMEOUT_MS for long runs (the flight group's
%% 10-minute Riak-like run).
-define(TIMEOUT, list_to_integer(os:getenv("BMT_TEST_TIMEOUT_MS", "90000"))).

main(Mods) ->
    io:format("# node: otp_release ~s, erts ~s~n",
              [erlang:system_info(otp_release), erlang:system_info(version)]),
    Failed = lists:foldl(fun(M, F) -> F + run_module(list_to_atom(M)) end, 0, Mods),
    halt(case Failed of 0 -> 0; _ -> 1 end).

run_module(M) ->
    {module, M} = code:ensure_loaded(M),
    Tests = tests(M),
    Only = case os:getenv("BMT_ONLY") of
               false -> any;
               "" -> any;
               O -> [list_to_atom(X) || X <- string:tokens(O, ",")]
           end,
    lists:sum([run_test(M, F) || F <- Tests, Only =:= any orelse lists:member(F, Only)]).

%% Source order: the order of the functions in the abstract code's
%% line numbers would need debug_info; module_info(functions) keeps source
%% order for compiled code.
tests(M) ->
    [F || {F, 0} <- M:module_info(functions),
          lists:suffix("_test", atom_to_list(F)),
          erlang:function_exported(M, F, 0)].

run_test(M, F) ->
    Name = lists:flatten(io_lib:format("~p:~p", [M, F])),
    Self = self(),
    {Pid, Ref} = spawn_monitor(fun() ->
        R = try M:F() of
                V -> {returned, V}
            catch C:E:St -> {crashed, C, E, St}
            end,
        Self ! {self(), R}
    end),
    Result = receive
                 {Pid, R} ->
                     erlang:demonitor(Ref, [flush]),
                     R;
                 {'DOWN', Ref, _, _, Why} ->
                     {crashed, exit, Why, []}
             after ?TIMEOUT ->
                 exit(Pid, kill),
                 {crashed, timeout, ?TIMEOUT, []}
             end,
    bmt_test_lib:cleanup(),
    report(Name, Result).

report(Name, {returned, {skip, Why}}) ->
    io:format("ok - ~s # SKIP ~s~n", [Name, reason_text(Why)]), 0;
report(Name, {returned, {results, Subs}}) ->
    lists:sum([report(Name ++ " " ++ to_text(Sub), sub(R)) || {Sub, R} <- Subs]);
report(Name, {returned, _}) ->
    io:format("ok - ~s~n", [Name]), 0;
report(Name, {crashed, C, E, St}) ->
    io:format("not ok - ~s~n", [Name]),
    Text = lists:flatten(io_lib:format("~p:~P~n~P", [C, E, 60, St, 30])),
    [io:format("#   ~s~n", [L]) || L <- string:split(Text, "\n", all)],
    1.

sub(ok) -> {returned, ok};
sub({skip, W}) -> {returned, {skip, W}};
sub({fail, W}) -> {crashed, error, W, []}.

reason_text(W) when is_list(W) -> W;
reason_text(W) -> io_lib:format("~p", [W]).

to_text(A) when is_atom(A) -> atom_to_list(A);
to_text(L) when is_list(L) -> L;
to_text(X) -> lists:flatten(io_lib:format("~p", [X])).
