%% @doc One timeline for the traces of a cluster: each node's trace clock
%% against the controller's, estimated over Erlang distribution, and
%% written into the trace's CTF clock metadata.
%%
%% == The estimate ==
%% A trace's timestamps are the node's CLOCK_MONOTONIC (beamtrace:clock_ns/0
%% reads it). The controller (the node that records the cluster) reads its
%% own clock, asks the node for its clock, and reads its own again: the
%% node's reading was taken somewhere within that round trip, so
%% `Offset = (T0 + T1) / 2 - Remote' is off by at most half the round trip.
%% Of many samples the one with the shortest round trip is kept (Cristian's
%% method, the minimum-RTT filter of NTP): queueing delays only lengthen a
%% round trip, and the shortest is the least skewed. Measured on loopback:
%% 115 ns off against a 56 us median round trip.
%%
%% The controller samples each node before its trace starts and after it
%% stops (no sampling traffic inside the trace), and uses the mean of the
%% two: clocks that drift apart (NTP slewing two hosts differently, a few
%% ppm) are then off by half the drift at worst, at the ends of the trace.
%%
%% == In the trace ==
%% The CTF clock's `offset_s'/`offset' (the clock's offset to the epoch) are
%% rewritten to the controller's: the controller's own epoch offset plus
%% the node's offset to the controller. Every trace of the cluster then maps
%% its timestamps to the controller's wall clock, and babeltrace2 and Trace
%% Compass merge them into one ordered timeline. Nothing else in the
%% metadata changes but the environment, which gets:
%% `beamtrace_clock_reference' (the controller's node name),
%% `beamtrace_clock_offset_ns' (controller clock minus node clock, as
%% used), `beamtrace_clock_error_ns' (its error bound),
%% `beamtrace_clock_rtt_ns' (the best round trip before the trace),
%% `beamtrace_clock_drift_ns' (the offset after minus before),
%% `beamtrace_clock_samples', and `beamtrace_clock_own_offset_s' /
%% `beamtrace_clock_own_offset' (what the node wrote: its own wall clock).
-module(beamtrace_clock).

-export([sample/2, epoch_offset/0, combine/2, rewrite_metadata/3, read_env/1]).

-export_type([estimate/0]).

-type estimate() :: #{offset_ns := integer(), rtt_ns := non_neg_integer(),
                      error_ns := non_neg_integer(), samples := pos_integer()}.

-define(NS, 1000000000).

%% @doc Samples a node's clock N times through Read (a fun returning the
%% node's beamtrace:clock_ns/0) and keeps the shortest round trip:
%% `offset_ns' is this node's clock minus the node's, `error_ns' half the
%% round trip. Read's exceptions go through.
-spec sample(fun(() -> integer()), pos_integer()) -> estimate().
sample(Read, N) when N > 0 ->
    sample(Read, N, undefined, 0).

sample(_Read, 0, {Rtt, Offset}, Count) ->
    #{offset_ns => Offset, rtt_ns => Rtt, error_ns => (Rtt + 1) div 2, samples => Count};
sample(Read, N, Best, Count) ->
    T0 = beamtrace:clock_ns(),
    Remote = Read(),
    T1 = beamtrace:clock_ns(),
    Rtt = T1 - T0,
    Best1 = case Best of
                {BestRtt, _} when BestRtt =< Rtt -> Best;
                _ -> {Rtt, (T0 + T1) div 2 - Remote}
            end,
    sample(Read, N - 1, Best1, Count + 1).

%% @doc This node's trace clock's offset to the epoch (CLOCK_REALTIME
%% minus CLOCK_MONOTONIC), ns: the reading with the tightest bracket of a
%% few.
-spec epoch_offset() -> integer().
epoch_offset() ->
    {_, Offset} = lists:min([begin
                                 M0 = beamtrace:clock_ns(),
                                 Real = os:system_time(nanosecond),
                                 M1 = beamtrace:clock_ns(),
                                 {M1 - M0, Real - (M0 + M1) div 2}
                             end || _ <- lists:seq(1, 16)]),
    Offset.

