%% A gen_server whose `fire' call fires a user probe: the callee side of
%% the tag-spreading test.
-module(bmt_probe_server).
-behaviour(gen_server).
-export([init/1, handle_call/3, handle_cast/2]).

init([]) -> {ok, []}.
handle_call(fire, _From, State) -> beamtrace:p(1), {reply, ok, State}.
handle_cast(_, State) -> {noreply, State}.
