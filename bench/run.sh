#!/usr/bin/env bash
# beamtrace benchmarks (`make bench`): builds the null tracer into bench/out,
# then, in one run on this machine, times call/send/spawn workloads under
# untraced, null NIF tracer, beamtrace (recorder), beamtrace with only the
# LTTng-UST sink (a private lttng-sessiond), beamtrace with only a bpftrace
# USDT probe attached, and the pid tracer side by side; times user probes
# with and without a listener against an empty NIF; floods send events to
# show memory stays bounded; runs bench/analyses.sh (the CLI analyses vs
# babeltrace2 on a 10 M event trace); and ends with a summary of every
# target and its measured figure. Prints figures; asserts none of them
# (STYLE.md). Besides wall time it reports each run's CPU time on the
# scheduler threads and on the consumer thread (schedstat), a +S 1 pass, and
# instructions per event (bench/callgrind.sh).
# Knobs: BENCH_ROUNDS (9), BENCH_SCALE (1.0, ops multiplier),
# FLOOD_MS (3000), PID_FLOOD_MS (1500), BENCH_LTTNG=0 / BENCH_USDT=0 (skip
# those sinks), BENCH_ANALYSES=0 (skip analyses.sh), ANALYSES_REPEATS (3),
# BENCH_PROFILE=1 (then also bench/profile.sh: perf profiles of null tracer
# vs beamtrace, ~3 min), BENCH_S1_ROUNDS (5), BENCH_CALLGRIND=0 (skip
# callgrind), BENCH_RECORD=0 (skip bench/record.sh), BENCH_CLUSTER=0 (skip
# bench/cluster.sh), BENCH_SOURCES=0 (skip bench/sources.sh),
# BENCH_INSTRUCTIONS=0 (skip bench/instructions.sh: every analysis's
# instructions per event, counted by callgrind, beside its target),
# BENCH_FLIGHT=0 (skip bench/flight.sh; FLIGHT_CG=0 skips only its
# callgrind part, bench/flight_cg.sh).
#
# LTTng isolation: as root, the script re-runs itself in a private mount
# namespace with its own empty /run/lttng and /dev/shm (as test/lttng/run.sh
# does), so the session daemon it starts and stops is its own. Without one
# it starts a daemon only if none runs, and otherwise skips the LTTng sink.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BMT_BENCH_NS:-}" ]; then
    if [ "$(id -u)" = 0 ] && [ "${BENCH_LTTNG:-1}" != 0 ] &&
       unshare --mount --propagation private true 2>/dev/null; then
        exec env BMT_BENCH_NS=private unshare --mount --propagation private bash "$0" "$@"
    fi
    export BMT_BENCH_NS=shared
fi
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
erlc -Werror -Iinclude -o "$OUT" bench/bmt_null_tracer.erl bench/bench_mod.erl bench/bmt_bench.erl
$CC -std=gnu11 -O2 -g -Wall -Wextra -Werror -Ic_src -I"$ERTS_INCLUDE" -o "$OUT/lttng_floor" \
    bench/lttng_floor.c c_src/sinks/lttng.c c_src/core/catalogue.c -ldl

node() { BENCH_OUT="$OUT" $ERL -noshell -pa ebin "$OUT" -run bmt_bench main "$@"; }

start=$(date +%s)
echo "== beamtrace benchmarks ($(date -u +%FT%TZ), $(nproc) CPUs, $(uname -r)) =="

# ---- LTTng: a session daemon of our own, one session per workload --------
# (bench/lttng_env.sh). bmt_bench starts a workload's session just for the
# runs of its lttng tracer and stops it after each, then counts what
# reached it.
LTTNG_OUT=$PWD/$OUT/lttng
# shellcheck source=bench/lttng_env.sh
. bench/lttng_env.sh
cleanup() { stop_sessiond; rm -rf "$LTTNG_OUT"; }
trap cleanup EXIT
lttng_setup
[ "${BENCH_USDT:-1}" != 0 ] || export BENCH_USDT=0

timing_log=$(mktemp)
node timing "$ROUNDS" | tee "$timing_log"

# The same with one scheduler (+S 1): the traced process and the consumer
# then never compete for the same scheduler thread's CPU time, and a noisy
# second core matters less. The recorder against the floor only.
echo
echo "== +S 1: one scheduler thread =="
BENCH_TRACERS=untraced,null,beamtrace_big BENCH_USER=0 \
    BENCH_OUT="$OUT" $ERL +S 1 -noshell -pa ebin "$OUT" -run bmt_bench main timing \
    "${BENCH_S1_ROUNDS:-5}" | grep -v '^TIMING-SUMMARY' | tee -a "$timing_log"

