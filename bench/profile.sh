#!/usr/bin/env bash
# Where beamtrace's nanoseconds go: perf record (cpu-clock, one sample per
# PERIOD_NS of CPU time) of one workload under the null NIF tracer and under
# beamtrace (32 MiB buffers, nothing dropped), printed as sampled CPU ns per
# operation, by library and by symbol, scheduler threads and the consumer
# thread apart. Symbols in both listings are the VM's dispatch floor; the
# difference is beamtrace's own cost. Sampled CPU under-counts wall time a
# little (compare TOTAL with the PROFILE line's ns_op).
# Usage: bash bench/profile.sh [call|send|spawn ...]   (bench/run.sh builds
# bench/out first). Knobs: PROFILE_TRACERS, PERIOD_NS, PROFILE_TOP.
set -euo pipefail

listing() { # data n comms title: by library, then by symbol
  local rows
  rows=$(perf report -i "$1" --comm "$3" --no-children --sort dso,sym -F sample,dso,sym \
             --stdio 2>/dev/null | awk '!/^#/ && NF' | sort -k1,1nr || true)
  echo "-- $4 by library: sampled CPU ns per op"
  awk -v p="$PERIOD_NS" -v n="$2" '
    { s = $1; $1 = ""; sub(/ \[[.k]\] .*/, ""); sub(/^ +/, ""); sub(/^\[JIT\].*/, "[JIT]");
      lib[$0] += s; tot += s }
    END { for (l in lib) printf "%9.1f  %s\n", lib[l] * p / n, l | "sort -k1,1nr";
          close("sort -k1,1nr"); printf "%9.1f  TOTAL\n", tot * p / n }' <<<"$rows"
  echo "-- $4 by symbol (top $TOP): sampled CPU ns per op"
  awk -v p="$PERIOD_NS" -v n="$2" -v top="$TOP" '
    NF && NR <= top { s = $1; $1 = ""; printf "%9.1f  %s\n", s * p / n, $0 }' <<<"$rows"
}

main() {
  cd "$(dirname "$0")/.."
  OUT=bench/out
  PERIOD_NS=${PERIOD_NS:-100000}
  TOP=${PROFILE_TOP:-22}
  TRACERS=${PROFILE_TRACERS:-null beamtrace_big}
  [ -f "$OUT/bmt_bench.beam" ] || { echo "profile: run bench/run.sh first" >&2; exit 1; }
  command -v perf >/dev/null || { echo "profile: perf not installed" >&2; exit 1; }
  local workloads=("$@")
  [ $# -gt 0 ] || workloads=(call send spawn)
  for w in "${workloads[@]}"; do
    for t in $TRACERS; do
      case $w in call|send) n=3000000;; *) n=300000;; esac
      data="$OUT/perf-$w-$t.data"
      BENCH_OUT="$OUT" perf record -q -e cpu-clock -c "$PERIOD_NS" -o "$data" -- \
          erl +JPperf true -noshell -pa ebin "$OUT" -run bmt_bench main profile "$w" "$t" "$n" \
          | grep '^PROFILE' | tr -s ' \n' ' '; echo
      listing "$data" "$n" 1_scheduler,2_scheduler "$w / $t / scheduler threads"
      [ "$t" = null ] || listing "$data" "$n" beamtrace_consu "$w / $t / consumer thread"
    done
  done
}
main "$@"
exit
