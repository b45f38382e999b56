#!/usr/bin/env bash
# The cluster group: recording several nodes at once (beamtrace record
# --nodes / --cluster, beamtrace:trace/2 with nodes) against real nodes on
# loopback that have nothing of beamtrace on their code path; the links
# between their messages checked by the reference matcher (bmt_links). TAP
# lines (see test/run_all.sh). BMT_ONLY=fun1,fun2 runs only those tests.
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
out=test/out/cluster
ERL=${ERL:-erl}
mkdir -p "$out"
if ! make -C "$root" >"$out/make.log" 2>&1; then
    cat "$out/make.log"
    echo "not ok - cluster: build beamtrace (make)"
    exit 1
fi
if ! command -v babeltrace2 >/dev/null; then
    echo "ok - cluster # SKIP no babeltrace2 (apt-get install babeltrace2)"
    exit 0
fi
rm -rf "$out/beams" "$out/target" "$out/traces"
mkdir -p "$out/beams" "$out/target" "$out/traces"
# The runner and helpers are the erl group's; the workload also goes alone
# into target/, the only code path a cluster node gets besides OTP's.
if ! erlc -Werror +debug_info -o "$out/beams" test/erl/bmt_test_runner.erl test/erl/bmt_test_lib.erl \
        test/cluster/*.erl test/lib/bmt_record_cmd.erl ||
   ! erlc -Werror -o "$out/target" test/cluster/bmt_cluster_target.erl test/lib/bmt_beamtrace_left.erl; then
    echo "not ok - cluster: compile test modules"
    exit 1
fi
export BMT_TEST_TMP="$root/$out/traces"
export BMT_TRACES_LIST="$root/$out/traces.list"
export BMT_ROOT="$root"
export BMT_TARGET_BEAMS="$root/$out/target"
: >"$BMT_TRACES_LIST"
m=bmt_cluster_tests
log="$out/$m.log"
# The driver is a distributed node (it starts and watches the nodes); a
# random name, so parallel runs never collide.
name="bmt_cdrv_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
ERL_CRASH_DUMP="$out/$m.erl_crash.dump" "$ERL" -noshell -sname "$name" -setcookie "bmt_c_$$" \
    -pa "$root/ebin" -pa "$out/beams" -run bmt_test_runner main "$m" </dev/null 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && ! grep -q '^not ok - ' "$log"; then
    echo "not ok - $m: node exited with status $rc"
fi
exit "$rc"
