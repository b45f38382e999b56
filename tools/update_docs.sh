#!/usr/bin/env bash
# Regenerates the tables in README.md that derive from the catalogue, between
# their <!-- NAME:begin --> and <!-- NAME:end --> markers. With --check, only
# reports (exit 1) when README.md is not current.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
readme=$root/README.md
new=$(mktemp)
trap 'rm -f "$new" "$new.table" "$new.usdt"' EXIT
"$root/priv/beamtrace" list --format markdown >"$new.table"
"$root/priv/beamtrace" list --usdt --format markdown >"$new.usdt"
awk -v table="$new.table" -v usdt="$new.usdt" '
    /<!-- tracepoints:begin -->/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
    /<!-- tracepoints:end -->/ { skip = 0 }
    /<!-- usdt:begin -->/ { print; while ((getline line < usdt) > 0) print line; skip = 1; next }
    /<!-- usdt:end -->/ { skip = 0 }
    !skip { print }
' "$readme" >"$new"
if [ "${1:-}" = --check ]; then
    if ! cmp -s "$new" "$readme"; then
        echo "README.md's tracepoint table is not current: run make docs" >&2
        exit 1
    fi
    exit 0
fi
cp "$new" "$readme"
