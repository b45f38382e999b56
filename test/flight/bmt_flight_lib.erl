%% Helpers the flight group's suites share: the bmt_kv workload around a
%% case, waiting for a flight's captures, a capture's metadata and events
%% (babeltrace2 as the reader), and whether every slow call the node
%% measured is in a capture.
-module(bmt_flight_lib).

-export([with_kv/2, wait_slow/4, wait_captures/2, env/1, env_int/2, env_text/2, capture_events/1,
         clock_offset/1, check_slow_calls/4, vm_has_long_message_queue/0]).

-import(bmt_test_lib, [assert_eq/3, fail/2]).

%% Runs Fun with the bmt_kv store started (Opts: bmt_kv:start/1's), and
%% stops the store whatever Fun does.
with_kv(Opts, Fun) ->
    _ = bmt_kv:start(Opts),
    try Fun()
    after bmt_kv:stop()
    end.

%% Waits (Tries polls, 100 ms apart) until bmt_kv on Node has made N slow
%% gets begun after From (its monotonic ns), and returns either way: the
%% caller's own count check then says what was missing.
wait_slow(_Node, _From, _N, 0) ->
    ok;
wait_slow(Node, From, N, Tries) ->
    case length([S || {_, T0, _} = S <- erpc:call(Node, bmt_kv, slow_calls, []), T0 > From]) >= N of
        true -> ok;
        false -> timer:sleep(100), wait_slow(Node, From, N, Tries - 1)
    end.

%% Waits (bounded: up to 2 min on a loaded machine) until the flight has N
%% sealed captures.
wait_captures(F, N) ->
    wait_captures(F, N, 2400).

wait_captures(F, N, 0) ->
    fail(no_capture, {N, beamtrace:flight_info(F)});
wait_captures(F, N, Tries) ->
    case beamtrace:flight_info(F) of
        #{flight := #{captures := C, open := false}} = I when C >= N -> I;
        #{} ->
            timer:sleep(50),
            wait_captures(F, N, Tries - 1);
        Other ->
            fail(flight_gone, Other)
    end.
%% A capture's metadata env: #{Key => Text}.
env(Dir) ->
    {ok, Env} = beamtrace_clock:read_env(Dir),
    Env.

env_int(Env, Key) ->
    binary_to_integer(maps:get(Key, Env)).

env_text(Env, Key) ->
    T = maps:get(Key, Env),
    string:trim(T, both, "\"").

%% A capture's events, [{TsNs, Name, Fields}], with babeltrace2 (exit 0,
%% nothing on stderr but loss warnings): the raw clock, CLOCK_MONOTONIC
%% ns, beamtrace:clock_ns/0's clock.
capture_events(Dir) ->
    {Status, Lines, Err} = bmt_test_lib:cmd("babeltrace2", ["--clock-cycles", Dir]),
    assert_eq({babeltrace_status, Dir}, 0, Status),
    Bad = [L || L <- binary:split(Err, <<"\n">>, [global, trim_all]),
                re:run(L, <<"^WARNING: Tracer (may have )?discarded ">>) =:= nomatch],
    assert_eq({babeltrace_stderr, Dir}, [], Bad),
    [begin
         [<<"[", TsText/binary>>, _] = binary:split(L, <<"]">>),
         {Name, Fields} = bmt_test_lib:parse_line(L),
         {binary_to_integer(TsText), Name, Fields}
     end || L <- Lines].

%% The trace clock's offset from erlang:monotonic_time/1 on Node, and how
%% far off that can be: {OffsetNs, ErrorNs}. The tightest of 5 readings,
%% each a trace clock reading between two monotonic ones (on a loaded
%% machine two separate calls can be milliseconds apart).
clock_offset(Node) ->
    Read = fun() ->
                   M0 = erpc:call(Node, erlang, monotonic_time, [nanosecond]),
                   C = erpc:call(Node, beamtrace, clock_ns, []),
                   M1 = erpc:call(Node, erlang, monotonic_time, [nanosecond]),
                   {M1 - M0, C - (M0 + M1) div 2}
           end,
    {Gap, Offset} = lists:min([Read() || _ <- lists:seq(1, 5)]),
    {Offset, Gap div 2 + 1}.

%% Each slow call {Pid | PidText, T0, T1} (erlang:monotonic_time/1 ns,
%% measured by the caller around its call; {Offset, Error} turns them into
%% the trace clock) is in a capture: a call by Pid and its return, both
%% inside the caller's own [T0, T1] (widened by Error), in a capture
%% reaching back WindowMs before its first trigger.
check_slow_calls(Caps, Slow, {Offset, Error}, WindowMs) ->
    Read = [{C, env_int(env(C), <<"beamtrace_trigger_ts">>), capture_events(C)} || C <- Caps],
    [case [C || {C, Trig, Events} <- Read,
                holds_call(Events, Pid, T0 + Offset - Error, T1 + Offset + Error),
                lists:min([T || {T, _, _} <- Events]) =< Trig - WindowMs * 1000000] of
         [_ | _] -> ok;
         [] -> fail({slow_call_not_captured, Pid, T0 + Offset, T1 + Offset, Error},
                    [{C, Trig} || {C, Trig, _} <- Read])
     end || {Pid, T0, T1} <- Slow],
    ok.

%% A call of bmt_kv:get/2 by Pid at or after From, and a return by Pid
%% after it and at or before To.
holds_call(Events, Pid, From, To) ->
    %% A pid, or its text as its own node prints it.
    P = if is_pid(Pid) -> list_to_binary(pid_to_list(Pid));
           true -> Pid
        end,
    Calls = [T || {T, function_call, #{pid := Q, entry := <<"bmt_kv:get/2">>}} <- Events,
                  Q =:= P, T >= From, T =< To],
    Returns = [T || {T, function_return, #{pid := Q, entry := <<"bmt_kv:get/2">>}} <- Events,
                    Q =:= P, T >= From, T =< To],
    lists:any(fun(C) -> lists:any(fun(R) -> R >= C end, Returns) end, Calls).

%% Whether this VM has the long_message_queue system monitor (OTP 27+):
%% asked of the VM (it refuses a setting it lacks), not of a version, in a
%% process of its own (the setting is per node, put back at once).
vm_has_long_message_queue() ->
    Self = self(),
    P = spawn(fun() ->
                      Prev = erlang:system_monitor(),
                      R = try_long_message_queue(),
                      _ = erlang:system_monitor(Prev),
                      Self ! {self(), R}
              end),
    receive {P, R} -> R end.

%% On OTP 25/26 the setting breaks system_monitor/2's contract: that is
%% the question asked.
-dialyzer({[no_fail_call, no_contracts], try_long_message_queue/0}).
try_long_message_queue() ->
    try erlang:system_monitor(self(), [{long_message_queue, {1, 2}}]) of
        _ -> true
    catch error:badarg -> false
    end.
