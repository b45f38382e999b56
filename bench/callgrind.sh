#!/usr/bin/env bash
# Instructions per traced event above the floor, counted by callgrind over
# every thread of the VM while the workload runs: libc, the VM's enif_*
# and everything the tracer calls included, the way
# ../shared/tools/instructions/hotpath.sh counts (the same workloads for
# call, send and spawn, bench/cg/bmt_cg_wk.erl, plus receive, running and
# gc). Only the workload's window is counted (bench/cg/cgctl.c switches
# collection on and off around it); the floor is the null NIF tracer with
# beamtrace's callback set (bench/null_tracer.c), so the VM takes the same
# dispatch path; scheduler busy-waiting is off (+sbwt none ...), since it
# adds load-dependent instructions; one scheduler (+S 1). Figure: the
# least of CG_REPS beamtrace runs less the least of CG_REPS floor runs (the
# VM's own share, its garbage collections and timers, moves by up to ~100
# instructions per event between runs of either), over CG_N operations, divided by the events per operation (2 for spawn: a spawn and
# an exit; 2 for running: out and in; 2 for gc: start and end; 2 for
# handle: a call and its return).
# Instruction counts do not move with the machine's load (beamtrace's own
# by up to ~5% from run to run, hence the least of several), so these are
# the figures to compare before and after a change.
#
# Usage: bash bench/callgrind.sh [call send spawn receive running gc handle]
# Knobs: CG_N (100000), CG_REPS (3), CG_KEEP=DIR (keep each kind's best
# callgrind files there as KIND-TRACER.cg, for callgrind_annotate), CG_EVENTS=1 (also count
# the events per operation in the beamtrace trace, with priv/beamtrace
# stats). Run after make. Prints one line per kind and `CALLGRIND|...'
# summary lines (bench/run.sh gathers them).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v valgrind >/dev/null || { echo "callgrind: valgrind not installed (apt-get install valgrind)" >&2; exit 2; }
[ -f priv/beamtrace_nif.so ] && [ -f ebin/beamtrace.beam ] ||
    { echo "callgrind: run make first" >&2; exit 2; }
out=$root/bench/out/cg
mkdir -p "$out"
ERL=${ERL:-erl}
CC=${CC:-cc}
ERTS_INCLUDE=$($ERL -noshell -eval 'io:format("~ts/erts-~ts/include", [code:root_dir(), erlang:system_info(version)]), halt().')
$CC -std=gnu11 -O2 -fPIC -shared -I"$ERTS_INCLUDE" -o "$out/bmt_null_tracer_nif.so" bench/null_tracer.c &&
$CC -std=gnu11 -O2 -fPIC -shared -I"$ERTS_INCLUDE" -o "$out/bmt_cgctl.so" bench/cg/cgctl.c &&
erlc -Werror -Iinclude -o "$out" bench/bmt_null_tracer.erl bench/cg/bmt_cgctl.erl bench/cg/bmt_cg_wk.erl ||
    { echo "callgrind: building the workload failed" >&2; exit 2; }
# The runs load a snapshot of ebin/ and priv/, so a rebuild meanwhile
# cannot mix two builds into one figure.
rm -rf "$out/tree" && mkdir -p "$out/tree" && cp -r ebin priv "$out/tree/"
N=${CG_N:-100000}
REPS=${CG_REPS:-3}

# Targets, instructions per event above the floor (issue 19).
target() { case $1 in call) echo 200;; send) echo 400;; spawn) echo 300;; running) echo 200;; *) echo -;; esac; }
per_op() { case $1 in spawn|running|gc|handle) echo 2;; *) echo 1;; esac; }

# ir KIND TRACER: "TOTAL OWN" for one run: the instructions counted while
# the workload ran, and the part in the tracer's own library and the VM's
# enif_* functions it calls (self counts); "x" when the run failed. With
# CG_KEEP the run's callgrind file is kept as $CG_KEEP/KIND-TRACER.cg.RUN.
ir() {
    local d sum own f
    d=$(mktemp -d "$out/run.XXXXXX")
    CG_DIR=$d/trace valgrind --tool=callgrind --collect-atstart=no --trace-children=yes \
        --smc-check=all --callgrind-out-file="$d/cg.%p" \
        "$ERL" +S 1 +sbwt none +sbwtdcpu none +sbwtdio none -noshell \
        -pa "$out/tree/ebin" -pa "$out" -run bmt_cg_wk main "$1" "$2" "$N" >"$d/log" 2>&1 ||
        { echo x; rm -rf "$d"; return; }
    sum=$(grep -hE '^summary:' "$d"/cg.* | awk '{s += $2} END {print s + 0}')
    f=$(grep -l '^summary: [1-9]' "$d"/cg.* | head -1)
    own=$(callgrind_annotate --inclusive=no --auto=no --threshold=100 "$f" 2>/dev/null |
          awk '/^ *[0-9,]+ / { n = $1; gsub(",", "", n)
                                if ($0 ~ /(c_src\/|null_tracer\.c|bmt_null_tracer_nif\.so|\?\?\?:enif_)/) s += n }
               END { print s + 0 }')
    if [ "${CG_EVENTS:-0}" = 1 ] && [ "$2" = beamtrace ]; then
        "$out/tree/priv/beamtrace" stats "$d/trace" 2>/dev/null | sed 's/^/#   /' >&2
    fi
    [ -z "${CG_KEEP:-}" ] || cp "$f" "$CG_KEEP/$1-$2.cg.$3"
    rm -rf "$d"
    echo "$sum $own"
}

# best KIND TRACER: the least of CG_REPS runs, "TOTAL OWN RUN".
best() {
    local b= bo= br= t o
    for i in $(seq "$REPS"); do
        read -r t o < <(ir "$1" "$2" "$i")
        [ "$t" != x ] || { echo x; return; }
        if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t bo=$o br=$i; fi
    done
    echo "$b $bo $br"
}

kinds=("$@")
[ $# -gt 0 ] || kinds=(call send spawn receive running gc handle)
echo "== callgrind: instructions per event above the null tracer ($N ops, least of $REPS; $(date -u +%FT%TZ)) =="
status=0
for k in "${kinds[@]}"; do
    read -r floor floor_own floor_run < <(best "$k" null)
    read -r bt bt_own bt_run < <(best "$k" beamtrace)
    if [ "$floor" = x ] || [ "$bt" = x ]; then
        echo "callgrind: a run of $k failed" >&2
        status=1
        continue
    fi
    if [ -n "${CG_KEEP:-}" ]; then
        mv "$CG_KEEP/$k-null.cg.$floor_run" "$CG_KEEP/$k-null.cg"
        mv "$CG_KEEP/$k-beamtrace.cg.$bt_run" "$CG_KEEP/$k-beamtrace.cg"
        rm -f "$CG_KEEP/$k"-*.cg.[0-9]*
    fi
    ev=$(( N * $(per_op "$k") ))
    d=$(( (bt - floor) / ev ))
    t=$(target "$k")
    verdict="reference"
    [ "$t" = - ] || { [ "$d" -le "$t" ] && verdict="within target" || verdict="OVER target"; }
    printf '%-8s +%d Ir/event  (own code +%d: the tracer library and enif_*; floor %d Ir/event; target %s)\n' \
        "$k" "$d" $(( (bt_own - floor_own) / ev )) $(( floor / ev )) "${t/-/none}"
    echo "CALLGRIND|$k, instructions per event above the null tracer (callgrind)|+$d Ir/event|$( [ "$t" = - ] && echo none || echo "<= $t Ir/event")|$verdict"
done
exit $status
