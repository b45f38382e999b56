%% @doc One node's trace, once beamtrace is loaded there (beamtrace_record's
%% steps): starts it (or a flight recorder) through the agent, waits with
%% progress and snapshot lines until it ends or is stopped, and copies the
%% trace back in chunks.
-module(beamtrace_record_session).

-include("beamtrace_record.hrl").
-import(beamtrace_record_text, [explain/1, reason_text/1, posix/1, bytes_text/1, plural/1,
                                plural_es/1]).
-import(beamtrace_record, [st/1, agent_call/2, agent_down/2, gone/0, note/2, out/2, fail/2]).
-import(beamtrace_record_cleanup, [interrupted/1, test_pause/1, trace_kept/1, fetch_text/3]).

%% One node's steps, for beamtrace_record and beamtrace_cluster's workers.
-export([start_trace/1, wait/2, collect/2, with_trace_opts/2, streams_only/1]).
%% A flight recorder's (`mode => overwrite'), for beamtrace_record.
-export([start_flight/1, detach_flight/1]).

%%% Recording

%% @doc Starts the trace on the node: `{State, StartMs}'.
-spec start_trace(term()) -> {term(), integer()}.
start_trace(#r{node = T} = R) ->
    {Spec, TraceOpts} = trace_request(R),
    interrupted(R),
    T0 = erlang:monotonic_time(millisecond),
    case agent_call(R, {trace, Spec, TraceOpts}) of
        {ok, #{dir := TDir} = Info} ->
            note("recording on ~s into ~s: ~b function~s, ~b process~s (~s trace session)",
                 [T, where(Info), maps:get(functions, Info), plural(maps:get(functions, Info)),
                  maps:get(processes, Info), plural_es(maps:get(processes, Info)),
                  case maps:get(backend, Info) of
                      session -> "its own";
                      legacy -> "the legacy"
                  end]),
            {st(R#r{trace_dir = TDir, backend = maps:get(backend, Info)}), T0};
        {error, Why} ->
            fail("cannot trace on ~s: ~s", [T, explain(Why)])
    end.

%% Where a trace goes: its directory on the node, and/or the relayd's copy.
where(#{dir := Dir, relayd := #{url := Url, path := Path} = R}) ->
    Relayd = [io_lib:format("lttng-relayd ~s (~s)", [Url, case Path of
                                                           undefined -> "connecting";
                                                           _ -> Path
                                                       end]),
              relayd_gap(R)],
    case Dir of
        undefined -> Relayd;
        _ -> [Dir, " and ", Relayd]
    end;
where(#{dir := Dir}) ->
    Dir.

%% What the relayd's copy lacks, in one line (empty when nothing).
relayd_gap(#{lost := 0}) ->
    "";
relayd_gap(#{lost := Lost, disconnections := D, error := Why}) ->
    io_lib:format("; the relayd's copy lacks ~b events (in discarded; ~b lost connection~s~s)",
                  [Lost, D, plural(D), case Why of
                                            undefined -> "";
                                            _ -> [", last: ", Why]
                                        end]).

%% @doc Adds trace options (beamtrace:trace/2's) to a node's state before
%% start_trace/1: a cluster worker's clock estimate for a streamed trace.
-spec with_trace_opts(term(), map()) -> term().
with_trace_opts(#r{opts = #{trace_opts := T} = Opts} = R, More) ->
    st(R#r{opts = Opts#{trace_opts := maps:merge(T, More)}});
with_trace_opts(#r{opts = Opts} = R, More) ->
    st(R#r{opts = maps:merge(Opts, More)}).

%% @doc 1 when the node's trace only streams to a relayd: nothing to bring
%% back over distribution.
-spec streams_only(map()) -> boolean().
streams_only(#{trace_opts := T}) ->
    streams_only(T);
streams_only(#{relayd := _} = Opts) ->
    not is_map_key(dir, Opts) andalso maps:get(local, Opts, false) =/= true;
streams_only(#{}) ->
    false.

%% record --flight: a flight recording (beamtrace:flight/2) while the
%% command waits; its directory, captures included, is brought back as a
%% trace is.
start_flight(#r{node = T} = R) ->
    {Spec, FlightOpts} = flight_request(R),
    interrupted(R),
    T0 = erlang:monotonic_time(millisecond),
    case agent_call(R, {flight, Spec, FlightOpts}) of
        {ok, #{dir := TDir} = Info} ->
            note("flight recording on ~s into ~s: ~b function~s, ~b process~s",
                 [T, TDir, maps:get(functions, Info), plural(maps:get(functions, Info)),
                  maps:get(processes, Info), plural_es(maps:get(processes, Info))]),
            {st(R#r{trace_dir = TDir, backend = maps:get(backend, Info)}), T0};
        {error, Why} ->
            fail("cannot start the flight recording on ~s: ~s", [T, explain_flight(Why)])
    end.

%% record --flight --detach: the flight agent takes the recording, the
%% private directory and the shipped modules over; the command goes.
detach_flight(#r{node = T} = R) ->
    {Spec, FlightOpts} = flight_request(R),
    interrupted(R),
    case agent_call(R, {detach_flight, Spec, FlightOpts}) of
        {ok, Info} ->
            note("left running on ~s: the flight recorder, ~s (beamtrace stop --node ~s removes "
                 "everything)", [T, lists:join(", ", [atom_to_list(M) || M <- R#r.shipped] ++
                                                  [D || D <- [R#r.dir], D =/= undefined]), T]),
            put(result_line, beamtrace_flight_remote:detached_line(T, Info)),
            %% Nothing of that is this command's to remove any more.
            st(R#r{dir = undefined, shipped = []});
        {error, {already_running, _}} ->
            fail("a flight recording already runs on ~s: see it with beamtrace flights --node ~s, "
                 "stop it with beamtrace stop --node ~s", [T, T, T]);
        {error, Why} ->
            fail("cannot start the flight recording on ~s: ~s", [T, explain_flight(Why)])
    end.

%% A flight's own refusals in the command's words (a trigger's system
%% monitor setting is refused as the session's would be: named here as
%% the trigger).
explain_flight({system_monitor, {unsupported, long_message_queue}}) ->
    "--trigger long_message_queue=D/E needs a VM with the long_message_queue system monitor "
    "(OTP 27 or later) there: use --trigger message_queue=N (sampled) instead";
explain_flight({badtrigger, T, Why}) ->
    io_lib:format("--trigger '~ts': ~ts", [T, Why]);
explain_flight(Why) ->
    explain(Why).

%% The flight's spec and options: the trace's, with `flight''s (window,
%% after, triggers, max_captures, until) in place of its duration.
flight_request(#r{opts = Opts} = R) ->
    {Spec, TraceOpts} = trace_request(R),
    {Spec, maps:merge(maps:without([duration, remote_dir], TraceOpts), maps:get(flight, Opts))}.

%% The spec and trace/2 options of a recording.
trace_request(#r{node = T, opts = Opts}) ->
    %% From a shell (beamtrace:trace/2 with nodes): the caller's own spec
    %% and options. From the command: its calls, events and options.
        case Opts of
            #{spec := Spec0, trace_opts := TraceOpts0} ->
                {Spec0, TraceOpts0};
            #{} ->
                Spec0 = [unicode:characters_to_list(C) || C <- maps:get(calls, Opts, [])]
                    ++ maps:get(events, Opts, []),
                TraceOpts0 = sources(maps:with([duration, max_events, max_bytes, max_rate,
                                                return_to, links, results, args, samples,
                                                system_monitor,
                                                distribution, file_io, ets, sample,
                                                on_max_rate, buffer_size, message_length,
                                                mode | ?STREAM_OPTS], Opts)),
                TraceOpts1 = TraceOpts0#{procs => procs(T, maps:get(procs, Opts, all)),
                                         exclude => procs(T, maps:get(exclude, Opts, []))},
                {Spec0, case maps:get(remote_dir, Opts, false) of
                            false -> TraceOpts1;
                            true -> TraceOpts1#{remote_dir => true};
                            D -> TraceOpts1#{remote_dir => true, dir => D}
                        end}
        end.

%% The command gives ETS table names as binaries: the session takes atoms.
sources(#{ets := Tables} = Opts) ->
    Opts#{ets := [case T of
                      all -> all;
                      _ -> binary_to_atom(T, utf8)
                  end || T <- Tables]};
