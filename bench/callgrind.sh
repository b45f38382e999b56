#!/usr/bin/env bash
# Instructions per event, counted by callgrind: what the tracer's callbacks
# cost (the self counts of the tracer library's functions and of the VM's
# enif_* functions they call: beamtrace's against the null NIF tracer's),
# and the consumer thread's user-space share. Instruction counts do not depend on
# what else the machine is doing, so these are the figures to compare
# before and after a change on a noisy machine (wall-clock and CPU-time
# figures are bench/run.sh's). The VM's own dispatch around the callbacks is
# the same for both tracers and is left out.
#
# The JIT writes code at run time: --smc-check=all lets valgrind see it.
# Usage: bash bench/callgrind.sh [call|send|spawn ...]   (bench/run.sh
# builds bench/out first). Knobs: CG_EVENTS (100000), CG_TRACERS
# (default "null beamtrace_big").
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
command -v valgrind >/dev/null || { echo "callgrind: valgrind not installed" >&2; exit 1; }
[ -f "$OUT/bmt_bench.beam" ] || { echo "callgrind: run bench/run.sh first (builds $OUT)" >&2; exit 1; }
TRACERS=${CG_TRACERS:-null beamtrace_big}
N=${CG_EVENTS:-100000}
workloads=("$@")
[ $# -gt 0 ] || workloads=(call send spawn)

# run W T: prints "<callbacks Ir> <consumer Ir>" summed over the run.
run() {
    local dir n=$N
    [ "$1" != spawn ] || n=$((N / 5))
    dir=$(mktemp -d /tmp/bmt-cg-XXXXXX)
    BENCH_OUT="$OUT" valgrind --tool=callgrind --trace-children=yes --smc-check=all \
        --callgrind-out-file="$dir/cg.%p" \
        erl -noshell -pa ebin "$OUT" -run bmt_bench main profile "$1" "$2" "$n" \
        >"$dir/log" 2>&1 || { echo "callgrind: run $1 $2 failed (log $dir/log)" >&2; exit 1; }
    local f
    f=$(ls -S "$dir"/cg.* | head -1)
    # Self counts (inclusive ones lose whatever a tail call reaches): every
    # function of the tracer's library but the recorder's consumer side and
    # the start/stop control path, plus the VM's enif_* functions (what our
    # calls into the VM cost); the consumer thread's own functions apart.
    callgrind_annotate --inclusive=no --threshold=100 "$f" 2>/dev/null |
        awk '/^ *[0-9,]+ / {
                 n = $1; gsub(",", "", n)
                 if ($0 ~ /(consumer_main|drain_ring|flush_tick|bmt_trace_dir_|pwrite|bmt_ring_peek|bmt_ring_release) /) { cons += n; next }
                 if ($0 ~ /(bmt_nif_start|bmt_nif_stop|bmt_rec_start|bmt_rec_stop|finish|load|calibrate|metadata|put |trace_info|open_dir|bmt_nif_sessions|bmt_nif_info|make_handle|release_core|join_consumer|close_trace|collect|update_masks|bmt_rec_init|bmt_rec_destroy)/) next
                 if ($0 ~ /(beamtrace_nif\.so|bmt_null_tracer_nif\.so)\]/ || $0 ~ /\?\?\?:enif_/) cb += n
             }
             END { printf "%d %d\n", cb, cons }'
    grep -h '^PROFILE' "$dir/log" >&2 || true
    rm -rf "$dir"
}

echo "== callgrind: instructions per event in the tracer callbacks, $(date -u +%FT%TZ) =="
printf '%-6s %-16s %14s %14s\n' work tracer "callbacks Ir/ev" "consumer Ir/ev"
declare -A cb
for w in "${workloads[@]}"; do
    # Events per operation: spawn traces 2 (spawn, exit) with beamtrace's
    # event set, 3 with the null tracer's (it also takes `spawned').
    ev=$N
    [ "$w" != spawn ] || ev=$((N / 5 * 2))
    for t in $TRACERS; do
        read -r c k < <(run "$w" "$t" 2>/dev/null)
        cb[$w/$t]=$((c / ev))
        printf '%-6s %-16s %14d %14d\n' "$w" "$t" "$((c / ev))" "$((k / ev))"
        [ "$t" = null ] ||
            echo "CALLGRIND|$w $t - null: callbacks|$((c / ev - ${cb[$w/null]:-0})) Ir/event|consumer $((k / ev)) Ir/event"
    done
done
