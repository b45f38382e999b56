#!/usr/bin/env bash
# Seed 003's question on a small Riak-like store (examples/kv/): "the 99th
# percentile latency alarm rings: does the store's p99 match what the
# clients see, and where do those milliseconds go?" Answered from outside,
# on a node with nothing of beamtrace installed, in one recording.
#
# Starts a node named kv running the store and its clients, records it for
# 10 s with `beamtrace record`, prints `beamtrace calls --breakdown`, then
# the clients' own p99 over the same seconds, and stops the node. The
# commands printed after "$ " are the README's, run as written.
#
# Usage: examples/riak_p99.sh [WORK_DIR]
#   WORK_DIR (new or empty; default ./beamtrace-traces/riak-p99-DATE) gets
#   the compiled example, the store's files and the trace (p99/).
#   BEAMTRACE=path/to/beamtrace runs another build of the command (default:
#   this tree's priv/beamtrace).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$PWD/beamtrace-traces/riak-p99-$(date +%Y%m%d-%H%M%S)}
beamtrace() { "${BEAMTRACE:-$root/priv/beamtrace}" "$@"; }
# Prints a command as the README shows it, then runs it.
run() {
    echo "\$ $1"
    eval "$1"
}

if [ -d "$work" ] && [ -n "$(ls -A "$work")" ]; then
    echo "riak_p99.sh: $work is not empty: give a new directory" >&2
    exit 1
fi
mkdir -p "$work/ebin"
erlc -Werror -o "$work/ebin" "$root"/examples/kv/*.erl
cd "$work"

# The node: the store (8 vnodes) and 3 clients, nothing of beamtrace.
if epmd -names 2>/dev/null | grep -q '^name kv at'; then
    echo "riak_p99.sh: a node named kv already runs on this host (epmd -names): stop it first" >&2
    exit 1
fi
KV_DATA_DIR=$work erl -sname kv -noinput -pa "$work/ebin" \
    -eval 'ok = kv:start(), ok = file:write_file("kv.ready", <<>>)' >"$work/kv.log" 2>&1 &
node=$!
trap 'kill $node 2>/dev/null; wait $node 2>/dev/null' EXIT
for _ in $(seq 100); do
    [ -f kv.ready ] && break
    kill -0 $node 2>/dev/null || { echo "riak_p99.sh: the kv node did not start:" >&2; cat "$work/kv.log" >&2; exit 1; }
    sleep 0.2
done
[ -f kv.ready ] || { echo "riak_p99.sh: the kv node did not start in 20 s" >&2; exit 1; }
sleep 1

run "beamtrace record --node kv --calls 'kv_get_fsm:run/2 -> return' --calls 'kv_vnode:handle_cast/2 -> return' \\
      --calls 'kv_store:get/2 -> return' --calls 'kv_store:merge/1 -> return' \\
      --events running,receive,garbage_collection,send --duration 10s -o p99"
run "beamtrace calls p99 --breakdown --slowest 3"

# What the clients measured themselves over the same 10 s (and the second
# the command took to bring the trace back).
erl -sname "kvq$$" -noshell -eval '
    [Node] = init:get_plain_arguments(),
    io:format("~s~n", [rpc:call(list_to_atom(Node), kv, client_p99, [11])]),
    halt().' -extra "kv@$(hostname -s)"
