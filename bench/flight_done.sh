#!/usr/bin/env bash
# Issue 18's "Done when", run from outside as a user runs it (the
# checks and their figures: bench/bmt_flight_done.erl): a detached flight
# recording with a call trigger on a Riak-like store for SECS (600: the
# issue's 10 minutes), then a long_gc trigger and a beamtrace:trigger/1
# probe for SHORT s each, then a recording pushed past --max-rate with
# --on-max-rate sample. Not in make test (it is 10 minutes and more).
#
# Usage: bash bench/flight_done.sh [SECS [SHORT]]   (default 600 90)
#   FLIGHT_DONE_MODES="call long_gc probe sample" picks the runs.
# Prints "$ beamtrace ..." for each command, FIGURE lines, "ok"/"FAILED"
# per check and the load average; exits 1 if a check failed. Run after make.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
[ -x priv/beamtrace ] && [ -f ebin/beamtrace.beam ] || { echo "flight_done: run make first" >&2; exit 2; }
secs=${1:-600} short=${2:-90}
out=$(mktemp -d "${TMPDIR:-/tmp}/flight_done.XXXXXX")
# The target's code path: the store and the leftover check, nothing of beamtrace.
mkdir -p "$out/target" "$out/driver"
erlc -Werror -o "$out/target" test/flight/bmt_kv.erl test/lib/bmt_beamtrace_left.erl &&
erlc -Werror -o "$out/driver" bench/bmt_flight_done.erl || { echo "flight_done: erlc failed" >&2; exit 2; }
cookie=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && echo "$cookie" >"$out/cookie")
status=0
for mode in ${FLIGHT_DONE_MODES:-call long_gc probe sample}; do
    s=$short; [ "$mode" = call ] && s=$secs
    echo "== $mode, $s s ($(date -u +%FT%TZ)) =="
    echo "# $(uptime)"
    mkdir -p "$out/$mode.run"
    erl -sname "bmt_done_drv_$$_$mode" -setcookie "$cookie" -noshell -pa "$out/driver" \
        -run bmt_flight_done main "$mode" "$s" "$out/$mode.run" "$root/priv/beamtrace" \
        "$out/target" "$out/cookie" || status=1
    echo "# $(uptime)"
done
echo "captures and traces in $out"
exit $status
