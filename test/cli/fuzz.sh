#!/usr/bin/env bash
# `make fuzz`: the reader's mutation fuzz at scale (FUZZ_RUNS, default
# 10 000), every trace compared with babeltrace2 and read by every reading
# subcommand of the sanitizer build, each also with BEAMTRACE_READER=generic
# (the same verdict and bytes). The CI run (test/cli/run.sh) does 400
# with view, stats and calls. Prints fuzz.py's summary; exit 1 on a crash, hang,
# sanitizer report, malformed error output, or a disagreement with
# babeltrace2 beyond the documented ones.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=test/out/fuzz
rm -rf "$out" && mkdir -p "$out"
CC=${CC:-cc}
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror"
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
CORE=$(make -s --no-print-directory print-CORE_SRC)
CLI_SRC=$(make -s --no-print-directory print-CLI_SRC)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
ASAN="$root/_build/asan/beamtrace"
make -s asan-cli || exit 1
# shellcheck disable=SC2086
$CC -std=gnu11 -O1 -g $WARN -Ic_src -Itest/lib -o "$out/make_corpus" test/cli/make_corpus.c \
    test/lib/trace_gen.c $CORE || exit 1
"$out/make_corpus" "$out/corpus" || exit 1
python3 test/cli/ctf_write.py priv/beamtrace "$out/compact" --layout compact --big-endian \
    --contexts --types --padding --id-base 20 --events 400 &&
python3 test/cli/ctf_write.py priv/beamtrace "$out/large" --layout large --packetized --events 400 &&
python3 test/cli/ctf_write.py priv/beamtrace "$out/large-types" --layout large --types \
    --id-base 65533 --events 300 || exit 1
python3 test/cli/fuzz.py --bt2 --vs-generic --max-disagree "${FUZZ_MAX_DISAGREE:-0}" --seed "${FUZZ_SEED:-77}" \
    --cmds "view,stats,calls --format json,sched,procs,gc,flame --folded,export -o /dev/null,report -o /dev/null" \
    "$ASAN" "$out" "${FUZZ_RUNS:-10000}" "$out/corpus/good/basic" "$out/corpus/good/drops" \
    "$out/corpus/good/overwrite" "$out/compact" "$out/large" "$out/large-types"
