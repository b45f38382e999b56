%% A Common Test hook that prints one TAP line per test case on standard
%% output once its outcome is known, the form test/run_all.sh counts:
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

-export([id/1, init/2, pre_init_per_testcase/4, post_end_per_testcase/5, pre_end_per_group/4,
         pre_end_per_suite/3, on_tc_fail/4, on_tc_skip/4, terminate/1]).

-define(CONFIG(TC), (TC =:= init_per_suite orelse TC =:= end_per_suite orelse
                     element(1, TC) =:= init_per_group orelse element(1, TC) =:= end_per_group)).

%% passed: the case that ended last and has not failed yet, with its name.
-record(state, {passed = none :: none | {atom(), iolist()},
                logs = #{} :: #{atom() => string()}}).

id(_Opts) -> ?MODULE.

init(_Id, _Opts) ->
    {ok, #state{}}.

%% A case that ends is not known to have passed yet: a case returning
%% {fail, Reason} ends with the status ok, then comes to on_tc_fail/4. So
%% its "ok" line waits for the next thing Common Test does; a failure or a
%% skip comes to on_tc_fail/4 or on_tc_skip/4 with the reason. The case's
%% log file is kept for a failure's lines.
post_end_per_testcase(Suite, TC, Config, Return, State0) ->
    State = flush(State0),
    Logs = State#state.logs,
    St = State#state{logs = Logs#{TC => proplists:get_value(tc_logfile, Config)}},
    case proplists:get_value(tc_status, Config) of
        ok ->
            Name = case proplists:get_value(name, proplists:get_value(tc_group_properties, Config, [])) of
                       undefined -> name(Suite, TC);
                       Group -> name(Suite, {TC, Group})
                   end,
            {Return, St#state{passed = {TC, Name}}};
        _ ->
            {Return, St}
    end.

pre_init_per_testcase(_Suite, _TC, Config, State) ->
    {Config, flush(State)}.

pre_end_per_group(_Suite, _Group, Config, State) ->
    {Config, flush(State)}.

pre_end_per_suite(_Suite, Config, State) ->
    {Config, flush(State)}.

%% The case TC did not pass after all: no "ok" line for it.
forget(TC, State) ->
    Case = case TC of {C, _Group} -> C; C -> C end,
    case State#state.passed of
        {Case, _} -> State#state{passed = none};
        _ -> flush(State)
    end.

flush(#state{passed = none} = State) ->
    State;
flush(#state{passed = {TC, Name}, logs = Logs} = State) ->
    line("ok - ~ts", [Name]),
    State#state{passed = none, logs = maps:remove(TC, Logs)}.

on_tc_fail(Suite, TC, Reason, State0) ->
    Case = case TC of {C, _Group} -> C; C -> C end,
    State = forget(TC, State0),
    line("not ok - ~ts", [name(Suite, TC)]),
    diag(Reason),
    case maps:get(Case, State#state.logs, undefined) of
        undefined -> ok;
        Log -> line("#   log: ~ts", [Log])
    end,
    State#state{logs = maps:remove(Case, State#state.logs)}.

%% A configuration function's skip has no line of its own: its cases say it.
on_tc_skip(_Suite, TC, _Reason, State) when ?CONFIG(TC) ->
    flush(State);
on_tc_skip(Suite, TC, {_How, Reason}, State) ->
    St = forget(TC, State),
    line("ok - ~ts # SKIP ~ts", [name(Suite, TC), one_line(skip_text(Reason))]),
    St.

terminate(State) ->
    _ = flush(State),
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
