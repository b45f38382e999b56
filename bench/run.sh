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
# (STYLE.md). Knobs: BENCH_ROUNDS (9), BENCH_SCALE (1.0, ops multiplier),
# FLOOD_MS (3000), PID_FLOOD_MS (1500), BENCH_LTTNG=0 / BENCH_USDT=0 (skip
# those sinks), BENCH_ANALYSES=0 (skip analyses.sh), ANALYSES_REPEATS (3),
# BENCH_PROFILE=1 (then also bench/profile.sh: perf profiles of null tracer
# vs beamtrace, ~3 min).
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
erlc -Werror -o "$OUT" bench/bmt_null_tracer.erl bench/bench_mod.erl bench/bmt_bench.erl

node() { BENCH_OUT="$OUT" $ERL -noshell -pa ebin "$OUT" -run bmt_bench main "$@"; }

start=$(date +%s)
echo "== beamtrace benchmarks ($(date -u +%FT%TZ), $(nproc) CPUs, $(uname -r)) =="

# ---- LTTng: a session daemon of our own, one session per workload --------
# Each session records `org_erlang_dyntrace:*' into one channel of 8 x 4 MiB
# sub-buffers per CPU (32 MiB, as the recorder's beamtrace_big), so LTTng
# should not have to discard. bmt_bench starts a session just for the runs
# of its workload's lttng tracer and stops it after each, then counts what
# reached it.
LTTNG_OUT=$PWD/$OUT/lttng
our_sessiond=
sessiond_up() { lttng list >/dev/null 2>&1; }
stop_sessiond() {
    [ -n "$our_sessiond" ] || return 0
    lttng destroy --all >/dev/null 2>&1 || true
    local pid
    pid=$(cat "$LTTNG_PIDFILE" 2>/dev/null) || return 0
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
    our_sessiond=
}
cleanup() { stop_sessiond; rm -rf "$LTTNG_OUT"; }
trap cleanup EXIT
LTTNG_PIDFILE=/nonexistent
why=
lttng_setup() { # sets why= to the reason the LTTng sink is skipped
    [ "${BENCH_LTTNG:-1}" != 0 ] || { why="BENCH_LTTNG=0"; return; }
    command -v lttng-sessiond >/dev/null && command -v lttng >/dev/null ||
        { why="lttng-tools not installed"; return; }
    command -v babeltrace2 >/dev/null || { why="babeltrace2 not installed (needed to count events)"; return; }
    [ -f priv/beamtrace_lttng.so ] || { why="priv/beamtrace_lttng.so not built (no lttng-ust)"; return; }
    if [ "$BMT_BENCH_NS" = private ]; then
        mkdir -p /run/lttng /dev/shm
        mount -t tmpfs -o mode=1777 bmt-bench-lttng /run/lttng &&
            mount -t tmpfs -o mode=1777 bmt-bench-shm /dev/shm ||
            { why="cannot mount a private /run/lttng and /dev/shm"; return; }
    elif sessiond_up; then
        why="a session daemon we did not start runs, and no private mount namespace to start our own"
        return
    fi
    rm -rf "$LTTNG_OUT" && mkdir -p "$LTTNG_OUT/home"
    export LTTNG_HOME=$LTTNG_OUT/home
    if [ "$(id -u)" = 0 ]; then LTTNG_PIDFILE=/run/lttng/lttng-sessiond.pid
    else LTTNG_PIDFILE=$LTTNG_HOME/.lttng/lttng-sessiond.pid; fi
    our_sessiond=1
    lttng-sessiond --daemonize --no-kernel >"$LTTNG_OUT/sessiond.out" 2>&1 || true
    for _ in $(seq 50); do sessiond_up && break; sleep 0.1; done
    sessiond_up || { why="lttng-sessiond does not start: $(head -c 200 "$LTTNG_OUT/sessiond.out" | tr '\n' ' ')"; return; }
    local w
    for w in call send spawn; do
        { lttng create "bmt-$w" --output="$LTTNG_OUT/trace-$w" &&
          lttng enable-channel -u --subbuf-size=4M --num-subbuf=8 bmt -s "bmt-$w" &&
          lttng enable-event -u 'org_erlang_dyntrace:*' -c bmt -s "bmt-$w"; } >>"$LTTNG_OUT/setup.out" 2>&1 ||
            { why="lttng create/enable-event failed: $(tail -c 200 "$LTTNG_OUT/setup.out" | tr '\n' ' ')"; return; }
    done
}
lttng_setup
if [ -z "$why" ]; then
    export BENCH_LTTNG=1
    echo "LTTng: lttng-sessiond $(lttng --version | sed -n '1s/.*) \([0-9.]*\).*/\1/p') started (namespace: $BMT_BENCH_NS), sessions bmt-call, bmt-send, bmt-spawn"
else
    export BENCH_LTTNG="$why"
    echo "LTTng sink: SKIPPED: $why"
    stop_sessiond
fi
[ "${BENCH_USDT:-1}" != 0 ] || export BENCH_USDT=0

timing_log=$(mktemp)
node timing "$ROUNDS" | tee "$timing_log"
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

analyses_log=$(mktemp)
if [ "${BENCH_ANALYSES:-1}" != 0 ]; then
    echo
    echo "== Analyses vs babeltrace2 (bench/analyses.sh) =="
    bash bench/analyses.sh 10000000 "${ANALYSES_REPEATS:-3}" | tee "$analyses_log"
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
