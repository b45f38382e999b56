#!/usr/bin/env bash
# The flight group: the flight recorder under Common Test
# (test/lib/ct_group.sh; TAP lines, see test/run_all.sh).
#   bmt_flight_SUITE         beamtrace:flight/2 in this node, against the
#                            bmt_kv workload: every trigger kind, the
#                            capture's window and metadata, the incomplete
#                            marker after SIGKILL
#   bmt_sample_SUITE         sampling, on_max_rate sample, scaled counts
#   bmt_flight_remote_SUITE  the flight recorder driven from outside
#                            (detached, flights, fetch, stop, a restart,
#                            the Riak-like run: BMT_RIAK_SECONDS, 40 by
#                            default, 600 for issue 18's full run)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/flight
mkdir -p "$out"
if ! make -C "$root" >"$out/make.log" 2>&1; then
    sed 's/^/# /' "$out/make.log"
    echo "not ok - flight: build beamtrace (make)"
    exit 1
fi
. "$root/test/lib/ct_group.sh"
ct_group flight
