#!/usr/bin/env bash
# The flight group: beamtrace:flight/2 in a node (bmt_flight_tests, against
# the bmt_kv workload) and, later in the file list, the flight recorder
# driven from outside. TAP lines (see test/run_all.sh). BMT_ONLY=fun1,fun2
# runs only those tests; MODULES="m1 m2" a subset of modules.
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
out=test/out/flight
ERL=${ERL:-erl}
mkdir -p "$out"
if ! make -C "$root" >"$out/make.log" 2>&1; then
    cat "$out/make.log"
    echo "not ok - flight: build beamtrace (make)"
    exit 1
fi
rm -rf "$out/beams" "$out/target" "$out/traces"
mkdir -p "$out/beams" "$out/target" "$out/traces"
# The runner and helpers are the erl group's; the workload also goes alone
# into target/, the only code path a target node gets besides OTP's.
if ! erlc -Werror +debug_info -o "$out/beams" test/erl/bmt_test_runner.erl test/erl/bmt_test_lib.erl \
        test/flight/*.erl test/lib/bmt_record_cmd.erl ||
   ! erlc -Werror -o "$out/target" test/flight/bmt_kv.erl test/lib/bmt_beamtrace_left.erl; then
    echo "not ok - flight: compile test modules"
    exit 1
fi
export BMT_TEST_TMP="$root/$out/traces"
export BMT_TRACES_LIST="$root/$out/traces.list"
export BMT_ROOT="$root"
export BMT_TARGET_BEAMS="$root/$out/target"
: >"$BMT_TRACES_LIST"
modules=${MODULES:-"bmt_flight_tests bmt_sample_tests bmt_flight_remote_tests"}
status=0
for m in $modules; do
    log="$out/$m.log"
    # A distributed node: the tests start peer nodes.
    dist=(-sname "bmt_fl_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')" -setcookie "bmt_fl_$$")
    ERL_CRASH_DUMP="$out/$m.erl_crash.dump" "$ERL" -noshell "${dist[@]}" -pa "$root/ebin" \
        -pa "$out/beams" -run bmt_test_runner main "$m" </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        status=1
        if ! grep -q '^not ok - ' "$log"; then
            echo "not ok - $m: node exited with status $rc"
        fi
    fi
done
exit $status
