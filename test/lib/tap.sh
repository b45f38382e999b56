# TAP helpers for the shell test groups (test/run_all.sh counts their
# lines), sourced by each group's script after setting TAP_PREFIX (the
# group's name and ": ", or empty).
#
#   check NAME 'SHELL TEXT'    evaluated; ok or not ok
#   check_cmd NAME CMD ARGS... run as given; ok or not ok
# Both return 1 when the check fails, so `check ... || show LOG` shows why.
# tap_passed, tap_failures and tap_skipped count the lines written.
#
# A check never reads `$?`: inside the helper it is the status of the
# helper's own first statement, not of the command before the check (five
# checks once passed whatever their command returned). Keep the status in
# a variable first:
#     cmd ...; rc=$?
#     check "cmd exits 0" '[ "$rc" -eq 0 ] && ...'
# A check whose text starts with `[ $?` fails, saying so.
# test/lib/run.sh tests these helpers, each with a check that must fail.

TAP_PREFIX=${TAP_PREFIX-}
tap_passed=0 tap_failures=0 tap_skipped=0

ok() { echo "ok - $TAP_PREFIX$1"; tap_passed=$((tap_passed + 1)); }
not_ok() { echo "not ok - $TAP_PREFIX$1"; tap_failures=$((tap_failures + 1)); }
skip() { echo "ok - $TAP_PREFIX$1 # SKIP $2"; tap_skipped=$((tap_skipped + 1)); }
# Whether the text of a check reads `$?` first.
tap_reads_status() {
    case "$1" in
    '[ $?'* | 'test $?'*) return 0 ;;
    esac
    return 1
}
check() {
    if tap_reads_status "$2"; then
        not_ok "$1"
        echo '#   the check reads $? (the status of what ran last in the helper): keep the command'"'"'s status in a variable'
        return 1
    fi
    if eval "$2"; then ok "$1"; else not_ok "$1"; return 1; fi
}
check_cmd() {
    local name=$1
    shift
    if [ "${1-}" = eval ] && tap_reads_status "${2-}"; then
        not_ok "$name"
        echo '#   the check reads $? (the status of what ran last in the helper): keep the command'"'"'s status in a variable'
        return 1
    fi
    if "$@"; then ok "$name"; else not_ok "$name"; return 1; fi
}
# The last lines (25, or $2) of file $1 as TAP comments.
show() { sed 's/^/#   /' "$1" | tail -"${2:-25}"; }
