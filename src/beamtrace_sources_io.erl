%% @doc The session sources that watch calls: file I/O (`file_io') and ETS
%% operations (`ets'), recorded as org_erlang_beamtrace:file_op and
%% ets_op by the session's helper (beamtrace_sources).
%%
%% == How ==
%% Meta trace patterns (erlang:trace_pattern/3 with `{meta, Helper}') on
%% the `file' module's API (open, read, write, pread, pwrite, close,
%% read_file, write_file, read_file_info, list_dir, delete, rename, ...) and
%% on the ets functions asked for, with `{exception_trace}'. The helper
%% pairs each call with its return or exception, per process, and records
%% one event per outermost traced call (write_file/3 opening, writing and
%% closing is one write_file) with the latency between the VM's call and
%% return timestamps.
%%
%% Why the `file' module and not prim_file: file:read_file/1, write_file/2,
%% read_file_info/1, list_dir/1, delete/1, rename/2 ... run prim_file in
%% file_server_2, and reads and writes on a file opened without `raw' run
%% it in the file's io server; the file API runs in the caller, so the
%% event's pid is the process that asked, with nothing to correlate and no
%% state beyond the open calls. Its latency is what the caller waited
%% (file_server_2's queue included). prim_file called directly (the code
%% loader does) is not seen.
%%
%% Why meta tracing: it needs no trace flags on processes, so it takes no
%% process away from another tracer (a process has one tracer in the legacy
%% trace session) and covers new processes without a `new' flag. What it
%% cannot avoid: a function has one meta pattern, so another tool's meta
%% pattern on the same file or ets functions is replaced while the session
%% runs; the timestamps are erlang:now/0's (microsecond resolution: an ETS
%% operation mostly measures 0 or 1000 ns).
%%
%% == Bounds ==
%% State per process with a call in progress (cleared at its return; those
%% of dead processes every second) and per open file (the name it was
%% opened with, until close; at most ?MAX_FILES, later opens have no
%% name). The user tag comes from the caller's sequential trace token,
%% captured at the call by the match spec (a spreading tag), else from its
%% process dictionary, read when the helper handles the call (a tag set by
%% put_tag/1; the process dictionary is copied on OTP 25, one key is read
%% on OTP 26+).
%%
%% == Cost ==
%% Each traced call sends two messages to the helper; ETS operations are
%% cheap and frequent, so `ets' is opt-in per table, and the match spec
%% restricts the patterns to the tables named (calls on other tables cost
%% the match only). `all' traces every table.
%%
%% == Files opened before the session ==
%% A file opened before the session gets no `open' event, so its
%% operations would have no path. At start the helper records what the
%% node can say, as `org_erlang_beamtrace:file_info' events (the state dump
%% of open files):
%% <ul>
%% <li>`io_server': every file opened without `raw' that the file server's
%%   table lists (OTP 25 and 26: file_io_servers, what file:pid2name/1
%%   read), by its io server's pid, which is what file_op's callers hold:
%%   their operations carry the path;</li>
%% <li>`os_fd': every regular file the VM has open (/proc/self/fd, at most
%%   ?MAX_OS_FDS), by its descriptor number. A raw handle's descriptor can
%%   be read only by the process that opened it, and an io server keeps its
%%   file's name to itself on OTP 27+, so operations on those files carry
%%   no path: this list says which files they can be.</li>
%% </ul>
%%
%% == Cleanup ==
%% The keeper holds the patterns set and removes those whose meta tracer is
%% still the helper when the helper ends (stop, crash, kill); nothing else
%% is set.
-module(beamtrace_sources_io).

-include_lib("kernel/include/file.hrl").

-export([check/2, normalize/2, patterns/2, set/3, undo/2, init/0, open_files/2, handle/3,
         prune/1]).

-define(FILE_OPS, [open, close, read, write, pread, pwrite, read_line, position, sync,
                   datasync, truncate, read_file, write_file, read_file_info,
                   write_file_info, read_link_info, read_link, list_dir, make_dir, del_dir,
                   delete, rename, copy, make_link, make_symlink]).
-define(ETS_OPS, [insert, insert_new, lookup, lookup_element, member, delete, delete_object,
                  match, match_object, select, select_count, select_delete, take,
                  update_counter, update_element]).
-define(MAX_FILES, 65536).
-define(MAX_OS_FDS, 4096).
-define(MAX_PENDING, 100000).
-define(TAG_KEY, '$beamtrace_tag').

%%% Options

%% @doc Checks one option: `file_io => true | false | [pid()]', `ets =>
%% [atom() | ets:tid() | all]' (a non-empty list). ok or `{error, {badopt,
%% Key}}'.
-spec check(file_io | ets, term()) -> ok | {error, term()}.
check(file_io, B) when is_boolean(B) -> ok;
check(file_io, [_ | _] = Pids) ->
    case lists:all(fun is_pid/1, Pids) of
        true -> ok;
        false -> {error, {badopt, file_io}}
    end;
