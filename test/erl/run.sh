#!/usr/bin/env bash
# Erlang test group: beamtrace on a real node, as Common Test suites
# (test/erl/*_SUITE.erl; test/lib/ct_group.sh runs them and prints TAP
# lines, see test/run_all.sh). Builds the NIF, the command (the suites read
# their traces back with it too) and the beams first.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/erl
mkdir -p "$out"
if ! make -C "$root" priv/beamtrace_nif.so priv/beamtrace beams >"$out/make.log" 2>&1; then
    sed 's/^/# /' "$out/make.log"
    echo "not ok - erl: build beamtrace (make)"
    exit 1
fi
. "$root/test/lib/ct_group.sh"
ct_group erl
status=$?
# The decoder's field checks in the debug build (make debug), unless some
# tests were picked by name.
if [ -z "${BMT_TEST_FILTER:-}" ]; then
    env -u BMT_TEST_FILTER bash "$root/test/erl/debug_fields.sh" || status=1
fi
exit $status
