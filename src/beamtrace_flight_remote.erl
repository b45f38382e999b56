%% @doc The command's side of detached flight recordings, in the hidden
%% node the command starts (beamtrace_record runs it once connected):
%% `flights --node N' lists them, `fetch --node N' copies their captures
%% here, `stop --node N' stops them, copies the captures and removes
%% everything. `record --flight ... --detach' itself is beamtrace_record's
%% (it ships, then hands over to beamtrace_flight_agent).
%%
%% Only OTP's own functions are called on the node (erpc of `file',
%% `code'), plus beamtrace_flight_agent's API while an agent runs there:
%% after a restart, or once a recording retired, nothing of beamtrace is
%% loaded and `fetch' still finds the captures in the private directories
%% (`<tmp>/beamtrace-flight-<node>-*', mode 0700, never through a
%% symlink).
%%
%% Output goes through beamtrace_record's lines: `line Text' is one line
%% of the listing (stdout), `result Text' the summary, `note Text'.
-module(beamtrace_flight_remote).

-export([flights/2, fetch/2, stop/2, detached_line/2]).
%% For beamtrace_snapshot_remote: the same copy of one directory.
-export([copy_dir/3]).

-include_lib("kernel/include/file.hrl").

-define(AGENT, beamtrace_flight_agent).

%%% The three commands

%% @doc `beamtrace flights --node N': the running recording and those whose
%% captures are still on the node. Exit status 0.
-spec flights(node(), map()) -> 0.
flights(T, Opts) ->
    Flights = find(T, Opts),
    case Flights of
        [] -> beamtrace_record:note("no flight recording on ~s, running or on disk", [T]);
        _ -> ok
    end,
    lists:foreach(fun(F) -> describe(T, F) end, Flights),
    put(result_line, io_lib:format("~b flight recording~s on ~s, ~b running, ~b capture~s",
                                   [length(Flights), plural(length(Flights)), T,
                                    length([F || #{state := running} = F <- Flights]),
                                    total_captures(Flights),
                                    plural(total_captures(Flights))])),
    0.

%% @doc `beamtrace fetch --node N [-o DIR]': copies every sealed capture
%% not already here. Exit status 0, 1 when a copy failed.
-spec fetch(node(), map()) -> 0.
fetch(T, Opts) ->
    Out = out_dir(T, Opts),
    {Copied, Here} = copy_all(T, find(T, Opts), Out),
    put(result_line, io_lib:format("~b capture~s copied from ~s into ~s (~b already there)",
                                   [Copied, plural(Copied), T, Out, Here])),
    0.

%% @doc `beamtrace stop --node N [-o DIR]': stops the running recording,
%% copies every capture here, then removes everything beamtrace put on
%% the node (the agent, its modules, the private directories) and checks
%% that nothing is left.
-spec stop(node(), map()) -> 0.
stop(T, Opts) ->
    Running = case agent_running(T) of
                  true ->
                      case rpc(T, ?AGENT, stop, []) of
                          {ok, Info} -> [Info];
                          NotStopped -> beamtrace_record:fail("the flight agent on ~s did not "
                                                              "stop: ~0p", [T, NotStopped])
                      end;
                  false -> []
              end,
    Flights = Running ++ [F || F <- on_disk(T, Opts), not lists:member(F, Running),
                               not running_dir(F, Running)],
    Out = out_dir(T, Opts),
    {Copied, Here} = copy_all(T, Flights, Out),
    {Mods, AgentDir} = case Running of
                           [#{dir := D}] ->
                               case rpc(T, ?AGENT, remove, []) of
                                   {ok, #{modules := M}} -> {M, D};
                                   NotRemoved -> beamtrace_record:fail("the flight agent on ~s did "
                                                                       "not remove its files: ~0p",
                                                                       [T, NotRemoved])
                               end;
                           [] -> {[], undefined}
                       end,
    [remove_dir(T, D) || #{dir := D} <- Flights, D =/= AgentDir],
    %% The agent's own check: modules gone, no flag, pattern or session.
    beamtrace_record_cleanup:verify(T, Mods, case AgentDir of
                                         undefined -> undefined;
                                         _ -> unicode:characters_to_list(AgentDir)
                                     end),
    put(result_line, io_lib:format("stopped ~b flight recording~s on ~s; ~b capture~s copied "
                                   "into ~s (~b already there)",
                                   [length(Flights), plural(length(Flights)), T, Copied,
                                    plural(Copied), Out, Here])),
    0.

%% @doc The result line of `record --flight --detach'.
-spec detached_line(node(), map()) -> iolist().
detached_line(T, Info) ->
    io_lib:format("flight recorder left running on ~s (~s), triggers ~ts; captures go to ~ts "
                  "there: beamtrace flights|fetch|stop --node ~s",
                  [T, until_text(Info), triggers_text(maps:get(triggers, Info, [])),
                   maps:get(flight_dir, Info, <<"?">>), T]).

%%% Finding recordings

%% The running agent's recording, then the private directories on disk.
find(T, Opts) ->
    Running = case agent_running(T) of
                  true -> case rpc(T, ?AGENT, list, []) of
                              L when is_list(L) -> L;
                              _ -> []
                          end;
                  false -> []
              end,
    Running ++ [F || F <- on_disk(T, Opts), not running_dir(F, Running)].

running_dir(#{dir := D}, Running) ->
    lists:any(fun(#{dir := R}) -> R =:= D end, Running).

agent_running(T) ->
    rpc(T, erlang, whereis, [?AGENT]) =/= undefined andalso
        rpc(T, code, is_loaded, [?AGENT]) =/= false.

%% Private directories of flights on T: <tmp>/beamtrace-flight-<T>-*,
%% directories (not symlinks) that nobody but their owner may enter.
on_disk(T, Opts) ->
    Base = beamtrace_record:tmp_base(T, maps:get(remote_tmp, Opts, undefined)),
    Prefix = "beamtrace-flight-" ++ atom_to_list(T) ++ "-",
    case rpc(T, file, list_dir, [Base]) of
        {ok, Names} ->
            [flight_on_disk(T, filename:join(Base, N))
             || N <- lists:sort(Names), lists:prefix(Prefix, N),
                private_dir(T, filename:join(Base, N))];
        _ -> []
    end.

private_dir(T, Dir) ->
    case rpc(T, file, read_link_info, [Dir]) of
        {ok, #file_info{type = directory, mode = Mode}} -> Mode band 8#077 =:= 0;
        _ -> false
    end.

flight_on_disk(T, Dir) ->
    Info = case rpc(T, file, consult, [filename:join(Dir, "flight.info")]) of
               {ok, [M]} when is_map(M) -> M;
               _ -> #{}
           end,
    FlightDir = filename:join(Dir, "flight"),
    Info#{dir => unicode:characters_to_binary(Dir),
          flight_dir => unicode:characters_to_binary(FlightDir),
          state => on_disk_state(Info), captures => captures(T, FlightDir)}.

%% A recording whose agent is gone: it ended (retired), or the node
%% restarted while it ran.
on_disk_state(#{state := stopped}) -> stopped;
on_disk_state(_) -> interrupted.

%% Sealed capture directories of a flight directory on T, oldest first.
captures(T, FlightDir) ->
    case rpc(T, file, list_dir, [FlightDir]) of
        {ok, Names} ->
            Caps = [{N, C} || C <- Names, N <- [capture_number(C)], N =/= undefined,
                              Path <- [filename:join(FlightDir, C)],
                              is_dir(T, Path),
                              beamtrace_flight:sealed(Path, fun(F) -> is_file(T, F) end)],
            [unicode:characters_to_binary(filename:join(FlightDir, C)) || {_, C} <- lists:sort(Caps)];
        _ -> []
    end.

capture_number("capture-" ++ Rest) ->
    case string:split(Rest, "-") of
        [N, _] -> try list_to_integer(N) catch error:badarg -> undefined end;
        _ -> undefined
    end;
capture_number(_) ->
    undefined.

is_dir(T, Path) ->
    case rpc(T, file, read_link_info, [Path]) of
        {ok, #file_info{type = directory}} -> true;
        _ -> false
    end.

is_file(T, Path) ->
    case rpc(T, file, read_link_info, [Path]) of
        {ok, #file_info{type = regular}} -> true;
        _ -> false
    end.

%%% Listing

describe(T, F) ->
    Caps = maps:get(captures, F, []),
    Figures = maps:get(flight, F, #{}),
    line("~s  ~s  since ~s~s  ~s", [T, maps:get(state, F), maps:get(started, F, <<"?">>),
                                    case maps:get(state, F) of
                                        running -> [", ", until_text(F)];
                                        _ -> [", ended by ", reason_text(F)]
                                    end, maps:get(dir, F)]),
    line("  triggers: ~ts", [triggers_text(maps:get(triggers, F, []))]),
    line("  captures: ~b~s", [length(Caps), figures_text(Figures)]),
    [line("    ~s  ~s", [filename:basename(C), capture_text(T, C)]) || C <- Caps],
    ok.

until_text(#{until_ms := Ms}) ->
    io_lib:format("~s left", [duration_text(Ms)]);
until_text(#{until := Ms}) when is_integer(Ms) ->
    io_lib:format("~s after its start", [duration_text(Ms)]);
until_text(_) ->
    "its until".

reason_text(#{reason := R}) -> io_lib:format("~p", [R]);
reason_text(#{state := interrupted}) -> "the node's restart (or the agent's end)";
reason_text(_) -> "?".

figures_text(#{fired := Fired} = M) ->
    Skipped = maps:get(skipped_rate, M, 0) + maps:get(skipped_long, M, 0) +
        maps:get(skipped_bytes, M, 0),
    io_lib:format(" (~b trigger~s fired, ~b absorbed, ~b skipped)",
                  [Fired, plural(Fired), maps:get(absorbed, M, 0), Skipped]);
figures_text(_) ->
    "".

%% What fired a capture, from its metadata.
capture_text(T, C) ->
    case rpc(T, file, read_file, [filename:join(C, "metadata")]) of
        {ok, Text} ->
            Env = env(Text),
            Kind = maps:get(<<"beamtrace_trigger_kind">>, Env, <<"?">>),
            Value = maps:get(<<"beamtrace_trigger_value">>, Env, <<"?">>),
            Unit = maps:get(<<"beamtrace_trigger_unit">>, Env, <<>>),
            io_lib:format("~s ~s ~s ~s", [Kind, value_text(Value, Unit),
                                          maps:get(<<"beamtrace_trigger_function">>, Env, <<>>),
                                          maps:get(<<"beamtrace_trigger_pid">>, Env, <<>>)]);
        _ ->
            "?"
    end.

value_text(V, <<"ns">>) ->
    try io_lib:format("~.1f ms", [binary_to_integer(V) / 1.0e6])
    catch error:badarg -> V
    end;
value_text(V, <<>>) -> V;
value_text(V, Unit) -> [V, " ", Unit].

%% A metadata's env block as #{Key => Text}.
env(Text) ->
    case binary:match(Text, <<"\nenv {">>) of
        {At, Len} ->
            <<_:(At + Len)/binary, Rest/binary>> = Text,
            Body = case binary:match(Rest, <<"\n};">>) of
                       {End, _} -> binary:part(Rest, 0, End);
                       nomatch -> Rest
                   end,
            maps:from_list(
              [{string:trim(K), string:trim(string:trim(V, trailing, ";"), both, "\"")}
               || L <- binary:split(Body, <<"\n">>, [global]),
                  [K, V] <- [binary:split(L, <<" = ">>)]]);
        nomatch ->
            #{}
    end.

triggers_text(Ts) ->
    lists:join(", ", [trigger_text(T) || T <- Ts]).

%% A call trigger's function as OTP prints it (yaws_server:'GET'/4), as the
%% captures' list does.
trigger_text({call, {M, F, A}, Ns}) -> io_lib:format("~tw:~tw/~b>~s", [M, F, A, ns_text(Ns)]);
trigger_text({K, Ms}) when K =:= long_gc; K =:= long_schedule -> io_lib:format("~s=~bms", [K, Ms]);
trigger_text({long_message_queue, {D, E}}) -> io_lib:format("long_message_queue=~b/~b", [D, E]);
trigger_text({K, V}) when is_integer(V) -> io_lib:format("~s=~b", [K, V]);
trigger_text({K, V}) -> io_lib:format("~s=~ts", [K, V]);
trigger_text(K) -> io_lib:format("~s", [K]).

ns_text(Ns) when Ns rem 1000000 =:= 0 -> io_lib:format("~bms", [Ns div 1000000]);
ns_text(Ns) when Ns rem 1000 =:= 0 -> io_lib:format("~bus", [Ns div 1000]);
ns_text(Ns) -> io_lib:format("~bns", [Ns]).

duration_text(Ms) when Ms >= 86400000 ->
    io_lib:format("~bd ~bh", [Ms div 86400000, Ms rem 86400000 div 3600000]);
duration_text(Ms) when Ms >= 3600000 ->
    io_lib:format("~bh ~bmin", [Ms div 3600000, Ms rem 3600000 div 60000]);
duration_text(Ms) ->
    io_lib:format("~bmin ~bs", [Ms div 60000, Ms rem 60000 div 1000]).

total_captures(Flights) ->
    lists:sum([length(maps:get(captures, F, [])) || F <- Flights]).

%%% Copying

out_dir(T, Opts) ->
    case maps:get(out, Opts, undefined) of
        undefined -> filename:absname("beamtrace-flights-" ++ atom_to_list(T));
        O -> filename:absname(unicode:characters_to_list(O))
    end.

%% Copies every capture not yet in Out: {Copied, AlreadyThere}.
copy_all(T, Flights, Out) ->
    ok = make_private(Out),
    lists:foldl(fun(C, {N, H}) ->
                        Local = unicode:characters_to_list(filename:join(Out, filename:basename(C))),
                        case filelib:is_dir(Local) of
                            true -> {N, H + 1};
                            false -> copy_capture(T, C, Local), {N + 1, H}
                        end
                end, {0, 0}, lists:append([maps:get(captures, F, []) || F <- Flights])).

%% @doc Copies the regular files of the directory Remote on T into Local
%% (made here, private), as a capture is copied.
-spec copy_dir(node(), file:filename_all(), file:filename()) -> ok.
copy_dir(T, Remote, Local) ->
    case filelib:ensure_dir(Local) of
        ok -> copy_capture(T, Remote, Local);
        Error -> beamtrace_record:fail("cannot make ~s: ~0p", [filename:dirname(Local), Error])
    end.

%% One capture, into Local.tmp first, renamed when whole: an interrupted
%% fetch leaves no capture that looks complete.
copy_capture(T, Remote, Local) ->
    Tmp = Local ++ ".part",
    _ = file:del_dir_r(Tmp),
    ok = make_private(Tmp),
    Files = case rpc(T, file, list_dir, [Remote]) of
                {ok, Names} -> Names;
                Other -> beamtrace_record:fail("cannot list ~s on ~s: ~0p", [Remote, T, Other])
            end,
    lists:foreach(fun(Name) ->
                          Path = filename:join(Remote, Name),
                          case rpc(T, file, read_link_info, [Path]) of
                              {ok, #file_info{type = regular}} ->
                                  case rpc(T, file, read_file, [Path]) of
                                      {ok, Bin} -> ok = write_private(filename:join(Tmp, Name), Bin);
                                      Err -> beamtrace_record:fail("cannot read ~s on ~s: ~0p",
                                                                   [Path, T, Err])
                                  end;
                              _ ->
                                  ok     %% never through a symlink
                          end
                  end, Files),
    ok = file:rename(Tmp, Local).

make_private(Dir) ->
    case beamtrace_local_dir:make(Dir, false) of
        ok -> ok;
        {error, Text} -> beamtrace_record:fail("~ts", [Text])
    end.

write_private(Path, Bin) ->
    case file:open(Path, [write, raw, binary, exclusive]) of
        {ok, F} ->
            ok = file:write(F, Bin),
            ok = file:close(F),
            file:change_mode(Path, 8#600);
        Error ->
            beamtrace_record:fail("cannot write ~s: ~0p", [Path, Error])
    end.

remove_dir(T, Dir) ->
    case rpc(T, file, del_dir_r, [Dir]) of
        ok -> ok;
        Other -> beamtrace_record:note("could not remove ~s on ~s: ~0p", [Dir, T, Other])
    end.

%%% Internals

line(Fmt, Args) ->
    beamtrace_record:out("line " ++ Fmt, Args).

plural(1) -> "";
plural(_) -> "s".

rpc(T, M, F, A) ->
    try erpc:call(T, M, F, A)
    catch Class:Why -> {rpc_failed, {Class, Why}}
    end.
