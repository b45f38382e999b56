#!/usr/bin/env bash
# User probes, user tags, user-probe fuzzing and the dyntrace compatibility
# module on a real node: test/probes/bmt_probes_SUITE.erl under Common Test
# (test/lib/ct_group.sh; TAP lines, see test/run_all.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/probes
mkdir -p "$out"
make -s -C "$root" >"$out/make.log" 2>&1 || { sed 's/^/# /' "$out/make.log"; echo "not ok - probes: build"; exit 1; }
. "$root/test/lib/ct_group.sh"
ct_group probes
