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
rm -rf "$OUT/traces"
