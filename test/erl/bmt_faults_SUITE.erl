%% Bad input and faults: bad options, garbage to the NIF callbacks, bad
%% handles, unwritable directories, a full disk.
-module(bmt_faults_SUITE).
%% OTP 29 warns on 'catch Expr' (deprecated); these tests keep it.
-compile(nowarn_deprecated_catch).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([callbacks_fuzz_test/0]).
-export([bad_options_test/1, callbacks_garbage_test/1, callbacks_fuzz_test/1,
         bad_handles_test/1, unwritable_dir_test/1, disk_full_test/1,
         traces_reread_test/1]).

%% These cases give the API what its specs refuse, on purpose (dialyzer).
-dialyzer({[no_fail_call, no_opaque, no_improper_lists, no_return],
           [bad_options_test/1, bad_handles_test/1]}).

-import(bmt_test_lib, [start/1, stop_check/1, assert_eq/3]).

-define(CALLBACKS, [enabled, trace, enabled_procs, trace_procs, enabled_ports, trace_ports,
                    enabled_running_procs, trace_running_procs, enabled_running_ports,
                    trace_running_ports, enabled_call, trace_call, enabled_send, trace_send,
                    enabled_receive, trace_receive, enabled_garbage_collection,
                    trace_garbage_collection]).

%%% Common Test

%% Each case runs alone in CT's process with a time limit; the node is left
%% as the next case expects it (no flags, patterns or sessions).
suite() -> [{timetrap, {seconds, 90}}].

all() ->
    [bad_options_test, callbacks_garbage_test, callbacks_fuzz_test,
     bad_handles_test, unwritable_dir_test, disk_full_test,
     traces_reread_test].

%% The traces the cases write are listed for traces_reread_test.
init_per_suite(Config) -> bmt_test_lib:reread_init(Config).

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

