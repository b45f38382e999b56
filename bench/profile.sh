#!/usr/bin/env bash
# Where beamtrace's nanoseconds go: perf record (cpu-clock, one sample per
# PERIOD_NS of CPU time) of one workload under the null NIF tracer and under
# beamtrace (32 MiB buffers, nothing dropped), printed as sampled CPU ns per
# operation, by library and by symbol, scheduler threads and the consumer
# thread apart. Symbols in both listings are the VM's dispatch floor; the
# difference is beamtrace's own cost. Sampled CPU under-counts wall time a
# little (compare TOTAL with the PROFILE line's ns_op).
# Usage: bash bench/profile.sh [call|send|spawn|user ...]   (bench/run.sh
# builds bench/out first). Knobs: PROFILE_TRACERS (any of bmt_bench's
# tracers: with `lttng' an lttng-sessiond of our own runs, bench/lttng_env.sh;
# `usdt' attaches bpftrace), PROFILE_USER (the user-probe loops profiled for
# the `user' workload: empty, noop, probe_none, probe_listener; default
# "noop probe_none"), PROFILE_SYSTEM=1 (perf record -a: also lists every
# process's sampled CPU per op, e.g. lttng-consumerd's or bpftrace's share),
# PERIOD_NS, PROFILE_TOP.
set -euo pipefail
if [[ " ${PROFILE_TRACERS:-} " == *" lttng "* ]] && [ -z "${BMT_BENCH_NS:-}" ]; then
    if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
        exec env BMT_BENCH_NS=private unshare --mount --propagation private bash "$0" "$@"
    fi
    export BMT_BENCH_NS=shared
fi

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
  if [[ " $TRACERS " == *" lttng "* ]]; then
    LTTNG_OUT=$PWD/$OUT/lttng-profile
    # shellcheck source=bench/lttng_env.sh
    . bench/lttng_env.sh
    trap 'stop_sessiond; rm -rf "$LTTNG_OUT"' EXIT
    lttng_setup
  fi
  for w in "${workloads[@]}"; do
    local tracers=$TRACERS
    [ "$w" != user ] || tracers=${PROFILE_USER:-noop probe_none}
    for t in $tracers; do
      case $w in call|send|user) n=3000000;; *) n=300000;; esac
      data="$OUT/perf-$w-$t.data"
      local sys=()
      [ "${PROFILE_SYSTEM:-0}" != 1 ] || sys=(-a)
      BENCH_OUT="$OUT" perf record -q "${sys[@]}" -e cpu-clock -c "$PERIOD_NS" -o "$data" -- \
          erl +JPperf true -noshell -pa ebin "$OUT" -run bmt_bench main profile "$w" "$t" "$n" \
          | grep '^PROFILE' | tr -s ' \n' ' '; echo
      if [ "${PROFILE_SYSTEM:-0}" = 1 ]; then
        echo "-- $w / $t / whole system by thread name: sampled CPU ns per op"
        perf report -i "$data" --no-children --sort comm -F sample,comm --stdio 2>/dev/null |
          awk -v p="$PERIOD_NS" -v n="$n" '!/^#/ && NF { s = $1; $1 = ""; printf "%9.1f %s\n", s * p / n, $0 }' |
          sort -k1,1nr | head -12
      fi
      listing "$data" "$n" 1_scheduler,2_scheduler "$w / $t / scheduler threads"
      case $w/$t in
        */null|*/lttng|*/usdt|user/*) ;;
        *) listing "$data" "$n" beamtrace_consu "$w / $t / consumer thread";;
      esac
    done
  done
}
main "$@"
exit
