%% Driving `beamtrace record` from a test node, shared by the trace and
%% cluster groups: the command's path, a private cookie file, target node
%% names, running the command with its stderr in a file, and Ctrl-C.
-module(bmt_record_cmd).
-export([root/0, cli/0, cookie_file/0, rand_name/1, record/1, record/2, start_record/1,
         start_record/2, finish_record/2, os_pid/1, interrupt/1]).

root() -> bmt_test_lib:root().
cli() -> bmt_test_lib:cli().

cookie_file() ->
    F = filename:join(bmt_test_lib:tmp_base(), "cookie"),
    ok = file:write_file(F, atom_to_list(erlang:get_cookie())),
    ok = file:change_mode(F, 8#600),
    F.

rand_name(Prefix) ->
    Prefix ++ integer_to_list(erlang:unique_integer([positive])) ++ "_" ++
        integer_to_list(rand:uniform(1 bsl 30), 36).

%% {ExitStatus, StdoutLines, StderrLines}; every line echoed as a TAP
%% comment.
record(Args) ->
    record(Args, []).

record(Args, Env) ->
    {Port, ErrFile} = start_record(Args, Env),
    finish_record(Port, ErrFile).

start_record(Args) ->
    start_record(Args, []).

start_record(Args, Env) ->
    ErrFile = bmt_test_lib:tmpdir("stderr") ++ ".txt",
    ok = filelib:ensure_dir(ErrFile),
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", "f=$1; shift; exec \"$@\" 2>\"$f\"", "sh", ErrFile, cli(),
                              "record" | Args]},
                      {env, Env}, binary, exit_status, use_stdio, {line, 4096}]),
    {Port, ErrFile}.

finish_record(Port, ErrFile) ->
    {Status, Out} = collect(Port, []),
    {ok, Err} = file:read_file(ErrFile),
    Lines = binary:split(Err, <<"\n">>, [global, trim_all]),
    io:format("# beamtrace record: exit ~p~n", [Status]),
    [io:format("#   ~s~n", [L]) || L <- Out ++ Lines],
    {Status, Out, Lines}.

%% Three minutes: a cluster recording ships to and collects from several
%% nodes on a loaded machine.
collect(Port, Acc) ->
    receive
        {Port, {data, {_, L}}} -> collect(Port, [L | Acc]);
        {Port, {exit_status, S}} -> {S, lists:reverse(Acc)}
    after 180000 ->
            try port_close(Port) catch error:badarg -> ok end,
            {timeout, lists:reverse(Acc)}
    end.

os_pid(Port) ->
    {os_pid, P} = erlang:port_info(Port, os_pid),
    P.

interrupt(Port) ->
    os:cmd("kill -INT " ++ integer_to_list(os_pid(Port))).
