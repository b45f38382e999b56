%% @doc The command's output directories on this host (`record -o DIR',
%% `fetch'/`stop -o DIR'): private, and never someone else's.
%%
%% A trace holds message contents and names, so the directory it is copied
%% into is made 0700. One that exists already is taken only when it is a
%% real directory (a symbolic link, which someone may have planted in /tmp,
%% is never followed), owned by the user running the command, and, where
%% the caller asks, empty. Only the last component is checked: parents
%% reached through links (/tmp on some systems) are the user's own choice.
%% Parents this module makes are made 0700 too: a cluster's -o holds one
%% directory per node, whose names would otherwise show.
-module(beamtrace_local_dir).

-export([make/2, check/2]).

-include_lib("kernel/include/file.hrl").

%% @doc Makes Dir (and its parents) private, or takes it as it is when it
%% passes the checks above (`MustBeEmpty': it holds nothing). The error is
%% one line saying what to do.
-spec make(file:filename(), boolean()) -> ok | {error, iolist()}.
make(Dir, MustBeEmpty) ->
    _ = make_parents(filename:dirname(filename:absname(Dir))),
    case file:make_dir(Dir) of
        ok -> private(Dir);
        {error, eexist} -> existing(Dir, MustBeEmpty);
        {error, Why} -> {error, io_lib:format("cannot make ~ts: ~ts (give -o DIR where you can "
                                              "write)", [Dir, file:format_error(Why)])}
    end.

%% @doc Whether make/2 would take Dir, without making anything: checked
%% before a recording starts, so that a wrong -o is said before the
%% recording, not after it (when the trace would be lost).
-spec check(file:filename(), boolean()) -> ok | {error, iolist()}.
check(Dir, MustBeEmpty) ->
    case file:read_link_info(Dir) of
        {error, enoent} -> ok;
        {ok, _} -> existing(Dir, MustBeEmpty, fun(_) -> ok end);
        {error, Why} -> {error, io_lib:format("cannot use ~ts: ~ts (give -o DIR where you can "
                                              "write)", [Dir, file:format_error(Why)])}
    end.

existing(Dir, MustBeEmpty) ->
    existing(Dir, MustBeEmpty, fun private/1).

existing(Dir, MustBeEmpty, Take) ->
    case file:read_link_info(Dir) of
        {ok, #file_info{type = symlink}} ->
            {error, io_lib:format("~ts is a symbolic link, which beamtrace does not write through: "
                                  "give -o the directory itself, or a new one", [Dir])};
        {ok, #file_info{type = directory, uid = Uid}} ->
            case own_uid() of
                Uid when MustBeEmpty ->
                    case file:list_dir(Dir) of
                        {ok, []} -> Take(Dir);
                        _ -> {error, io_lib:format("~ts already exists and is not empty: give -o a "
                                                   "new directory", [Dir])}
                    end;
                Uid ->
                    Take(Dir);
                _ ->
                    {error, io_lib:format("~ts is another user's directory: give -o a directory of "
                                          "your own, or a new one", [Dir])}
            end;
        _ ->
            {error, io_lib:format("~ts exists and is not a directory: give -o a new directory",
                                  [Dir])}
    end.

%% The missing parents of a directory, each made 0700; those that exist
%% are left as they are. An error is left to make/2's own make_dir, which
%% then says it in one line.
make_parents(Dir) ->
    case file:read_link_info(Dir) of
        {ok, _} -> ok;
        {error, enoent} ->
            %% The recursion ends: the root of an absolute name exists.
            _ = make_parents(filename:dirname(Dir)),
            case file:make_dir(Dir) of
                ok -> private(Dir);
                {error, eexist} -> ok;
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end.

private(Dir) ->
    case file:change_mode(Dir, 8#700) of
        ok -> ok;
        {error, Why} -> {error, io_lib:format("cannot make ~ts private: ~ts", [Dir,
                                                                         file:format_error(Why)])}
    end.

%% The user running the command: the owner of this process's /proc entry
%% (Linux, as the rest of beamtrace).
own_uid() ->
    {ok, #file_info{uid = Uid}} = file:read_file_info("/proc/self"),
    Uid.
