%% @doc The agent `beamtrace record' runs on the node it traces (the ELF
%% reading its compatibility check needs is beamtrace_elf's).
%%
%% == Structure ==
%% The controller (beamtrace_record, in a hidden node the command starts)
%% first spawns, linked, a lock on the target: a process running only OTP
%% code (erl_eval), registered as `beamtrace_record', so a second record
%% against the same node is refused before anything is shipped. It ships
%% this module and beamtrace_elf (pure Erlang) with code:load_binary/3,
%% then the lock becomes
%% the agent by applying agent/3. The agent does everything else on the
%% target, one request at a time, and remembers what it made: its private
%% directory (0700, made so: never wider for a moment) holding the trace,
%% the NIF library's directory (below), the modules it loaded, the
%% application environment it set, the trace it started.
%%
%% It removes all of that when asked (`cleanup'). When its link to the
%% controller breaks (the controller or its node died, the connection was
%% lost) it removes the same, but the trace: the trace stops
%% (beamtrace_trace removes its flags and patterns) and stays in the
%% private directory, and the node's logger says where and the command to
%% fetch it (no trace started yet: nothing stays). Either way the shipped
%% modules are deleted, then purged by a process running only OTP code (a
%% purge kills processes running the purged code: this one included, once
%% it is done).
%%
%% == The NIF library's directory ==
%% The library goes to a directory named by this VM's OS pid and the
%% library's build (its MD5): `<tmp>/beamtrace-nif-<OsPid>-<Build>', made
%% private, holding only the library, removed at the end of each
%% recording. The cleanup's purge unloads the library (its last unload
%% joins every thread it started), so the node's memory map is then as it
%% was before. A copy kept mapped (a code upgrade that handed a running
%% session to another copy pins the old one: c_src/nif/nif_pin.h) has the
%% same path for the same build, and dlopen maps a path once. A path that
%% already exists (someone else made it) is never used: a random name then.
%%
%% Requests are `{Ref, From, Tag, Request}'; replies `{Tag, Reply}'. The
%% trace's end is forwarded as `{Ref, trace_done, Result}'. One request
%% comes from anyone (a `beamtrace snapshot' controller, which has no Ref):
%% `{snapshot_request, From, Tag}', answered `{Tag, {ok, Info} | {error,
%% Why}}'.
-module(beamtrace_remote).

-export([agent/3, purge/1]).

-import(beamtrace_elf, [libc/0]).

-include_lib("kernel/include/file.hrl").

%% The purger (purge_and_exit/1): Erlang evaluated by erl_eval, so that the
%% process runs OTP code only. Mods: the modules; Old: the request limit
%% to set back, or undefined. The literal area collector answers
%% {get_status, Ref, Pid} with idle | working (OTP 25+; an older one does
%% not answer: 1 s each time, then the limit is set back).
-define(PURGER, "
    lists:foreach(fun(M) -> code:purge(M) end, Mods),
    Collector = [P || P <- erlang:processes(),
                      erlang:process_info(P, initial_call) =:=
                          {initial_call, {erts_literal_area_collector, start, 0}}],
    Idle = fun Wait(_, N) when N =< 0 -> timeout;
               Wait([], _) -> idle;
               Wait([P], N) ->
                   Ref = erlang:make_ref(),
                   P ! {get_status, Ref, self()},
                   receive {Ref, idle} -> idle;
                           {Ref, _} -> timer:sleep(100), Wait([P], N - 1)
                   after 1000 -> Wait([P], N - 10)
                   end
           end,
    _ = Old =/= undefined andalso Idle(Collector, 6000) =/= x andalso
        erlang:system_flag(outstanding_system_requests_limit, Old),
    ok.").

-record(ag, {controller :: pid(),
             ref :: reference(),
             keep = false :: boolean(),
             dir :: string() | undefined,       %% the private directory
             nif_dir :: string() | undefined,   %% the NIF library's directory
             modules = [] :: [module()],        %% shipped: purged at the end
             trace :: beamtrace_trace:trace() | beamtrace_flight:flight() | undefined,
             kind = trace :: trace | flight,            %% trace/2's or flight/2's
             trace_dir :: binary() | undefined,
             snapshots = [] :: [binary()],      %% snapshot directories, next to trace_dir
             remote_dir = false :: boolean()}). %% the trace stays on the target

%% Where shipped modules say they came from (code:which/1).
-define(SHIPPED_FROM, "beamtrace record").

%%% The agent

%% @private Runs in the lock process, which traps exits and is linked to
%% the controller. Opts: `modules' (shipped before this call: purged at
%% the end), `keep'.
-spec agent(pid(), reference(), map()) -> no_return().
agent(Controller, Ref, Opts) ->
    process_flag(trap_exit, true),
    %% One short request at a time; on a saturated node, at normal priority,
    %% each would wait behind every runnable process.
    process_flag(priority, high),
    %% Its group leader is the controller's (it was spawned from there):
    %% the node's own, so that what it logs reaches this node's log (the
    %% default handler drops events of a remote group leader) and its
    %% output survives the controller.
    group_leader(whereis(user), self()),
    set_label({beamtrace_record_agent, node(Controller)}),
    loop(#ag{controller = Controller, ref = Ref, keep = maps:get(keep, Opts, false),
             modules = maps:get(modules, Opts, [])}).