check(ets, all) ->
    ok;
check(ets, [_ | _] = Tabs) ->
    case lists:all(fun(T) -> is_atom(T) orelse is_reference(T) end, Tabs) of
        false ->
            {error, {badopt, ets}};
        true ->
            %% A table that does not exist would record nothing, silently.
            case [T || T <- Tabs, T =/= all, not table_exists(T)] of
                [] -> ok;
                [T | _] -> {error, {ets, {no_table, T}}}
            end
    end;
check(Key, _) ->
    {error, {badopt, Key}}.

table_exists(T) when is_atom(T) -> ets:whereis(T) =/= undefined;
table_exists(T) -> ets:info(T, id) =/= undefined.

%% @doc An option in the form patterns/2 takes: `ets => all' is `[all]'.
-spec normalize(file_io | ets, term()) -> term().
normalize(ets, all) -> [all];
normalize(_, V) -> V.

%% @doc The meta patterns a source needs, as `{MFA, MatchSpec}': every
%% function of the module with an operation's name (every arity, the
%% local ones too), none of them when called by `Helper' itself.
-spec patterns({file_io, true | [pid()]} | {ets, [atom() | ets:tid()]}, pid()) ->
          [{mfa(), list()}].
patterns({file_io, Who}, Helper) ->
    Body = [{exception_trace}, {message, {get_seq_token}}],
    Guard = [{'=/=', {self}, Helper} | case Who of
                                           true -> [];
                                           Pids -> [orelse_self(Pids)]
                                       end],
    [{{file, F, A}, [{'_', Guard, Body}]} || {F, A} <- file:module_info(functions),
                                             lists:member(F, ?FILE_OPS)];
patterns({ets, Tabs}, Helper) ->
    Body = [{exception_trace}, {message, {get_seq_token}}],
    Guard = [{'=/=', {self}, Helper}],
    [{{ets, F, A}, ets_spec(A, Tabs, Guard, Body)}
     || {F, A} <- ets:module_info(exports), lists:member(F, ?ETS_OPS), A >= 1].

orelse_self([P]) -> {'==', {self}, P};
orelse_self(Pids) -> list_to_tuple(['orelse' | [{'==', {self}, P} || P <- Pids]]).

ets_spec(A, Tabs, Guard, Body) ->
    case lists:member(all, Tabs) of
        true -> [{'_', Guard, Body}];
        false -> [{[T | lists:duplicate(A - 1, '_')], Guard, Body} || T <- Tabs]
    end.

%% @doc Sets the patterns with `Helper' as meta tracer. ok, or `{error,
%% {Source, {badarg, MFA}}}'.
-spec set(file_io | ets, [{mfa(), list()}], pid()) -> ok | {error, term()}.
set(Source, Patterns, Helper) ->
    try
        [erlang:trace_pattern(MFA, MS, [{meta, Helper}]) || {MFA, MS} <- Patterns],
        ok
    catch error:badarg -> {error, {Source, badarg}}
    end.

%% @doc Removes the patterns among `MFAs' whose meta tracer is still
%% `Helper', or dead (a pattern another tool set since stays).
-spec undo([mfa()], pid()) -> ok.
undo(MFAs, Helper) ->
    %% [] is a dead tracer: once the helper is gone, the VM shows its
    %% patterns so after the next call (another tool's live tracer shows
    %% as itself and stays).
    _ = [erlang:trace_pattern(MFA, false, [meta])
         || MFA <- MFAs, lists:member(erlang:trace_info(MFA, meta), [{meta, Helper}, {meta, []}])],
    ok.

%%% The helper's state and messages

%% erlang:process_info(Pid, {dictionary, Key}) reads one key without copying
%% the whole dictionary, from OTP 26; OTP 25 raises badarg (the callers
%% fall back), and its spec does not have the item, so dialyzer there calls
%% the call failing.
-dialyzer({[no_fail_call, no_return], dictionary_item/2}).
dictionary_item(Pid, Key) ->
    erlang:process_info(Pid, {dictionary, Key}).

