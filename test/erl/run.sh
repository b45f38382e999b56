#!/usr/bin/env bash
# Erlang test group: beamtrace on a real node. Builds the NIF and beams,
# compiles the test modules into test/out/erl, runs each test module in a
# fresh `erl -noshell` node and prints TAP lines (see test/run_all.sh).
# BMT_ONLY=fun1,fun2 runs only those test functions; MODULES="m1 m2" a
# subset of modules.
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
out=test/out/erl
ERL=${ERL:-erl}
mkdir -p "$out"
# The NIF and the beams only: the CLI is built by its own group.
if ! make -C "$root" priv/beamtrace_nif.so beams >"$out/make.log" 2>&1; then
    cat "$out/make.log"
    echo "not ok - erl: build beamtrace (make)"
    exit 1
fi
srcs=$(ls test/erl/bmt_*.erl | grep -v '/bmt_term_text_test')
if ! erlc -Werror +debug_info -o "$out" $srcs; then
    echo "not ok - erl: compile test modules"
    exit 1
fi
rm -rf "$out/traces"
mkdir -p "$out/traces"
export BMT_TEST_TMP="$root/$out/traces"
export BMT_TRACES_LIST="$root/$out/traces.list"
export BMT_ROOT="$root"
: >"$BMT_TRACES_LIST"
modules=${MODULES:-"bmt_tracepoints_tests bmt_accounting_tests bmt_lifecycle_tests bmt_faults_tests bmt_recorder_tests bmt_babeltrace_tests bmt_tracing_tests bmt_fields_tests"}
status=0
for m in $modules; do
    log="$out/$m.log"
    ERL_CRASH_DUMP="$out/$m.erl_crash.dump" "$ERL" -noshell -pa "$root/ebin" -pa "$out" \
        -run bmt_test_runner main "$m" </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        status=1
        if ! grep -q '^not ok - ' "$log"; then
            echo "not ok - $m: node exited with status $rc"
        fi
    fi
done
# The term printer against the VM's own "%T", byte for byte.
bash test/erl/term_text.sh || status=1
# The decoder's field checks in the debug build (make debug), unless a
# module subset was asked for.
[ -n "${MODULES:-}" ] || bash test/erl/debug_fields.sh || status=1
exit $status
