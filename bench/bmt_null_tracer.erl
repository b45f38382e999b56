%% @doc The null erl_tracer (bench/null_tracer.c): `enabled*' answer `trace',
%% `trace*' do nothing. The floor beamtrace is measured against. noop/0 is
%% an empty NIF.
-module(bmt_null_tracer).
-export([noop/0]).
-nifs([noop/0]).
-on_load(load_nif/0).

%% The erl_tracer callbacks: exported, declared NIFs, and their stubs.
-include("beamtrace_tracer.hrl").

load_nif() ->
    Dir = filename:dirname(code:which(?MODULE)),
    erlang:load_nif(filename:join(Dir, "bmt_null_tracer_nif"), 0).

%% An empty NIF: returns ok (the user probe benchmark's baseline).
noop() -> erlang:nif_error(nif_not_loaded).
