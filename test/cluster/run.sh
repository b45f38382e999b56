#!/usr/bin/env bash
# The cluster group: recording several nodes at once (beamtrace record
# --nodes / --cluster, beamtrace:trace/2 with nodes) against real nodes on
# loopback that have nothing of beamtrace on their code path; the links
# between their messages checked by the reference matcher (bmt_links).
# test/cluster/bmt_cluster_SUITE.erl under Common Test (test/lib/ct_group.sh;
# TAP lines, see test/run_all.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/cluster
mkdir -p "$out"
if ! make -C "$root" >"$out/make.log" 2>&1; then
    sed 's/^/# /' "$out/make.log"
    echo "not ok - cluster: build beamtrace (make)"
    exit 1
fi
. "$root/test/lib/ct_group.sh"
ct_group cluster
