#!/usr/bin/env bash
# The flight recorder's steady cost in instructions (callgrind, whole
# process: every thread of the VM while the workload runs, as
# ../shared/tools/instructions/hotpath.sh counts): a process calling a
# traced function ("-> return": a call and a return event per call) under
# a plain trace/2 recording, a flight recording whose probe trigger never
# fires, and one whose call trigger on that function is never crossed
# (bench/cg/bmt_cg_flight.erl), each less the untraced run, as the slope
# between FLIGHT_CG_N1 and FLIGHT_CG_N2 calls (so each run's start and
# stop cancel out), per event. Prints one line per mode and the ratio
# flight/plain; asserts nothing (STYLE.md). Run after make.
# Knobs: FLIGHT_CG_N1 (20000), FLIGHT_CG_N2 (100000), FLIGHT_CG_REPS (1:
# the least of that many runs per point), CG_KEEP=DIR (keep each mode's
# large run as DIR/flight-MODE.cg, for callgrind_annotate).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v valgrind >/dev/null || { echo "flight_cg: valgrind not installed (apt-get install valgrind)" >&2; exit 2; }
[ -f priv/beamtrace_nif.so ] && [ -f ebin/beamtrace.beam ] || { echo "flight_cg: run make first" >&2; exit 2; }
out=$root/bench/out/flight_cg
mkdir -p "$out"
ERL=${ERL:-erl}
CC=${CC:-cc}
ERTS_INCLUDE=$($ERL -noshell -eval 'io:format("~ts/erts-~ts/include", [code:root_dir(), erlang:system_info(version)]), halt().')
$CC -std=gnu11 -O2 -fPIC -shared -I"$ERTS_INCLUDE" -o "$out/bmt_cgctl.so" bench/cg/cgctl.c &&
erlc -Werror -o "$out" bench/cg/bmt_cgctl.erl bench/cg/bmt_cg_flight.erl ||
    { echo "flight_cg: building the workload failed" >&2; exit 2; }
# A snapshot of ebin/ and priv/, so a rebuild meanwhile cannot mix builds.
rm -rf "$out/tree" && mkdir -p "$out/tree" && cp -r ebin priv "$out/tree/"
N1=${FLIGHT_CG_N1:-20000} N2=${FLIGHT_CG_N2:-100000} REPS=${FLIGHT_CG_REPS:-1}

# ir MODE N: the instructions counted while the workload ran ("x": failed).
ir() {
    local d sum
    d=$(mktemp -d "$out/run.XXXXXX")
    CG_DIR=$d/trace valgrind --tool=callgrind --collect-atstart=no --trace-children=yes \
        --smc-check=all --callgrind-out-file="$d/cg.%p" \
        "$ERL" +S 1 +sbwt none +sbwtdcpu none +sbwtdio none -noshell \
        -pa "$out/tree/ebin" -pa "$out" -run bmt_cg_flight main "$1" "$2" >"$d/log" 2>&1 ||
        { echo "flight_cg: $1 $2 failed: $(tail -3 "$d/log")" >&2; echo x; rm -rf "$d"; return; }
    sum=$(grep -hE '^summary:' "$d"/cg.* | awk '{s += $2} END {print s + 0}')
    [ -z "${CG_KEEP:-}" ] || [ "$2" != "$N2" ] ||
        cp "$(grep -l '^summary: [1-9]' "$d"/cg.* | head -1)" "$CG_KEEP/flight-$1.cg"
    rm -rf "$d"
    echo "$sum"
}
best() { # MODE N: the least of REPS runs
    local b= t
    for _ in $(seq "$REPS"); do
        t=$(ir "$1" "$2"); [ "$t" != x ] || { echo x; return; }
        { [ -z "$b" ] || [ "$t" -lt "$b" ]; } && b=$t
    done
    echo "$b"
}
# slope MODE: instructions per call between N1 and N2 calls.
slope() {
    local a b
    a=$(best "$1" "$N1"); b=$(best "$1" "$N2")
    case "$a$b" in *x*) echo x; return;; esac
    echo $(( (b - a) / (N2 - N1) ))
}
echo "== flight recorder, instructions per event, no trigger firing (callgrind slope $N1..$N2 calls, 2 events a call; $(date -u +%FT%TZ)) =="
declare -A per
for m in untraced plain flight_probe flight_call; do
    per[$m]=$(slope "$m")
    [ "${per[$m]}" != x ] || { echo "flight_cg: the $m runs failed" >&2; exit 1; }
done
u=${per[untraced]}
pl=$(( (per[plain] - u) / 2 ))
for m in plain flight_probe flight_call; do
    e=$(( (per[$m] - u) / 2 ))
    r=$(python3 -c "print('%.2f' % ($e / max(1, $pl)))")
    printf '%-13s +%d Ir/event above untraced  (%sx plain)\n' "$m" "$e" "$r"
    [ "$m" = plain ] ||
        echo "FLIGHT_CG|$m, instructions per event vs plain trace/2 (callgrind)|+$e Ir/event, ${r}x plain|-|reference"
done
