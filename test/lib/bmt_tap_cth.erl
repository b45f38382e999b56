%% A Common Test hook that prints one TAP line per test case on standard
%% output as it ends, the form test/run_all.sh counts:
%%   ok - Suite:Case                    passed
%%   ok - Suite:Group:Case # SKIP why   skipped (by the case, its group or suite)
%%   not ok - Suite:Case                failed, then "#   " lines saying why
%% Group names are those of the innermost group; Suite:Group:Case is also
%% what `make test-GROUP T=...` takes, so a failed line can be run again as
%% printed. A configuration function that fails (init_per_suite,
%% init_per_group, end_per_*) gets its own "not ok" line; the cases it
%% takes down are then reported as skipped with that reason, so a failure
%% is counted once.
%%
%% Installed by test/lib/bmt_ct_main.erl (`make test`); `rebar3 ct` keeps
%% its own report.
-module(bmt_tap_cth).

-export([id/1, init/2, post_end_per_testcase/5, on_tc_fail/4, on_tc_skip/4, terminate/1]).

-define(CONFIG(TC), (TC =:= init_per_suite orelse TC =:= end_per_suite orelse
                     element(1, TC) =:= init_per_group orelse element(1, TC) =:= end_per_group)).

-record(state, {passed = 0, failed = 0, skipped = 0}).

id(_Opts) -> ?MODULE.

init(_Id, _Opts) ->
    {ok, #state{}}.

%% Only passes are printed here: a failure or a skip comes to on_tc_fail/4
%% or on_tc_skip/4 afterwards, with the reason.
post_end_per_testcase(Suite, TC, Config, Return, State) ->
    case proplists:get_value(tc_status, Config) of
        ok ->
            Name = case proplists:get_value(name, proplists:get_value(tc_group_properties, Config, [])) of
                       undefined -> name(Suite, TC);
                       Group -> name(Suite, {TC, Group})
                   end,
            line("ok - ~ts", [Name]),
            {Return, State#state{passed = State#state.passed + 1}};
        _ ->
            {Return, State}
    end.

on_tc_fail(Suite, TC, Reason, State) ->
    line("not ok - ~ts", [name(Suite, TC)]),
    diag(Reason),
    State#state{failed = State#state.failed + 1}.

%% A configuration function's skip has no line of its own: its cases say it.
on_tc_skip(_Suite, TC, _Reason, State) when ?CONFIG(TC) ->
    State;
on_tc_skip(Suite, TC, {_How, Reason}, State) ->
    line("ok - ~ts # SKIP ~ts", [name(Suite, TC), one_line(skip_text(Reason))]),
    State#state{skipped = State#state.skipped + 1}.

terminate(_State) ->
    ok.

%% Suite:Case, or Suite:Group:Case inside a group.
name(Suite, {TC, Group}) ->
    io_lib:format("~w:~w:~w", [Suite, Group, TC]);
name(Suite, TC) ->
    io_lib:format("~w:~w", [Suite, TC]).

%% Strings as they are (a case's {skip, "why"}), CT's wrapped reasons
%% (a failed or skipped configuration function) by what they say.
skip_text(R) when is_list(R) ->
    case io_lib:printable_unicode_list(R) of
        true -> R;
        false -> io_lib:format("~0tp", [R])
    end;
skip_text(R) when is_binary(R) -> R;
skip_text({failed, {Suite, Fun, Why}}) ->
    io_lib:format("~w:~w failed: ~ts", [Suite, Fun, skip_text(Why)]);
skip_text({Why, Reason}) when Why =:= skip; Why =:= skipped; Why =:= auto_skip ->
    skip_text(Reason);
skip_text(R) ->
    io_lib:format("~0tP", [R, 20]).

%% One line of at most 300 characters.
one_line(Text) ->
    L = string:trim(re:replace(Text, "\\s+", " ", [global, unicode, {return, list}])),
    case string:length(L) > 300 of
        true -> string:slice(L, 0, 297) ++ "...";
        false -> L
    end.

diag(Reason) ->
    Text = io_lib:format("~tP", [Reason, 60]),
    [line("#   ~ts", [L]) || L <- string:split(lists:flatten(Text), "\n", all)],
    ok.

%% Straight to the terminal: CT captures a test's group leader output into
%% its logs, and a TAP line must reach the console whatever the case did.
line(Fmt, Args) ->
    io:format(user, Fmt ++ "~n", Args).
