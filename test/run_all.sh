#!/usr/bin/env bash
# Runs test groups and prints the closing line "N passed, N failed, N skipped".
#
#   bash test/run_all.sh [GROUP...]     (make test, make test-GROUP)
#
# A group is an executable test/<group>/run.sh. It prints one line per test,
# TAP style: "ok - name", "ok - name # SKIP reason" or "not ok - name", plus
# diagnostics on lines starting with "#", and exits non-zero if a test
# failed. The Erlang groups are Common Test suites whose TAP lines come from
# test/lib/bmt_tap_cth.erl (test/lib/ct_group.sh). Without arguments every
# group runs, in the order below (TEST_GROUPS="c erl" also picks some).
#
# Every group has a time limit (the table below; BMT_GROUP_TIMEOUT=S sets
# one for all): a group still running then is killed with the processes it
# started, reported as "not ok - group G timed out after S s", and the next
# group runs.
#
# BMT_TEST_FILTER (make test-GROUP T=...) runs only the named tests of one
# group; names as its TAP lines print them, several separated by commas. A
# group without named tests, or a filter that matches nothing, is an error:
# one line, exit status 2.
set -u
cd "$(dirname "$0")/.."

# group   time limit (s): about three times the group's time on an idle
# 2-core machine, as the suite shares it with other builds.
limits="
lib 300
c 1200
cli 1800
erl 1500
probes 600
sources 900
e2e 900
lttng 1200
relayd 1200
analyses 2400
usdt 900
trace 1800
flight 1200
cluster 1200
build 1500
deps 1800
docs 600
install 900
"
all_groups=$(awk 'NF == 2 { print $1 }' <<<"$limits" | tr '\n' ' ')
# The groups whose tests can be run by name (T=...): the Common Test
# groups, c (its binaries) and usdt (its scripts).
named="c erl probes sources lttng usdt trace flight cluster"

if [ $# -gt 0 ]; then
    groups="$*"
else
    groups=${TEST_GROUPS:-$all_groups}
fi
for g in $groups; do
    if ! grep -qw -- "$g" <<<"$all_groups"; then
        echo "error: no test group '$g' (groups: $all_groups)" >&2
        exit 2
    fi
done
if [ -n "${BMT_TEST_FILTER:-}" ]; then
    set -- $groups
    if [ $# -ne 1 ]; then
        echo "error: T=$BMT_TEST_FILTER names tests of one group: make test-GROUP T=... (groups: $all_groups)" >&2
        exit 2
    fi
    if ! grep -qw -- "$1" <<<"$named"; then
        echo "error: group $1 has no tests to run by name: run it whole (make test-$1)" >&2
        exit 2
    fi
fi

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
    limit=${BMT_GROUP_TIMEOUT:-$(awk -v g="$g" '$1 == g { print $2 }' <<<"$limits")}
    echo "# group $g (time limit ${limit} s)"
    log="test/out/$g.log"
    t0=$(date +%s)
    # timeout runs the group in a process group of its own and signals all
    # of it: the nodes and tools the group started go with it.
    timeout --kill-after=30 "$limit" "$script" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    p=$(grep -cE '^ok - ' "$log" | tr -d ' ')
    s=$(grep -cE '^ok - .*# SKIP' "$log" | tr -d ' ')
    f=$(grep -cE '^not ok - ' "$log" | tr -d ' ')
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "not ok - group $g timed out after $limit s" | tee -a "$log"
        f=$((f + 1))
    elif [ -n "${BMT_TEST_FILTER:-}" ] && [ "$rc" -eq 2 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        # The group said why the filter matched nothing.
        exit 2
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "not ok - group $g exited with status $rc" | tee -a "$log"
        f=1
    fi
    echo "# group $g: $((p - s)) passed, $f failed, $s skipped in $(($(date +%s) - t0)) s"
    passed=$((passed + p - s)); skipped=$((skipped + s)); failed=$((failed + f))
done
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
