#!/usr/bin/env bash
# Throughput of the analysis subcommands against babeltrace2 on one trace of
# N events (default 10 M): nested call/return pairs of 256 processes, sends,
# receives, scheduling and gc over 4 streams, written by
# test/analyses/make_traces.c through the real CTF writer. Prints figures
# only (no assertions); targets: >= 20 M events/s per core for `stats`,
# >= 10x babeltrace2's event rate for `calls`. Every beamtrace command is
# single-threaded, so its rate is a per-core rate. Run from anywhere:
#   bash bench/analyses.sh [EVENTS] [REPEATS]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
events=${1:-10000000}
repeats=${2:-3}
out=bench/out
mkdir -p "$out"
make -s priv/beamtrace
CORE="c_src/catalogue.c c_src/event.c c_src/ctf_packet.c c_src/ctf_metadata.c c_src/ring.c c_src/trace_dir.c"
# shellcheck disable=SC2086
cc -std=gnu11 -O2 -Ic_src -Itest/lib -o "$out/make_traces" test/analyses/make_traces.c test/lib/trace_gen.c $CORE
trace="$out/analyses-$events"
if [ ! -f "$trace.done" ]; then
    rm -rf "$trace"
    "$out/make_traces" bench "$trace" "$events"
    touch "$trace.done"
fi
BT=priv/beamtrace
now() { date +%s%N; }
# best_of CMD...: prints the fastest wall time in ns over $repeats runs
best_of() {
    local best=0 t0 t1
    for _ in $(seq "$repeats"); do
        t0=$(now); "$@" >/dev/null; t1=$(now)
        if [ "$best" -eq 0 ] || [ $((t1 - t0)) -lt "$best" ]; then best=$((t1 - t0)); fi
    done
    echo "$best"
}
n=$("$BT" stats --format json "$trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
size=$(du -sm "$trace" | cut -f1)
echo "# trace $trace: $n events, ${size} MB, $(nproc) cores; best of $repeats runs"
printf '%-34s %10s %14s %10s\n' "COMMAND" "SECONDS" "EVENTS/S" "VS BT2"
declare -A ns
run() { # NAME CMD...
    local name=$1; shift
    ns[$name]=$(best_of "$@")
}
bt2=0
if command -v babeltrace2 >/dev/null; then
    t0=$(now); babeltrace2 "$trace" >/dev/null; t1=$(now)   # once: it takes tens of seconds
    bt2=$((t1 - t0))
fi
run "beamtrace stats" "$BT" stats "$trace"
run "beamtrace calls" "$BT" calls "$trace"
run "beamtrace calls --by pid" "$BT" calls --by pid "$trace"
run "beamtrace sched" "$BT" sched "$trace"
run "beamtrace gc" "$BT" gc "$trace"
run "beamtrace procs" "$BT" procs "$trace"
run "beamtrace flame --folded" "$BT" flame --folded "$trace"
run "beamtrace export --format chrome" "$BT" export --format chrome "$trace"
run "beamtrace view" "$BT" view "$trace"
line() { # NAME NS
    local rate ratio="-"
    rate=$(python3 -c "print('%.0f' % ($n * 1e9 / $2))")
    [ "$bt2" -gt 0 ] && ratio=$(python3 -c "print('%.1fx' % ($bt2 / $2))")
    printf '%-34s %10s %14s %10s\n' "$1" "$(python3 -c "print('%.3f' % ($2 / 1e9))")" "$rate" "$ratio"
}
[ "$bt2" -gt 0 ] && line "babeltrace2 DIR > /dev/null" "$bt2"
for name in "beamtrace stats" "beamtrace calls" "beamtrace calls --by pid" "beamtrace sched" \
            "beamtrace gc" "beamtrace procs" "beamtrace flame --folded" \
            "beamtrace export --format chrome" "beamtrace view"; do
    line "$name" "${ns[$name]}"
done
echo "# targets: stats >= 20000000 events/s per core; calls >= 10x babeltrace2"
