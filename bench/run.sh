#!/usr/bin/env bash
# beamtrace benchmarks (`make bench`): builds the null tracer into bench/out,
# then, in one run on this machine, times call/send/spawn workloads under
# untraced, null NIF tracer, beamtrace and the pid tracer side by side, and
# floods send events to show memory stays bounded. Prints timings; asserts
# none of them (STYLE.md). Knobs: BENCH_ROUNDS (9), BENCH_SCALE (1.0, ops
# multiplier), FLOOD_MS (3000), PID_FLOOD_MS (1500), BENCH_PROFILE=1 (then
# also bench/profile.sh: perf profiles of null tracer vs beamtrace, ~3 min).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
ROUNDS=${BENCH_ROUNDS:-9}
FLOOD_MS=${FLOOD_MS:-3000}
PID_FLOOD_MS=${PID_FLOOD_MS:-1500}
ERL=${ERL:-erl}
CC=${CC:-cc}

[ -f priv/beamtrace_nif.so ] && [ -f ebin/beamtrace.beam ] || {
    echo "bench: priv/beamtrace_nif.so or ebin/beamtrace.beam missing: run make" >&2; exit 1; }

mkdir -p "$OUT"
rm -rf "$OUT/traces"
ERTS_INCLUDE=$($ERL -noshell -eval 'io:format("~ts/erts-~ts/include", [code:root_dir(), erlang:system_info(version)]), halt().')
$CC -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
    -I"$ERTS_INCLUDE" -o "$OUT/bmt_null_tracer_nif.so" bench/null_tracer.c
erlc -Werror -o "$OUT" bench/bmt_null_tracer.erl bench/bench_mod.erl bench/bmt_bench.erl

node() { BENCH_OUT="$OUT" $ERL -noshell -pa ebin "$OUT" -run bmt_bench main "$@"; }

start=$(date +%s)
echo "== beamtrace benchmarks ($(date -u +%FT%TZ), $(nproc) CPUs, $(uname -r)) =="
timing_log=$(mktemp)
node timing "$ROUNDS" | tee "$timing_log"

echo
echo "== Memory under a send-event flood (4 senders, one node per tracer) =="
flood_log=$(mktemp)
node flood untraced "$FLOOD_MS" | tee -a "$flood_log"
node flood beamtrace "$FLOOD_MS" | tee -a "$flood_log"
node flood pid "$PID_FLOOD_MS" | tee -a "$flood_log"
rm -rf "$OUT/traces"

peak() { grep "^FLOOD $1 " "$flood_log" | sed -E 's/.*peak RSS ([0-9.]+) MiB.*/\1/'; }
echo
echo "SUMMARY: $(grep '^TIMING-SUMMARY' "$timing_log" | sed 's/^TIMING-SUMMARY //');" \
     "flood peak RSS untraced $(peak untraced) MiB, beamtrace $(peak beamtrace) MiB," \
     "pid tracer $(peak pid) MiB; $(( $(date +%s) - start )) s"
rm -f "$timing_log" "$flood_log"
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
    echo; echo "== perf profiles (bench/profile.sh) =="
    bash bench/profile.sh
fi
