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
%% -> check the OTP release, NIF API, OS and CPU -> ship beamtrace_remote,
%% which the lock becomes (the agent) -> check the C library (ELF symbol
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
%% One file past the usual size: the steps of one node share the agent
%% protocol and the state record; splitting them would put the two halves
%% of that protocol in different files (STYLE.md's smell). Its words are in
%% beamtrace_record_text.
-module(beamtrace_record).

-export([main/0]).
%% One node's steps, for beamtrace_cluster's workers (one process per
%% node: the state is theirs, in their process dictionary).
-export([node_name/1, connect/3, setup/3, start_trace/1, wait/2, collect/2, finish/1,
         abandon/1, agent_call/2, note/2, fail/2, with_trace_opts/2, streams_only/1]).
%% For beamtrace_flight_remote (flights, fetch, stop --node).
-export([tmp_base/2, verify/3, out/2]).

%% What is shipped, in load order: beamtrace last (its on_load loads the
%% NIF). beamtrace_remote goes first, on its own.
-define(MODULES, [beamtrace_remote, beamtrace_label, beamtrace_registry, beamtrace_tracing,
                  beamtrace_trace, beamtrace_statedump,
                  beamtrace_sources, beamtrace_sources_io, beamtrace_flight,
                  beamtrace_flight_agent, beamtrace]).
%% Where a worker's output goes (a pid) instead of stdout.
-define(SINK, beamtrace_record_sink).

-import(beamtrace_record_text, [explain/1, reason_text/1, posix/1, bytes_text/1, plural/1,
                                plural_es/1]).
-define(CHUNK_BYTES, (1 bsl 20)).
-define(PROGRESS_MS, 500).
%% Streaming to lttng-relayd (beamtrace:start/1's options), and the
%% controller's clock for a streamed trace.
-include("beamtrace_relayd.hrl").
-define(STREAM_OPTS, [clock | ?RELAYD_OPTS]).
-define(STATE, beamtrace_record_state).

-define(EXIT_OK, 0).
-define(EXIT_FAIL, 1).
-define(EXIT_USAGE, 2).
-define(EXIT_INTERRUPTED, 130).

-record(r, {opts :: map(),
            node :: node(),
            ref :: reference(),
            lock :: pid() | undefined,
            agent :: pid() | undefined,
            agent_mon :: reference() | undefined,
            shipped = [] :: [module()],
            dir :: string() | undefined,       %% private directory on the target
            nif_dir :: string() | undefined,   %% the NIF library's, on the target
            trace_dir :: binary() | undefined, %% on the target
            backend :: atom(),
            calls = [] :: list()}).

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
            {error, {badspec, _, Why}} <- [beamtrace_trace:parse(unicode:characters_to_list(C))]],
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

%%% Connecting

%% @doc Connects to Node as a hidden node with Cookie, starting this
%% node's distribution first if needed.
-spec connect(node(), string(), map()) -> ok.
connect(Node, Cookie, Opts) ->
    case Cookie of
        "" -> fail("the cookie is empty (~s)", [maps:get(cookie_from, Opts, "?")]);
        _ -> ok
    end,
    %% A dynamic name (given by the target at connection), hidden, started
    %% here so short or long names follow --node.
    case whereis(net_kernel) of
        undefined ->
            Domain = name_domain(Node),
            case net_kernel:start(undefined, #{name_domain => Domain, hidden => true}) of
                {ok, _} -> ok;
                {error, _} when Domain =:= longnames ->
                    {ok, Here} = inet:gethostname(),
                    fail("cannot use long node names here: this host's name (~s) is not fully "
                         "qualified; give --node with the target's short host name, or give "
                         "this host a domain", [Here]);
                {error, Why} -> fail("cannot start distribution here: ~0p", [Why])
            end;
        _ -> ok
    end,
    true = erlang:set_cookie(Node, list_to_atom(Cookie)),
    case lists:member(Node, nodes(connected)) of
        true ->
            ok;     %% a cluster's first node, connected before its worker starts
        false ->
            T0 = erlang:monotonic_time(millisecond),
            case connect_attempts(Node, T0 + connect_budget_ms(), 1) of
                true -> note("connected to ~s", [Node]);
                {false, Attempts, timeout} ->
                    fail(connect_failure(Node, Opts, starved(Node, Attempts, T0)));
                {false, _, refused} ->
                    fail(connect_failure(Node, Opts, refused(Node, Opts)))
            end
    end.

%% On a node whose schedulers are saturated the handshake can time out
%% with the node well: the target's side asks its `auth' server, a process
%% of normal priority, for the cookie, and that answer waits one turn of
%% the run queue (behind 100,000 busy processes, longer than the handshake's
%% net_setuptime, 7 s). auth answers every request waiting in its mailbox
%% in that one turn, so back-to-back attempts connect once a turn is
%% shorter than the budget: the attempt that is open when auth runs gets
%% its cookie. An attempt refused before the setup time (a wrong cookie, no
%% such node) is not retried.
connect_attempts(Node, Deadline, N) ->
    T0 = erlang:monotonic_time(millisecond),
    case net_kernel:hidden_connect_node(Node) of
        true ->
            true;
        _ ->
            Now = erlang:monotonic_time(millisecond),
            %% A node epmd does not list, or a host whose epmd does not
            %% answer, is not a busy node: said at once (connect_failure/3).
            Refused = Now - T0 < net_kernel:connecttime() div 2 orelse
                (N =:= 1 andalso not listed(Node)),
            if
                Refused -> {false, N, refused};
                Now >= Deadline -> {false, N, timeout};
                true ->
                    N =:= 1 andalso
                        note("~s does not finish the connection handshake (a busy node?): "
                             "trying again for ~b s", [Node, (Deadline - Now) div 1000]),
                    connect_attempts(Node, Deadline, N + 1)
            end
    end.

listed(Node) ->
    [Name, Host] = string:split(atom_to_list(Node), "@"),
    case net_adm:names(Host) of
        {ok, Names} -> lists:keymember(Name, 1, Names);
        {error, _} -> false
    end.

%% How long the connection is tried: 120 s (BEAMTRACE_TEST_CONNECT_S, a
%% test hook, sets it in seconds).
connect_budget_ms() ->
    case string:to_integer(os:getenv("BEAMTRACE_TEST_CONNECT_S", "")) of
        {S, ""} when S >= 0 -> S * 1000;
        _ -> 120000
    end.

%% Every attempt ran out of time and epmd lists the node: it is there but
%% does not answer.
starved(Node, Attempts, T0) ->
    io_lib:format("~s did not finish the connection handshake in ~b s (~b attempt~s, each "
                  "cut by net_setuptime): the node is listed but too busy to answer (its "
                  "auth server runs at normal priority behind every runnable process); "
                  "record when its load drops, or raise net_setuptime on it",
                  [Node, (erlang:monotonic_time(millisecond) - T0) div 1000, Attempts,
                   plural(Attempts)]).

name_domain(Node) ->
    [_, Host] = string:split(atom_to_list(Node), "@"),
    case lists:member($., Host) of
        true -> longnames;
        false -> shortnames
    end.

%% Which of: no epmd there, no such node, or (epmd lists the node)
%% Listed: a refused handshake, or one that ran out of time.
connect_failure(Node, Opts, Listed) ->
    [Name, Host] = string:split(atom_to_list(Node), "@"),
    Flag = flag(Opts),
    case net_adm:names(Host) of
        {error, address} ->
            io_lib:format("cannot reach epmd on ~s: check the host name in ~s, that the "
                          "host is up and that port 4369 is open to this host", [Host, Flag]);
        {error, Why} ->
            io_lib:format("cannot reach ~s: ~s (check the host name in ~s)",
                          [Host, inet:format_error(Why), Flag]);
        {ok, Names} ->
            case lists:keymember(Name, 1, Names) of
                false ->
                    io_lib:format("no node named ~s on ~s (epmd there lists: ~s): check ~s",
                                  [Name, Host, lists:join(", ", [N || {N, _} <- Names]), Flag]);
                true ->
                    Listed
            end
    end.

flag(Opts) ->
    case maps:is_key(nodes, Opts) of
        true -> "--nodes";
        false -> "--node"
    end.

refused(Node, Opts) ->
    io_lib:format("~s refused the connection: wrong cookie (read from ~s)? If the node uses "
                  "TLS distribution, give --proto-dist inet_tls --ssl-dist-optfile FILE",
                  [Node, maps:get(cookie_from, Opts, "?")]).

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
    NifElf = case beamtrace_remote:elf_file(Nif) of
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
    R1 = case lists:keyfind(beamtrace_remote, 1, Plan) of
             {_, ship, Bin} ->
                 R#r.lock ! {R#r.ref, will_load, beamtrace_remote},
                 load_binary(T, beamtrace_remote, Bin),
                 st(R#r{shipped = [beamtrace_remote]});
             {_, loaded, _} ->
                 R
         end,
    R2a = become_agent(R1),
    interrupted(R2a),
    Libc = agent_call(R2a, libc),
    case beamtrace_compat:check_libc(fake_libc(Libc), NifElf) of
        ok -> ok;
        {unknown, Why0} ->
            note("could not tell the target's C library (~0p); trying to load", [Why0]);
        {error, Text2} -> fail("cannot load beamtrace's NIF library on ~s: ~s", [T, Text2])
    end,
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
    case [{M, Bin} || {M, ship, Bin} <- Plan, M =/= beamtrace_remote] of
        [] ->
            note("beamtrace ~s is already loaded on ~s: using it", [vsn(), T]),
            R2;
        ToShip ->
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
            R4
    end.

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
                {ok, #{} = Info} -> progress_line(Info);
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
%% directory) into Out, which must be new or empty.
copy_dir(#r{node = T} = R, Which, Out) ->
    Files = case agent_call(R, {list, Which}) of
                {ok, F} -> F;
                {error, Why} -> fail("cannot list the trace on ~s: ~0p", [T, Why])
            end,
    _ = filelib:ensure_dir(Out),
    case file:make_dir(Out) of
        ok -> ok;
        {error, eexist} ->
            case file:list_dir(Out) of
                {ok, []} -> ok;
                _ -> fail("~s already exists and is not empty: give -o a new directory", [Out])
            end;
        {error, Why2} ->
            fail("cannot make ~s: ~s (give -o DIR where you can write)", [Out, posix(Why2)])
    end,
    _ = file:change_mode(Out, 8#700),
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

wait_purged(T, Mods, Tries) ->
    Loaded = [M || M <- Mods, erpc:call(T, code, is_loaded, [M]) =/= false],
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