sources(Opts) ->
    Opts.

procs(_T, P) when P =:= all; P =:= new; P =:= existing ->
    P;
procs(T, Names) when is_list(Names) ->
    [case unicode:characters_to_list(Name) of
         "<" ++ _ = Pid ->
             try erpc:call(T, erlang, list_to_pid, [Pid])
             catch error:_ -> fail("--procs: ~s is not a pid", [Pid])
             end;
         Text -> list_to_atom(Text)
     end || Name <- Names].

%% @doc Waits until the trace on the node ends (its caps, Ctrl-C), and
%% returns its result for collect/2.
-spec wait(term(), integer()) -> term().
wait(R, T0) ->
    erlang:send_after(?PROGRESS_MS, self(), progress),
    wait_loop(R, T0).

wait_loop(#r{ref = Ref, agent_mon = Mon, node = T} = R, T0) ->
    Coordinator = get(?SINK),   %% a cluster worker's, or undefined
    receive
        progress ->
            case agent_call(R, progress) of
                {ok, #{elapsed_ms := _} = Info} -> progress_line(Info);
                %% Anything else: the trace has just stopped (a flight
                %% recorder's figures then come without its live ones,
                %% elapsed_ms among them), and its result is on its way.
                _ -> ok
            end,
            erlang:send_after(?PROGRESS_MS, self(), progress),
            wait_loop(R, T0);
        {Ref, trace_done, Result} ->
            Result;
        {?SINK, abort, Why} ->
            throw({fail, ?EXIT_FAIL, Why});
        {'EXIT', Sink, Why} when Sink =:= Coordinator ->
            %% A cluster worker whose coordinator is gone: the agent's link
            %% breaking makes it take everything down.
            exit(Why);
        {stdin, "snapshot"} ->
            snapshot(R),
            wait_loop(R, T0);
        {stdin, L} when L =:= "stop"; L =:= eof ->
            test_pause(stop),
            case agent_call(R, stop) of
                {error, not_running} ->
                    receive {Ref, trace_done, Result} -> Result
                    after 5000 -> fail("the trace on ~s did not stop", [T])
                    end;
                Result ->
                    note("~s stopped (Ctrl-C)", [T]),
                    Result
            end;
        {'DOWN', Mon, process, _, noconnection} ->
            gone(),
            throw({fail, ?EXIT_FAIL, lost_text(R)});
        {'DOWN', Mon, process, _, Why} ->
            agent_down(T, Why)
    end.

%% The connection to the target broke while recording: where the trace
%% is, whether the node is down or only unreachable from here.
lost_text(#r{node = T, dir = Dir, nif_dir = NifDir} = R) ->
    Up = net_adm:ping(T) =:= pong,
    Where = case trace_kept(R) of
                undefined -> "";
                TDir when Up ->
                    io_lib:format("; its agent stopped the trace and kept it there: ~s",
                                  [fetch_text(T, TDir, Dir)]);
                TDir ->
                    io_lib:format("; left on its host: ~s", [fetch_text(T, TDir, Dir)])
            end,
    Left = [D || D <- [NifDir], D =/= undefined, not Up],
    io_lib:format("~s ~s while recording: no trace was brought back~s~s",
                  [T, case Up of
                          true -> "lost its connection to this controller";
                          false -> "went down (or cannot be reached)"
                      end, Where,
                   [io_lib:format("; also left there: ~s", [lists:join(", ", Left)]) || Left =/= []]]).

%% A flight recorder's contents now, copied back next to the trace
%% (<out>-snapshot-<N>), or left next to it on the target (--remote-dir).
snapshot(#r{node = T, opts = Opts} = R) ->
    case maps:get(mode, Opts, discard) of
        overwrite ->
            case agent_call(R, snapshot) of
                {ok, #{dir := Dir, events := E, discarded := D, written_bytes := B}} ->
                    N = case get(snapshots) of undefined -> 1; K -> K + 1 end,
                    put(snapshots, N),
                    Where = case maps:get(remote_dir, Opts, false) of
                                false ->
                                    Out = lists:flatten(io_lib:format("~ts-snapshot-~b",
                                                                      [maps:get(out, Opts), N])),
                                    copy_dir(R, Dir, Out),
                                    Out;
                                _ ->
                                    io_lib:format("~s:~ts", [T, Dir])
                            end,
                    out("snapshot ~ts ~b ~b ~b", [Where, E, D, B]),
                    note("snapshot ~b of ~s: ~b events, ~b discarded, ~s, in ~ts",
                         [N, T, E, D, bytes_text(B), Where]);
                {error, Why} ->
                    note("snapshot of ~s failed: ~s", [T, explain(Why)])
            end;
        _ ->
            note("snapshot: the trace on ~s keeps no flight recorder (record with --mode "
                 "overwrite): nothing taken; it goes on", [T])
    end.

progress_line(#{elapsed_ms := E} = I) ->
    case get(?SINK) of
        Sink when is_pid(Sink) ->
            Sink ! {?SINK, self(), {progress, I}};
        _ ->
            out("progress ~b ~b ~b ~b", [E, maps:get(events, I, 0), maps:get(discarded, I, 0),
                                         maps:get(written_bytes, I, 0)])
    end.

%% @doc The trace is complete on the target: brings it back (unless it
%% stays there), then says what it holds (the result line's text, also
%% under `result_line' in the process dictionary).
-spec collect(term(), term()) -> term().
collect(#r{node = T, opts = Opts} = R, Result) ->
    {Stats, Failure} = case Result of
                           {ok, S} -> {S, none};
                           {error, {Posix, S}} when is_map(S) -> {S, Posix};
                           {error, Why} -> fail("the trace on ~s failed: ~s", [T, explain(Why)])
                       end,
    progress_line(Stats),
    Where = case {maps:get(remote_dir, Opts, false), Stats} of
                {_, #{dir := undefined}} ->
                    %% Streamed only: the relayd has it; nothing comes back.
                    where(Stats);
                {false, _} -> copy_back(R);
                _ -> io_lib:format("~s:~s", [T, maps:get(dir, Stats)])
            end,
    Summary = io_lib:format("~b events, ~b discarded, ~s in ~.1f s (stopped by ~s); trace in ~s",
                            [maps:get(events, Stats), maps:get(discarded, Stats),
                             bytes_text(maps:get(written_bytes, Stats)),
                             maps:get(elapsed_ms, Stats, 0) / 1000,
                             reason_text(maps:get(reason, Stats)), Where]),
    put(result_line, Summary),
    _ = maps:get(reason, Stats) =:= max_rate andalso
        note("~s traced more than ~s events a second (--max-rate): raise it, give infinity, or "
             "keep recording at a lower ratio with --on-max-rate sample",
             [T, case maps:get(max_rate, Opts, default) of
                     default -> integer_to_list(beamtrace_trace_options:default_max_rate());
                     Rate -> io_lib:format("~w", [Rate])
                 end]),
    case {maps:get(code_loads, Stats, 0), maps:get(not_reapplied, Stats, [])} of
        {0, _} -> ok;
        {Loads, []} ->
            note("~s: traced code was loaded again ~b time~s while recording: its call patterns "
                 "were set again (code_load events; the calls in between are not in the trace)",
                 [T, Loads, plural(Loads)]);
        {Loads, Missing} ->
            note("warning: ~s: traced code was loaded again ~b time~s while recording; these "
                 "call specs match nothing in the new code and were not traced after it: ~ts",
                 [T, Loads, plural(Loads), lists:join(", ", [io_lib:format("~ts (~s)", [Spec, Why])
                                                            || {Spec, Why} <- Missing])])
    end,
    case Failure of
        none ->
            R;
        _ ->
            fail("the trace on ~s stopped early: ~s writing ~s there (~s): the trace holds what "
                 "was written before; free space there or give --remote-tmp DIR",
                 [T, posix(Failure), maps:get(dir, Stats), Failure])
    end.

copy_back(#r{opts = Opts} = R) ->
    copy_dir(R, trace, maps:get(out, Opts)).

%% Copies the agent's directory Which (trace: the trace; a snapshot's
%% directory) into Out, which must be new or empty, and ours
%% (beamtrace_local_dir).
copy_dir(#r{node = T} = R, Which, Out) ->
    Files = case agent_call(R, {list, Which}) of
                {ok, F} -> F;
                {error, Why} -> fail("cannot list the trace on ~s: ~0p", [T, Why])
            end,
    case beamtrace_local_dir:make(Out, true) of
        ok -> ok;
        {error, Text} -> fail("~ts", [Text])
    end,
    Total = lists:sum([S || {_, S} <- Files]),
    try
        [copy_file(R, Which, Rel, Size, Out) || {Rel, Size} <- Files]
    catch throw:{local, Why3, Path, Done} ->
            _ = file:del_dir_r(Out),
            fail("cannot write the trace into ~s: ~s at ~s after ~s of ~s; the partial copy was "
                 "removed: free space or give -o another directory", [Out, posix(Why3), Path,
                 bytes_text(Done), bytes_text(Total)])
    end,
    note("copied ~b files (~s) into ~s", [length(Files), bytes_text(Total), Out]),
    Out.

copy_file(R, Which, Rel, Size, Out) ->
    Path = filename:join(Out, Rel),
    ok = filelib:ensure_dir(Path),
    case file:open(Path, [write, raw, binary, exclusive]) of
        {ok, F} ->
            _ = file:change_mode(Path, 8#600),
            try copy_chunks(R, {Which, Rel}, F, 0, Size, Path)
            after file:close(F)
            end;
        {error, Why} ->
            throw({local, Why, Path, 0})
    end.

copy_chunks(_R, _Rel, _F, Off, Size, _Path) when Off >= Size ->
    ok;
copy_chunks(#r{node = T} = R, {Which, Rel}, F, Off, Size, Path) ->
    case agent_call(R, {read, Which, Rel, Off, min(?CHUNK_BYTES, Size - Off)}) of
        {ok, <<>>} ->
            ok;
        {ok, Bin} ->
            case file:write(F, Bin) of
                ok -> copy_chunks(R, {Which, Rel}, F, Off + byte_size(Bin), Size, Path);
                {error, Why} -> throw({local, Why, Path, Off})
            end;
        {error, Why} ->
            fail("cannot read the trace on ~s: ~0p", [T, Why])
    end.
