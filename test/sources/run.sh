#!/usr/bin/env bash
# The session's own sources (beamtrace_sources: system monitor, samples,
# distribution) on a real, distributed node, with a peer node for node
# up/down. TAP lines (see test/run_all.sh). BMT_ONLY=test1,test2 runs only
# those tests.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/sources
rm -rf "$out" && mkdir -p "$out/beams" "$out/traces"
make -s -C "$root" priv/beamtrace_nif.so priv/beamtrace beams >"$out/make.log" 2>&1 || { cat "$out/make.log"; echo "not ok - sources: build"; exit 1; }
erlc -Werror -o "$out/beams" "$root"/test/sources/*.erl "$root"/test/erl/bmt_test_lib.erl \
    || { echo "not ok - sources: compile"; exit 1; }
export BMT_ROOT="$root"
export BMT_TEST_TMP="$out/traces"
export BMT_TRACES_LIST="$out/traces.list"
: >"$BMT_TRACES_LIST"
erl -noshell -sname "bmt_sources_$$" -pa "$root/ebin" -pa "$out/beams" \
    -run bmt_sources_tests main "$out" </dev/null
