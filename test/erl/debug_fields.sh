#!/usr/bin/env bash
# The decoder's debug checks (c_src/nif/nif_decode.h): builds the debug NIF
# (make debug) and runs the suites bmt_tracepoints_SUITE and bmt_fields_SUITE
# with it (Common Test, as test/lib/ct_group.sh does),
# so every field the NIF writes by hand is checked against the catalogue;
# then proves the check works: in a scratch copy whose catalogue row
# process_spawn has two fields swapped (pid, parent), the debug NIF must
# abort on the first spawn event, naming the field. TAP lines; exits
# non-zero on a failure. Run alone: bash test/erl/debug_fields.sh
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
out=$root/test/out/debug_fields
rm -rf "$out" && mkdir -p "$out/beams" "$out/traces"
ERL=${ERL:-erl}
status=0
ok() { echo "ok - debug NIF: $1"; }
not_ok() { echo "not ok - debug NIF: $1"; status=1; }

if make -C "$root" debug beams >"$out/make.log" 2>&1; then
    ok "make debug builds _build/debug/priv/beamtrace_nif.so"
else
    not_ok "make debug builds _build/debug/priv/beamtrace_nif.so"
    sed 's/^/# /' "$out/make.log" | tail -30
    exit 1
fi
erlc -Werror +debug_info -o "$out/beams" test/lib/*.erl test/erl/bmt_workload.erl \
    test/erl/bmt_tracepoints_SUITE.erl test/erl/bmt_fields_SUITE.erl ||
    { not_ok "compile the test modules"; exit 1; }

# node PRIVDIR ARGS...: an erl node whose beamtrace loads the NIF from PRIVDIR.
node() {
    local priv=$1
    shift
    BMT_ROOT=$root BMT_TEST_TMP="$out/traces" \
        timeout 600 "$ERL" -noshell -pa "$root/ebin" -pa "$out/beams" \
        -eval "application:set_env(beamtrace, priv_dir, \"$priv\", [{persistent, true}])" "$@"
}

# The real tree: every hand-written field matches the catalogue.
node "$root/_build/debug/priv" -run bmt_ct_main main "$out/ct_logs" "$out/beams" \
    bmt_tracepoints_SUITE bmt_fields_SUITE \
    </dev/null >"$out/tests.log" 2>&1
rc=$?
sed -n 's/^\(not \)\{0,1\}ok - /&debug NIF: /p' "$out/tests.log"
grep -q '^not ok' "$out/tests.log" && status=1
if [ "$rc" -ne 0 ]; then
    not_ok "the test node exited with status $rc"
    grep -v '^\(not \)\{0,1\}ok - ' "$out/tests.log" | sed 's/^/# /' | tail -20
fi
grep -q 'beamtrace (debug build)' "$out/tests.log" &&
    { not_ok "a field check fired"; grep 'beamtrace (debug build)' "$out/tests.log" | sed 's/^/# /'; }

# A scratch copy with process_spawn's first two fields swapped.
scratch=$out/scratch
bash tools/copy_tree.sh "$scratch"
python3 - "$scratch/c_src/core/catalogue.def" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
a = '    FIELD_STR(pid, ID, "the new process")\n'
b = '    FIELD_STR(parent, ID, "the spawning (traced) process")\n'
assert a + b in s, "process_spawn row not as expected"
open(p, "w").write(s.replace(a + b, b + a, 1))
PY
if make -C "$scratch" generate >"$out/scratch-make.log" 2>&1 &&
   make -C "$scratch" debug >>"$out/scratch-make.log" 2>&1; then
    ok "a scratch copy with process_spawn's pid and parent swapped builds"
else
    not_ok "a scratch copy with process_spawn's pid and parent swapped builds"
    sed 's/^/# /' "$out/scratch-make.log" | tail -30
    exit 1
fi
node "$scratch/_build/debug/priv" -eval '
    {ok, S} = beamtrace:start(#{dir => "'"$out/traces/swapped"'",
                                events => ["org_erlang_dyntrace:process_spawn"]}),
    erlang:trace(self(), true, [procs, {tracer, beamtrace, S}]),
    spawn(fun() -> ok end),
    erlang:trace(self(), false, [procs]),
    beamtrace:stop(S),
    io:format("no check fired~n"),
    halt().' </dev/null >"$out/swapped.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q 'decoding org_erlang_dyntrace:process_spawn: field 0 written as string pid, the catalogue says string parent' "$out/swapped.log"; then
    ok "the swapped row aborts the node at the first spawn, naming the field"
else
    not_ok "the swapped row aborts the node at the first spawn, naming the field (status $rc)"
    sed 's/^/# /' "$out/swapped.log" | tail -10
fi
rm -rf "$scratch"
exit $status
