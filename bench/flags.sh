#!/usr/bin/env bash
# Issue 16's figures for flags and the end of a recording (alone: bash
# bench/flags.sh; FLAGS_N="10000 100000" or none, TAIL_N=10000, TAIL_MS=3000):
#  1. setting and clearing trace flags with N busy processes (a token ring
#     keeping both cores busy, plus a process spawning one short-lived
#     process a millisecond): trace_async/2 to return, stop_trace/1 to
#     return, a timer:sleep(10) probe's worst overshoot meanwhile;
#  2. `beamtrace record --duration' against a target node with TAIL_N
#     busy processes: the result line's events and discarded (events
#     offered after the recording ended are not losses).
# Prints figures with the load average beside them; asserts nothing
# (STYLE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out/flags
ERL=${ERL:-erl}
rm -rf "$OUT" && mkdir -p "$OUT/beams" "$OUT/traces" "$OUT/tmp"
erlc -Werror -o "$OUT/beams" bench/bmt_bench_flags.erl
make -s all

echo "# $(uptime)"
if [ "${FLAGS_N:-}" != none ]; then
    $ERL -noshell +P 1000000 -pa ebin -pa "$OUT/beams" \
        -run bmt_bench_flags main flags "$OUT/traces" ${FLAGS_N:-10000 100000}
fi

# The target: TAIL_N busy processes, nothing of beamtrace on its path.
cookie=bench_$$_$RANDOM
printf '%s' "$cookie" >"$OUT/cookie"; chmod 600 "$OUT/cookie"
name=bmt_flags_tgt_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
node=$name@$(hostname -s)
TMPDIR=$PWD/$OUT/tmp $ERL -noshell +P 1000000 -sname "$name" -setcookie "$cookie" \
    -pa "$OUT/beams" -eval "bmt_bench_flags:load(${TAIL_N:-10000}), bmt_bench_flags:churn(1),
                            timer:sleep(infinity)." >"$OUT/target.log" 2>&1 &
target_pid=$!
trap 'kill $target_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    $ERL -noshell -sname "bmt_flags_probe_$$" -setcookie "$cookie" -eval "
        halt(case net_adm:ping('$node') of pong -> 0; pang -> 1 end)." 2>/dev/null && break
    sleep 0.2
done
sleep 2
for i in 1 2 3; do
    echo "# record $i: $(uptime)"
    priv/beamtrace record --node "$node" --cookie-file "$OUT/cookie" --events procs \
        --duration "${TAIL_MS:-3000}ms" -o "$OUT/traces/record-$i" 2>"$OUT/record-$i.err" ||
        cat "$OUT/record-$i.err"
    grep -E 'discard|stopped' "$OUT/record-$i.err" || true
done
