#!/usr/bin/env bash
# Runs every test group and prints the closing line "N passed, N failed".
#
# A group is an executable test/<group>/run.sh. It prints one line per test,
# TAP style: "ok - name", "ok - name # SKIP reason" or "not ok - name", plus
# any diagnostics on other lines, and exits non-zero if a test failed.
# Groups run in the order below; set TEST_GROUPS="c erl" to run a subset.
set -u
cd "$(dirname "$0")/.."
groups=${TEST_GROUPS:-"c cli erl probes sources e2e lttng analyses usdt trace flight cluster build deps docs install"}
mkdir -p test/out
# The VM the groups run on (sid moves: a result names its OTP and erts).
${ERL:-erl} -noshell -eval '
    R = erlang:system_info(otp_release),
    V = case file:read_file(filename:join([code:root_dir(), "releases", R, "OTP_VERSION"])) of
            {ok, B} -> string:trim(B);
            _ -> R
        end,
    io:format("# OTP ~s (otp_release ~s, erts ~s) from ~s~n",
              [V, R, erlang:system_info(version), code:root_dir()]),
    halt().' 2>/dev/null || echo "# no erl on PATH"
passed=0 failed=0 skipped=0
for g in $groups; do
    script="test/$g/run.sh"
    [ -x "$script" ] || { echo "not ok - group $g has no runnable $script"; failed=$((failed + 1)); continue; }
    echo "# group $g"
    log="test/out/$g.log"
    "$script" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    p=$(grep -cE '^ok - ' "$log" | tr -d ' ')
    s=$(grep -cE '^ok - .*# SKIP' "$log" | tr -d ' ')
    f=$(grep -cE '^not ok - ' "$log" | tr -d ' ')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "not ok - group $g exited with status $rc"
        f=1
    fi
    passed=$((passed + p - s)); skipped=$((skipped + s)); failed=$((failed + f))
done
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
