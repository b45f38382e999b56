#!/usr/bin/env bash
# User probes, user tags, user-probe fuzzing and the dyntrace compatibility
# module on a real node. TAP lines (see test/run_all.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/probes
rm -rf "$out" && mkdir -p "$out/beams"
make -s -C "$root" >/dev/null || { echo "not ok - probes: build"; exit 1; }
erlc -Werror -o "$out/beams" "$root"/test/probes/*.erl || { echo "not ok - probes: compile"; exit 1; }
erl -noshell -pa "$root/ebin" -pa "$out/beams" -run bmt_probes_tests main "$out"