%% @doc The helper's state for these sources.
-spec init() -> map().
init() ->
    Key = try dictionary_item(self(), ?TAG_KEY) of
              _ -> true
          catch error:badarg -> false
          end,
    #{pending => #{}, files => #{}, dict_key => Key}.

%% @doc The files open now that the node can name (the module doc): each
%% recorded as a file_info event into `Session' and known to the state
%% from then on. Returns the new state.
-spec open_files(beamtrace:session(), map()) -> map().
open_files(Session, #{files := Fs} = St) ->
    Known = try ets:tab2list(file_io_servers)
            catch error:badarg -> []   %% OTP 27+: no such table
            end,
    Named = lists:sublist([{Pid, B} || {Pid, Name} <- Known, is_pid(Pid),
                                       B <- [name(Name)], is_binary(B)], ?MAX_FILES),
    _ = [beamtrace:emit_nif(Session, file_info, [{term, Pid}, Path, io_server])
         || {Pid, Path} <- Named],
    _ = [beamtrace:emit_nif(Session, file_info, [<<"fd ", (integer_to_binary(N))/binary>>, Path,
                                                 os_fd])
         || {N, Path} <- os_files()],
    St#{files := maps:merge(maps:from_list(Named), Fs)}.

%% The regular files this OS process has open, {Fd, Path}, Linux's
%% /proc/self/fd (elsewhere none).
os_files() ->
    case file:list_dir("/proc/self/fd") of
        {ok, Names} ->
            Fds = lists:sublist(lists:sort([list_to_integer(F) || F <- Names, F =/= [],
                                                 lists:all(fun(C) -> C >= $0 andalso C =< $9 end, F)]),
                                ?MAX_OS_FDS),
            [{N, B} || N <- Fds,
                       {ok, Path} <- [file:read_link("/proc/self/fd/" ++ integer_to_list(N))],
                       hd(Path) =:= $/,
                       {ok, #file_info{type = regular}} <- [file:read_file_info(Path)],
                       B <- [name(Path)], is_binary(B)];
        _ ->
            []
    end.

%% @doc One meta trace message, recorded into `Session' when it ends an
%% outermost call. Returns the new state.
-spec handle(tuple(), beamtrace:session(), map()) -> map().
handle({trace_ts, Pid, call, {M, F, Args}, Token, Ts}, _S, #{pending := P} = St) ->
    Key = {Pid, M},
    case P of
        #{Key := {Depth, Outer}} ->
            St#{pending := P#{Key := {Depth + 1, Outer}}};
        #{} when map_size(P) >= ?MAX_PENDING ->
            St;
        #{} ->
            Tag = tag(Pid, Token, St),
            St#{pending := P#{Key => {1, {F, Args, Ts, Tag}}}}
    end;
handle({trace_ts, Pid, call, MFA, Ts}, S, St) ->
    handle({trace_ts, Pid, call, MFA, [], Ts}, S, St);
handle({trace_ts, Pid, How, {M, _, _}, Result, Ts}, S, #{pending := P} = St)
  when How =:= return_from; How =:= exception_from ->
    Key = {Pid, M},
    case P of
        #{Key := {1, Outer}} ->
            St1 = St#{pending := maps:remove(Key, P)},
            done(M, Pid, Outer, How, Result, Ts, S, St1);
        #{Key := {Depth, Outer}} ->
            St#{pending := P#{Key := {Depth - 1, Outer}}};
        #{} ->
            St
    end;
handle(_, _, St) ->
    St.

%% @doc Forgets the calls in progress of dead processes and the open files
%% of dead owners.
-spec prune(map()) -> map().
prune(#{pending := P, files := Fs} = St) ->
    St#{pending := maps:filter(fun({Pid, _}, _) -> is_process_alive(Pid) end, P),
        files := maps:filter(fun(Fd, _) -> fd_alive(Fd) end, Fs)}.

fd_alive(Pid) when is_pid(Pid) -> is_process_alive(Pid);
fd_alive({file_descriptor, _, #{owner := Owner}}) when is_pid(Owner) -> is_process_alive(Owner);
fd_alive(_) -> true.

tag(_Pid, {_, {?TAG_KEY, Tag}, _, _, _}, _St) when is_binary(Tag) ->
    Tag;
tag(Pid, _, #{dict_key := true}) ->
    case dictionary_item(Pid, ?TAG_KEY) of
        {_, {_, Tag}} when is_binary(Tag) -> Tag;
        _ -> <<>>
    end;
tag(Pid, _, _) ->
    case erlang:process_info(Pid, dictionary) of
        {dictionary, D} ->
            case lists:keyfind(?TAG_KEY, 1, D) of
                {_, {_, Tag}} when is_binary(Tag) -> Tag;
                _ -> <<>>
            end;
        _ -> <<>>
    end.

done(file, Pid, {Op, Args, T0, Tag}, How, Result, T1, S, #{files := Fs} = St) ->
    {Res, Errno} = result(How, Result),
    {Path, Path2} = paths(Op, Args, Fs),
    beamtrace:emit_nif(S, file_op, [Pid, atom_to_binary(Op, utf8), Path, Path2,
                                    bytes(Op, Args, Result, How), Res, Errno,
                                    latency_ns(T0, T1), Tag]),
    St#{files := files(Op, Args, How, Result, Fs)};
done(ets, Pid, {Op, Args, T0, Tag}, How, Result, T1, S, St) ->
    {Res, Errno} = case How of
                       return_from -> {<<"ok">>, <<>>};
                       exception_from -> {<<"error">>, {term, Result}}
                   end,
    Table = case Args of
                [T | _] -> {term, T};
                _ -> <<>>
            end,
    beamtrace:emit_nif(S, ets_op, [Pid, Table, atom_to_binary(Op, utf8), Res, Errno,
                                   latency_ns(T0, T1), Tag]),
    St.

latency_ns({M0, S0, U0}, {M1, S1, U1}) ->
    max(0, ((M1 - M0) * 1000000000000 + (S1 - S0) * 1000000 + (U1 - U0)) * 1000);
latency_ns(_, _) ->
    0.

result(exception_from, R) -> {<<"error">>, {term, R}};
result(return_from, eof) -> {<<"eof">>, <<>>};
result(return_from, {error, R}) -> {<<"error">>, {term, R}};
result(return_from, _) -> {<<"ok">>, <<>>}.

paths(Op, [A, B | _], _) when Op =:= rename; Op =:= copy; Op =:= make_link;
                              Op =:= make_symlink ->
    {name(A), name(B)};
paths(_, [Fd | _], Fs) when is_map_key(Fd, Fs) ->
    {map_get(Fd, Fs), <<>>};
paths(Op, [Fd | _], _) when Op =:= close; Op =:= read; Op =:= write; Op =:= pread;
                            Op =:= pwrite; Op =:= read_line; Op =:= position;
                            Op =:= sync; Op =:= datasync; Op =:= truncate ->
    {if is_atom(Fd) -> {term, Fd}; true -> <<>> end, <<>>};
paths(_, [A | _], _) ->
    {name(A), <<>>};
paths(_, [], _) ->
    {<<>>, <<>>}.

name(N) ->
    try unicode:characters_to_binary(filename:flatten(N)) of
        B when is_binary(B) -> B;
        _ -> {term, N}
    catch _:_ -> {term, N}
    end.

files(open, [Name | _], return_from, {ok, Fd}, Fs) when map_size(Fs) < ?MAX_FILES ->
    case name(Name) of
        B when is_binary(B) -> Fs#{Fd => B};
        _ -> Fs
    end;

files(close, [Fd | _], _, _, Fs) ->
    maps:remove(Fd, Fs);
files(_, _, _, _, Fs) ->
    Fs.

bytes(_, _, _, exception_from) -> 0;
bytes(Op, _, {ok, Data}, _) when Op =:= read; Op =:= read_line; Op =:= read_file ->
    size_of(Data);
bytes(pread, [_, _, _], {ok, Data}, _) -> size_of(Data);
bytes(pread, [_, _], {ok, Datas}, _) when is_list(Datas) ->
    lists:sum([size_of(D) || D <- Datas, D =/= eof]);
bytes(Op, [_, Data | _], ok, _) when Op =:= write; Op =:= write_file -> size_of(Data);
bytes(pwrite, [_, _, Data], ok, _) -> size_of(Data);
bytes(pwrite, [_, L], ok, _) when is_list(L) -> lists:sum([size_of(D) || {_, D} <- L]);
bytes(copy, _, {ok, N}, _) when is_integer(N) -> N;
bytes(_, _, _, _) -> 0.

size_of(Data) ->
    try iolist_size(Data)
    catch error:badarg ->
        try byte_size(unicode:characters_to_binary(Data)) catch _:_ -> 0 end
    end.
