#!/usr/bin/env bash
# The flight recorder in `make bench` (bench/run.sh runs it; alone:
# bash bench/flight.sh [ROUNDS]): the steady cost of a flight recording
# whose trigger never fires, as a ratio against the same recording without
# flight, and what a node on this machine sustains while staying
# responsive (where the default max_rate comes from); then the same
# steady cost in instructions per event (bench/flight_cg.sh, callgrind:
# the figure that does not move with the machine's load; FLIGHT_CG=0
# skips it). Prints figures and the load average beside them; asserts
# nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out}
mkdir -p "$OUT/flight"
erlc -o "$OUT" bench/bmt_bench_flight.erl
echo "# $(uptime)"
BENCH_OUT="$(pwd)/$OUT" ${ERL:-erl} -noshell -pa ebin -pa "$OUT" \
    -run bmt_bench_flight main "${1:-${BENCH_FLIGHT_ROUNDS:-5}}"
rm -rf "$OUT/flight"
echo "# $(uptime)"
if [ "${FLIGHT_CG:-1}" != 0 ] && command -v valgrind >/dev/null; then
    bash bench/flight_cg.sh | sed 's/^FLIGHT_CG|/SUMMARY|/'
fi
