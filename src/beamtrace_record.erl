%% @doc The controller of `beamtrace record': runs in the hidden node the
%% command starts (c_src/cli/record/controller.c), traces a node that has nothing
%% of beamtrace installed, brings the trace back and leaves nothing behind.
%%
%% == Protocol with the command ==
%% stdin: the cookie (one line: never on a command line, where `ps' shows
%% it), the options (one Erlang term, ending with a dot), then `stop' lines
%% (Ctrl-C), `snapshot' lines (a flight recorder, `mode => overwrite': what
%% it holds now is copied back, next to the trace) or end of file (the
%% command is gone: stop, clean up, halt).
%% stdout, one line each: `progress ElapsedMs Events Discarded Bytes',
%% `snapshot Dir Events Discarded Bytes' (a snapshot brought back into
%% Dir), `note Text' (what happens, for stderr), `error Text' (the one line
%% that says what went wrong and how to fix it), `result Text' (for
%% stdout).
%%
%% The options term, as the command writes it (each checked here before
%% anything is shipped, check_options/1): node, nodes, cluster, calls
%% ([binary()], Erlang's or Elixir's spelling), events, procs, exclude
%% ([binary()]: pids as <0.1.2>, registered names), duration, max_events,
%% max_bytes, max_rate, buffer_size (bytes per thread, 32 KiB..1 GiB),
%% message_length (0..16384 | size_only), mode (discard | overwrite), links,
%% samples, system_monitor, distribution, file_io, ets, out, remote_dir,
%% remote_tmp, keep, return_to, tty, nif, cookie_from.
%% The exit status: 0 recorded, 1 failed, 2 bad options, 130 interrupted
%% before recording.
%%
%% == Steps ==
%% connect (per-target cookie, hidden) -> lock the target (a process of OTP
%% code only, registered `beamtrace_record': a second record is refused)
%% -> check the OTP release, NIF API, OS and CPU -> ship beamtrace_elf and
%% beamtrace_remote, which the lock becomes (the agent) -> check the C library (ELF symbol
%% versions the NIF needs against those the target's libc defines) ->
%% ship the NIF into a private directory and load the modules -> trace
%% (beamtrace:trace_async/2 with the guard rails) -> copy the trace back
%% -> clean up and check that nothing is left. Modules already loaded on
%% the target with the same MD5 are used, never shipped nor removed.
%%
%% The same steps, exported, are what beamtrace_cluster's workers run for
%% each node of a cluster (`record --nodes', trace/2 with `nodes'): one
%% process per node, whose state is in its own process dictionary, whose
%% lines go to the coordinator (the sink) instead of stdout.
%%
%% This module holds the entry, the options, the lock, the shipping and
%% the agent protocol; the other steps have one module each, sharing the
%% state record (include/beamtrace_record.hrl): beamtrace_record_connect,
%% beamtrace_record_session (trace, wait, copy back),
%% beamtrace_record_cleanup. Its words are in beamtrace_record_text.
-module(beamtrace_record).

-export([main/0]).
%% One node's steps, for beamtrace_cluster's workers (one process per
%% node: the state is theirs, in their process dictionary).
%% The steps themselves are in beamtrace_record_connect (connect/3),
%% beamtrace_record_session (start_trace/1, wait/2, collect/2,
%% with_trace_opts/2, streams_only/1) and beamtrace_record_cleanup
%% (finish/1, abandon/1).
-export([node_name/1, setup/3, agent_call/2, note/2, fail/2]).
%% For beamtrace_flight_remote (flights, fetch, stop --node; verify/3 is
%% beamtrace_record_cleanup's).
-export([tmp_base/2, out/2]).

%% What is shipped, in load order: beamtrace last (its on_load loads the
%% NIF). The agent's modules go first, on their own (?AGENT_MODULES).
%% Not beamtrace_dyntrace: install_dyntrace/0 needs priv/compat, which is
%% not shipped.
-define(MODULES, [beamtrace_elf, beamtrace_remote, beamtrace_label, beamtrace_registry, beamtrace_tracing,
                  beamtrace_trace_spec, beamtrace_trace_options, beamtrace_trace,
                  beamtrace_statedump,
                  beamtrace_sources, beamtrace_sources_io, beamtrace_sources_monitor,
                  beamtrace_sources_samples, beamtrace_flight,
                  beamtrace_flight_agent, beamtrace_sessions, beamtrace_probes, beamtrace_tags,
                  beamtrace]).
%% What the agent runs: beamtrace_remote, which reads the target's C
%% library with beamtrace_elf before anything else is shipped.
-define(AGENT_MODULES, [beamtrace_elf, beamtrace_remote]).
-import(beamtrace_record_text, [explain/1, reason_text/1, posix/1, bytes_text/1, plural/1,
                                plural_es/1]).
-include("beamtrace_record.hrl").
%% For the modules of its steps (beamtrace_record_connect, _session, _cleanup).
-export([st/1, agent_down/2, gone/0, fail/1]).
-import(beamtrace_record_connect, [connect/3, connect_budget_ms/0]).
-import(beamtrace_record_session, [start_trace/1, start_flight/1, detach_flight/1, wait/2,
                                   collect/2]).
-import(beamtrace_record_cleanup, [abandon/2, finish/1, interrupted/1, rpc/4, test_pause/1]).

%%% Entry

%% @doc Reads the cookie and options from stdin, records, halts with the
%% exit status.
-spec main() -> no_return().
main() ->
    %% This node's own reports (a refused TLS handshake, a supervisor
    %% failing to start distribution) would be noise around the one error
    %% line; BEAMTRACE_DEBUG=1 shows them.
    case os:getenv("BEAMTRACE_DEBUG") of
        false -> logger:set_primary_config(level, none);
        _ -> ok
    end,
    Self = self(),
    spawn_link(fun() -> read_stdin(Self) end),
    %% The result line comes after the cleaning up was checked, and
    %% before the error line when there is one (a trace cut short by a full
    %% disk still came back).
    Status = try run() of
                 S -> result_line(), S
             catch
                 throw:{fail, Status0, Text} -> result_line(), error_line(Text), Status0;
                 Class:Why:Stack ->
                     error_line(io_lib:format("internal error, please report it: ~0p:~0P ~0P",
                                              [Class, Why, 20, Stack, 20])),
                     ?EXIT_FAIL
             end,
    erlang:halt(Status, [{flush, true}]).

read_stdin(Main) ->
    case io:get_line(standard_io, "") of
        eof -> Main ! {stdin, eof};
        {error, _} -> Main ! {stdin, eof};
        Line ->
            Main ! {stdin, string:trim(Line)},
            read_stdin(Main)
    end.

stdin_line() ->
    receive {stdin, eof} -> throw({fail, ?EXIT_USAGE, "no cookie and options on stdin"});
            {stdin, L} -> L
    end.

run() ->
    Cookie = stdin_line(),
    Opts = read_options(),
    check_options(Opts),
    check_out(Opts),
    Node = node_name(maps:get(node, Opts)),
    R0 = #r{opts = Opts, node = Node, ref = make_ref()},
    connect(Node, Cookie, Opts),
    case maps:is_key(nodes, Opts) orelse maps:get(cluster, Opts, false) of
        true ->
            beamtrace_cluster:record(Node, Cookie, Opts);
        false ->
            case maps:get(action, Opts, record) of
                record ->
                    R1 = st(lock(R0)),
                    R = try ship_and_record(R1)
                        catch throw:{fail, _, _} = F -> abandon(get(?STATE), F)
                        end,
                    finish(R);
                %% flights, fetch, stop: detached flight recordings.
                Action when Action =:= flights; Action =:= fetch; Action =:= stop ->
                    beamtrace_flight_remote:Action(Node, Opts);
                %% snapshot: of a running `record --mode overwrite'.
                snapshot ->
                    beamtrace_snapshot_remote:snapshot(Node, Opts)
            end
    end.

%% @doc Locks Node and ships what it lacks (a worker's first step, once
%% connected): the state for start_trace/1. Failures are thrown as
%% `{fail, Status, Text}' after everything shipped was taken down.
-spec setup(node(), map(), pid() | undefined) -> term().
setup(Node, Opts, Sink) ->
    put(?SINK, Sink),
    R1 = st(lock(#r{opts = Opts, node = Node, ref = make_ref()})),
    try check_and_ship(R1)
    catch throw:{fail, _, _} = F -> abandon(get(?STATE), F)
    end.

%% The latest state, kept where a failure deep in a step still finds what
%% to take down.
st(R) ->
    put(?STATE, R),
    R.

%% The recorder's knobs and the call specs, checked before anything is
%% shipped: a usage error (exit 2) names the option and what it takes.
check_options(Opts) ->
    _ = [usage("--calls '~ts': ~s", [C, Why])
         || C <- maps:get(calls, Opts, []),
            {error, {badspec, _, Why}} <- [beamtrace_trace_spec:parse(unicode:characters_to_list(C))]],
    case maps:find(buffer_size, Opts) of
        {ok, B} when is_integer(B), B >= 32768, B =< 1 bsl 30 -> ok;
        {ok, B} -> usage("--buffer-size ~0p: give 32KiB to 1GiB (bytes per recording thread, "
                         "split into 8 packets)", [B]);
        error -> ok
    end,
    case maps:find(message_length, Opts) of
        {ok, L} when is_integer(L), L >= 0, L =< 16384 -> ok;
        {ok, size_only} -> ok;
        {ok, L} -> usage("--message-length ~0p: give 0 to 16384 bytes, or size_only", [L]);
        error -> ok
    end,
    case maps:find(mode, Opts) of
        {ok, M} when M =:= discard; M =:= overwrite -> ok;
        {ok, M} -> usage("--mode ~0p: give discard or overwrite", [M]);
        error -> ok
    end,
    case maps:find(exclude, Opts) of
        {ok, X} when is_list(X) ->
            _ = [usage("--exclude ~0p: give pids (<0.1.2>) or registered names", [E])
                 || E <- X, not is_binary(E) orelse E =:= <<>>],
            ok;
        {ok, X} -> usage("--exclude ~0p: give pids (<0.1.2>) or registered names", [X]);
        error -> ok
    end.

usage(Fmt, Args) ->
    throw({fail, ?EXIT_USAGE, io_lib:format(Fmt, Args)}).

%% -o DIR, checked before connecting: a wrong one said at once, not after
%% the recording (which would then be lost). A record or snapshot needs it
%% new or empty; fetch and stop add to it (beamtrace_local_dir).
check_out(#{out := Out} = Opts) ->
    Empty = lists:member(maps:get(action, Opts, record), [record, snapshot]),
    case beamtrace_local_dir:check(Out, Empty) of
        ok -> ok;
        {error, Text} -> fail("~ts", [Text])
    end;
check_out(#{}) ->
    ok.

read_options() ->
    Text = read_term_text([]),
    case erl_scan:string(Text) of
        {ok, Toks, _} ->
            case erl_parse:parse_term(Toks) of
                {ok, Map} when is_map(Map) -> Map;
                _ -> throw({fail, ?EXIT_USAGE, "unreadable options from the command"})
            end;
        _ -> throw({fail, ?EXIT_USAGE, "unreadable options from the command"})
    end.

read_term_text(Acc) ->
    L = stdin_line(),
    case lists:suffix(".", L) of
        true -> lists:append(lists:reverse([L | Acc]));
        false -> read_term_text([L, "\n" | Acc])
    end.

%% @doc "name@host" as given; "name" alone is on this host.
-spec node_name(unicode:chardata()) -> node().
node_name(Given) ->
    Text = unicode:characters_to_list(Given),
    case string:split(Text, "@") of
        [_, _] -> list_to_atom(Text);
        [Name] ->
            {ok, Host} = inet:gethostname(),
            list_to_atom(Name ++ "@" ++ Host)
    end.

%%% The lock

%% The code of the lock process, evaluated on the target by erl_eval (no
%% module of ours is there yet). It traps exits: if the controller goes
%% before the lock became the agent, it purges what it was told was loaded.
%% High priority from its first turn, as the agent it becomes: the calls
%% before the agent runs go through it (target_call/4), since each erpc
%% call is a new process of normal priority, one turn of a saturated
%% node's run queue.
-define(LOCK_CODE, "
    process_flag(priority, high),
    process_flag(trap_exit, true),
    Registered = try register(beamtrace_record, self()) catch error:badarg -> false end,
    case Registered of
        true ->
            C ! {Ref, locked, self()},
            Loop = fun Loop(Mods) ->
                       receive
                           {Ref, will_load, M} -> Loop([M | Mods]);
                           {Ref, call, Tag, M, F, A} ->
                               C ! {Tag, try {ok, erlang:apply(M, F, A)}
                                         catch Class:Why -> {error, Class, Why} end},
                               Loop(Mods);
                           {Ref, become, Mod, Fun, Args} -> erlang:apply(Mod, Fun, Args);
                           {Ref, release} -> ok;
                           {'EXIT', C, _} ->
                               lists:foreach(fun(M) -> code:purge(M), code:delete(M),
                                                       code:purge(M) end, Mods)
                       end
                   end,
            Loop([]);
        false ->
            C ! {Ref, busy, whereis(beamtrace_record)}
    end.").

lock(#r{node = T, ref = Ref} = R) ->
    {ok, Toks, _} = erl_scan:string(?LOCK_CODE),
    {ok, Exprs} = erl_parse:parse_exprs(Toks),
    Lock = spawn_link(T, erl_eval, exprs, [Exprs, [{'C', self()}, {'Ref', Ref}]]),
    lock_wait(R, Lock, first).

%% The lock's first turn: at once on most nodes; on a saturated one, one
%% turn of the run queue (said after 15 s, given up after the budget).
lock_wait(#r{node = T, ref = Ref} = R, Lock, Wait) ->
    receive
        {Ref, locked, Lock} ->
            R#r{lock = Lock};
        {Ref, busy, Holder} ->
            unlink(Lock),
            Other = case rpc(T, erlang, process_info, [Holder, links]) of
                        {links, Links} ->
                            [atom_to_list(node(P)) || P <- Links, is_pid(P), node(P) =/= T];
                        _ -> []
                    end,
            fail("another beamtrace record~s is recording on ~s: wait for it to finish or "
                 "stop it (Ctrl-C there)", [case Other of
                                                [] -> "";
                                                [O | _] -> " (controller node " ++ O ++ ")"
                                            end, T])
    after case Wait of first -> 15000; again -> connect_budget_ms() end ->
            case Wait of
                first ->
                    note("~s is slow to run a new process (a busy node?): waiting for it", [T]),
                    lock_wait(R, Lock, again);
                again ->
                    fail("~s did not run the process this command started there in ~b s: "
                         "the node is overloaded; record when its load drops",
                         [T, 15 + connect_budget_ms() div 1000])
            end
    end.

%% @doc Calls M:F(A) on T: before the agent runs, through the lock (at
%% high priority); otherwise erpc. Raises what the call raised.
-spec target_call(node(), module(), atom(), list()) -> term().
target_call(T, M, F, A) ->
    case get(?STATE) of
        #r{node = T, lock = L, agent = undefined} when is_pid(L) ->
            Tag = make_ref(),
            Mon = monitor(process, L),
            L ! {(get(?STATE))#r.ref, call, Tag, M, F, A},
            receive
                {Tag, {ok, V}} -> demonitor(Mon, [flush]), V;
                {Tag, {error, Class, Why}} -> demonitor(Mon, [flush]), erlang:raise(Class, Why, []);
                {'DOWN', Mon, process, _, Why} -> error({erpc, Why})
            end;
        _ ->
            erpc:call(T, M, F, A)
    end.

%%% Shipping

ship_and_record(R0) ->
    R1 = check_and_ship(R0),
    case R1#r.opts of
        #{flight := _, detach := true} ->
            detach_flight(R1);
        #{flight := _} ->
            {R2, T0} = start_flight(R1),
            collect(R2, wait(R2, T0));
        #{} ->
            {R2, T0} = start_trace(R1),
            collect(R2, wait(R2, T0))
    end.

check_and_ship(#r{node = T, opts = Opts} = R0) ->
    Nif = maps:get(nif, Opts),
    NifElf = case beamtrace_elf:elf_file(Nif) of
                 #{} = E -> E;
                 {error, Why} -> fail("cannot read the NIF library ~s: ~0p (run make)", [Nif, Why])
             end,
    Facts = fake(facts(T)),
    case beamtrace_compat:check_facts(Facts, NifElf) of
        ok -> ok;
        {error, Text} -> fail("cannot load beamtrace on ~s: ~s", [T, Text])
    end,
    note("~s: OTP ~s (erts ~s, NIF API ~s) on ~s", [T, maps:get(otp_release, Facts),
         maps:get(erts, Facts), maps:get(nif_version, Facts), maps:get(arch, Facts)]),
    R = check_ets(R0),
    interrupted(R),
    Plan = plan(T),
    R1 = lists:foldl(fun(M, RA) -> ship_agent_module(T, lists:keyfind(M, 1, Plan), RA) end,
                     R, ?AGENT_MODULES),
    R2a = become_agent(R1),
    interrupted(R2a),
    check_libc(R2a, NifElf),
    interrupted(R2a),
    %% The private directory: the NIF library and the trace go there.
    %% A detached flight's has a name `fetch' finds after a restart.
    Prefix = case Opts of
                 #{flight := _, detach := true} -> "beamtrace-flight-" ++ atom_to_list(T) ++ "-";
                 #{} -> "beamtrace-record-"
             end,
    Dir = case agent_call(R2a, {make_dir, tmp_base(T, maps:get(remote_tmp, Opts, undefined)),
                                Prefix}) of
              {ok, D} -> D;
              {error, {Why1, Where}} ->
                  fail("cannot make a private directory in ~s on ~s: ~s (give --remote-tmp DIR)",
                       [Where, T, posix(Why1)]);
              {error, Why1} ->
                  fail("cannot make a private directory on ~s: ~0p", [T, Why1])
          end,
    R2 = st(R2a#r{dir = Dir}),
    case [{M, Bin} || {M, ship, Bin} <- Plan, not lists:member(M, ?AGENT_MODULES)] of
        [] ->
            note("beamtrace ~s is already loaded on ~s: using it", [vsn(), T]),
            R2;
        ToShip ->
            ship_modules(R2, ToShip, Nif)
    end.

%% The target's C library (the agent reads it) against the NIF's needs.
check_libc(#r{node = T} = R, NifElf) ->
    Libc = agent_call(R, libc),
    case beamtrace_compat:check_libc(fake_libc(Libc), NifElf) of
        ok -> ok;
        {unknown, Why0} ->
            note("could not tell the target's C library (~0p); trying to load", [Why0]);
        {error, Text2} -> fail("cannot load beamtrace's NIF library on ~s: ~s", [T, Text2])
    end.

%% The NIF library into its own directory, then the modules the target
%% lacks (ToShip), loaded by the agent.
ship_modules(#r{node = T, opts = Opts} = R2, ToShip, Nif) ->
    interrupted(R2),
    {ok, SoBin} = file:read_file(Nif),
    %% Its directory is named by its build: a later recording of
    %% this build reuses the library the VM mapped (beamtrace_remote).
    Build = build_id(SoBin),
    NifDir = case agent_call(R2, {make_nif_dir, tmp_base(T, maps:get(remote_tmp, Opts,
                                                                       undefined)), Build}) of
                 {ok, ND} -> ND;
                 {error, {Why4, Where4}} ->
                     fail("cannot make a private directory in ~s on ~s: ~s (give "
                          "--remote-tmp DIR)", [Where4, T, posix(Why4)]);
                 {error, Why4} ->
                     fail("cannot make a private directory on ~s: ~0p", [T, Why4])
             end,
    R3 = st(R2#r{nif_dir = NifDir}),
    case agent_call(R3, {write_nif, SoBin}) of
        ok -> ok;
        {error, {Why2, Path}} ->
            fail("cannot write ~s on ~s: ~s (give --remote-tmp DIR)", [Path, T, posix(Why2)])
    end,
    interrupted(R3),
    test_pause(ship),
    R4 = st(R3#r{shipped = R3#r.shipped ++ [M || {M, _} <- ToShip]}),
    case agent_call(R4, {load, ToShip}) of
        ok -> ok;
        {error, {nif_load_failed, Why3}} ->
            fail("the NIF library does not load on ~s: ~s", [T, beamtrace_compat:nif_load_text(Why3)]);
        {error, {M, Why3}} ->
            fail("~s does not load module ~s: ~0p", [T, M, Why3])
    end,
    note("shipped ~s and the NIF library (~b KiB, build ~s) into ~s on ~s",
         [lists:join(", ", [atom_to_list(M) || M <- R4#r.shipped]),
          byte_size(SoBin) div 1024, Build, NifDir, T]),
    R4.

%% One of the agent's modules, before the lock becomes the agent: the
%% lock purges it if the controller goes away before then.
ship_agent_module(T, {M, ship, Bin}, #r{lock = Lock, ref = Ref, shipped = Shipped} = R) ->
    Lock ! {Ref, will_load, M},
    load_binary(T, M, Bin),
    st(R#r{shipped = Shipped ++ [M]});
ship_agent_module(_T, {_M, loaded, _Bin}, R) ->
    R.

%% The NIF library's build: the first 16 hex digits of its MD5.
build_id(SoBin) ->
    <<Id:64, _/binary>> = erlang:md5(SoBin),
    lists:flatten(io_lib:format("~16.16.0b", [Id])).

%% --ets tables the target does not have: a warning line each, and they are
%% left out (a table made later under that name is not traced: give it
%% again once it exists).
check_ets(#r{node = T, opts = #{ets := Tables} = Opts} = R) when is_list(Tables) ->
    Named = [Tab || Tab <- Tables, Tab =/= all],
    Missing = [Tab || Tab <- Named,
                      target_call(T, ets, whereis, [binary_to_atom(Tab, utf8)]) =:= undefined],
    _ = [note("warning: --ets: ~s has no table named ~ts: it is left out (record again once "
              "it exists)", [T, Tab]) || Tab <- Missing],
    Opts1 = case Tables -- Missing of
                [] when Missing =/= [] -> maps:remove(ets, Opts);
                Kept -> Opts#{ets := Kept}
            end,
    st(R#r{opts = Opts1});
check_ets(R) ->
    R.

tmp_base(_T, Dir) when is_list(Dir); is_binary(Dir) ->
    Dir;
tmp_base(T, undefined) ->
    case target_call(T, os, getenv, ["TMPDIR"]) of
        D when is_list(D), D =/= "" -> D;
        _ -> "/tmp"
    end.

load_binary(T, M, Bin) ->
    case target_call(T, code, load_binary, [M, "beamtrace record", Bin]) of
        {module, M} -> ok;
        {error, Why} -> fail("~s does not load module ~s: ~0p", [T, M, Why])
    end.

%% For each module: ship (not loaded there) or loaded (the same MD5 is
%% loaded there). Another build loaded there: refused, with the fix.
plan(T) ->
    [begin
         {M, Bin, _} = code:get_object_code(M),
         {ok, {M, Md5}} = beam_lib:md5(Bin),
         case target_call(T, code, is_loaded, [M]) of
             false -> {M, ship, Bin};
             {file, _} ->
                 case target_call(T, M, module_info, [md5]) of
                     Md5 -> {M, loaded, Bin};
                     _ -> fail("~s runs another build of beamtrace (module ~s differs from "
                               "this one's, ~s): record with that build's beamtrace command, or "
                               "unload it there", [T, M, vsn()])
                 end
         end
     end || M <- ?MODULES].

become_agent(#r{node = T, ref = Ref, lock = Lock} = R) ->
    Opts = #{modules => R#r.shipped, keep => maps:get(keep, R#r.opts, false)},
    Lock ! {Ref, become, beamtrace_remote, agent, [self(), Ref, Opts]},
    Mon = monitor(process, Lock),
    R1 = st(R#r{agent = Lock, agent_mon = Mon}),
    %% The first call proves the agent runs.
    case agent_call(R1, progress) of
        {error, not_running} -> R1;
        Other -> fail("the agent on ~s does not answer as expected: ~0p", [T, Other])
    end.

%% @doc One request to the node's agent, its reply.
-spec agent_call(term(), term()) -> term().
agent_call(#r{agent = A, ref = Ref, agent_mon = Mon, node = T}, Req) ->
    Tag = make_ref(),
    A ! {Ref, self(), Tag, Req},
    receive
        {Tag, {error, {agent_crash, C, W, S}}} ->
            fail("the agent on ~s failed: ~0p:~0P ~0P", [T, C, W, 20, S, 20]);
        {Tag, Reply} -> Reply;
        {'DOWN', Mon, process, _, Why} -> agent_down(T, Why)
    end.

agent_down(T, Why) ->
    gone(),
    case Why of
        noconnection ->
            throw({fail, ?EXIT_FAIL, io_lib:format("~s went down or the connection to it was "
                                                   "lost", [T])});
        _ ->
            throw({fail, ?EXIT_FAIL, io_lib:format("the agent on ~s exited: ~0p", [T, Why])})
    end.

%% The agent (and so the lock) is gone: cleaning up cannot go through it.
gone() ->
    R = get(?STATE),
    st(R#r{agent = undefined, agent_mon = undefined, lock = undefined}).


%%% Compatibility

facts(T) ->
    try
        #{otp_release => target_call(T, erlang, system_info, [otp_release]),
          erts => target_call(T, erlang, system_info, [version]),
          nif_version => target_call(T, erlang, system_info, [nif_version]),
          arch => target_call(T, erlang, system_info, [system_architecture]),
          wordsize => target_call(T, erlang, system_info, [{wordsize, external}]),
          os => target_call(T, os, type, [])}
    catch error:{erpc, Why} ->
            fail("cannot ask ~s what it runs: ~0p", [T, Why])
    end.

%% Test hook: BEAMTRACE_TEST_FACTS="otp_release=24,arch=aarch64-linux-gnu"
%% replaces what the target said, so the checks (the real ones) can be
%% shown a node this machine cannot run.
fake(Facts) ->
    case os:getenv("BEAMTRACE_TEST_FACTS") of
        false -> Facts;
        "" -> Facts;
        Text ->
            lists:foldl(fun(KV, F) ->
                                case string:split(KV, "=") of
                                    [K, V] -> F#{list_to_atom(K) => V};
                                    _ -> F
                                end
                        end, Facts, string:lexemes(Text, ","))
    end.

fake_libc(Libc) ->
    case os:getenv("BEAMTRACE_TEST_LIBC") of
        "musl" -> #{libc => musl, path => <<"/lib/ld-musl-x86_64.so.1">>};
        _ -> Libc
    end.

vsn() ->
    case application:get_key(beamtrace, vsn) of
        {ok, V} -> V;
        _ ->
            _ = application:load(beamtrace),
            case application:get_key(beamtrace, vsn) of
                {ok, V} -> V;
                _ -> "(unknown version)"
            end
    end.

%%% Lines

%% @doc A note line (stderr of the command).
-spec note(io:format(), list()) -> ok.
note(Fmt, Args) ->
    out("note " ++ Fmt, Args).

result_line() ->
    case get(result_line) of
        undefined -> ok;
        Summary -> out("result ~s", [Summary])
    end.

error_line(Text) ->
    out("error ~s", [oneline(Text)]).

out(Fmt, Args) ->
    Line = oneline(io_lib:format(Fmt, Args)),
    case get(?SINK) of
        Sink when is_pid(Sink) -> Sink ! {?SINK, self(), {line, Line}}, ok;
        _ -> io:put_chars(standard_io, [Line, $\n])
    end.

oneline(Text) ->
    [case C of $\n -> $\s; _ -> C end || C <- lists:flatten(io_lib:format("~ts", [Text]))].

fail(Text) ->
    throw({fail, ?EXIT_FAIL, Text}).

%% @doc Fails the step: throws the one error line's text.
-spec fail(io:format(), list()) -> no_return().
fail(Fmt, Args) ->
    throw({fail, ?EXIT_FAIL, io_lib:format(Fmt, Args)}).
