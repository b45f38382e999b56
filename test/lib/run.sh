#!/usr/bin/env bash
# The test helpers themselves (group lib): each must fail when what it
# checks is false, and each is shown failing here. tap.sh's check and
# check_cmd, the C tests' tap.h, the Common Test hook that prints the
# Erlang groups' TAP lines (bmt_tap_cth) and their runner's filter
# (bmt_ct_main), run_all.sh's group time limit and filter errors, and the
# Makefile's variables against the ones the test scripts read. TAP lines
# (see test/run_all.sh); the helpers' own output under test is shown as
# "#" lines, never counted.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=$root/test/out/lib
rm -rf "$out" && mkdir -p "$out"
TAP_PREFIX="lib: "
. "$root/test/lib/tap.sh"

# Output of a helper under test, as comments.
quote() { sed 's/^/#   | /' <<<"$1"; }
# Runs shell text with tap.sh freshly sourced in a subshell; prints what it
# printed, then "rc=<status of the text> passed=N failed=N skipped=N".
tap_run() {
    (
        TAP_PREFIX=
        . "$root/test/lib/tap.sh"
        eval "$1"
        echo "rc=$? passed=$tap_passed failed=$tap_failures skipped=$tap_skipped"
    ) 2>&1
}

# ---- tap.sh ----
r=$(tap_run 'check_cmd inner sh -c "exit 3"')
check "check_cmd fails on a command's non-zero exit status (a check that must fail does)" \
    '[ "$r" = "$(printf "not ok - inner\nrc=1 passed=0 failed=1 skipped=0")" ]' || quote "$r"
r=$(tap_run 'check_cmd inner true')
check "check_cmd passes a command exiting 0" \
    '[ "$r" = "$(printf "ok - inner\nrc=0 passed=1 failed=0 skipped=0")" ]' || quote "$r"
r=$(tap_run 'check inner "[ 1 -eq 2 ]"')
check "check fails on false shell text" \
    '[ "$r" = "$(printf "not ok - inner\nrc=1 passed=0 failed=1 skipped=0")" ]' || quote "$r"
r=$(tap_run 'check inner "false || true"')
check "check passes on true shell text" \
    '[ "$r" = "$(printf "ok - inner\nrc=0 passed=1 failed=0 skipped=0")" ]' || quote "$r"
