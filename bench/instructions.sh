#!/usr/bin/env bash
# Instructions per event of every analysis subcommand, counted by callgrind
# (whole process), as the slope between a small and a large trace of the
# same workload, so start-up and the per-trace work cancel out. These are
# the figures to compare before and after a change: they do not move with
# the machine's load (wall-clock figures are bench/analyses.sh's).
#
# Workload (bench/bmt_an_instr.erl): a traced process calls a traced
# function with return_trace and sends a message, N times (3 events per
# round), recorded by beamtrace itself on this machine's VM.
#
# Prints one line per subcommand with its target (issue 17: stats <= 250,
# calls <= 700, every other analysis within 1.2x of its cost before the
# generic reader, commit 93734c7, measured on the same workload; messages
# and files did not exist then: no target). Asserts nothing (STYLE.md).
#   bash bench/instructions.sh [SUBCOMMAND...]   (default: all of them)
# Knobs: INSTR_SMALL (60000) and INSTR_LARGE (300000) rounds;
# INSTR_TRACES=DIR keeps the two traces there and reuses them next time;
# BEAMTRACE=PATH counts another build of the command on the same traces.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v valgrind >/dev/null || { echo "instructions: valgrind not installed (apt-get install valgrind)" >&2; exit 2; }
make -s priv/beamtrace beams >/dev/null
BT=${BEAMTRACE:-$root/priv/beamtrace}
small=${INSTR_SMALL:-60000} large=${INSTR_LARGE:-300000}
tmp=$(mktemp -d -t bmt-instr.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
traces=${INSTR_TRACES:-$tmp/traces}
mkdir -p "$traces"
erlc -o "$tmp" bench/bmt_an_instr.erl

declare -A ev
for n in "$small" "$large"; do
    t=$traces/t$n
    if [ ! -f "$t.events" ]; then
        rm -rf "$t"
        erl -noshell -pa "$root/ebin" -pa "$tmp" -run bmt_an_instr main "$t" "$n" >"$tmp/rec.log" 2>&1 ||
            { echo "instructions: recording failed:" >&2; cat "$tmp/rec.log" >&2; exit 1; }
        read -r _ e d < <(grep '^EV ' "$tmp/rec.log")
        [ "$d" = 0 ] || { echo "instructions: the recording discarded $d events; rerun on a quieter machine" >&2; exit 1; }
        echo "$e" >"$t.events"
    fi
    ev[$n]=$(cat "$t.events")
done

# Targets: issue 17's, and 1.2x of each analysis at 93734c7 on this
# workload (stats 211, calls 593, sched 352, gc 296, flame 575, export
# 1550, report 826, procs 292 instructions per event).
declare -A target=([stats]=250 [calls]=700 [sched]=422 [gc]=355 [flame]=690 [export]=1860
                   [report]=991 [procs]=350)

# ir SUBCOMMAND TRACE: the whole run's instruction count.
ir() {
    local args=("$1")
    [ "$1" != report ] || args=(report -o "$tmp/report.html")
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$BT" "${args[@]}" "$2" \
        >/dev/null 2>"$tmp/cg.err" || { echo "instructions: beamtrace $1 failed: $(grep -v '^==' "$tmp/cg.err" | tail -1)" >&2; return 1; }
    awk '/^(summary|totals):/ { print $2; exit }' "$tmp/cg.out"
}

cmds=("$@")
[ $# -gt 0 ] || cmds=(stats calls sched gc flame export messages report procs files)
echo "# instructions per event (callgrind, slope between ${ev[$small]} and ${ev[$large]} events), $BT"
printf '%-10s %10s %10s  %s\n' COMMAND "IR/EVENT" TARGET VERDICT
for c in "${cmds[@]}"; do
    a=$(ir "$c" "$traces/t$small") && b=$(ir "$c" "$traces/t$large") || exit 1
    per=$(( (b - a) / (ev[$large] - ev[$small]) ))
    t=${target[$c]:-}
    if [ -z "$t" ]; then
        verdict="no figure before the generic reader"
        t=-
    elif [ "$per" -le "$t" ]; then
        verdict="within target"
    else
        verdict="OVER target"
    fi
    printf '%-10s %10s %10s  %s\n' "$c" "$per" "$t" "$verdict"
    echo "INSTR|$c|$per|$t|$verdict" >>"${INSTR_LOG:-/dev/null}"
done