# Instructions per event (callgrind): the figure that does not move with
# the machine's load, against issue 19's targets (bench/callgrind.sh, a few
# minutes; BENCH_CALLGRIND=0 skips it). Its CALLGRIND| lines are already
# what|measured|target|verdict.
if [ "${BENCH_CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
    echo
    bash bench/callgrind.sh | tee -a "$timing_log" |
        sed -n 's/^CALLGRIND|/SUMMARY|/p' >>"$timing_log"
fi

# The consumer thread's CPU per event written (bench/consumer_cpu.c, no VM):
# the stream files written with O_DIRECT against the same writer built
# buffered (through the page cache), one after the other on bench/out's
# filesystem. On a 2-core box that CPU is taken from the schedulers.
echo
echo "== consumer CPU per event: O_DIRECT vs buffered writes (bench/consumer_cpu.c, ${CONSUMER_EVENTS:-5000000} events) =="
consumer_src="bench/consumer_cpu.c $(make -s --no-print-directory print-CORE_SRC) $(make -s --no-print-directory print-RECORDER_SRC)"
# shellcheck disable=SC2086
$CC -std=gnu11 -O2 -Wall -Wextra -Werror -Ic_src -o "$OUT/consumer_direct" $consumer_src -lpthread
# shellcheck disable=SC2086
$CC -std=gnu11 -O2 -Wall -Wextra -Werror -Ic_src -DBMT_DIRECT_IO=0 -o "$OUT/consumer_buffered" $consumer_src -lpthread
for kind in direct buffered direct buffered; do
    rm -rf "$OUT/consumer_trace"
    # An absolute path: the recorder refuses a relative trace directory.
    line=$("$OUT/consumer_$kind" "$(pwd)/$OUT/consumer_trace" "${CONSUMER_EVENTS:-5000000}")
    echo "$kind: $line"
    ns=$(echo "$line" | sed -n 's/.*consumer_cpu_ns_per_event \([0-9.]*\).*/\1/p')
    echo "SUMMARY|consumer CPU per event, $kind writes|$ns ns|reference|-" >>"$timing_log"
done
rm -rf "$OUT/consumer_trace"

# LTTng's own cost per event on this machine (bench/lttng_floor.c): the
# part of "LTTng sink - null" beamtrace cannot remove.
if [ "$BENCH_LTTNG" = 1 ]; then
    echo
    echo "== LTTng floor: the provider's enabled() + emit() from C, no VM (bench/lttng_floor.c) =="
    floor_n=2000000
    lttng start bmt-floor >/dev/null
    floor_out=$("$OUT/lttng_floor" priv "$floor_n" 2>&1) || true
    lttng stop bmt-floor >/dev/null
    echo "$floor_out"
    fl_count=$(babeltrace2 "$LTTNG_OUT/trace-floor" -c sink.utils.counter -p step=+0 2>/dev/null |
               awk '/Event messages/ { print $1 }')
    fl_disc=$(lttng list bmt-floor | awk '/Discarded events:/ { s += $3 } END { print s + 0 }')
    echo "bmt-floor: ${fl_count:-?} events + ${fl_disc} discarded by LTTng (emitted $((2 * (floor_n + floor_n / 10))))"
    for tp in function_call message_send; do
        ns=$(awk -v tp="$tp" '$1 == "FLOOR" && $2 == tp { print $5 }' <<<"$floor_out")
        printf 'SUMMARY|LTTng floor: %s from C, no VM|%s|reference|%s\n' "$tp" "${ns:-?} ns/ev" \
            "LTTng's share of the 150" >>"$timing_log"
    done
fi
stop_sessiond
rm -rf "$LTTNG_OUT"

echo
echo "== Memory under a send-event flood (4 senders, one node per tracer) =="
flood_log=$(mktemp)
node flood untraced "$FLOOD_MS" | tee -a "$flood_log"
node flood beamtrace "$FLOOD_MS" | tee -a "$flood_log"
node flood pid "$PID_FLOOD_MS" | tee -a "$flood_log"
rm -rf "$OUT/traces"

peak() { grep "^FLOOD $1 " "$flood_log" | sed -E 's/.*peak RSS ([0-9.]+) MiB.*/\1/'; }

# Instructions per event of every analysis (callgrind; the figures that
# count for the command's speed, whatever the machine's load).
if [ "${BENCH_INSTRUCTIONS:-1}" != 0 ] && command -v valgrind >/dev/null; then
    echo
    echo "== Analyses: instructions per event (bench/instructions.sh) =="
    instr_log=$(mktemp)
    INSTR_LOG=$instr_log bash bench/instructions.sh
    awk -F'|' '$1 == "INSTR" { printf "SUMMARY|beamtrace %s, instructions per event|%s|%s|%s\n", $2, $3,
                                       $4 == "-" ? "-" : "<= " $4, $5 }' \
        "$instr_log" >>"$timing_log"
    rm -f "$instr_log"
