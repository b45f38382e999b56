%% @doc beamtrace:install_dyntrace/0 and uninstall_dyntrace/0, which are
%% these (beamtrace documents them): OTP's `dyntrace' module name, backed by
%% beamtrace's stand-in in priv/compat (c_src/compat/dyntrace.erl).
-module(beamtrace_dyntrace).

-export([install_dyntrace/0, uninstall_dyntrace/0]).

-import(beamtrace, [priv_dir/0]).

%% @doc beamtrace:install_dyntrace/0.
-spec install_dyntrace() -> ok | {error, term()}.
install_dyntrace() ->
    case priv_dir() of
        {error, _} = Error ->
            Error;
        Priv ->
            Compat = filename:join(Priv, "compat"),
            case code:add_patha(Compat) of
                true ->
                    _ = code:purge(dyntrace),
                    case code:load_file(dyntrace) of
                        {module, dyntrace} ->
                            _ = code:purge(dyntrace),
                            ok;
                        {error, Reason} ->
                            _ = code:del_path(Compat),
                            {error, Reason}
                    end;
                {error, Reason} ->
                    {error, {Reason, Compat}}
            end
    end.

%% @doc beamtrace:uninstall_dyntrace/0.
-spec uninstall_dyntrace() -> ok | {error, term()}.
uninstall_dyntrace() ->
    _ = case priv_dir() of
            {error, _} -> false;
            Priv -> code:del_path(filename:join(Priv, "compat"))
        end,
    case code:which(dyntrace) of
        non_existing ->
            restore_otp_dyntrace();
        _ ->
            _ = code:purge(dyntrace),
            _ = code:delete(dyntrace),
            _ = code:purge(dyntrace),
            restore_otp_dyntrace()
    end.

restore_otp_dyntrace() ->
    case code:where_is_file("dyntrace.beam") of
        non_existing -> ok;
        _ ->
            case code:load_file(dyntrace) of
                {module, dyntrace} -> ok;
                {error, Reason} -> {error, Reason}
            end
    end.
