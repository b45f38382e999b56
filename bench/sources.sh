#!/usr/bin/env bash
# The session sources' overhead (`make bench` runs this; alone: bash
# bench/sources.sh): one mixed workload (spawns, messages, garbage) timed
# with no session, a session without sources, and a session with each
# source alone (system_monitor, samples, distribution, file_io, ets),
# rounds interleaved
# so each source is measured side by side with the baseline
# (bench/bmt_bench_sources.erl; SOURCES_ROUNDS, default 7). Prints figures
# and SUMMARY| lines; asserts nothing (STYLE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out/sources
ERL=${ERL:-erl}
rm -rf "$OUT" && mkdir -p "$OUT/beams" "$OUT/traces"
erlc -Werror -o "$OUT/beams" bench/bmt_bench_sources.erl
$ERL -noshell -sname "bmt_bench_src_$$" -pa ebin -pa "$OUT/beams" \
    -run bmt_bench_sources main "$OUT/traces" "${SOURCES_ROUNDS:-7}"
rm -rf "$OUT/traces"