loop(#ag{controller = C, ref = Ref} = A) ->
    receive
        {Ref, C, Tag, cleanup} ->
            Report = cleanup(A),
            C ! {Tag, {ok, Report}},
            purge_and_exit(A);
        {Ref, C, Tag, Req} ->
            {Reply, A1} = try handle(Req, A)
                          catch Class:Why:Stack ->
                                  {{error, {agent_crash, Class, Why, Stack}}, A}
                          end,
            C ! {Tag, Reply},
            loop(A1);
        {Done, T, Result} when T =:= A#ag.trace, (Done =:= beamtrace_trace orelse
                                                  Done =:= beamtrace_flight) ->
            C ! {Ref, trace_done, Result},
            loop(A#ag{trace = undefined});
        {'EXIT', C, Why} ->
            controller_lost(A, Why),
            purge_and_exit(A);
        {snapshot_request, From, Tag} when is_pid(From) ->
            %% `beamtrace snapshot --node N' (beamtrace_snapshot_remote),
            %% from another controller: the snapshot is made here, next to
            %% the trace (removed with it at the end), and that controller
            %% copies it with OTP's file functions.
            {Reply, A1} = case A#ag.kind of
                              trace -> try handle(snapshot, A)
                                       catch Class:Why:_ -> {{error, {Class, Why}}, A}
                                       end;
                              flight -> {{error, flight}, A}
                          end,
            From ! {Tag, Reply},
            loop(A1);
        _ ->
            loop(A)
    end.

handle(libc, A) ->
    {libc(), A};
handle(clock_ns, A) ->
    %% beamtrace's trace clock (the NIF is loaded by now).
    {beamtrace:clock_ns(), A};
handle({make_dir, Base}, A) ->
    handle({make_dir, Base, "beamtrace-record-"}, A);
handle({make_dir, Base, Prefix}, A) ->
    case make_private_dir(Base, Prefix, 8) of
        {ok, Dir} -> {{ok, Dir}, A#ag{dir = Dir}};
        Error -> {Error, A}
    end;
handle({make_nif_dir, Base, Build}, A) ->
    make_nif_dir(Base, Build, A);
handle({write_nif, Bin}, #ag{nif_dir = Dir} = A) when Dir =/= undefined ->
    {write_private(filename:join(Dir, "beamtrace_nif.so"), Bin), A};
handle({write, Name, Bin}, #ag{dir = Dir} = A) when Dir =/= undefined ->
    Path = filename:join(Dir, Name),
    {write_private(Path, Bin), A};
handle({load, Mods}, #ag{nif_dir = Dir} = A) when Dir =/= undefined ->
    load(Mods, Dir, A);
handle({trace, Spec, Opts}, A) ->
    start_trace(Spec, Opts, A);
handle({flight, Spec, Opts}, A) ->
    start_flight(Spec, Opts, A);
handle({detach_flight, Spec, Opts}, #ag{dir = Dir} = A) when Dir =/= undefined ->
    detach_flight(Spec, Opts, Dir, A);
handle(progress, #ag{trace = T, kind = flight} = A) when T =/= undefined ->
    case beamtrace:flight_info(T) of
        Info when is_map(Info) -> {{ok, Info}, A};
        Error -> {Error, A}
    end;
handle(stop, #ag{trace = T, kind = flight} = A) when T =/= undefined ->
    {beamtrace:stop_flight(T), A#ag{trace = undefined}};
handle(progress, #ag{trace = T} = A) when T =/= undefined ->
    case beamtrace:trace_info(T) of
        Info when is_map(Info) -> {{ok, Info}, A};
        Error -> {Error, A}     %% it just stopped: its result is on its way
    end;
handle(progress, A) ->
    {{error, not_running}, A};
handle(stop, #ag{trace = T} = A) when T =/= undefined ->
    {beamtrace:stop_trace(T), A#ag{trace = undefined}};
handle(stop, A) ->
    {{error, not_running}, A};
handle(snapshot, #ag{trace = T} = A) when T =/= undefined ->
    case beamtrace:snapshot_trace(T) of
        {ok, #{dir := Dir}} = Ok -> {Ok, A#ag{snapshots = [Dir | A#ag.snapshots]}};
        Error -> {Error, A}
    end;
handle(snapshot, A) ->
    {{error, not_running}, A};
handle({list, Which}, A) ->
    case dir_of(Which, A) of
        undefined -> {{error, {no_such_dir, Which}}, A};
        Dir -> {list_files(Dir), A}
    end;
handle({read, Which, Rel, Offset, Len}, A) ->
    case dir_of(Which, A) of
        undefined -> {{error, {no_such_dir, Which}}, A};
        Dir -> {read_chunk(filename:join(Dir, Rel), Offset, Len), A}
    end;
handle(Req, A) ->
    {{error, {bad_request, Req}}, A}.

make_nif_dir(Base, Build, A) ->
    %% Per VM and build (the module doc); a name taken: a random one.
    Name = "beamtrace-nif-" ++ os:getpid() ++ "-" ++ Build,
    case make_dir_0700(filename:join(Base, Name)) of
        ok ->
            Dir = filename:join(Base, Name),
            {{ok, Dir}, A#ag{nif_dir = Dir}};
        {error, eexist} ->
            case make_private_dir(Base, Name ++ "-", 8) of
                {ok, Dir} -> {{ok, Dir}, A#ag{nif_dir = Dir}};
                Error -> {Error, A}
            end;
        {error, Why} ->
            {{error, {Why, Base}}, A}
    end.

start_trace(Spec, Opts, A) ->
    %% The trace goes into the private directory, unless it is to stay on
    %% this node: then where asked, or where start/1 puts it by default. A
    %% trace streamed to a relayd has no local copy unless asked (local).
    Local = not is_map_key(relayd, Opts) orelse maps:get(local, Opts, false) =:= true,
    TraceOpts = case {maps:is_key(dir, Opts), maps:get(remote_dir, Opts, false)} of
                    {true, _} -> Opts;
                    {false, true} -> Opts;
                    {false, false} when A#ag.dir =/= undefined, Local ->
                        maps:remove(local, Opts#{dir => filename:join(A#ag.dir, "trace")});
                    {false, false} -> Opts
                end,
    %% This agent is beamtrace's own: not traced, and named so in the trace.
    Own = [{self(), record_agent}],
    case beamtrace:trace_async(Spec, (maps:without([remote_dir], TraceOpts))#{'$own' => Own}) of
        {ok, T} ->
            case beamtrace:trace_info(T) of
                #{dir := TDir} = Info ->
                    {{ok, Info}, A#ag{trace = T, trace_dir = TDir,
                                      remote_dir = maps:get(remote_dir, Opts, false)}};
                {error, _} ->
                    %% Over already (a cap at once): its result says why.
                    Result = receive {beamtrace_trace, T, R} -> R
                             after 60000 -> timeout
                             end,
                    {{error, {ended_at_start, Result}}, A}
            end;
        Error ->
            {Error, A}
    end.

start_flight(Spec, Opts, A) ->
    %% A flight recording while the command waits (record --flight): into
    %% the private directory, as a trace; beamtrace_flight_remote copies
    %% its captures back.
    FOpts = case maps:is_key(dir, Opts) orelse A#ag.dir =:= undefined of
                true -> Opts;
                false -> Opts#{dir => filename:join(A#ag.dir, "flight")}
            end,
    Exclude = [self() | maps:get(exclude, FOpts, [])],
    case beamtrace:flight(Spec, FOpts#{exclude => Exclude}) of
        {ok, F} ->
            #{dir := TDir} = Info = beamtrace:flight_info(F),
            {{ok, Info}, A#ag{trace = F, kind = flight, trace_dir = TDir}};
        Error ->
            {Error, A}
    end.

detach_flight(Spec, Opts, Dir, A) ->
    %% record --flight --detach: the flight agent takes the private
    %% directory and the shipped modules over; this agent, which goes with
    %% the command, then has nothing to remove.
    Exclude = [self() | maps:get(exclude, Opts, [])],
    case beamtrace_flight_agent:start(#{dir => Dir, modules => A#ag.modules, spec => Spec,
                                        flight => Opts#{exclude => Exclude},
                                        node => node(A#ag.controller)}) of
        {ok, Info} -> {{ok, Info}, A#ag{dir = undefined, modules = []}};
        Error -> {Error, A}
    end.

%% Only what this agent recorded can be read: the trace and its snapshots.
dir_of(trace, #ag{trace_dir = Dir}) ->
    Dir;
dir_of(Dir, #ag{snapshots = Snaps}) ->
    case lists:member(Dir, Snaps) of
        true -> Dir;
        false -> undefined
    end.

%% A new directory Base/<Prefix>XXXXXXXX (beamtrace-record-, or
%% beamtrace-flight-<node>- for a detached flight, which `fetch' looks
%% for), mode 0700, made with a random name until one is free (never an
%% existing path: no symlink can be planted in its place).
make_private_dir(_Base, _Prefix, 0) ->
    {error, eexist};
