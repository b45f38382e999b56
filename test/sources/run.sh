#!/usr/bin/env bash
# The session's own sources (beamtrace_sources: system monitor, samples,
# distribution, file and ETS operations) on a real, distributed node, with
# a peer node for node up/down: test/sources/bmt_sources_SUITE.erl under
# Common Test (test/lib/ct_group.sh; TAP lines, see test/run_all.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/sources
mkdir -p "$out"
make -s -C "$root" priv/beamtrace_nif.so priv/beamtrace beams >"$out/make.log" 2>&1 ||
    { sed 's/^/# /' "$out/make.log"; echo "not ok - sources: build"; exit 1; }
. "$root/test/lib/ct_group.sh"
ct_group sources
