# TAP helpers for the shell test groups (test/run_all.sh counts their
# lines), sourced by each group's script after setting TAP_PREFIX (the
# group's name and ": ", or empty).
#
#   check NAME 'SHELL TEXT'    evaluated; ok or not ok
#   check_cmd NAME CMD ARGS... run as given; ok or not ok
# Both return 1 when the check fails, so `check ... || show LOG` shows why.
# tap_passed, tap_failures and tap_skipped count the lines written.

TAP_PREFIX=${TAP_PREFIX-}
tap_passed=0 tap_failures=0 tap_skipped=0

ok() { echo "ok - $TAP_PREFIX$1"; tap_passed=$((tap_passed + 1)); }
not_ok() { echo "not ok - $TAP_PREFIX$1"; tap_failures=$((tap_failures + 1)); }
skip() { echo "ok - $TAP_PREFIX$1 # SKIP $2"; tap_skipped=$((tap_skipped + 1)); }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; return 1; fi; }
check_cmd() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else not_ok "$name"; return 1; fi
}
# The last lines (25, or $2) of file $1 as TAP comments.
show() { sed 's/^/#   /' "$1" | tail -"${2:-25}"; }
