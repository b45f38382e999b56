%% Runs a test group's Common Test suites for `make test` (test/lib/ct_group.sh
%% starts the node):
%%   erl -noshell -pa BEAMS -run bmt_ct_main main LOGDIR BEAMS SUITE...
%% SUITEs are the group's suites in the order given. BMT_TEST_FILTER (the
%% Makefile's T=), if set, picks what runs: filters separated by commas or
%% spaces, each one of
%%   Suite              the whole suite
%%   Suite:Case         that case, in every group that holds it
%%   Suite:Group        that group
%%   Suite:Group:Case   that case in that group
%% the names the TAP lines print (test/lib/bmt_tap_cth.erl). A filter that
%% matches nothing is an error: one line, exit status 2, nothing run.
%% Otherwise the status is 1 when a case or a configuration function
%% failed, else 0.
-module(bmt_ct_main).

-export([main/1]).

main([LogDir, BeamDir | Suites0]) ->
    Suites = [list_to_atom(S) || S <- Suites0],
    Filters = string:lexemes(os:getenv("BMT_TEST_FILTER", ""), ", "),
    halt(try run(LogDir, BeamDir, Suites, Filters)
         catch throw:{usage, Msg} ->
             io:format(standard_error, "error: ~ts~n", [Msg]),
             2
         end).

run(LogDir, BeamDir, Suites, Filters) ->
    case code:lib_dir(common_test) of
        {error, _} ->
            throw({usage, "this OTP has no Common Test: install erlang-common-test"});
        _ -> ok
    end,
    %% Every filter is checked before anything runs.
    Runs = case Filters of
               [] -> [[{suite, Suites}]];
               _ -> lists:append([select(Suites, F) || F <- Filters])
           end,
    ok = filelib:ensure_path(LogDir),
    io:format("# node ~s: OTP ~s, erts ~s; Common Test logs in ~ts/index.html~n",
              [node(), erlang:system_info(otp_release), erlang:system_info(version), LogDir]),
    Unlisted = [unlisted(S) || Filters =:= [], S <- Suites],
    Opts = [{dir, BeamDir}, {logdir, LogDir}, {auto_compile, false}, {ct_hooks, [bmt_tap_cth]}],
    Results = [ct:run_test(Opts ++ Run) || Run <- Runs],
    case lists:all(fun({_Ok, 0, {_UserSkipped, 0}}) -> true; (_) -> false end, Results)
        andalso lists:all(fun(U) -> U =:= ok end, Unlisted) of
        true -> 0;
        false ->
            [io:format("not ok - common test did not run: ~0tp~n", [E])
             || E <- Results, not is_tuple(E) orelse element(1, E) =:= error],
            1
    end.

%% A test that Common Test would not run is a failure, not silence: an
%% exported *_test function of arity 1 that all/0 and groups/0 do not
%% list, or one of arity 0 (the old runner's form, or EUnit's) that is not
%% a listed case's info function.
unlisted(Suite) ->
    Listed = [C || {_, C} <- cases(Suite)],
    Tests = [{F, A} || {F, A} <- Suite:module_info(exports), lists:suffix("_test", atom_to_list(F))],
    Bad = [{F, A} || {F, A} <- Tests, A =:= 1, not lists:member(F, Listed)] ++
        [{F, A} || {F, A} <- Tests, A =:= 0, not lists:member(F, Listed)],
    [io:format("not ok - ~w:~w/~w is a test that is not run: a case takes Config and is "
               "listed in all/0 or groups/0~n", [Suite, F, A]) || {F, A} <- Bad],
    case Bad of [] -> ok; _ -> unlisted end.

%% ct:run_test/1 options for one filter: one run, or two when a case is
%% both at the top level and in groups.
select(Suites, Filter) ->
    case string:split(Filter, ":", all) of
        [S] -> [[{suite, suite(S, Suites, Filter)}]];
        [S, X] ->
            Suite = suite(S, Suites, Filter),
            Name = list_to_atom(X),
            Cases = cases(Suite),
            InGroups = lists:usort([G || {G, C} <- Cases, C =:= Name, G =/= top]),
            case {lists:member({top, Name}, Cases), InGroups, is_group(Suite, Name)} of
                {false, [], false} -> no_match(Filter, Suite);
                {_, _, true} -> [[{suite, Suite}, {group, [Name]}]];
                {Top, Gs, false} ->
                    [[{suite, Suite}, {testcase, [Name]}] || Top] ++
                        [[{suite, Suite}, {group, Gs}, {testcase, [Name]}] || Gs =/= []]
            end;
        [S, G, C] ->
            Suite = suite(S, Suites, Filter),
            Group = list_to_atom(G),
            Case = list_to_atom(C),
            case lists:member({Group, Case}, cases(Suite)) of
                true -> [[{suite, Suite}, {group, [Group]}, {testcase, [Case]}]];
                false -> no_match(Filter, Suite)
            end;
        _ ->
            throw({usage, io_lib:format("T=~ts: a test is Suite, Suite:Case, Suite:Group or "
                                        "Suite:Group:Case", [Filter])})
    end.

suite(S, Suites, Filter) ->
    Suite = list_to_atom(S),
    case lists:member(Suite, Suites) of
        true -> Suite;
        false ->
            throw({usage, io_lib:format("T=~ts matches no test: no suite ~ts in this group "
                                        "(its suites: ~ts)", [Filter, S, names(Suites)])})
    end.

no_match(Filter, Suite) ->
    Names = lists:usort([case G of top -> atom_to_list(C); _ -> io_lib:format("~w:~w", [G, C]) end
                         || {G, C} <- cases(Suite)]),
    throw({usage, io_lib:format("T=~ts matches no test of ~w (its tests: ~ts)",
                                [Filter, Suite, lists:join(" ", Names)])}).

names(Atoms) -> lists:join(" ", [atom_to_list(A) || A <- Atoms]).

%% {Group | top, Case} for every case the suite runs (groups one level
%% deep, as ours are).
cases(Suite) ->
    {module, Suite} = code:ensure_loaded(Suite),
    Groups = case erlang:function_exported(Suite, groups, 0) of
                 true -> Suite:groups();
                 false -> []
             end,
    lists:append([case Item of
                      {group, G} -> [{G, C} || C <- group_cases(G, Groups)];
                      C when is_atom(C) -> [{top, C}]
                  end || Item <- Suite:all()]).

group_cases(G, Groups) ->
    case lists:keyfind(G, 1, Groups) of
        {G, _Props, Cases} -> [C || C <- Cases, is_atom(C)];
        {G, Cases} -> [C || C <- Cases, is_atom(C)]
    end.

is_group(Suite, Name) ->
    erlang:function_exported(Suite, groups, 0) andalso lists:keymember(Name, 1, Suite:groups()).
