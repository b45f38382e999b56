%% @doc The end of one node's recording (beamtrace_record's step): takes down
%% what was shipped and started on the target, in order, and checks that
%% nothing is left (no module, no directory, no process); the Ctrl-C before
%% recording.
-module(beamtrace_record_cleanup).

-include("beamtrace_record.hrl").
-import(beamtrace_record, [agent_down/2, note/2, fail/2]).

%% One node's last steps, for beamtrace_record and beamtrace_cluster's workers.
-export([finish/1, abandon/1, abandon/2]).
%% For beamtrace_flight_remote (flights, fetch, stop --node).
-export([verify/3]).
%% For the other steps: the Ctrl-C and test pauses between them, what
%% stays on the target, an RPC that fails with one line.
-export([interrupted/1, test_pause/1, trace_kept/1, fetch_text/3, rpc/4]).

%%% Cleaning up

%% @doc A worker's abandon/2: with the state it has.
-spec abandon({fail, integer(), iodata()}) -> no_return().
abandon(Failure) ->
    abandon(get(?STATE), Failure).

%% After a failure with the agent or lock in place: takes everything down,
%% then fails with the first error.
abandon(R, {fail, Status, Text}) ->
    _ = try cleanup(R) catch throw:_ -> ok; error:_ -> ok; exit:_ -> ok end,
    throw({fail, Status, Text}).

%% @doc Takes everything down on the node and checks that nothing is left.
-spec finish(term()) -> 0.
finish(R) ->
    cleanup(R),
    ?EXIT_OK.

cleanup(#r{agent = undefined, lock = Lock, ref = Ref, node = T, shipped = Shipped, dir = Dir,
           nif_dir = NifDir} = R) ->
    _ = is_pid(Lock) andalso (Lock ! {Ref, release}) =/= ok andalso unlink(Lock),
    Kept = trace_kept(R),
    case lists:member(T, nodes(hidden)) of
        false ->
            %% Its agent (linked to this process) saw the link break and
            %% takes down by itself what it had shipped, but the trace.
            note("~s is not connected: its agent removes what was shipped by itself~s", [T,
                 case Kept of
                     undefined -> "";
                     _ -> io_lib:format("; the trace stays there: ~s", [fetch_text(T, Kept, Dir)])
                 end]);
        true ->
            %% The agent is gone (it would have cleaned up itself): what
            %% it may have left; a trace it recorded stays.
            [rpc(T, code, F, [M]) || M <- Shipped, F <- [purge, delete, purge]],
            _ = NifDir =/= undefined andalso rpc(T, file, del_dir_r, [NifDir]),
            _ = Dir =/= undefined andalso Kept =:= undefined andalso rpc(T, file, del_dir_r, [Dir]),
            case Kept of
                undefined -> verify(T, Shipped, Dir, NifDir);
                _ -> note("the trace stays on ~s: ~s", [T, fetch_text(T, Kept, Dir)]),
                     verify(T, Shipped, undefined, NifDir)
            end
    end;
