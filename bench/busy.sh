#!/usr/bin/env bash
# Issue 16 item 3 on a saturated node: N processes each spinning at normal
# priority (BUSY_N, default 100000) on this machine's schedulers.
#   bash bench/busy.sh startstop|trace   beamtrace:start/1 + stop/1, or
#       trace/2 of procs for 3 s, from a process at high priority, with
#       where the caller waited (bmt_bench_busy);
#   bash bench/busy.sh record            `beamtrace record --events procs
#       --duration 3s' against a target node running the load, timed, with
#       where the record agent waited (sampled on the target).
# CAP (s, default 120) bounds the wait. Prints figures with the load
# average beside them; asserts nothing (STYLE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out/busy
ERL=${ERL:-erl}
N=${BUSY_N:-100000}
CAP=${CAP:-120}
rm -rf "$OUT" && mkdir -p "$OUT/beams" "$OUT/traces" "$OUT/tmp"
erlc -Werror -o "$OUT/beams" bench/bmt_bench_busy.erl
make -s all
case "${1:-trace}" in
startstop|trace)
    $ERL -noshell +P 1000000 -sname "bmt_busy_$$" -pa ebin -pa "$OUT/beams" \
        -run bmt_bench_busy main "$1" "$OUT/traces" "$N" "$CAP"
    ;;
record)
    cookie=bench_$$_$RANDOM
    printf '%s' "$cookie" >"$OUT/cookie"; chmod 600 "$OUT/cookie"
    name=bmt_busy_tgt_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
    node=$name@$(hostname -s)
    TMPDIR=$PWD/$OUT/tmp $ERL -noshell +P 1000000 -sname "$name" -setcookie "$cookie" \
        -pa "$OUT/beams" -eval "[code:ensure_loaded(M) || M <- [io_lib, io_lib_format]],
                                bmt_bench_busy:watch_agent(\"$PWD/$OUT/agent.samples\"),
                                timer:sleep(infinity)." >"$OUT/target.log" 2>&1 &
    target_pid=$!
    trap 'kill $target_pid 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
        $ERL -noshell -sname "bmt_busy_probe_$$" -setcookie "$cookie" -eval "
            halt(case net_adm:ping('$node') of
                     pong -> rpc:call('$node', bmt_bench_busy, target, [$N]), 0;
                     pang -> 1
                 end)." 2>/dev/null && break
        sleep 0.2
    done
    sleep 3
    echo "# record: $N busy processes: $(uptime)"
    start=$(date +%s.%N)
    timeout "$CAP" priv/beamtrace record --node "$node" --cookie-file "$OUT/cookie" \
        --events procs --duration 3s -o "$OUT/traces/record" 2>"$OUT/record.err" ||
        echo "# record failed or timed out (status $?)"
    end=$(date +%s.%N)
    echo "# record: returned after $(echo "$end - $start" | bc) s: $(uptime)"
    cat "$OUT/record.err"
    echo "# where the agent waited (ms since the sampler began, pid, place):"
    awk '{k=$2" "$3" "$4" "$5" "$6" "$7; if (k != last) {print; last=k}}' "$OUT/agent.samples" |
        cut -c1-400 | tail -60
    ;;
esac
