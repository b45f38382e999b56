#!/usr/bin/env bash
# USDT sink: the probe notes in priv/beamtrace_nif.so, and every
# scripts/*.bt attached with bpftrace to a real node running a workload
# whose output is known. TAP lines (see test/run_all.sh).
#
# bpftrace needs root (uprobes, BPF). As root the script re-runs itself in
# a private mount namespace and mounts tracefs on /sys/kernel/tracing
# there, so bpftrace can detach its uprobes cleanly without changing the
# host's mounts. Without bpftrace, root or uprobes the bpftrace cases are
# reported as skipped with bpftrace's own reason.
#
# The node runs a snapshot of the NIF and beams copied into
# test/out/usdt/beamtrace, so a rebuild by someone else mid-run cannot
# change the library under the attached probes.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/usdt

if [ -z "${BMT_USDT_NS:-}" ] && [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
    exec env BMT_USDT_NS=private unshare --mount --propagation private bash "$0" "$@"
fi
if [ "${BMT_USDT_NS:-}" = private ] && [ ! -e /sys/kernel/tracing/uprobe_events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
        echo "# tracefs not mounted: bpftrace will print 'failed to detach' at exit (harmless)"
fi
ulimit -l unlimited 2>/dev/null || true

cd "$root"
rm -rf "$out" && mkdir -p "$out/beamtrace/ebin" "$out/beamtrace/priv"
if ! make -s priv/beamtrace_nif.so beams ebin/beamtrace.app >"$out/make.log" 2>&1; then
    cat "$out/make.log"
    echo "not ok - usdt: build beamtrace (make)"
    exit 1
fi
# Every module: beamtrace:start/1 calls others (the state dump, the node table).
cp priv/beamtrace_nif.so "$out/beamtrace/priv/" && cp ebin/*.beam ebin/beamtrace.app "$out/beamtrace/ebin/"
[ -f priv/beamtrace_lttng.so ] && cp priv/beamtrace_lttng.so "$out/beamtrace/priv/"
if ! erlc -Werror -o "$out" test/usdt/bmt_usdt_node.erl; then
    echo "not ok - usdt: compile test/usdt/bmt_usdt_node.erl"
    exit 1
fi
skip=
if ! command -v bpftrace >/dev/null; then
    skip="bpftrace not installed"
elif [ "$(id -u)" != 0 ]; then
    skip="not root: bpftrace needs root for uprobes"
fi
BMT_USDT_SKIP=$skip python3 test/usdt/usdt_tests.py "$root" "$out"