fi

analyses_log=$(mktemp)
if [ "${BENCH_ANALYSES:-1}" != 0 ]; then
    echo
    echo "== Analyses vs babeltrace2 (bench/analyses.sh) =="
    bash bench/analyses.sh 10000000 "${ANALYSES_REPEATS:-3}" | tee "$analyses_log"
fi

# Issue 10: beamtrace record's time to the first event on another node, and
# the max_rate check's cost per event (bench/record.sh); BENCH_RECORD=0 skips.
if [ "${BENCH_RECORD:-1}" != 0 ]; then
    echo
    echo "== beamtrace record and max_rate (bench/record.sh) =="
    bash bench/record.sh | tee -a "$timing_log"
fi

# Issue 11: what links cost a traced message, the clock offset estimate's
# error on one host, the time to bring back a 3-node trace (bench/cluster.sh);
# BENCH_CLUSTER=0 skips.
if [ "${BENCH_CLUSTER:-1}" != 0 ]; then
    echo
    echo "== cluster: links, clocks, bringing traces back (bench/cluster.sh) =="
    bash bench/cluster.sh | tee -a "$timing_log"
fi

# The session sources' overhead (system_monitor, samples, distribution),
# each side by side with the untraced workload (bench/sources.sh).
if [ "${BENCH_SOURCES:-1}" != 0 ]; then
    echo "== session sources (bench/sources.sh) =="
    bash bench/sources.sh | tee -a "$timing_log"
fi

# The flight recorder's steady cost with no trigger firing, as a ratio
# against the same recording without flight, and what a node here sustains
# while staying responsive (the default max_rate's origin; bench/flight.sh).
if [ "${BENCH_FLIGHT:-1}" != 0 ]; then
    echo "== flight recorder (bench/flight.sh) =="
    BENCH_OUT="$OUT" bash bench/flight.sh | tee -a "$timing_log"
fi

# ---- summary: every target and its measured figure ------------------------
an() { # NAME FIELD(rate|ratio): from analyses.sh's table (last 3 columns)
    awk -v name="$1" -v f="$2" 'index($0, name " ") == 1 && substr($0, length(name) + 1) ~ /^ +[0-9.]+ +[0-9]+ +[0-9.x-]+$/ {
        print (f == "rate" ? $(NF-1) : $NF) }' "$analyses_log"
}
an_row() { # WHAT MEASURED TARGET VERDICT
    printf 'SUMMARY|%s|%s|%s|%s\n' "$@" >>"$timing_log"
}
if [ -s "$analyses_log" ]; then
    rate=$(an "beamtrace stats" rate)
    an_row "beamtrace stats, events/s per core" "$(python3 -c "print('%.1f M/s' % ($rate / 1e6))")" \
        ">= 20 M/s" "$(python3 -c "print('within target' if $rate >= 20e6 else 'OVER target')")"
    for c in stats calls; do
        r=$(an "beamtrace $c" ratio)
        case $r in
            *x) an_row "beamtrace $c vs babeltrace2 DIR > /dev/null" "$r" ">= 10x" \
                    "$(python3 -c "print('within target' if ${r%x} >= 10 else 'OVER target')")";;
            *) an_row "beamtrace $c vs babeltrace2" "no babeltrace2" ">= 10x" "SKIPPED";;
        esac
    done
else
    an_row "analyses (stats, calls vs babeltrace2)" "skipped" "" "BENCH_ANALYSES=0"
fi
an_row "flood peak RSS: untraced / beamtrace / pid tracer" \
    "$(peak untraced) / $(peak beamtrace) / $(peak pid) MiB" "bounded" "reference"

echo
echo "== SUMMARY ($(( $(date +%s) - start )) s) =="
grep '^SUMMARY|' "$timing_log" |
    awk -F'|' 'BEGIN { printf "%-52s %-26s %-16s %s\n", "figure", "measured", "target", "verdict";
                       printf "%s\n", "----------------------------------------------------------------------------------------------------------------" }
               { printf "%-52s %-26s %-16s %s\n", $2, $3, $4, $5 }'
echo "$(grep '^TIMING-SUMMARY' "$timing_log" | sed 's/^TIMING-SUMMARY /SUMMARY: /')"
rm -f "$timing_log" "$flood_log" "$analyses_log"
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
    echo; echo "== perf profiles (bench/profile.sh) =="
    bash bench/profile.sh
fi