r=$(tap_run 'false; check inner '\''[ $? -eq 0 ]'\''')
check "check refuses text reading \$? (the status it would see is not the command's)" \
    'grep -qx "not ok - inner" <<<"$r" && grep -q "reads \$?" <<<"$r" && grep -qx "rc=1 passed=0 failed=1 skipped=0" <<<"$r"' ||
    quote "$r"
r=$(tap_run 'sh -c "exit 4"; check_cmd inner eval '\''[ $? -eq 0 ]'\''')
check "check_cmd eval refuses text reading \$? (once passed whatever the command did)" \
    'grep -qx "not ok - inner" <<<"$r" && grep -qx "rc=1 passed=0 failed=1 skipped=0" <<<"$r"' || quote "$r"
r=$(tap_run 'skip inner "the reason"')
check "skip writes a SKIP line, counted apart" \
    '[ "$r" = "$(printf "ok - inner # SKIP the reason\nrc=0 passed=0 failed=0 skipped=1")" ]' || quote "$r"
r=$(tap_run 'check inner "[ 1 -eq 2 ]" || show /dev/null; echo after')
check "a failed check's status reaches '|| show' and the script goes on" \
    'grep -qx "not ok - inner" <<<"$r" && grep -qx after <<<"$r"' || quote "$r"
# Every check in the groups keeps its command's status in a variable.
readers=$(grep -nE "(check|check_cmd) .*'(\[|test) \\\$\?" test/*/*.sh 2>/dev/null | grep -v '^test/lib/run.sh:')
check "no check in test/*/*.sh reads \$?" '[ -z "$readers" ]' || quote "$readers"

# ---- test/c/tap.h ----
cat >"$out/tap_h.c" <<'EOF'
#include "tap.h"
int main(void)
{
    CHECK(1 + 1 == 2);
    tap_group("a group that passes");
    CHECK(1 + 1 == 3); /* after the last group: must still fail the run */
    return tap_exit();
}
EOF
if ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -Itest/c -o "$out/tap_h" "$out/tap_h.c" 2>"$out/tap_h.cc"; then
    r=$("$out/tap_h"; echo "rc=$?")
    check "tap.h: a check failing after the last group fails the run" \
        'grep -q "^not ok - checks after the last group" <<<"$r" && grep -qx "rc=1" <<<"$r"' || quote "$r"
else
    not_ok "tap.h: a check failing after the last group fails the run (does not compile)"
    show "$out/tap_h.cc"
fi

# ---- Common Test: the TAP hook and the runner's filter ----
erl=${ERL:-erl}
mkdir -p "$out/beams"
if erlc -Werror +debug_info -o "$out/beams" test/lib/*.erl test/lib/selftest/*.erl >"$out/erlc.log" 2>&1; then
    # ct_main FILTER SUITE...: the runner's output (TAP and error lines
    # only) then "rc=N".
    ct_main() {
        local filter=$1
        shift
        rm -rf "$out/ct_logs" && mkdir -p "$out/ct_logs"
        BMT_TEST_FILTER=$filter "$erl" -noshell -pa "$out/beams" -run bmt_ct_main main \
            "$out/ct_logs" "$out/beams" "$@" </dev/null >"$out/ct.console" 2>&1
        local rc=$?
        grep -E '^(ok - |not ok - |error: )' "$out/ct.console"
        echo "rc=$rc"
    }
    r=$(ct_main "" bmt_selftest_SUITE bmt_selftest_bad_SUITE)
    want='ok - bmt_selftest_SUITE:passes
not ok - bmt_selftest_SUITE:fails
ok - bmt_selftest_SUITE:skips # SKIP the case'"'"'s reason
not ok - bmt_selftest_SUITE:hangs
not ok - bmt_selftest_SUITE:crashes
ok - bmt_selftest_SUITE:skipped_group:in_group # SKIP the group'"'"'s reason
not ok - bmt_selftest_bad_SUITE:init_per_suite'
    check "CT hook: a TAP line per case: passed, failed, skipped, over its time limit, killed, skipped by its group; a failed init_per_suite" \
        '[ "$(grep -v "never_runs\|^rc=" <<<"$r")" = "$want" ]' || quote "$r"
    check "CT hook: the cases a failed init_per_suite takes down are skipped saying so, and the run fails" \
        'grep -q "^ok - bmt_selftest_bad_SUITE:never_runs # SKIP bmt_selftest_bad_SUITE:init_per_suite failed" <<<"$r" &&
         grep -qx "rc=1" <<<"$r"' || quote "$r"
    check "CT hook: a case over its time limit says timetrap_timeout" \
        'grep -A1 "^not ok - bmt_selftest_SUITE:hangs" "$out/ct.console" | grep -q timetrap_timeout' ||
        show "$out/ct.console"
    r=$(ct_main "" bmt_selftest_unlisted_SUITE)
    check "a test all/0 does not list, or in the old 0-arity form, fails the run (not silently left out)" \
        'grep -q "^not ok - bmt_selftest_unlisted_SUITE:forgotten_test/1 is a test that is not run" <<<"$r" &&
         grep -q "^not ok - bmt_selftest_unlisted_SUITE:old_style_test/0 is a test that is not run" <<<"$r" &&
         grep -qx "ok - bmt_selftest_unlisted_SUITE:listed_test" <<<"$r" && grep -qx rc=1 <<<"$r"' || quote "$r"
    r=$(ct_main bmt_selftest_SUITE:passes bmt_selftest_SUITE bmt_selftest_bad_SUITE)
    check "filter Suite:Case runs that case alone" \
        '[ "$r" = "$(printf "ok - bmt_selftest_SUITE:passes\nrc=0")" ]' || quote "$r"
    r=$(ct_main "bmt_selftest_SUITE:skipped_group:in_group, bmt_selftest_SUITE:skips" bmt_selftest_SUITE)
    check "filters Suite:Group:Case and Suite:Case together" \
        '[ "$(grep -c "# SKIP" <<<"$r")" = 2 ] && [ "$(wc -l <<<"$r")" = 3 ] && grep -qx rc=0 <<<"$r"' || quote "$r"
    r=$(ct_main bmt_selftest_SUITE:nosuch bmt_selftest_SUITE)
    check "a filter matching no case: one error line, exit 2, nothing run" \
        '[ "$(wc -l <<<"$r")" = 2 ] && grep -q "^error: T=bmt_selftest_SUITE:nosuch matches no test" <<<"$r" &&
         grep -qx rc=2 <<<"$r"' || quote "$r"
    r=$(ct_main nosuch_SUITE bmt_selftest_SUITE)
    check "a filter naming no suite: one error line, exit 2" \
        '[ "$(wc -l <<<"$r")" = 2 ] && grep -q "^error: T=nosuch_SUITE matches no test" <<<"$r" && grep -qx rc=2 <<<"$r"' ||
        quote "$r"
else
    not_ok "test/lib and its fixtures compile"
    show "$out/erlc.log"
fi

# ---- run_all.sh: time limits and filters ----
# A copy of run_all.sh in a tree of its own, whose group c hangs and whose
# group cli passes one test.
tree=$out/tree
mkdir -p "$tree/test/c" "$tree/test/cli"
cp test/run_all.sh "$tree/test/"
marker="bmt_lib_hang_$$"
printf '#!/usr/bin/env bash\necho "ok - started"\nexec -a %s sleep 600\n' "$marker" >"$tree/test/c/run.sh"
printf '#!/usr/bin/env bash\necho "ok - fake cli test"\n' >"$tree/test/cli/run.sh"
chmod +x "$tree/test/c/run.sh" "$tree/test/cli/run.sh"
r=$(BMT_GROUP_TIMEOUT=3 bash "$tree/test/run_all.sh" c cli 2>&1; echo "rc=$?")
check "a group over its time limit is killed, reported, and the next group runs" \
    'grep -qx "not ok - group c timed out after 3 s" <<<"$r" && grep -qx "ok - fake cli test" <<<"$r" &&
     grep -qx "2 passed, 1 failed, 0 skipped" <<<"$r" && grep -qx "rc=1" <<<"$r"' || quote "$r"
check "the timed-out group's processes are gone" '! pgrep -f "$marker" >/dev/null' ||
    pkill -f "$marker"
r=$(BMT_TEST_FILTER=x bash test/run_all.sh c cli 2>&1; echo "rc=$?")
check "a filter with more than one group: one error line, exit 2" \
    '[ "$(wc -l <<<"$r")" = 2 ] && grep -q "^error: T=x names tests of one group" <<<"$r" && grep -qx rc=2 <<<"$r"' ||
    quote "$r"
r=$(BMT_TEST_FILTER=x bash test/run_all.sh cli 2>&1; echo "rc=$?")
check "a filter for a group without named tests: one error line, exit 2" \
    '[ "$(wc -l <<<"$r")" = 2 ] && grep -q "^error: group cli has no tests to run by name" <<<"$r" && grep -qx rc=2 <<<"$r"' ||
    quote "$r"
r=$(bash test/run_all.sh nosuchgroup 2>&1; echo "rc=$?")
check "an unknown group: one error line, exit 2" \
    '[ "$(wc -l <<<"$r")" = 2 ] && grep -q "^error: no test group .nosuchgroup." <<<"$r" && grep -qx rc=2 <<<"$r"' ||
    quote "$r"

# ---- the Makefile and the scripts' variables ----
# The scripts read their settings from the environment; a Makefile variable
# of the same name would replace the user's value in every recipe's
# environment (the Makefile's MODULES once made `MODULES=... make test`
# run nothing). The names the scripts read, against the variables the
# Makefile defines.
# (ERL and CC are read by both on purpose: `CC=clang make test` means one
# compiler for both.)
read_vars=$(grep -ohE '\b(BMT_[A-Z_]+|TEST_GROUPS|OTP_GROUPS|OTP_SUITES|FUZZ_RUNS)\b' \
                test/*.sh test/*/*.sh test/*/*.py test/*/*.erl 2>/dev/null | sort -u)
make_vars=$(make -pn -f Makefile __bmt_no_such_target__ 2>/dev/null |
            awk '/^# makefile/ { getline; if ($2 ~ /^:?=$/ || $2 == "?=" || $2 == "+=") print $1 }' | sort -u)
clash=$(comm -12 <(echo "$read_vars") <(echo "$make_vars"))
check "the Makefile defines none of the variables the test scripts read ($(echo $read_vars | wc -w) names)" \
    '[ -n "$read_vars" ] && [ -n "$make_vars" ] && [ -z "$clash" ]' || quote "$clash"
r=$(make --no-print-directory test-c T=no_such_test 2>&1; echo "rc=$?")
check "make test-c T=no_such_test: exit 2, one error line" \
    '[ "$(grep -c "^error: " <<<"$r")" = 1 ] && ! grep -qE "^(ok|not ok) - " <<<"$r" &&
     grep -qE "^make(\[[0-9]+\])?: \*\*\* .*Error 2" <<<"$r"' || quote "$r"

exit $((tap_failures > 0))
