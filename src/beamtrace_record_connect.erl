%% @doc How beamtrace_record reaches a target: connects as a hidden node
%% with the target's cookie (starting this node's distribution in the
%% target's name domain), retrying within a budget, and says in one line
%% why it could not (epmd unreachable, no such node, a refused cookie, a
%% handshake that never finished).
-module(beamtrace_record_connect).

-include("beamtrace_record.hrl").
-import(beamtrace_record_text, [plural/1]).
-import(beamtrace_record, [note/2, fail/1, fail/2]).

-export([connect/3]).
%% For beamtrace_record's lock (how long it waits).
-export([connect_budget_ms/0]).

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
