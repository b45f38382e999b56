%% @doc `beamtrace snapshot --node N [-o DIR]', in the hidden node the
%% command starts (beamtrace_record runs it once connected): what a
%% running `record --mode overwrite' holds in its rings now is written on
%% the node, next to its trace, and copied here; the recording goes on.
%%
%% The recording's agent (beamtrace_remote, registered `beamtrace_record'
%% on the node) answers one request from a controller other than its own,
%% `{snapshot_request, From, Tag}': it makes the snapshot (its private
%% directory holds it, removed with the trace when the recording ends).
%% The copy uses OTP's `file' functions only (beamtrace_flight_remote's,
%% never through a symlink): nothing is shipped for it.
-module(beamtrace_snapshot_remote).

-export([snapshot/2]).

%% The agent makes the snapshot at high priority; writing the rings of a
%% busy node's schedulers can still take seconds.
-define(TIMEOUT_MS, 60000).

%% @doc Takes the snapshot of the recording running on T and copies it into
%% `out' (default ./beamtrace-snapshot-NODE-N). Exit status 0; fails (1)
%% when no overwrite-mode recording runs there.
-spec snapshot(node(), map()) -> 0.
snapshot(T, Opts) ->
    Agent = case rpc(T, erlang, whereis, [beamtrace_record]) of
                P when is_pid(P) -> P;
                _ -> beamtrace_record:fail("no recording runs on ~s: start one with beamtrace "
                                           "record --node ~s --mode overwrite ...", [T, T])
            end,
    Tag = make_ref(),
    Mon = erlang:monitor(process, Agent),
    Agent ! {snapshot_request, self(), Tag},
    Info = receive
               {Tag, {ok, #{dir := _} = I}} -> I;
               {Tag, {error, Why}} -> refused(T, Why);
               {'DOWN', Mon, process, _, _} ->
                   beamtrace_record:fail("the recording on ~s ended before its snapshot was "
                                         "taken", [T])
           after ?TIMEOUT_MS ->
                   beamtrace_record:fail("the recording on ~s did not answer within ~b s (a "
                                         "record of another beamtrace version?)",
                                         [T, ?TIMEOUT_MS div 1000])
           end,
    erlang:demonitor(Mon, [flush]),
    #{dir := Dir, events := E, discarded := D} = Info,
    Out = out_dir(T, Dir, Opts),
    beamtrace_flight_remote:copy_dir(T, Dir, Out),
    put(result_line, io_lib:format("snapshot of ~s: ~b events, ~b discarded, ~b bytes, in ~ts "
                                   "(the recording goes on)",
                                   [T, E, D, maps:get(written_bytes, Info, 0), Out])),
    0.

-spec refused(node(), term()) -> no_return().
refused(T, not_flight_recorder) ->
    beamtrace_record:fail("the recording on ~s keeps no flight recorder: record with --mode "
                          "overwrite to take snapshots", [T]);
refused(T, flight) ->
    beamtrace_record:fail("the recording on ~s is a flight recording: its captures are what "
                          "it keeps (copy them with beamtrace fetch --node ~s)", [T, T]);
refused(T, not_running) ->
    beamtrace_record:fail("the recording on ~s has not started or has already ended: nothing "
                          "taken", [T]);
refused(T, Why) ->
    beamtrace_record:fail("the snapshot on ~s failed: ~0p", [T, Why]).

%% -o DIR (new, or empty), else beside here, numbered as on the node.
out_dir(T, Dir, Opts) ->
    Out = case maps:get(out, Opts, undefined) of
              undefined ->
                  N = lists:last(string:split(unicode:characters_to_list(Dir), "-snapshot-",
                                              trailing)),
                  filename:absname("beamtrace-snapshot-" ++ atom_to_list(T) ++ "-" ++ N);
              O ->
                  filename:absname(unicode:characters_to_list(O))
          end,
    %% New, or an empty directory of ours, never a link (beamtrace_local_dir);
    %% removed again, since the copy is renamed into its place when whole.
    case beamtrace_local_dir:make(Out, true) of
        ok -> ok = file:del_dir(Out), Out;
        {error, Text} -> beamtrace_record:fail("~ts", [Text])
    end.

rpc(T, M, F, A) ->
    try erpc:call(T, M, F, A)
    catch Class:Why -> {rpc_failed, {Class, Why}}
    end.
