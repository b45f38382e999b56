#!/usr/bin/env bash
# Issue 10's figures (`make bench` runs this; alone: bash bench/record.sh):
#  1. the time from starting `beamtrace record` to the first traced event
#     on another node (a target node on this host with nothing of beamtrace
#     installed, calling the traced function every ~2 ms): shipping included,
#     and again with the same build already loaded there (--keep's second
#     run); the command's total time for a 1 s recording;
#  2. the max_rate check's cost per traced event (bench/bmt_bench_record.erl).
# Prints figures and SUMMARY| lines; asserts nothing (STYLE.md).
# RECORD_ROUNDS (5), RATE_ROUNDS (9).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out/record
ROUNDS=${RECORD_ROUNDS:-5}
ERL=${ERL:-erl}
rm -rf "$OUT" && mkdir -p "$OUT/beams" "$OUT/target" "$OUT/traces"
erlc -Werror -o "$OUT/beams" bench/bmt_bench_record.erl
erlc -Werror -o "$OUT/target" test/trace/bmt_trace_target.erl

cookie=bench_$$_$RANDOM
printf '%s' "$cookie" >"$OUT/cookie"; chmod 600 "$OUT/cookie"
name=bmt_bench_tgt_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
node=$name@$(hostname -s)
mkdir -p "$OUT/tmp"
TMPDIR=$PWD/$OUT/tmp $ERL -noshell -sname "$name" -setcookie "$cookie" -pa "$OUT/target" \
    -eval 'bmt_trace_target:start_timeout(600000)' >"$OUT/target.log" 2>&1 &
target_pid=$!
trap 'kill $target_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    $ERL -noshell -sname "bmt_bench_probe_$$" -setcookie "$cookie" -eval "
        halt(case net_adm:ping('$node') of pong -> 0; pang -> 1 end)." 2>/dev/null && break
    sleep 0.1
done

first_call_ns() { # DIR: wall-clock ns of the first function_call event
    { babeltrace2 --clock-seconds "$1" 2>/dev/null || true; } |
        awk '/function_call/ && !done { gsub(/[\[\]]/, "", $1); split($1, a, "."); print a[1] a[2]; done = 1 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

run() { # LABEL EXTRA-ARGS...: one recording; prints "first_ms total_ms"
    local label=$1; shift
    local dir=$OUT/traces/$label-$RANDOM$RANDOM
    local t0 t1 first
    t0=$(date +%s%N)
    priv/beamtrace record --node "$node" --cookie-file "$OUT/cookie" \
        --calls 'bmt_trace_target:work/1' --duration 1s -o "$dir" "$@" >/dev/null 2>"$OUT/last.err" ||
        { cat "$OUT/last.err" >&2; return 1; }
    t1=$(date +%s%N)
    first=$(first_call_ns "$dir")
    echo "$(( (first - t0) / 1000000 )) $(( (t1 - t0) / 1000000 ))"
}

echo "== beamtrace record: time to the first traced event on $node ($ROUNDS rounds) =="
: >"$OUT/ship.txt"; : >"$OUT/loaded.txt"
for _ in $(seq "$ROUNDS"); do run ship >>"$OUT/ship.txt"; done
run keep --keep >/dev/null   # leaves this build loaded there
for _ in $(seq "$ROUNDS"); do run loaded >>"$OUT/loaded.txt"; done
$ERL -noshell -sname "bmt_bench_probe_$$" -setcookie "$cookie" -eval "
    [rpc:call('$node', code, M, [Mod]) || Mod <- [beamtrace, beamtrace_tracing, beamtrace_trace,
                                                  beamtrace_remote], M <- [purge, delete, purge]],
    halt()." 2>/dev/null
rm -rf "$OUT/tmp"/beamtrace-record-*
ship_first=$(cut -d' ' -f1 "$OUT/ship.txt" | median)
ship_total=$(cut -d' ' -f2 "$OUT/ship.txt" | median)
loaded_first=$(cut -d' ' -f1 "$OUT/loaded.txt" | median)
echo "shipping beamtrace (nothing installed): first event after ${ship_first} ms (median), command total ${ship_total} ms for a 1 s recording"
echo "same build already loaded:              first event after ${loaded_first} ms (median)"
printf 'SUMMARY|%s|%s|%s|%s\n' "beamtrace record -> first event (ships beamtrace)" "${ship_first} ms" \
    "reference" "median of $ROUNDS"
printf 'SUMMARY|%s|%s|%s|%s\n' "beamtrace record -> first event (already loaded)" "${loaded_first} ms" \
    "reference" "median of $ROUNDS"

echo
echo "== max_rate: cost per traced event =="
BENCH_OUT=$OUT $ERL -noshell -pa ebin -pa "$OUT/beams" -run bmt_bench_record main rate "${RATE_ROUNDS:-9}"
