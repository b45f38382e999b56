%% @doc The words of `beamtrace record': what an error reason, a POSIX
%% error, a size or a count say in the command's one-line messages (shared
%% by beamtrace_record and beamtrace_cluster).
-module(beamtrace_record_text).

-export([explain/1, reason_text/1, posix/1, bytes_text/1, plural/1, plural_es/1]).

%% @doc What trace/2's error reason means, for a node's error line.
-spec explain(term()) -> iodata().
explain({badspec, Item, Why}) ->
    io_lib:format("'~ts': ~s", [item_text(Item), Why]);
explain({not_loaded, M}) ->
    io_lib:format("module ~s is not loaded and cannot be loaded there (not on its code path): "
                  "check the module name in --calls", [M]);
explain({trigger, {not_loaded, M}}) ->
    io_lib:format("a --trigger's module ~ts is not loaded and cannot be loaded there (not on its "
                  "code path): check the module name in --trigger", [atom_to_list(M)]);
explain({trigger, {no_match, Spec}}) ->
    io_lib:format("--trigger on ~ts matches no function there: check the function name and arity",
                  [Spec]);
explain({no_match, Spec}) ->
    io_lib:format("--calls '~ts' matches no function there: check the function name and "
                  "arity", [Spec]);
explain({no_process, P}) ->
    io_lib:format("--procs: no process ~0p there", [P]);
explain({already_traced, P, Tracer}) ->
    io_lib:format("--procs: ~0p is already traced by another tool (~0p) on the legacy trace "
                  "session, which allows one tracer per process before OTP 27: stop that "
                  "tool first", [P, Tracer]);
explain({system_monitor, {unsupported, long_message_queue}}) ->
    "--system-monitor long_message_queue needs OTP 27 or later there: leave it out";
explain({system_monitor, {in_use, Pid}}) ->
    io_lib:format("--system-monitor: another beamtrace session there (~0p) already uses the "
                  "system monitor: stop it first", [Pid]);
explain({system_monitor, {conflict, long_message_queue}}) ->
    "--system-monitor long_message_queue: the node's own system monitor asks for other "
    "long_message_queue limits: give the same ones or leave it out";
explain({badopt, K}) ->
    io_lib:format("bad option ~0p", [K]);
explain({otp_gc_multi_session_defect, #{why := Why, fix := Fix}}) ->
    io_lib:format("garbage_collection refused: ~s; ~s", [Why, Fix]);
explain(too_many_sessions) ->
    "too many beamtrace sessions are running there: stop one";
explain({Posix, Path}) when is_atom(Posix), is_binary(Path) ->
    io_lib:format("~s: ~s", [Path, posix(Posix)]);
explain(Why) ->
    io_lib:format("~0p", [Why]).

item_text(I) when is_list(I) -> I;
item_text(I) -> io_lib:format("~0p", [I]).

%% @doc Why a trace stopped.
-spec reason_text(term()) -> iodata().
reason_text(duration) -> "duration";
reason_text(stop) -> "Ctrl-C";
reason_text(R) -> io_lib:format("~0p", [R]).

%% @doc A POSIX error's text (its name when file:format_error/1 has none).
-spec posix(term()) -> iodata().
posix(Why) when is_atom(Why) ->
    case file:format_error(Why) of
        "unknown POSIX error" ++ _ -> atom_to_list(Why);
        Text -> Text
    end;
posix(Why) ->
    io_lib:format("~0p", [Why]).

%% @doc A size, in B, KiB, MiB or GiB.
-spec bytes_text(non_neg_integer()) -> iodata().
bytes_text(B) when B >= 1 bsl 30 -> io_lib:format("~.1f GiB", [B / (1 bsl 30)]);
bytes_text(B) when B >= 1 bsl 20 -> io_lib:format("~.1f MiB", [B / (1 bsl 20)]);
bytes_text(B) when B >= 1 bsl 10 -> io_lib:format("~.1f KiB", [B / (1 bsl 10)]);
bytes_text(B) -> io_lib:format("~b bytes", [B]).

%% @doc "s" unless one.
-spec plural(integer()) -> string().
plural(1) -> "";
plural(_) -> "s".
%% @doc "es" unless one.
-spec plural_es(integer()) -> string().
plural_es(1) -> "";
plural_es(_) -> "es".