make_private_dir(Base, Prefix, Tries) ->
    Name = Prefix ++ integer_to_list(rand:uniform(1 bsl 40), 36),
    Dir = filename:join(Base, Name),
    case make_dir_0700(Dir) of
        ok -> {ok, Dir};
        {error, eexist} -> make_private_dir(Base, Prefix, Tries - 1);
        {error, Why} -> {error, {Why, Base}}
    end.

%% Makes Dir, mode 0700 from the start: mkdir(2) with 0700 (the VM's own
%% file:make_dir/1 asks for 0777, leaving the directory 0777 & ~umask until
%% a chmod: open to anyone under umask 0). Erlang has no umask and no mode
%% for make_dir, so `mkdir -m 700' does it, run without a shell. Where
%% there is no mkdir program (a distroless image), file:make_dir/1 and a
%% chmod, then a check that nothing got in meanwhile (an empty directory of
%% ours, mode 0700), or it is removed and refused.
make_dir_0700(Dir) ->
    case os:find_executable("mkdir") of
        false -> make_dir_then_chmod(Dir);
        Mkdir -> mkdir_program(Mkdir, Dir)
    end.

mkdir_program(Mkdir, Dir) ->
    Port = open_port({spawn_executable, Mkdir},
                     [{args, ["-m", "700", "--", Dir]}, exit_status, stderr_to_stdout, binary]),
    Status = mkdir_status(Port),
    case {Status, file:read_link_info(Dir)} of
        {0, {ok, #file_info{type = directory, mode = M}}} when M band 8#777 =:= 8#700 -> ok;
        {0, {ok, #file_info{type = directory}}} -> _ = file:del_dir(Dir), {error, eperm};
        {_, {ok, _}} -> {error, eexist};
        %% Its message is in the node's language: the VM's own attempt
        %% gives the reason (and does what it can, if it succeeds after all).
        {_, {error, enoent}} -> make_dir_then_chmod(Dir);
        {_, {error, Why}} -> {error, Why}
    end.

mkdir_status(Port) ->
    receive
        {Port, {data, _}} -> mkdir_status(Port);
        {Port, {exit_status, S}} -> S
    after 30000 ->
        try port_close(Port) catch error:badarg -> ok end,
        timeout
    end.

make_dir_then_chmod(Dir) ->
    case file:make_dir(Dir) of
        ok ->
            case {file:change_mode(Dir, 8#700), file:list_dir(Dir)} of
                {ok, {ok, []}} -> ok;
                {ok, {ok, _}} -> _ = file:del_dir_r(Dir), {error, eexist};
                {Error, _} -> _ = file:del_dir(Dir), Error
            end;
        Error ->
            Error
    end.

%% Files are 0600 inside the 0700 directory; `exclusive': never through a
%% name someone else made.
write_private(Path, Bin) ->
    case file:open(Path, [write, raw, binary, exclusive]) of
        {ok, F} ->
            R = file:write(F, Bin),
            ok = file:close(F),
            case R of
                ok -> file:change_mode(Path, 8#600);
                {error, Why} -> _ = file:delete(Path), {error, {Why, Path}}
            end;
        {error, Why} ->
            {error, {Why, Path}}
    end.

%% Loads the shipped modules (beamtrace last: its on_load loads the NIF
%% from Dir, told through the application environment, which is restored
%% right after).
load(Mods, Dir, A) ->
    Before = application:get_env(beamtrace, priv_dir),
    ok = application:set_env(beamtrace, priv_dir, Dir),
    _ = application:unset_env(beamtrace, nif_load_error),
    {Result, Loaded} = load_all(Mods),
    case Before of
        {ok, V} -> application:set_env(beamtrace, priv_dir, V);
        undefined -> application:unset_env(beamtrace, priv_dir)
    end,
    Result1 = case Result of
                  {error, {beamtrace, on_load_failure}} ->
                      Why = application:get_env(beamtrace, nif_load_error, unknown),
                      _ = application:unset_env(beamtrace, nif_load_error),
                      {error, {nif_load_failed, Why}};
                  _ -> Result
              end,
    {Result1, A#ag{modules = lists:usort(Loaded ++ A#ag.modules)}}.

%% Each load is a request to the code server, a process of normal priority:
%% on a saturated node every request waits a turn of the run queue (25,000
%% busy processes: about 4 s a turn, 72 s for the 17 modules loaded one by
%% one). code:atomic_load/1 prepares every module in this process and asks
%% the code server once; it refuses modules with an on_load function
%% (beamtrace's, which loads the NIF), loaded one by one after the rest. Any
%% other refusal: one by one, as before, so that the error names the module.
load_all(Mods) ->
    Specs = [{M, ?SHIPPED_FROM, Bin} || {M, Bin} <- Mods],
    case code:atomic_load(Specs) of
        ok ->
            {ok, lists:reverse([M || {M, _} <- Mods])};
        {error, Errors} ->
            OnLoad = [M || {M, on_load_not_allowed} <- Errors],
            Rest = [S || {M, _, _} = S <- Specs, not lists:member(M, OnLoad)],
            case OnLoad =/= [] andalso length(OnLoad) =:= length(Errors) andalso
                code:atomic_load(Rest) of
                ok ->
                    load_each([MB || {M, _} = MB <- Mods, lists:member(M, OnLoad)],
                              lists:reverse([M || {M, _, _} <- Rest]));
                _ ->
                    load_each(Mods, [])
            end
    end.

load_each([], Acc) ->
    {ok, Acc};
load_each([{M, Bin} | Rest], Acc) ->
    case code:load_binary(M, ?SHIPPED_FROM, Bin) of
        {module, M} -> load_each(Rest, [M | Acc]);
        {error, Why} -> {{error, {M, Why}}, Acc}
    end.

list_files(Dir) ->
    case list_files(Dir, "", []) of
        {error, _} = Error -> Error;
        Files -> {ok, lists:sort(Files)}
    end.

list_files(Root, Rel, Acc) ->
    case file:list_dir(filename:join(Root, Rel)) of
        {ok, Names} ->
            lists:foldl(
              fun(_, {error, _} = E) -> E;
                 (N, Acc1) ->
                      R = case Rel of "" -> N; _ -> filename:join(Rel, N) end,
                      Path = filename:join(Root, R),
                      case file:read_link_info(Path) of
                          {ok, #file_info{type = directory}} -> list_files(Root, R, Acc1);
                          {ok, #file_info{type = regular, size = Size}} -> [{R, Size} | Acc1];
                          _ -> Acc1
                      end
              end, Acc, Names);
        {error, Why} ->
            {error, {Why, filename:join(Root, Rel)}}
    end.

read_chunk(Path, Offset, Len) ->
    case file:open(Path, [read, raw, binary]) of
        {ok, F} ->
            R = file:pread(F, Offset, Len),
            ok = file:close(F),
            case R of
                {ok, Bin} -> {ok, Bin};
                eof -> {ok, <<>>};
                {error, Why} -> {error, {Why, Path}}
            end;
        {error, Why} ->
            {error, {Why, Path}}
    end.

%%% Taking everything down

%% The controller is gone (its node died, the connection broke, a second
%% Ctrl-C killed it): a trace that was started stays here, stopped (its
%% flags and patterns removed), in the private directory; the rest goes as
%% at cleanup. The node's logger says where the trace is and how to fetch
%% it, since nobody else can.
controller_lost(#ag{trace_dir = undefined} = A, _Why) ->
    _ = cleanup(A),
    ok;
controller_lost(#ag{remote_dir = true} = A, Why) ->
    Report = cleanup(A),
    logger:warning("beamtrace record: the controller ~0p was lost (~0P) while recording; the "
                   "trace is complete, where it was asked to stay: ~ts",
                   [node(A#ag.controller), Why, 10, A#ag.trace_dir]),
    Report;
controller_lost(A, Why) ->
    Report = cleanup(A#ag{remote_dir = true}),
    Dir = A#ag.dir,
    {ok, Host} = inet:gethostname(),
    logger:warning("beamtrace record: the controller ~0p was lost (~0P) while recording; the "
                   "trace was stopped and kept on ~s in ~ts: fetch it with 'scp -r ~s:~ts .', "
                   "then remove ~ts",
                   [node(A#ag.controller), Why, 10, Host, A#ag.trace_dir, Host, A#ag.trace_dir,
                    Dir]),
    Report.

%% Stops the trace (its flags and patterns go with it), deletes the trace
%% unless it was asked to stay on the target, the NIF library's directory,
%% and the private directory unless `keep' (or the trace stays in it).
%% Returns what it removed.
cleanup(A) ->
    Stopped = case {A#ag.trace, A#ag.kind} of
                  {undefined, _} -> false;
                  {T, flight} -> _ = beamtrace:stop_flight(T), true;
                  {T, trace} -> _ = beamtrace:stop_trace(T), true
              end,
    TraceKept = A#ag.remote_dir orelse A#ag.keep,
    TraceRemoved = case {A#ag.trace_dir, TraceKept} of
                       {undefined, _} -> false;
                       {_, true} -> false;
                       {TD, false} -> file:del_dir_r(TD) =:= ok
                   end,
    NifDirRemoved = case {A#ag.nif_dir, A#ag.keep} of
                        {undefined, _} -> false;
                        {_, true} -> false;
                        {ND, false} -> file:del_dir_r(ND) =:= ok
                    end,
    %% The trace kept inside it (a lost controller) keeps it too.
    InDir = A#ag.dir =/= undefined andalso A#ag.trace_dir =/= undefined andalso
        lists:prefix(unicode:characters_to_list(A#ag.dir) ++ "/",
                     unicode:characters_to_list(A#ag.trace_dir)),
    DirRemoved = case {A#ag.dir, A#ag.keep} of
                     {undefined, _} -> false;
                     {_, true} -> false;
                     {_, false} when InDir, TraceKept -> false;
                     {D, false} -> file:del_dir_r(D) =:= ok
                 end,
    #{trace_stopped => Stopped, trace_removed => TraceRemoved, dir => A#ag.dir,
      dir_removed => DirRemoved, nif_dir => A#ag.nif_dir, nif_dir_removed => NifDirRemoved,
      modules => case A#ag.keep of
                     true -> [];
                     false -> A#ag.modules
                 end}.

%% Deletes the shipped modules (this process keeps running their old code)
%% and leaves the purge to a process running OTP code only: the purge
%% kills this one if it is still here.
%%
%% A purge asks every process whether it runs the old code, and then the
%% literal area collector asks every process to copy the module's
%% literals; each request waits for that process's turn in the run queue,
%% and only `outstanding_system_requests_limit' (default 2 per scheduler)
%% are out at once. With 100,000 processes on a saturated node that was
%% hours per module, the code server blocked all along (code:is_loaded/1
%% included). So the limit is raised to the process count for the purges
%% and set back once the collector says it is idle (at most 10 minutes
%% later: then set back anyway).
purge_and_exit(#ag{keep = true}) ->
    exit(normal);
purge_and_exit(#ag{modules = Mods, controller = C}) ->
    unlink(C),
    _ = purge(Mods),
    exit(normal).

%% @doc Deletes Mods and starts the process that purges them (running OTP
%% code only, the request limit raised meanwhile: purge_and_exit/1);
%% returns it. The caller may run Mods' code: it is deleted, not purged.
-spec purge([module()]) -> pid().
purge(Mods) ->
    _ = [code:delete(M) || M <- Mods],
    Old = try erlang:system_info(outstanding_system_requests_limit)
          catch error:badarg -> undefined
          end,
    _ = Old =/= undefined andalso
        erlang:system_flag(outstanding_system_requests_limit,
                           min(134217727, max(Old, 2 * erlang:system_info(process_count)))),
    {ok, Tokens, _} = erl_scan:string(?PURGER),
    {ok, Exprs} = erl_parse:parse_exprs(Tokens),
    Bindings = lists:foldl(fun({K, V}, B) -> erl_eval:add_binding(K, V, B) end,
                           erl_eval:new_bindings(), [{'Mods', Mods}, {'Old', Old}]),
    %% High priority, as the agent: at normal its turns wait behind every
    %% runnable process of a busy node (10,000 busy processes: 42 s).
    spawn_opt(erl_eval, exprs, [Exprs, Bindings], [{priority, high}]).


%% beamtrace_label:set_label/1's copy: this module runs first on a target
%% node, before the others are shipped. proc_lib:set_label/1 exists from
%% OTP 27 (observer and the shell's i() show it); checked by export, so OTP 25/26 skip it. Dialyzer on an OTP
%% without it would call the guarded call missing.
-dialyzer({no_missing_calls, set_label/1}).
set_label(Label) ->
    case erlang:function_exported(proc_lib, set_label, 1) of
        true -> proc_lib:set_label(Label);
        false -> ok
    end.