bad_options_test(_Config) ->
    D = fun() -> bmt_test_lib:tmpdir("badopt") end,
    Cases = [{#{bogus => 1}, bogus},
             {#{mode => fast}, mode},
             {#{mode => "discard"}, mode},
             {#{events => ["nomatch:*"]}, events},
             {#{events => ["org_erlang_dyntrace:no_such_event"]}, events},
             {#{events => [foo]}, events},
             {#{events => [""]}, events},
             {#{events => foo}, events},
             {#{events => []}, events},
             {#{events => ["org_erlang_dyntrace:*" | bad_tail]}, events},
             {#{buffer_size => 0}, buffer_size},
             {#{buffer_size => -1}, buffer_size},
             {#{buffer_size => foo}, buffer_size},
             {#{buffer_size => 1 bsl 40}, buffer_size},
             {#{buffer_size => 8191, subbuffers => 2}, buffer_size},
             {#{subbuffers => 1}, subbuffers},
             {#{subbuffers => 0}, subbuffers},
             {#{subbuffers => 1025}, subbuffers},
             {#{subbuffers => two}, subbuffers},
             {#{message_length => -1}, message_length},
             {#{message_length => 16385}, message_length},
             {#{message_length => foo}, message_length},
             {#{message_length => 1.5}, message_length},
             {#{default => 'maybe'}, default}],
    Results = [{Opts, beamtrace:start(maps:merge(#{dir => D()}, Opts)), Key} || {Opts, Key} <- Cases]
        ++ [{#{dir => X}, beamtrace:start(#{dir => X}), dir} || X <- [123, {a, b}, self(), [{x}]]],
    Bad = [{Opts, R, Key} || {Opts, R, Key} <- Results, not badopt(R, Key)],
    assert_eq(bad_options, [], Bad),
    {error, {badopt, _}} = beamtrace:start(not_a_map),
    {error, {badopt, _}} = beamtrace:start([not_a_pair]),
    %% a proplist is fine
    {ok, S} = beamtrace:start([{dir, D()}, {mode, overwrite}, {events, ["org_erlang_dyntrace:*"]}]),
    {_, []} = stop_check(S),
    [] = beamtrace:sessions().

%% {badopt, Key}, or for a bad pattern {badopt, {events, Pattern}}.
badopt({error, {badopt, Key}}, Key) -> true;
badopt({error, {badopt, {Key, _}}}, Key) -> true;
badopt(_, _) -> false.

%% Each callback with garbage arguments, with no session at all and with a
%% running one: an atom back, never a crash.
callbacks_garbage_test(_Config) ->
    Garbage = [foo, 1, [], make_ref(), self(), <<"bin">>, {a, b, c}, #{}, fun() -> ok end],
    Calls = fun() ->
                    [check_atom(Cb, Args) || Cb <- ?CALLBACKS, Args <- args(Cb, Garbage)]
            end,
    Calls(),
    S = start(#{}),
    Calls(),
    [check_atom(Cb, [Tag, S, self(), G, #{extra => G}]) || Cb <- ?CALLBACKS, arity(Cb) =:= 5,
                                                            Tag <- all_tags(), G <- Garbage],
    [check_atom(Cb, [Tag, S, G]) || Cb <- ?CALLBACKS, arity(Cb) =:= 3, Tag <- all_tags(), G <- Garbage],
    ok = beamtrace:trace_procs(foo, bar, baz, qux, quux),
    discard = beamtrace:enabled_call(1, 2, 3),
    {_, _} = stop_check(S),
    ok.

args(Cb, G) ->
    case arity(Cb) of
        3 -> [[A, B, C] || A <- G, B <- G, C <- [self(), foo]];
        5 -> [[A, B, C, D, E] || A <- G, B <- G, C <- [self(), foo], D <- [foo, {x}], E <- [#{}, foo]]
    end.

arity(Cb) ->
    case atom_to_list(Cb) of
        "enabled" ++ _ -> 3;
        "trace" ++ _ -> 5
    end.

all_tags() ->
    [spawn, spawned, link, unlink, getting_linked, getting_unlinked, exit, register, unregister,
     open, closed, in, out, in_exiting, out_exiting, out_exited, call, return_from, return_to,
     exception_from, send, send_to_non_existing_process, 'receive', gc_minor_start,
     gc_minor_end, gc_major_start, gc_major_end, trace_status, seq_trace, bogus].

check_atom(Cb, Args) ->
    case apply(beamtrace, Cb, Args) of
        A when is_atom(A) -> ok;
        Other -> bmt_test_lib:fail(not_an_atom, {Cb, Args, Other})
    end.

%% Random terms into every callback, with a live session, a stopped
%% session's handle, [] and garbage as the state. The trace written must
%% still be readable by babeltrace2.
%% Random calls to every NIF a caller can reach: the tracer callbacks with
%% garbage, the control API with random options and handles, user probes and
%% tags with random arguments. Each returns its documented shape or raises
%% badarg/function_clause; the node never crashes, and the session that ran
%% through it all stops with a trace babeltrace2 reads in full.
%% BMT_FUZZ_CALLS sets the count (`make fuzz' runs 100000), BMT_FUZZ_SEED
%% replays a seed the output names, BMT_FUZZ_LOG=1 prints every call.
%% BMT_FUZZ_CALLS (make fuzz: 100000) calls need more than the suite's limit.
callbacks_fuzz_test() ->
    [{timetrap, {seconds, max(90, fuzz_calls() div 400)}}].

fuzz_calls() ->
    list_to_integer(os:getenv("BMT_FUZZ_CALLS", "20000")).

callbacks_fuzz_test(_Config) ->
    Seed = case os:getenv("BMT_FUZZ_SEED") of
               false -> erlang:phash2(erlang:monotonic_time());
               SeedText -> list_to_integer(SeedText)
           end,
    io:format("# fuzz seed ~w~n", [Seed]),
    rand:seed(exsss, {17, 42, Seed}),
    N = fuzz_calls(),
    Stale = start(#{}),
    {_, _} = stop_check(Stale),
    S = start(#{message_length => 64}),
    Tags = all_tags(),
    States = [S, Stale, [], foo, make_ref(), {S}],
    Counts = lists:foldl(
               fun(_, Acc) ->
                   Kind = case rand:uniform(10) of
                              K when K =< 7 -> callback;
                              8 -> probe;
                              9 -> control;
                              10 -> tag
                          end,
                   case os:getenv("BMT_FUZZ_LOG") of
                       false -> ok;
                       _ -> put(fuzz_kind, Kind)
                   end,
                   fuzz_one(Kind, Tags, States, S),
                   maps:update_with(Kind, fun(C) -> C + 1 end, 1, Acc)
               end, #{}, lists:seq(1, N)),
    %% anything the control calls left running goes, except S
    [catch beamtrace:stop(X) || X <- beamtrace:sessions(), X =/= S],
    {#{events := E}, Ev} = stop_check(S),
    io:format("# fuzz: ~w calls ~p, ~w events recorded~n", [N, Counts, E]),
    true = E > 0,
    E = length(Ev),
    ok.

fuzz_one(callback, Tags, States, _S) ->
    Cb = pick(?CALLBACKS),
    Tag = case rand:uniform(4) of 1 -> rand_term(2); _ -> pick(Tags) end,
    State = pick(States),
    Args = case arity(Cb) of
               3 -> [Tag, State, rand_tracee()];
               5 -> [Tag, State, rand_tracee(), rand_term(3), rand_opts()]
           end,
    log_call(Cb, Args),
    check_atom(Cb, Args);
fuzz_one(probe, _Tags, _States, _S) ->
    Args = [rand_probe_arg() || _ <- lists:seq(1, rand:uniform(9) - 1)],
    {F, A} = pick([{p, Args}, {pn, [rand_label() | lists:sublist(Args, 8)]},
                   {user_trace_s1, [rand_probe_arg()]}]),
    A1 = case {F, length(A)} of
             {pn, 0} -> [rand_label()];
             _ -> A
         end,
    log_call(F, A1),
    case catch apply(beamtrace, F, A1) of
        B when is_boolean(B) -> ok;
        {'EXIT', {badarg, _}} -> ok;
        {'EXIT', {function_clause, _}} -> ok;
        {'EXIT', {undef, _}} -> ok; % an arity p/pn does not have
        Other -> erlang:error({probe_returned, F, A1, Other})
    end;
fuzz_one(control, _Tags, States, S) ->
    Handle = pick([S, pick(States), rand_term(1)]),
    case rand:uniform(5) of
        1 ->
            %% random options: a session it starts is stopped at once
            Opts = maps:from_list([{pick(option_keys()), rand_option_value()}
                                   || _ <- lists:seq(1, rand:uniform(4))]),
            case catch beamtrace:start(Opts#{dir => bmt_test_lib:tmpdir("fuzz")}) of
                {ok, New} -> {ok, _} = beamtrace:stop(New);
                {error, _} -> ok;
                Other -> erlang:error({start_returned, Opts, Other})
            end;
        2 when Handle =/= S, Handle =/= [] ->
            case catch beamtrace:stop(Handle) of
                {error, not_running} -> ok;
                {'EXIT', {badarg, _}} -> ok;
                Other -> erlang:error({stop_returned, Handle, Other})
            end;
        3 ->
            case catch beamtrace:info(Handle) of
                #{state := _} -> ok;
                {error, not_running} -> ok;
                {'EXIT', {badarg, _}} -> ok;
                Other -> erlang:error({info_returned, Handle, Other})
            end;
        4 ->
            case catch beamtrace:snapshot(Handle, pick([bmt_test_lib:tmpdir("fuzz-snap"),
                                                         rand_term(1)])) of
                {error, _} -> ok;
                {'EXIT', {badarg, _}} -> ok;
                Other -> erlang:error({snapshot_returned, Handle, Other})
            end;
        _ ->
            true = is_list(beamtrace:sessions()),
            #{recorder := true} = beamtrace:sinks()
    end;
fuzz_one(tag, _Tags, _States, _S) ->
    case catch (pick([fun() -> beamtrace:put_tag(rand_probe_arg()) end,
                      fun() -> beamtrace:spread_tag(pick([true, false, rand_term(0)])) end,
                      fun() -> beamtrace:restore_tag(rand_term(1)) end,
                      fun() -> beamtrace:get_tag() end,
                      fun() -> beamtrace:get_tag_data() end]))() of
        {'EXIT', {badarg, _}} -> ok;
        {'EXIT', {function_clause, _}} -> ok;
        {'EXIT', Why} -> erlang:error({tag_call_crashed, Why});
        _ -> ok
    end.

log_call(F, Args) ->
    case get(fuzz_kind) of
        undefined -> ok;
        _ -> io:format("# CALL ~p ~P~n", [F, Args, 12])
    end.

option_keys() ->
    [events, mode, buffer_size, subbuffers, message_length, default, file_mode, max_bytes,
     max_events, duration, max_rate, tracefile_size, tracefile_count, flush_interval, notify,
     bogus].

rand_option_value() ->
    pick([rand_term(1), rand:uniform(1 bsl 20), infinity, 0, -1, 8#640, self(),
          ["org_erlang_dyntrace:*"], ["*:gc_*", "nope"], discard, overwrite, size_only,
          true, false, 1 bsl 64]).

rand_label() -> pick([0, 1, 1023, 1024, -1, rand:uniform(2000), foo]).

rand_probe_arg() ->
    pick([rand:uniform(1 bsl 62), -rand:uniform(1000), 1 bsl 70, "text", <<"bin">>,
          ["io", [<<"list">>]], lists:duplicate(rand:uniform(2000), $z), undef, foo,
          rand_term(1)]).

pick(L) -> lists:nth(rand:uniform(length(L)), L).

rand_tracee() ->
    pick([self(), hd(erlang:ports()), undefined, foo, 42, [], list_to_pid("<0.0.0>"), rand_term(1)]).

rand_opts() ->
    case rand:uniform(5) of
        1 -> rand_term(2);
        2 -> #{};
        3 -> #{extra => rand_term(3)};
        4 -> #{extra => {rand_term(1), rand_term(1)}, match_spec_result => rand_term(1),
               scheduler_id => rand:uniform(4), timestamp => monotonic};
        5 -> #{extra => {pick([m, lists, 'Odd Mod']), pick([f, 'g h']), pick([[], [1, 2], 3, x])}}
    end.

rand_term(0) ->
    F = pick([fun() -> rand:uniform(1 bsl 70) - (1 bsl 69) end,
          fun() -> rand:uniform() end,
          fun() -> list_to_atom([rand:uniform(255) || _ <- lists:seq(1, rand:uniform(20))]) end,
          fun() -> crypto_free_bytes(rand:uniform(300)) end,
          fun() -> <<(rand:uniform(255)):(rand:uniform(7))>> end,
          fun() -> self() end,
          fun() -> make_ref() end,
          fun() -> hd(erlang:ports()) end,
          fun() -> fun lists:map/2 end,
          fun() -> fun(X) -> X end end,
          fun() -> [] end,
          fun() -> lists:duplicate(rand:uniform(2000), $a) end]),
    F();
rand_term(D) ->
    case rand:uniform(5) of
        1 -> list_to_tuple([rand_term(D - 1) || _ <- lists:seq(1, rand:uniform(5) - 1)]);
        2 -> [rand_term(D - 1) || _ <- lists:seq(1, rand:uniform(5))];
        3 -> maps:from_list([{rand_term(0), rand_term(D - 1)} || _ <- lists:seq(1, rand:uniform(4))]);
        4 -> [rand_term(D - 1) | rand_term(0)];
        5 -> rand_term(0)
    end.

crypto_free_bytes(N) -> list_to_binary([rand:uniform(256) - 1 || _ <- lists:seq(1, N)]).

bad_handles_test(_Config) ->
    %% A reference the NIF does not know names no running session (a
    %% handle of an unloaded library is one); anything else is a mistake.
    {error, not_running} = beamtrace:stop(make_ref()),
    {'EXIT', {badarg, _}} = (catch beamtrace:stop(foo)),
    {error, not_running} = beamtrace:info(make_ref()),
    S = start(#{}),
    {_, _} = stop_check(S),
    {error, not_running} = beamtrace:stop(S),
    {error, not_running} = beamtrace:stop(S),
    {error, not_running} = beamtrace:info(S),
    %% a stale handle does not name the session that reuses its slot
    S2 = start(#{}),
    {error, not_running} = beamtrace:stop(S),
    #{state := running} = beamtrace:info(S2),
    {_, _} = stop_check(S2),
    ok.

unwritable_dir_test(_Config) ->
    File = bmt_test_lib:tmpdir("regular-file"),
    ok = filelib:ensure_dir(File),
    ok = file:write_file(File, <<"not a directory">>),
    {error, R1} = beamtrace:start(#{dir => filename:join(File, "trace")}),
    io:format("# dir under a regular file -> ~p~n", [R1]),
    {error, _} = beamtrace:start(#{dir => "/proc/bmt_no_such/trace"}),
    [] = beamtrace:sessions(),
    %% the VM is fine and a good dir still works
    S = start(#{}),
    {_, _} = stop_check(S),
    ok.

%% A full disk: the write that does not fit is cut back to the last whole
%% packet, the session stops recording with reason enospc, the VM keeps
%% running, and the trace stays readable by babeltrace2 with exact counts:
%% events + discarded = every send the workload made.
disk_full_test(_Config) ->
    with_tmpfs("64k", fun disk_full/1).

with_tmpfs(Size, Fun) ->
    Mnt = bmt_test_lib:tmpdir("tmpfs"),
    ok = filelib:ensure_dir(filename:join(Mnt, "x")),
    case os:cmd("id -u") of
        "0\n" ->
            case bmt_test_lib:cmd("mount", ["-t", "tmpfs", "-o", "size=" ++ Size, "tmpfs", Mnt]) of
                {0, _, _} ->
                    try Fun(Mnt)
                    after bmt_test_lib:cmd("umount", [Mnt])
                    end;
                {_, _, Err} ->
                    {skip, "cannot mount tmpfs: " ++ binary_to_list(Err)}
            end;
        _ ->
            {skip, "needs root to mount tmpfs"}
    end.

disk_full(Mnt) ->
    %% Small packets, so that some fit before the disk is full.
    S = start(#{dir => filename:join(Mnt, "trace"), message_length => 2100,
                buffer_size => 64 * 1024, subbuffers => 8}),
    Ctl = self(),
    Big = lists:duplicate(2000, $x),
    P = spawn(fun() ->
                  receive go -> ok end,
                  N = flood(Big, S, 0),
                  erlang:trace(self(), false, [send]),
                  Ctl ! {self(), done, N}
              end),
    1 = erlang:trace(P, true, [send, {tracer, beamtrace, S}]),
    P ! go,
    Sent = receive {P, done, N} -> N end,
    #{state := stopped, reason := enospc} = beamtrace:info(S),
    true = is_process_alive(whereis(init)),
    {error, {enospc, #{events := E, discarded := D, after_stop := A, dir := Dir} = Stats}} =
        beamtrace:stop(S),
    io:format("# disk full: ~p sends, ~w events in the trace, ~w discarded, ~w after the stop~n",
              [Sent, E, D, A]),
    %% Lost while recording (the packets the disk refused), then offered
    %% once the session had stopped (reason enospc): every send counted.
    assert_eq(events_plus_discarded_plus_after_stop_vs_sends, Sent, E + D + A),
    true = D > 0,
    %% babeltrace2 reads every event the stats count, and reports the rest
    %% as discarded (checked on a copy: the tmpfs goes at the end).
    Copy = bmt_test_lib:tmpdir("disk-full-copy"),
    {0, _, _} = bmt_test_lib:cmd("cp", ["-a", binary_to_list(Dir), Copy]),
    _ = bmt_test_lib:check_trace(Stats#{dir := list_to_binary(Copy)}),
    {_, _, Err} = bmt_test_lib:babeltrace(Copy),
    assert_eq(babeltrace_discarded, D, bmt_test_lib:discard_warnings_total(Err)),
    [] = beamtrace:sessions(),
    ok.

%% Sends big messages to itself (each one traced send) until the session
%% has stopped by itself, then 100 more; returns how many it sent.
flood(Big, S, I) when I < 100000 ->
    self() ! {Big, I},
    receive {Big, I} -> ok end,
    case I rem 200 of
        0 ->
            case beamtrace:info(S) of
                #{state := stopped} ->
                    [begin self() ! {Big, J}, receive {Big, J} -> ok end end
                     || J <- lists:seq(1, 100)],
                    I + 1 + 100;
                _ -> receive after 1 -> flood(Big, S, I + 1) end
            end;
        _ -> flood(Big, S, I + 1)
    end;
flood(_, _, I) -> I.

%% Last: every trace the cases above wrote reads back the same later.
traces_reread_test(_Config) ->
    bmt_test_lib:reread_traces().
