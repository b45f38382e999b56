#!/usr/bin/env bash
# The OTP version matrix (`make test-otp`): beamtrace built and tested on the
# OTP releases of Debian trixie (OTP 27) and sid (OTP 29), each in a chroot
# made by test/otp/chroot.sh under _build/chroots/ (made on first use, about
# a minute each; reused afterwards). Needs root, debootstrap and the Debian
# mirror for the first run.
#
# Per release:
#   1. test/otp/minimal.sh in the base chroot, which holds only erlang-dev,
#      gcc and make: the build skips USDT and LTTng and still records.
#   2. `make` and test/run_all.sh with the VM-facing groups (OTP_GROUPS,
#      default below) in the full chroot (the test tools on top): the
#      Erlang groups run their Common Test suites with that release's
#      common_test, as make test does here (lib checks the TAP hook and the
#      runner on it first); then
#      test/otp/facts/run.sh: what a NIF tracer receives there ("# fact:"
#      lines, information only).
# Every TAP line is printed with the release in front ("ok - [OTP 27] ..."),
# the logs stay in _build/otp/SUITE/, and the last line is the total
# "N passed, N failed, N skipped". OTP_SUITES="trixie" runs one release;
# several run side by side, each with an epmd of its own (run_suite).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
suites=${OTP_SUITES:-"trixie sid"}
# The groups that run a VM (trace: one-call tracing and record against real
# nodes, own trace sessions on 27+; sources: system monitor (long_message_queue
# for real on 27+), counters, node up/down; cluster: three nodes recorded as
# one; relayd: streaming to that release's lttng-relayd (2.16 on sid); deps:
# rebar3 and mix projects on that OTP). c
# and cli are the VM-free C core and reader, build the clang and USDT=0
# variants: tested on the host; the chroot's `make` compiles all the C with
# its newer gcc, warnings as errors.
groups=${OTP_GROUPS:-"lib erl probes sources e2e analyses lttng relayd usdt trace flight cluster deps"}
out=$root/_build/otp
passed=0 failed=0 skipped=0
summary=()

if [ "$(id -u)" != 0 ]; then
    echo "not ok - test-otp: needs root (debootstrap, chroot and mounts)"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
fi

# A copy of the working tree without build outputs, so the chroot builds
# from scratch with its own OTP.
copy_tree() {
    rm -rf "$1" && bash tools/copy_tree.sh "$1"
}

# Runs a TAP-producing command, prefixing test names with the release and
# adding its counts to the suite's totals (in $counts: passed failed
# skipped).
tap() { # LABEL LOG CMD...
    local label=$1 log=$2
    shift 2
    "$@" 2>&1 | tee "$log" | sed -u "s/^\(not ok\|ok\) - /\1 - [$label] /"
    local rc=${PIPESTATUS[0]} p s f
    p=$(grep -cE '^ok - ' "$log")
    s=$(grep -cE '^ok - .*# SKIP' "$log")
    f=$(grep -cE '^not ok - ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "not ok - [$label] $(basename "$log" .log) exited with status $rc"
        f=1
    fi
    read -r cp cf cs <"$counts"
    echo "$((cp + p - s)) $((cf + f)) $((cs + s))" >"$counts"
    return "$rc"
}

# One release, start to end: its TAP lines on stdout, its totals in
# $out/SUITE/counts and its summary line in $out/SUITE/summary. Each
# release's nodes register with an epmd of its own (ERL_EPMD_PORT), so
# the releases' runs (and the host's) can share the machine without
# their node names meeting.
run_suite() { # SUITE EPMD_PORT
    local suite=$1 t0 t1 t2 t3 otp label closing
    counts=$out/$suite/counts
    mkdir -p "$out/$suite"
    echo "0 0 0" >"$counts"
    export BMT_CHROOT_ENV="ERL_EPMD_PORT=$2"
    t0=$(date +%s)
    if ! bash test/otp/chroot.sh "$suite" ensure 2>&1 | tee "$out/$suite/ensure.log"; then
        echo "not ok - [$suite] chroot: $(tail -1 "$out/$suite/ensure.log")"
        echo "0 1 0" >"$counts"
        echo "$suite: no chroot" >"$out/$suite/summary"
        return
    fi
    t1=$(date +%s)
    otp=$(cat "${BMT_CHROOTS:-_build/chroots}/$suite"/base/usr/lib/erlang/releases/*/OTP_VERSION 2>/dev/null | head -1)
    label="OTP ${otp%%.*}"
    echo "# $suite: OTP $otp; chroot ready in $((t1 - t0)) s"

    copy_tree "$out/$suite/minimal"
    BMT_SRC=$out/$suite/minimal tap "$label" "$out/$suite/minimal.log" \
        bash test/otp/chroot.sh "$suite" run base bash /beamtrace/test/otp/minimal.sh
    t2=$(date +%s)

    copy_tree "$out/$suite/full"
    BMT_SRC=$out/$suite/full tap "$label" "$out/$suite/groups.log" \
        bash test/otp/chroot.sh "$suite" run full bash -c \
        "cd /beamtrace && mkdir -p test/out && if make >test/out/make.log 2>&1; then
             TEST_GROUPS='$groups' bash test/run_all.sh; rc=\$?
             bash test/otp/facts/run.sh 2>&1 | sed 's/^/# fact: /'; exit \$rc
         else cat test/out/make.log; echo 'not ok - make (the build make test runs first)'; exit 1; fi"
    t3=$(date +%s)
    closing=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$suite/groups.log" | tail -1)
    echo "$suite (OTP $otp): chroot $((t1 - t0)) s, minimal build $((t2 - t1)) s, groups [$groups] $((t3 - t2)) s: ${closing:-no closing line}" \
        >"$out/$suite/summary"
}

# The releases run side by side (a run waits on nodes, daemons and disks
# much of its time, and CI's 2 cores were half idle when they ran one
# after the other): the first prints as it goes, the others' lines follow
# it, each release's together.
port=4370
pids=()
first=
for suite in $suites; do
    if [ -z "$first" ]; then
        first=$suite
    else
        mkdir -p "$out/$suite"
        run_suite "$suite" "$port" >"$out/$suite/all.log" 2>&1 &
        pids+=($!)
    fi
    port=$((port + 1))
done
[ -n "$first" ] && run_suite "$first" 4370
for pid in "${pids[@]}"; do wait "$pid"; done
for suite in $suites; do
    [ "$suite" = "$first" ] || cat "$out/$suite/all.log"
    read -r p f s <"$out/$suite/counts"
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    summary+=("$(cat "$out/$suite/summary" 2>/dev/null || echo "$suite: no summary")")
done

echo "# test-otp summary"
for line in "${summary[@]}"; do echo "#   $line"; done
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
