#!/usr/bin/env bash
# Prints one of the README's install lines, exactly as written there: the
# line after the marker <!-- install:build --> (what building and recording
# need) or <!-- install:test --> (what the tests need), with its
# continuation lines. .ci/run runs them; test/install/fresh_bookworm.sh
# measures them in a fresh bookworm; test/docs checks they are well formed.
#
# Usage: tools/install_lines.sh build|test [README]
set -euo pipefail
which=${1:?usage: tools/install_lines.sh build|test [README]}
readme=${2:-$(cd "$(dirname "$0")/.." && pwd)/README.md}
case $which in
build | test) ;;
*) echo "install_lines.sh: build or test, not '$which'" >&2; exit 2 ;;
esac
line=$(awk -v marker="<!-- install:$which -->" '
    $0 == marker { want = 1; next }
    want && /^apt-get / { on = 1 }
    on { print; if ($0 !~ /\\$/) exit }
    want && !on && /^<!--/ { exit }' "$readme")
if [ -z "$line" ]; then
    echo "install_lines.sh: $readme has no apt-get line after <!-- install:$which -->" >&2
    exit 1
fi
printf '%s\n' "$line"
