#!/usr/bin/env bash
# The trace group: beamtrace:trace/2 in a node (bmt_trace_SUITE) and
# `beamtrace record` against real target nodes that have nothing of
# beamtrace on their code path (bmt_record_SUITE: this node drives, starts
# the targets, runs the command, and checks each target afterwards), under
# Common Test (test/lib/ct_group.sh; TAP lines, see test/run_all.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/trace
mkdir -p "$out"
if ! make -C "$root" >"$out/make.log" 2>&1; then
    sed 's/^/# /' "$out/make.log"
    echo "not ok - trace: build beamtrace (make)"
    exit 1
fi
. "$root/test/lib/ct_group.sh"
ct_group trace
