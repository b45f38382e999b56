#!/usr/bin/env bash
# Peak memory of `flame` and `report` as traces grow (`make bench-memory`;
# not run by `make test`). The bench trace of test/analyses/make_traces.c
# (256 processes, stacks up to 6 deep over 8 functions: its distinct stacks
# keep growing with its length, up to the call tree's cap of 1 M) at each
# size in EVENTS (default 5 M, 20 M and 50 M), and the same shape with
# 20 000 processes at the largest size. Prints peak RSS (/usr/bin/time's
# maximum resident set size) beside the target (<= 256 MB at 50 M events);
# asserts nothing. Traces are cached in bench/out as analyses.sh's are
# (about 37 MB per million events); BENCH_MEMORY_KEEP=0 deletes them after.
#   bash bench/memory.sh [EVENTS...]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# -gt 0 ] || set -- 5000000 20000000 50000000
out=bench/out
mkdir -p "$out"
[ -x /usr/bin/time ] || { echo "bench/memory.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
make -s priv/beamtrace
CORE=$(make -s --no-print-directory print-CORE_SRC)
# shellcheck disable=SC2086
cc -std=gnu11 -O2 -Ic_src -Itest/lib -o "$out/make_traces" test/analyses/make_traces.c test/lib/trace_gen.c $CORE
made=()
make_trace() { # NAME EVENTS [PROCS DEPTH CHURN]: makes bench/out/NAME once
    local t="$out/$1"
    shift
    if [ ! -f "$t.done" ] || [ test/analyses/make_traces.c -nt "$t.done" ]; then
        rm -rf "$t"
        "$out/make_traces" bench "$t" "$@"
        touch "$t.done"
    fi
    made+=("$t")
}
BT=priv/beamtrace
echo "# peak RSS of flame and report; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-36s %10s %8s %-16s %12s %8s\n' "TRACE" "EVENTS" "MB" "COMMAND" "PEAK RSS MB" "<=256MB"
measure() { # TRACE EVENTS
    local c kb mb
    for c in "flame --folded" "flame -o $out/memory.svg" "report -o $out/memory.html"; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%M" -o "$out/memory.rss" "$BT" $c "$1" >/dev/null 2>"$out/memory.err" ||
            echo "# $c failed: $(head -c 300 "$out/memory.err")"
        kb=$(tail -1 "$out/memory.rss")
        mb=$((kb / 1024))
        printf '%-36s %10s %8s %-16s %12s %8s\n' "$1" "$2" "$(du -sm "$1" | cut -f1)" "${c%% -o *}" \
            "$mb" "$([ "$mb" -le 256 ] && echo yes || echo NO)"
    done
}
largest=0
for n in "$@"; do
    make_trace "analyses-$n" "$n"
    measure "$out/analyses-$n" "$n"
    [ "$n" -gt "$largest" ] && largest=$n
done
make_trace "procs20k-$largest" "$largest" 20000 6 1
measure "$out/procs20k-$largest" "$largest"
echo "# target: flame and report <= 256 MB at 50 M events, flat once the call tree is full"
if [ "${BENCH_MEMORY_KEEP:-1}" = 0 ]; then
    for t in "${made[@]}"; do rm -rf "$t" "$t.done"; done
fi
