%% What a NIF tracer receives on the running OTP, and which of OTP 26+'s
%% tracing features this VM has. Prints "name: value" lines; run by
%% test/otp/facts/run.sh on each release of the matrix. Facts, not checks:
%% the report's source for the NIF side (depth from current_stacktrace,
%% trace sessions, proc_lib labels).
-module(bmt_otp_facts).
-export([main/0, rec/1, worker/0]).

main() ->
    {module, _} = code:ensure_loaded(bmt_echo_tracer),
    fact(otp, {erlang:system_info(otp_release), erlang:system_info(version),
               erlang:system_info(nif_version)}),
    fact(backtrace_depth, erlang:system_flag(backtrace_depth, 8)),
    [match_spec(Name, MS) || {Name, MS} <- match_specs()],
    depth(),
    sessions(),
    labels(),
    halt().

fact(Name, Value) ->
    io:format("~p: ~0tp~n", [Name, Value]).

match_specs() ->
    [{plain, [{'_', [], []}]},
     {message_current_stacktrace, [{'_', [], [{message, {current_stacktrace}}]}]},
     {message_current_stacktrace_3, [{'_', [], [{message, {current_stacktrace, 3}}]}]},
     {message_caller_line, [{'_', [], [{message, {caller_line}}]}]},
     {return_trace_and_stacktrace, [{'_', [], [{return_trace}, {message, {current_stacktrace}}]}]}].

%% Traces rec/1 in a worker with the echo tracer and prints each event.
match_spec(Name, MS) ->
    W = spawn(?MODULE, worker, []),
    try erlang:trace_pattern({?MODULE, rec, 1}, MS, [local]) of
        N ->
            erlang:trace(W, true, [call, arity, {tracer, bmt_echo_tracer, self()}]),
            W ! {run, 2, self()},
            receive {done, W} -> ok end,
            erlang:trace(W, false, [all]),
            erlang:trace_pattern({?MODULE, rec, 1}, false, [local]),
            fact(Name, {matched, N}),
            [fact(Name, Ev) || Ev <- drain()]
    catch C:E ->
            fact(Name, {rejected, C, E})
    end,
    exit(W, kill).

worker() ->
    receive
        {run, N, From} -> rec(N), From ! {done, self()}, worker()
    end.

rec(0) -> ok;
rec(N) -> rec(N - 1), ok.   % not a tail call: the stack grows

drain() ->
    receive {trace5, Tag, _Tracee, Term, Opts} -> [{Tag, Term, Opts} | drain()]
    after 200 -> []
    end.

%% Stack depth seen through {current_stacktrace, 100} at rec(0) of rec(30).
depth() ->
    W = spawn(?MODULE, worker, []),
    MS = [{[0], [], [{message, {current_stacktrace, 100}}]}],
    try erlang:trace_pattern({?MODULE, rec, 1}, MS, [local]) of
        _ ->
            erlang:trace(W, true, [call, {tracer, bmt_echo_tracer, self()}]),
            W ! {run, 30, self()},
            receive {done, W} -> ok end,
            erlang:trace(W, false, [all]),
            erlang:trace_pattern({?MODULE, rec, 1}, false, [local]),
            [{call, _, #{match_spec_result := Stack}}] = drain(),
            fact(depth_of_rec0_in_rec30, {frames, length(Stack), first, hd(Stack), last, lists:last(Stack)})
    catch C:E -> fact(depth_of_rec0_in_rec30, {rejected, C, E})
    end,
    exit(W, kill).

sessions() ->
    %% function_exported/3 is false for a module not loaded yet.
    _ = code:ensure_loaded(trace),
    case erlang:function_exported(trace, session_create, 3) of
        false ->
            fact(trace_sessions, absent);
        true ->
            fact(session_info_all_before, trace:session_info(all)),
            _ = code:purge(bmt_null_never_loaded),
            fact(session_create_unloaded_module,
                 try trace:session_create(x, {bmt_not_loaded_mod, []}, []) catch C:E -> {C, E} end),
            S = trace:session_create(bmt_facts, {bmt_echo_tracer, self()}, []),
            fact(session_handle, S),
            fact(session_info_all_after, trace:session_info(all)),
            W = spawn(?MODULE, worker, []),
            fact(process_4, trace:process(S, W, true, [call, garbage_collection])),
            fact(function_4, trace:function(S, {?MODULE, rec, 1},
                                            [{'_', [], [{message, {current_stacktrace, 2}}]}], [local])),
            fact(session_info_worker, trace:session_info(W)),
            fact(info_flags, trace:info(S, W, flags)),
            fact(info_tracer, trace:info(S, W, tracer)),
            fact(legacy_info_flags, erlang:trace_info(W, flags)),
            %% What recon_trace:clear/0 does to the legacy session.
            erlang:trace(all, false, [all]),
            erlang:trace_pattern({'_', '_', '_'}, false, [local, meta, call_count, call_time]),
            erlang:trace_pattern({'_', '_', '_'}, false, []),
            W ! {run, 1, self()},
            receive {done, W} -> ok end,
            fact(events_after_legacy_clear, drain()),
            fact(destroy, trace:session_destroy(S)),
            fact(info_flags_after_destroy, catch_all(fun() -> trace:info(S, W, flags) end)),
            fact(function_traced_after_destroy, erlang:trace_info({?MODULE, rec, 1}, traced)),
            fact(session_info_all_after_destroy, trace:session_info(all)),
            W ! {run, 1, self()},
            receive {done, W} -> ok end,
            fact(events_after_destroy, drain()),
            S2 = trace:session_create(bmt_facts2, {bmt_echo_tracer, self()}, []),
            fact(system_3, catch_all(fun() -> trace:system(S2, long_gc, 100) end)),
            trace:session_destroy(S2),
            exit(W, kill)
    end.

catch_all(F) ->
    try F() catch C:E -> {C, E} end.

labels() ->
    {module, proc_lib} = code:ensure_loaded(proc_lib),
    fact(proc_lib_get_label_exported, erlang:function_exported(proc_lib, get_label, 1)),
    case erlang:function_exported(proc_lib, set_label, 1) of
        true ->
            Self = self(),
            P = spawn(fun() -> proc_lib:set_label({worker, 7}), Self ! ready, receive stop -> ok end end),
            receive ready -> ok end,
            fact(get_label_labelled, proc_lib:get_label(P)),
            fact(get_label_unlabelled, proc_lib:get_label(self())),
            exit(P, kill),
            timer:sleep(10),
            fact(get_label_dead, catch_all(fun() -> proc_lib:get_label(P) end));
        false ->
            ok
    end.
