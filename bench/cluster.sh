#!/usr/bin/env bash
# Issue 11's figures (`make bench` runs this; alone: bash bench/cluster.sh):
#  1. what links cost a traced message, per message kind, next to
#     erlang:phash2/1 (bench/bmt_bench_cluster.erl links/0);
#  2. three nodes on this host recorded with beamtrace:trace/2 and nodes:
#     the clock offset estimation error, the time to bring the traces
#     back, and the C side on each round's trace (gen_server calls between
#     the nodes while traced): the time `beamtrace messages` takes to merge
#     and match the three traces, and its link coverage (cluster/1;
#     CLUSTER_ROUNDS, default 5).
#  3. the C side on a big synthetic 3-node trace (CLUSTER_MESSAGES, default
#     1000000 cross-node messages): time and peak memory of messages,
#     stats, procs and export.
# The cluster test group (test/cluster) prints the same figures on its
# fan-out workload ("# link coverage", "# merge and analyse" lines).
# Prints figures and SUMMARY| lines; asserts nothing (STYLE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out/cluster
ERL=${ERL:-erl}
rm -rf "$OUT" && mkdir -p "$OUT/beams" "$OUT/traces"
erlc -Werror -o "$OUT/beams" bench/bmt_bench_cluster.erl
echo "-- links: cost per traced message (sent and received, both traced)"
$ERL -noshell -pa ebin -pa "$OUT/beams" -eval 'bmt_bench_cluster:links(), halt().'
echo "-- three nodes on this host: clock offsets and bringing the traces back"
$ERL -noshell -sname "bmt_bench_cl_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')" \
    -setcookie "bench_cl_$$" -pa ebin -pa "$OUT/beams" \
    -run bmt_bench_cluster cluster "${CLUSTER_ROUNDS:-5}"
echo "-- the C side on a big 3-node trace (make_corpus --big-cluster: every message cross-node)"
CORE=$(make -s --no-print-directory print-CORE_SRC)
cc -std=gnu11 -O2 -Ic_src -Itest/lib -o "$OUT/make_corpus" test/cli/make_corpus.c test/lib/trace_gen.c $CORE
msgs=${CLUSTER_MESSAGES:-1000000}
"$OUT/make_corpus" --big-cluster "$OUT/traces/big" "$msgs"
for c in "messages" "stats" "procs" "export -o /dev/null"; do
    name=${c%% *}
    if [ -x /usr/bin/time ]; then
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %M" -o "$OUT/time.out" priv/beamtrace $c "$OUT/traces/big" \
            >"$OUT/$name.out" 2>/dev/null
        read -r secs kb <"$OUT/time.out"
    else
        start=$(date +%s.%N)
        # shellcheck disable=SC2086
        priv/beamtrace $c "$OUT/traces/big" >"$OUT/$name.out" 2>/dev/null
        secs=$(echo "$(date +%s.%N) - $start" | bc); kb=0
    fi
    echo "$name: ${secs} s, peak ${kb} KB, $((2 * msgs)) events of 3 traces"
    echo "SUMMARY|beamtrace $name, 3-node trace of $((2 * msgs)) events|${secs} s, ${kb} KB|reference|reference"
done
grep '^coverage' "$OUT/messages.out"
rm -rf "$OUT/traces"
