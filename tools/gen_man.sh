#!/usr/bin/env bash
# Man pages made from the command's --help by help2man: beamtrace(1), and
# beamtrace-COMMAND(1) for every command `beamtrace help --format json`
# lists (the NAME line is each command's one-line summary). Where they are
# installed is `make install`'s business; this only writes them.
#
#   bash tools/gen_man.sh OUTDIR [BEAMTRACE]     (BEAMTRACE: priv/beamtrace)
set -eu
out=${1:?usage: tools/gen_man.sh OUTDIR [BEAMTRACE]}
bt=${2:-priv/beamtrace}
command -v help2man >/dev/null || { echo "gen_man.sh: help2man is not installed (apt-get install help2man)" >&2; exit 2; }
[ -x "$bt" ] || { echo "gen_man.sh: no $bt (run make)" >&2; exit 2; }
mkdir -p "$out"
help2man -N -n "dynamic tracing for the Erlang VM" -o "$out/beamtrace.1" "$bt"
"$bt" help --format json | python3 -c '
import json, sys
for c in json.load(sys.stdin)["commands"]:
    print(c["name"] + "\t" + c["summary"])' |
while IFS=$'\t' read -r name summary; do
    help2man -N -n "$summary" -o "$out/beamtrace-$name.1" "$bt $name"
done
ls "$out"
