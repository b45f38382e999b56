#!/usr/bin/env bash
# C tests of the pure C core: builds each test with sanitizers into
# test/out/c/, runs it, and prints TAP lines ("ok - name" / "not ok - name",
# protocol in test/run_all.sh). Exits non-zero if anything failed.
#
#   test_ring    ring vs. a FIFO reference model            ASan+UBSan
#   test_ctf     golden bytes, babeltrace2, catalogue        ASan+UBSan
#   test_faults  failing malloc (--wrap), I/O errors         ASan+UBSan (leak check)
#   stress_ring  N writers, one consumer                     TSan, and ASan+UBSan
#   stress_recorder  the recorder's protocol with writer threads: stop,
#                idle flush, caps, snapshots, exact counts    TSan, and ASan+UBSan
#   layers       tools/check_layers.py: the pure C folders never reach the
#                VM, headers pair with their .c, no include/use cycle
#
# Each binary prints its own TAP lines; this script adds one line per build
# and one per run (a sanitizer report makes the run exit non-zero).
# BMT_TEST_FILTER (make test-c T=stress_recorder_tsan,test_ring) builds and
# runs only the binaries named; a name that is not one is an error.
# Regenerate golden files: test/out/c/test_ctf test/c/golden --regen
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=test/out/c
mkdir -p "$out"

CC=${CC:-cc}
CFLAGS="-std=gnu11 -g -O1 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror -Ic_src"
ASAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# -Wno-tsan: TSan does not model atomic_thread_fence and GCC warns where one
# is compiled; the recorder uses fences only where membarrier is missing
# (fence.h), and the race it guards is still checked on the path TSan runs.
TSAN="-fsanitize=thread -Wno-tsan"
CORE=$(make -s print-CORE_SRC)
RECORDER=$(make -s print-RECORDER_SRC)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=23}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66}

all="test_ring test_ctf test_faults stress_ring_tsan stress_ring_asan stress_recorder_tsan stress_recorder_asan"
want=$all
if [ -n "${BMT_TEST_FILTER:-}" ]; then
    want=${BMT_TEST_FILTER//,/ }
    for t in $want; do
        if ! grep -qw -- "$t" <<<"$all"; then
            echo "error: T=$BMT_TEST_FILTER: no test $t in group c (its tests: $all)"
            exit 2
        fi
    done
fi
wanted() { grep -qw -- "$1" <<<"$want"; }

failed=0
if python3 tools/check_layers.py >"$out/layers.log" 2>&1; then
    echo "ok - layers: core/ recorder/ sinks/ pure C, headers paired, no include/use cycle ($(tail -1 "$out/layers.log" | sed 's/^check_layers: //'))"
else
    echo "not ok - layers: tools/check_layers.py"
    sed 's/^/# /' "$out/layers.log"
    failed=1
fi
tmp=$(mktemp -d /tmp/bmt-test-c-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# build NAME SOURCE FLAGS...: compiles SOURCE and the core (and the
# recorder for stress_recorder*) into $out/NAME.
build() {
    local name=$1 src=$2 extra=
    shift 2
    wanted "$name" || return 0
    case $name in stress_recorder*) extra=$RECORDER ;; esac
    # shellcheck disable=SC2086
    if $CC $CFLAGS "$@" -o "$out/$name" "$src" $CORE $extra -lpthread >"$out/$name.build.log" 2>&1; then
        echo "ok - build $name"
        return 0
    fi
    echo "not ok - build $name"
    sed 's/^/# /' "$out/$name.build.log"
    failed=1
    return 1
}

# run NAME ARGS...: runs $out/NAME; its TAP lines pass through, its exit
# status becomes one more line. Each binary has BIN_LIMIT seconds (about
# ten times its time on a loaded machine); the tests wait for events, never
# for a time, so only a hang gets near it.
BIN_LIMIT=600
run() {
    local name=$1
    shift
    local status
    [ -x "$out/$name" ] || return 0 # its build said "not ok"
    timeout --kill-after=10 "$BIN_LIMIT" "$out/$name" "$@" 2>"$out/$name.stderr"
    status=$?
    if [ "$status" -eq 0 ]; then
        echo "ok - $name exits cleanly (no sanitizer report)"
    elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "not ok - $name timed out after $BIN_LIMIT s"
        failed=1
    else
        echo "not ok - $name exited with status $status"
        sed 's/^/# /' "$out/$name.stderr" | head -60
        failed=1
    fi
}

# Build everything first (two at a time on small machines), then run; a
# binary left from an earlier run never stands in for one that failed to
# build.
for t in $all; do rm -f "$out/$t"; done
# shellcheck disable=SC2086
{
    build test_ring test/c/test_ring.c $ASAN &
    build test_ctf test/c/test_ctf.c $ASAN &
    wait
    build test_faults test/c/test_faults.c $ASAN -Wl,--wrap=malloc -Wl,--wrap=pwrite &
    build stress_ring_tsan test/c/stress_ring.c $TSAN &
    wait
    build stress_ring_asan test/c/stress_ring.c $ASAN &
    build stress_recorder_tsan test/c/stress_recorder.c $TSAN &
    wait
    build stress_recorder_asan test/c/stress_recorder.c $ASAN
} >"$tmp/build.tap"
cat "$tmp/build.tap"
grep -q '^not ok' "$tmp/build.tap" && failed=1

wanted test_ring && run test_ring
wanted test_ctf && run test_ctf test/c/golden
wanted test_faults && run test_faults
wanted stress_ring_tsan && run stress_ring_tsan "$tmp/stress-tsan" 4 20000
wanted stress_ring_asan && run stress_ring_asan "$tmp/stress-asan" 8 20000
wanted stress_recorder_tsan && run stress_recorder_tsan "$tmp/recorder-tsan" 4 20000
wanted stress_recorder_asan && run stress_recorder_asan "$tmp/recorder-asan" 8 20000

exit "$failed"