%% @doc One estimate from the samples before and after the trace (after
%% may be missing: the node's estimate before the trace, as is).
-spec combine(estimate(), estimate() | undefined) -> map().
combine(#{} = Before, undefined) ->
    Before#{drift_ns => 0};
combine(#{offset_ns := B, error_ns := EB} = Before, #{offset_ns := A, error_ns := EA} = After) ->
    Drift = A - B,
    Before#{offset_ns => B + Drift div 2, drift_ns => Drift,
            error_ns => max(EB, EA) + (abs(Drift) + 1) div 2,
            samples => maps:get(samples, Before) + maps:get(samples, After)}.

%% @doc Rewrites the clock offset in Dir/metadata (a beamtrace trace,
%% plain-text TSDL) to Epoch + offset_ns (Epoch: the controller's
%% epoch_offset/0), and adds the estimate to the environment. The file is
%% replaced atomically, with the same mode.
-spec rewrite_metadata(file:name_all(), integer(), map()) -> ok | {error, term()}.
rewrite_metadata(Dir, Epoch, Estimate) ->
    Path = unicode:characters_to_list(filename:join(Dir, "metadata")),
    case file:read_file(Path) of
        {ok, Text} ->
            case rewrite(Text, Epoch, Estimate) of
                {ok, New} -> replace(Path, New);
                {error, _} = Error -> Error
            end;
        {error, Why} ->
            {error, {Why, Path}}
    end.

rewrite(Text, Epoch, #{offset_ns := Offset} = E) ->
    case {binary:match(Text, <<"\nclock {">>), binary:match(Text, <<"\nenv {">>)} of
        {{ClockAt, _}, {EnvAt, _}} when EnvAt < ClockAt ->
            <<Head:ClockAt/binary, Clock0/binary>> = Text,
            case {field(Clock0, <<"offset_s">>), field(Clock0, <<"offset">>)} of
                {{ok, OwnS, _}, {ok, OwnNs, _}} ->
                    New = Epoch + Offset,
                    {NewS, NewNs} = {floor_div(New, ?NS), floor_mod(New, ?NS)},
                    {ok, Clock1} = set_field(Clock0, <<"offset_s">>, NewS),
                    {ok, Clock} = set_field(Clock1, <<"offset">>, NewNs),
                    Env = iolist_to_binary(
                            [io_lib:format("\tbeamtrace_clock_~s = ~s;\n", [K, V])
                             || {K, V} <- [{reference, quoted(maps:get(reference, E, node()))},
                                           {offset_ns, integer_to_list(Offset)},
                                           {error_ns, integer_to_list(maps:get(error_ns, E))},
                                           {rtt_ns, integer_to_list(maps:get(rtt_ns, E))},
                                           {drift_ns, integer_to_list(maps:get(drift_ns, E, 0))},
                                           {samples, integer_to_list(maps:get(samples, E))},
                                           {own_offset_s, integer_to_list(OwnS)},
                                           {own_offset, integer_to_list(OwnNs)}]]),
                    case insert_env(Head, Env) of
                        {ok, Head1} -> {ok, <<Head1/binary, Clock/binary>>};
                        Error -> Error
                    end;
                _ ->
                    {error, no_clock_offset}
            end;
        _ ->
            {error, not_beamtrace_metadata}
    end.

floor_div(A, B) when A >= 0 -> A div B;
floor_div(A, B) -> -((-A + B - 1) div B).

floor_mod(A, B) -> A - floor_div(A, B) * B.

quoted(Atom) when is_atom(Atom) ->
    quoted(atom_to_list(Atom));
quoted(Text) ->
    [$", [case C of $" -> "\\\""; $\\ -> "\\\\"; _ -> C end || C <- Text], $"].

%% "\tName = Integer;" in a block: {ok, Integer, Position of the value}.
field(Block, Name) ->
    Pattern = <<"\n\t", Name/binary, " = ">>,
    case binary:match(Block, Pattern) of
        {At, Len} ->
            Start = At + Len,
            <<_:Start/binary, Rest/binary>> = Block,
            case binary:match(Rest, <<";">>) of
                {End, _} ->
                    <<Value:End/binary, _/binary>> = Rest,
                    try {ok, binary_to_integer(Value), {Start, End}}
                    catch error:badarg -> error
                    end;
                nomatch -> error
            end;
        nomatch ->
            error
    end.

set_field(Block, Name, Value) ->
    {ok, _, {Start, Len}} = field(Block, Name),
    <<Before:Start/binary, _:Len/binary, After/binary>> = Block,
    {ok, <<Before/binary, (integer_to_binary(Value))/binary, After/binary>>}.

%% The lines go at the end of the env block, before its "};".
insert_env(Head, Lines) ->
    {EnvAt, _} = binary:match(Head, <<"\nenv {">>),
    <<_:EnvAt/binary, Env/binary>> = Head,
    case binary:match(Env, <<"\n};">>) of
        {CloseAt, _} ->
            At = EnvAt + CloseAt + 1,
            <<Before:At/binary, After/binary>> = Head,
            {ok, <<Before/binary, Lines/binary, After/binary>>};
        nomatch ->
            {error, no_env_end}
    end.

replace(Path, Text) ->
    Tmp = Path ++ ".beamtrace-tmp",
    Mode = case file:read_file_info(Path) of
               {ok, Info} -> element(8, Info) band 8#777;
               _ -> 8#600
           end,
    _ = file:delete(Tmp),
    case file:open(Tmp, [write, raw, binary, exclusive]) of
        {ok, F} ->
            R = file:write(F, Text),
            ok = file:close(F),
            case R of
                ok ->
                    _ = file:change_mode(Tmp, Mode),
                    case file:rename(Tmp, Path) of
                        ok -> ok;
                        {error, Why} -> _ = file:delete(Tmp), {error, {Why, Path}}
                    end;
                {error, Why} ->
                    _ = file:delete(Tmp),
                    {error, {Why, Tmp}}
            end;
        {error, Why} ->
            {error, {Why, Tmp}}
    end.

%% @doc The environment of a trace's metadata as a map (values as text):
%% for tests and tools.
-spec read_env(file:name_all()) -> {ok, #{binary() => binary()}} | {error, term()}.
read_env(Dir) ->
    case file:read_file(filename:join(Dir, "metadata")) of
        {ok, Text} ->
            case binary:match(Text, <<"\nenv {">>) of
                {At, Len} ->
                    Start = At + Len,
                    <<_:Start/binary, Rest/binary>> = Text,
                    {End, _} = binary:match(Rest, <<"\n};">>),
                    <<Body:End/binary, _/binary>> = Rest,
                    {ok, maps:from_list(
                           [{string:trim(K), string:trim(string:trim(V, trailing, ";"), both, "\"")}
                            || Line <- binary:split(Body, <<"\n">>, [global]),
                               [K, V] <- [binary:split(Line, <<" = ">>)]])};
                nomatch ->
                    {error, no_env}
            end;
        {error, Why} ->
            {error, Why}
    end.
