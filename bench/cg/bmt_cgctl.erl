%% @doc Callgrind's collection switched on and off around a workload
%% (bench/cg/cgctl.c). Benchmark-only.
-module(bmt_cgctl).
-export([on/0, off/0]).
-nifs([on/0, off/0]).
-on_load(init/0).

init() ->
    erlang:load_nif(filename:join(filename:dirname(code:which(?MODULE)), "bmt_cgctl"), 0).

on() -> erlang:nif_error(nif_not_loaded).
off() -> erlang:nif_error(nif_not_loaded).
