%% The README's p99 example server: a gen_server whose handle_call/3 takes
%% a few milliseconds, and which measures that time itself, so the p99 a
%% trace gives can be checked against the workload's own.
-module(my_mod).
-behaviour(gen_server).

-export([start/0, stop/0, load/2, own_times/0, reset/0]).
-export([init/1, handle_call/3, handle_cast/2]).

-define(TIMES, my_mod_times).

start() ->
    case ets:info(?TIMES) of
        undefined ->
            Owner = spawn(fun() -> receive stop -> ok end end),
            ets:new(?TIMES, [named_table, public, duplicate_bag, {heir, Owner, none}]);
        _ -> ok
    end,
    gen_server:start({local, ?MODULE}, ?MODULE, [], []).

stop() ->
    gen_server:stop(?MODULE).

reset() ->
    ets:delete_all_objects(?TIMES).

%% N calls, each asking for a work time drawn from a skewed distribution
%% (mostly 1-3 ms, some 5-8 ms, 2% 12-15 ms): p99 lands in the slow tail.
load(N, Seed) ->
    rand:seed(exsss, {Seed, Seed, Seed}),
    [gen_server:call(?MODULE, {work, work_us()}) || _ <- lists:seq(1, N)],
    ok.

work_us() ->
    case rand:uniform(100) of
        X when X =< 80 -> 1000 + rand:uniform(2000);
        X when X =< 98 -> 5000 + rand:uniform(3000);
        _ -> 12000 + rand:uniform(3000)
    end.

%% Every handle_call time the server measured, in ns, in call order.
own_times() ->
    [T || {_, T} <- lists:keysort(1, ets:tab2list(?TIMES))].

init([]) ->
    {ok, 0}.

handle_call({work, Us}, _From, N) ->
    T0 = erlang:monotonic_time(nanosecond),
    spin(T0 + Us * 1000),
    T1 = erlang:monotonic_time(nanosecond),
    ets:insert(?TIMES, {N, T1 - T0}),
    {reply, ok, N + 1}.

handle_cast(_, N) ->
    {noreply, N}.

%% Busy work until Deadline (monotonic ns): exact times, unlike sleeps.
spin(Deadline) ->
    case erlang:monotonic_time(nanosecond) >= Deadline of
        true -> ok;
        false -> spin(Deadline)
    end.
