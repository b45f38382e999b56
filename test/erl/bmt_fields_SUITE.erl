%% Every tracepoint whose fields the NIF writes in an order kept by hand
%% (the tracer's decoder, nif_decode.h, and the user probes, nif_user.c),
%% recorded at least once. Against the debug NIF (make debug;
%% test/erl/debug_fields.sh runs this suite with it) each field written is
%% checked against the catalogue's name and type, and each event's field
%% count: a mismatch aborts the node, so this suite fails. Against the
%% release NIF it checks the same set of tracepoints is recorded.
-module(bmt_fields_SUITE).

-export([all/0, suite/0, init_per_testcase/2, end_per_testcase/2]).
-export([hand_written_fields_test/1]).

-import(bmt_test_lib, [start/1, stop_check/1, assert_eq/3]).

suite() -> [{timetrap, {seconds, 90}}].

all() -> [hand_written_fields_test].

init_per_testcase(_Case, Config) -> Config.

end_per_testcase(_Case, _Config) -> bmt_test_lib:cleanup().

hand_written_fields_test(_Config) ->
    Plain = names(fun(S) -> bmt_workload:run({tracer, beamtrace, S}, 2) end, #{}),
    Links = names(fun(S) -> bmt_workload:run({tracer, beamtrace, S}, 1) end,
                  #{links => true, events => ["org_erlang_dyntrace:message_*"]}),
    Values = names(fun(S) -> bmt_workload:run({tracer, beamtrace, S}, 1) end,
                   #{results => true, args => true, events => ["org_erlang_dyntrace:function_*"]}),
    User = names(fun(_) ->
                         true = beamtrace:user_trace_s1("s1"),
                         beamtrace:p(1, 2, 3, 4, "a", "b", "c", "d"),
                         beamtrace:pn(7, 1, 2, 3, 4, "a", "b", "c", "d")
                 end, #{events => ["org_erlang_dyntrace:user_trace_*"]}),
    assert_eq(vm_tracepoints, lists:sort(bmt_workload:tracepoints()), Plain),
    assert_eq(link_variants, [message_receive_link, message_send_link], Links),
    assert_eq(value_variants, [function_call_args, function_result],
              Values -- [function_exception]),
    assert_eq(user_probes, [user_trace_i4s4, user_trace_n, user_trace_s1], User).

%% The tracepoints a session with Opts records while Fun(Session) runs.
names(Fun, Opts) ->
    S = start(Opts),
    _ = Fun(S),
    {_, Ev} = stop_check(S),
    lists:usort([Name || {Name, _} <- Ev]).
