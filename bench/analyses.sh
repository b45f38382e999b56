#!/usr/bin/env bash
# The CLI on big traces: speed against babeltrace2, and the time and peak
# memory of every subcommand on N events (default 10 M) and on BIG events
# (ANALYSES_BIG, default 50 M; 0 skips it).
#
# Traces: test/analyses/make_traces.c bench, written through the real CTF
# writer: a state dump of 256 processes, then their nested call/return pairs
# (up to 6 deep, 8 functions: hundreds of thousands of distinct stacks),
# sends, receives, scheduling and gc over 4 streams, and a short-lived
# process every 1000 events. Prints figures only (no assertions);
# targets: >= 20 M events/s per core for `stats`, >= 10x babeltrace2's event
# rate for `calls`, and every subcommand's peak RSS <= 256 MB on the BIG
# trace. Every beamtrace command is single-threaded, so its rate is a
# per-core rate. The first table's format is parsed by bench/run.sh.
#   bash bench/analyses.sh [EVENTS] [REPEATS]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
events=${1:-10000000}
repeats=${2:-3}
big=${ANALYSES_BIG:-50000000}
out=bench/out
mkdir -p "$out"
make -s priv/beamtrace
CORE=$(make -s --no-print-directory print-CORE_SRC)
# shellcheck disable=SC2086
cc -std=gnu11 -O2 -Ic_src -Itest/lib -o "$out/make_traces" test/analyses/make_traces.c test/lib/trace_gen.c $CORE
trace_of() { # N: makes (once) and names the bench trace of N events
    local t="$out/analyses-$1"
    if [ ! -f "$t.done" ] || [ test/analyses/make_traces.c -nt "$t.done" ]; then
        rm -rf "$t"
        "$out/make_traces" bench "$t" "$1"
        touch "$t.done"
    fi
    echo "$t"
}
trace=$(trace_of "$events")
BT=priv/beamtrace
now() { date +%s%N; }
# best_of CMD...: prints the fastest wall time in ns over $repeats runs
best_of() {
    local best=0 t0 t1
    for _ in $(seq "$repeats"); do
        t0=$(now); "$@" >/dev/null 2>&1; t1=$(now)
        if [ "$best" -eq 0 ] || [ $((t1 - t0)) -lt "$best" ]; then best=$((t1 - t0)); fi
    done
    echo "$best"
}
n=$("$BT" stats --format json "$trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
size=$(du -sm "$trace" | cut -f1)
echo "# trace $trace: $n events, ${size} MB, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); best of $repeats runs"
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
run "beamtrace calls --breakdown" "$BT" calls --breakdown "$trace"
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
for name in "beamtrace stats" "beamtrace calls" "beamtrace calls --breakdown" \
            "beamtrace calls --by pid" "beamtrace sched" "beamtrace gc" "beamtrace procs" \
            "beamtrace flame --folded" "beamtrace export --format chrome" "beamtrace view"; do
    line "$name" "${ns[$name]}"
done
echo "# targets: stats >= 20000000 events/s per core; calls >= 10x babeltrace2"

# ---- time and peak memory of every subcommand ----
memory_table() { # TRACE EVENTS
    local t=$1 e=$2 c worst=0
    echo
    echo "# every subcommand once on $t ($e events, $(du -sm "$t" | cut -f1) MB), load $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-34s %10s %12s %8s\n' "COMMAND" "SECONDS" "PEAK RSS MB" "<=256MB"
    for c in "stats" "view" "calls" "calls --breakdown" "calls --by pid" "sched" "procs" "gc" \
             "flame --folded" "flame" "export" "report -o $out/report.html"; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %M" -o "$out/time.out" "$BT" $c "$t" >/dev/null 2>"$out/err.out" ||
            echo "# $c failed: $(head -c 300 "$out/err.out")"
        read -r secs kb <"$out/time.out"
        local mb=$((kb / 1024))
        [ "$mb" -gt "$worst" ] && worst=$mb
        printf '%-34s %10s %12s %8s\n' "beamtrace ${c%% -o *}" "$secs" "$mb" "$([ "$mb" -le 256 ] && echo yes || echo NO)"
    done
    echo "# largest peak RSS on $e events: $worst MB (target <= 256 MB at 50 M events)"
}
if [ -x /usr/bin/time ]; then
    memory_table "$trace" "$n"
    if [ "$big" -gt 0 ] && [ "$big" != "$events" ]; then
        bigtrace=$(trace_of "$big")
        memory_table "$bigtrace" "$big"
    fi
else
    echo "# /usr/bin/time missing: no memory figures (apt-get install time)"
fi
