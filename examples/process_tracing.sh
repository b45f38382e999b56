#!/usr/bin/env bash
# The LTTng guide's "Example of process tracing" (seed 000) on beamtrace's
# embedded recorder: no daemon, no root, a stock VM.
#
# A node records org_erlang_dyntrace:process_register for new processes with
# {tracer, beamtrace, []}, starts os_mon, stops, and `beamtrace view` prints
# the registrations of sasl and os_mon's processes.
#
# Usage: examples/process_tracing.sh [TRACE_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/beamtrace-traces/process-tracing-$(date +%Y%m%d-%H%M%S)}

echo "\$ erl  # stock VM: dynamic_trace = $(erl -noshell -eval 'io:format("~p",[erlang:system_info(dynamic_trace)]), halt().')"
# os_mon's port programs (memsup, cpu_sup) and the VM's child-setup helper
# print a line on stderr when the node shuts down under them, at random;
# those lines are filtered, everything else on stderr is shown.
erl -noshell -pa "$root/ebin" -eval '
    [Dir] = init:get_plain_arguments(),
    io:format("1> beamtrace:start(#{dir => ~p, events => [\"org_erlang_dyntrace:process_register\"]}).~n", [Dir]),
    {ok, Session} = beamtrace:start(#{dir => Dir,
                                      events => ["org_erlang_dyntrace:process_register"]}),
    io:format("~p~n", [{ok, Session}]),
    io:format("2> erlang:trace(new, true, [procs, {tracer, beamtrace, []}]).~n~p~n",
              [erlang:trace(new, true, [procs, {tracer, beamtrace, []}])]),
    io:format("3> application:ensure_all_started(os_mon).~n~p~n",
              [application:ensure_all_started(os_mon)]),
    erlang:trace(all, false, [procs]),
    io:format("4> beamtrace:stop().~n~p~n", [beamtrace:stop()]),
    init:stop().' -extra "$dir" 2> >(grep -v -e '^\[os_mon\] ' -e '^Error writing to pipe' \
                                        -e '^erl_child_setup: failed with error 32 ' >&2)
echo "\$ beamtrace view $dir"
"$root/priv/beamtrace" view "$dir"