cleanup(#r{node = T, ref = Ref, agent = A, agent_mon = Mon} = R) ->
    Tag = make_ref(),
    A ! {Ref, self(), Tag, cleanup},
    Report = receive
                 {Tag, {ok, Rep}} -> Rep;
                 {'DOWN', Mon, process, _, Why} -> agent_down(T, Why)
             after 60000 -> fail("~s did not clean up within 60 s", [T])
             end,
    unlink(A),
    receive {'DOWN', Mon, process, _, _} -> ok
    after 10000 -> ok
    end,
    Keep = maps:get(keep, R#r.opts, false),
    case {Keep, R#r.opts} of
        {false, #{flight := _, detach := true}} ->
            ok;     %% detach_flight/1 said what is left running
        {true, _} ->
            note("kept on ~s (--keep): ~s~s", [T, lists:join(", ", [atom_to_list(M) || M <- R#r.shipped]),
                                              case R#r.dir of
                                                  undefined -> "";
                                                  D -> ", " ++ D
                                              end]);
        {false, _} ->
            verify(T, maps:get(modules, Report), maps:get(dir, Report),
                   maps:get(nif_dir, Report, undefined))
    end.

%% The trace recorded on the target, when it was to come back here (not
%% --remote-dir) and a trace was started: it stays there now.
trace_kept(#r{trace_dir = TDir, opts = Opts}) when TDir =/= undefined ->
    case maps:get(remote_dir, Opts, false) of
        false -> TDir;
        _ -> undefined
    end;
trace_kept(_) ->
    undefined.

%% Where a trace left on the target is and the commands to fetch it.
fetch_text(T, TDir, Dir) ->
    [_, Host] = string:split(atom_to_list(T), "@"),
    io_lib:format("~ts (fetch it with: scp -r ~s:~ts . ; then remove ~ts there)",
                  [TDir, Host, TDir, case Dir of undefined -> TDir; _ -> Dir end]).

%% Checks on the target that what was shipped is gone, and that no flag or
%% pattern of beamtrace is left; says so, or warns. verify/3: no NIF
%% directory of this command's to check (beamtrace_flight_remote).
-spec verify(node(), [module()], file:filename() | undefined) -> ok.
verify(T, Mods, Dir) ->
    verify(T, Mods, Dir, undefined).

verify(T, Mods, Dir, NifDir) ->
    Loaded = wait_purged(T, Mods, 50),
    DirLeft = [D || D <- [Dir, NifDir], D =/= undefined,
                    element(1, rpc(T, file, read_file_info, [D])) =:= ok],
    NewTracer = case rpc(T, erlang, trace_info, [new, tracer]) of
                    {tracer, {beamtrace, _} = Tr} -> [Tr];
                    _ -> []
                end,
    Sessions = case rpc(T, trace, session_info, [new]) of
                   L when is_list(L) -> [S || S = {beamtrace_trace, _} <- L];
                   _ -> []
               end,
    Watcher = case rpc(T, erlang, whereis, [beamtrace_nodes]) of
                  W when is_pid(W) -> [W];
                  _ -> []
              end,
    Left = [io_lib:format("modules ~0p", [Loaded]) || Loaded =/= []]
        ++ [io_lib:format("the node table's watcher ~0p", Watcher) || Watcher =/= []]
        ++ [io_lib:format("directory ~s", [D]) || D <- DirLeft]
        ++ [io_lib:format("tracer ~0p on new processes", NewTracer) || NewTracer =/= []]
        ++ [io_lib:format("trace sessions ~0p", [Sessions]) || Sessions =/= []],
    case Left of
        [] ->
            Dirs = [D || D <- [Dir, NifDir], D =/= undefined],
            note("removed from ~s: ~s; no beamtrace flag, pattern or session left",
                 [T, case {Mods, Dirs} of
                         {[], []} -> "nothing was shipped";
                         _ -> lists:join(", ", [atom_to_list(M) || M <- Mods] ++ Dirs)
                     end]);
        _ ->
            fail("left on ~s after cleaning up: ~s", [T, lists:join("; ", Left)])
    end.

%% erpc:call/4, any failure as {rpc_failed, Why} (OTP 29 deprecates
%% 'catch Expr').
rpc(T, M, F, A) ->
    try erpc:call(T, M, F, A)
    catch Class:Why -> {rpc_failed, {Class, Why}}
    end.

%% One call a try, not one a module: each erpc call is a new process of
%% normal priority on the target, which on a saturated node waits a turn of
%% the run queue (25,000 busy processes: seconds a turn). code:all_loaded/0
%% lists the modules code:is_loaded/1 says are loaded (current code: a
%% deleted module whose old code the purge has yet to remove is not).
wait_purged(T, Mods, Tries) ->
    Current = erpc:call(T, code, all_loaded, []),
    Loaded = [M || M <- Mods, lists:keymember(M, 1, Current)],
    case {Loaded, Tries} of
        {[], _} -> [];
        {_, 0} -> Loaded;
        _ -> timer:sleep(100), wait_purged(T, Loaded, Tries - 1)
    end.

%% A stop request (Ctrl-C) or the command gone, while shipping.
interrupted(_R) ->
    receive
        {stdin, L} when L =:= "stop"; L =:= eof ->
            throw({fail, ?EXIT_INTERRUPTED, "interrupted (Ctrl-C) before recording"});
        {?SINK, abort, Why} ->
            throw({fail, ?EXIT_FAIL, Why})
    after 0 ->
            ok
    end.

%% Test hook: BEAMTRACE_TEST_PAUSE=ship stops while shipping (the NIF
%% written, the modules not loaded yet) until Ctrl-C; =stop after a Ctrl-C
%% while recording, before stopping (for a second Ctrl-C to find it busy).
test_pause(Stage) ->
    case os:getenv("BEAMTRACE_TEST_PAUSE") =:= atom_to_list(Stage) of
        false -> ok;
        true ->
            note("test pause: ~s", [Stage]),
            receive
                {stdin, L} when L =:= "stop"; L =:= eof ->
                    throw({fail, ?EXIT_INTERRUPTED, "interrupted (Ctrl-C) before recording"})
            after 30000 -> ok
            end
    end.
