#!/usr/bin/env bash
# Regenerates the parts of the docs that derive from the command, between
# their <!-- NAME:begin --> and <!-- NAME:end --> markers:
#
#   docs/tracepoints.md  tracepoints     `beamtrace list --format markdown`
#                                        (the catalogue, c_src/core/catalogue.def)
#   docs/sinks.md        usdt            `beamtrace list --usdt --format markdown`
#                                        (c_src/core/usdt.def)
#   docs/cli.md          cli:commands    the commands of `beamtrace --help`
#                        cli:CMD         `beamtrace CMD --help`: usage, text,
#                                        options table (tools/help_markdown.awk)
#
# Every block must be used exactly where a marker asks for it: a command
# without its cli:CMD section, or a marker naming no block (a command that
# went away), is an error naming the fix.
#
# Usage: tools/update_docs.sh [--check]
#   --check  change nothing; exit 1 naming the files that are not current
# BEAMTRACE=path/to/beamtrace overrides the command read (default priv/beamtrace).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BEAMTRACE:-$root/priv/beamtrace}
files="docs/tracepoints.md docs/sinks.md docs/cli.md"
. "$root/tools/help_lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
blocks=$tmp/blocks
mkdir -p "$blocks" "$tmp/new/docs"

"$bin" list --format markdown >"$blocks/tracepoints"
"$bin" list --usdt --format markdown >"$blocks/usdt"
help_commands "$bin" >"$tmp/commands"
[ -s "$tmp/commands" ] || { echo "update_docs: '$bin --help' lists no commands" >&2; exit 1; }
{
    echo "| command | what it does |"
    echo "|---|---|"
    while IFS=$'\t' read -r name summary; do
        printf '| [`beamtrace %s`](#beamtrace-%s) | %s |\n' "$name" "$name" \
            "$(printf '%s' "$summary" | sed -e 's/|/\\|/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g')"
    done <"$tmp/commands"
} >"$blocks/cli:commands"
while IFS=$'\t' read -r name _; do
    help_parts "$bin" "$name" | awk -F '\t' -f "$root/tools/help_markdown.awk" >"$blocks/cli:$name"
done <"$tmp/commands"

status=0
: >"$tmp/used"
for f in $files; do
    [ -f "$root/$f" ] || { echo "update_docs: $f is missing" >&2; exit 1; }
    awk -v blocks="$blocks" -v used="$tmp/used" -v file="$f" '
        match($0, /^<!-- [a-z0-9:_-]+:begin -->$/) {
            name = substr($0, 6, length($0) - 15)
            path = blocks "/" name
            print
            if ((getline line < path) <= 0) {
                printf "update_docs: %s has a marker <!-- %s:begin --> that nothing generates (a command that went away? remove its section)\n", file, name > "/dev/stderr"
                bad = 1
            } else {
                print line
                while ((getline line < path) > 0) print line
                close(path)
                # A blank line ends a table before the end marker.
                if (line != "") print ""
            }
            print name >> used
            skip = name
            next
        }
        skip != "" && $0 == "<!-- " skip ":end -->" { skip = "" }
        skip == "" { print }
        END {
            if (skip != "") {
                printf "update_docs: %s: <!-- %s:begin --> has no <!-- %s:end -->\n", file, skip, skip > "/dev/stderr"
                bad = 1
            }
            exit bad
        }' "$root/$f" >"$tmp/new/$f" || status=1
done
for b in "$blocks"/*; do
    name=${b##*/}
    if ! grep -qxF "$name" "$tmp/used"; then
        echo "update_docs: nothing shows the generated block '$name': add <!-- $name:begin --> and <!-- $name:end --> to one of $files" >&2
        status=1
    fi
done
[ "$status" -eq 0 ] || exit 1

stale=""
for f in $files; do
    cmp -s "$tmp/new/$f" "$root/$f" || stale="$stale $f"
done
if [ "${1:-}" = --check ]; then
    if [ -n "$stale" ]; then
        echo "not current:$stale (generated from the command's catalogue and --help): run make docs and commit" >&2
        exit 1
    fi
    exit 0
fi
for f in $stale; do
    cp "$tmp/new/$f" "$root/$f"
    echo "  GEN     $f"
done
