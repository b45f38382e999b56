# Runs a test group whose tests are Common Test suites (test/GROUP/*_SUITE.erl),
# sourced by that group's run.sh:
#
#   ct_group GROUP [ERL_ARGS...]
#
# Compiles test/lib/*.erl and test/GROUP/*.erl (warnings are errors) into
# test/out/GROUP/beams, then runs every suite of the group, in name order,
# in one `erl -noshell` node (ERL_ARGS added to its command line) through
# test/lib/bmt_ct_main.erl. The TAP lines (test/lib/bmt_tap_cth.erl) and
# "#" diagnostics go to standard output; Common Test's own console output
# to test/out/GROUP/console.log, its HTML logs to test/out/GROUP/ct_logs/.
# BMT_TEST_FILTER (the Makefile's T=...) picks suites, groups or cases
# (see bmt_ct_main); one that matches nothing ends the group with one
# "error:" line and status 2. Returns the node's exit status.
#
# The suites find the project through BMT_ROOT and write under BMT_TEST_TMP
# (test/out/GROUP/tmp), both set here; `rebar3 ct` runs the same suites
# without them (test/lib/bmt_test_lib.erl).
ct_group() {
    local group=$1
    shift
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    local out=$root/test/out/$group
    local erl=${ERL:-erl}
    rm -rf "$out/beams" "$out/tmp" "$out/ct_logs"
    mkdir -p "$out/beams" "$out/tmp" "$out/ct_logs"
    # shellcheck disable=SC2046
    if ! erlc -Werror +debug_info -o "$out/beams" "$root"/test/lib/*.erl "$root/test/$group"/*.erl \
            >"$out/compile.log" 2>&1; then
        sed 's/^/# /' "$out/compile.log"
        echo "not ok - $group: compile the test modules"
        return 1
    fi
    local suites=() s
    for s in "$root/test/$group"/*_SUITE.erl; do
        s=${s##*/}
        suites+=("${s%.erl}")
    done
    echo "# $group: ${suites[*]}${BMT_TEST_FILTER:+ (T=$BMT_TEST_FILTER)}"
    BMT_ROOT=$root BMT_TEST_TMP=$out/tmp ERL_CRASH_DUMP=$out/erl_crash.dump \
        "$erl" -noshell "$@" -pa "$root/ebin" -pa "$out/beams" \
        -run bmt_ct_main main "$out/ct_logs" "$out/beams" "${suites[@]}" \
        </dev/null 2>&1 | tee "$out/console.log" | grep --line-buffered -E '^(ok - |not ok - |#|error: )'
    local rc=${PIPESTATUS[0]}
    [ "$rc" -ne 1 ] || echo "# $group: Common Test console output in $out/console.log"
    return "$rc"
}
