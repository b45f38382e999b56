#!/usr/bin/env bash
# LTTng-UST sink: the generated provider, its loader (TAP checks here, with
# test/lttng/driver.c), and real lttng sessions on real nodes
# (test/lttng/bmt_lttng_SUITE.erl under Common Test: OTP's
# dyntrace_lttng_SUITE ported and strengthened, the seed's workflow, both
# sinks at once, session daemon faults, BEAMTRACE_LTTNG=0). TAP lines (see
# test/run_all.sh). With BMT_TEST_FILTER (make test-lttng T=...) only the
# suite's cases it names run.
#
# Isolation: as root, the script re-runs itself in a private mount
# namespace with its own empty /run/lttng and /dev/shm, so the session
# daemon it starts, kills and restarts is its own and never another user's
# (lttng-ust apps and the lttng client find a root daemon only through
# those two places). LTTNG_HOME is test/out/lttng/home. Without a private
# namespace it uses a daemon that already runs, or starts one, and skips
# the cases that kill or stop it unless it started it itself.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/lttng

if [ -z "${BMT_LTTNG_NS:-}" ]; then
    if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
        exec env BMT_LTTNG_NS=private unshare --mount --propagation private bash "$0" "$@"
    fi
    export BMT_LTTNG_NS=shared
fi
if [ "$BMT_LTTNG_NS" = private ]; then
    mkdir -p /run/lttng /dev/shm
    mount -t tmpfs -o mode=1777 bmt-lttng /run/lttng && mount -t tmpfs -o mode=1777 bmt-shm /dev/shm ||
        { echo "# cannot mount private /run/lttng and /dev/shm"; export BMT_LTTNG_NS=shared; }
fi

rm -rf "$out" && mkdir -p "$out/home"
export LTTNG_HOME=$out/home
cd "$root"
TAP_PREFIX="lttng: "
. "$root/test/lib/tap.sh"
sessiond_up() { lttng list >/dev/null 2>&1; }
alive() { [ -r "/proc/$1/stat" ] && ! grep -qE '^[0-9]+ \(.*\) Z' "/proc/$1/stat" 2>/dev/null; }
our_sessiond=

# Stops the daemon named by our /run/lttng pid file: SIGTERM, then SIGKILL
# if it still answers or lives after 5 s (a daemon stuck in its shutdown
# would outlive this script in the namespace).
stop_our_sessiond() {
    [ -n "$our_sessiond" ] || return 0
    local pid attempt
    # Until no daemon answers: a daemon restarted by a test case may still
    # be starting (its pid file not yet rewritten) when the old one is gone.
    for attempt in 1 2 3; do
        sessiond_up || return 0
        pid=$(cat /run/lttng/lttng-sessiond.pid 2>/dev/null)
        if [ -n "$pid" ] && alive "$pid"; then
            kill "$pid" 2>/dev/null
            for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
            if alive "$pid"; then
                echo "# lttng-sessiond $pid still up 5 s after SIGTERM: SIGKILL"
                kill -9 "$pid" 2>/dev/null
            fi
        fi
        for _ in $(seq 50); do sessiond_up || return 0; sleep 0.1; done
    done
}
trap stop_our_sessiond EXIT

# The suite's cases (bmt_lttng_SUITE) on the session daemon set up below;
# BMT_LTTNG_OWN_SESSIOND=1 lets it stop and kill the daemon when it is ours.
run_suite() {
    . "$root/test/lib/ct_group.sh"
    BMT_LTTNG_OWN_SESSIOND=$([ -n "$our_sessiond" ] && echo 1 || echo 0) ct_group lttng ||
        tap_failures=$((tap_failures + 1))
}
filtered=${BMT_TEST_FILTER:+yes}

if [ -z "$filtered" ]; then
# 1. Build-level checks: always.
check "generated provider sources are current (make check-generated)" \
    'make -s check-generated >"$out/check-generated.out" 2>&1'
check "the NIF does not link liblttng-ust" \
    '! readelf -d priv/beamtrace_nif.so | grep -q lttng'
check "make without lttng-ust says the sink is skipped, and succeeds" \
    'PKG_CONFIG_LIBDIR=/nonexistent make >"$out/make-no-ust.out" 2>&1 &&
     grep -q "SKIP .*beamtrace_lttng.so: pkg-config finds no lttng-ust" "$out/make-no-ust.out"'
fi

so=priv/beamtrace_lttng.so
if ! pkg-config --exists lttng-ust || [ ! -f "$so" ]; then
    why="no lttng-ust (pkg-config) or $so not built"
    if [ -z "$filtered" ]; then
        check "make succeeds without the provider" '[ -f priv/beamtrace_nif.so ]'
        for c in provider_exports driver_builds driver_load_without_sessiond driver_disabled \
                 driver_missing driver_fields metadata_types; do
            skip "$c" "$why"
        done
    fi
    # The suite skips its groups with its own reason.
    run_suite
    exit $((tap_failures > 0))
fi

if [ -z "$filtered" ]; then
check "provider exports bmt_lttng_provider" 'nm -D --defined-only "$so" | grep -qw bmt_lttng_provider'

# 2. The provider through the NIF's own loader, without a VM.
ERTS_INCLUDE=$(erl -noshell -eval 'io:format("~ts/erts-~ts/include", [code:root_dir(), erlang:system_info(version)]), halt().')
drv=$out/driver
cc -std=gnu11 -O1 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror \
    -Ic_src -I"$ERTS_INCLUDE" -o "$drv" test/lttng/driver.c c_src/sinks/lttng.c c_src/core/catalogue.c \
    -ldl >"$out/driver.cc" 2>&1
check "driver builds" '[ -x "$drv" ]' || show "$out/driver.cc"
fi

own=yes
if sessiond_up; then
    if [ "$BMT_LTTNG_NS" = private ]; then own=yes; else own=no; fi
fi
if [ "$own" = yes ] && sessiond_up; then
    # A daemon of ours from an interrupted run: stop it to start clean.
    our_sessiond=1; stop_our_sessiond; our_sessiond=
fi

if [ -z "$filtered" ]; then
if [ "$own" = yes ]; then
    # LTTNG_UST_REGISTER_TIMEOUT=-1: lttng-ust waits for a session daemon
    # without end. The load returning (the group's time limit would end a
    # wait) shows nothing waits for a daemon that is not there.
    LTTNG_UST_REGISTER_TIMEOUT=-1 timeout 120 "$drv" priv >"$out/load.out" 2>&1
    rc=$?
    check "provider loads with no session daemon, waiting for none (LTTNG_UST_REGISTER_TIMEOUT=-1)" \
        '[ "$rc" -eq 0 ] && grep -q "loaded=1" "$out/load.out"' || show "$out/load.out"
else
    skip "provider loads with no session daemon, waiting for none (LTTNG_UST_REGISTER_TIMEOUT=-1)" \
        "a session daemon we did not start runs"
fi
check "BEAMTRACE_LTTNG=off: loader refuses, with the reason" \
    'BEAMTRACE_LTTNG=off "$drv" priv | grep -q "loaded=0 why=disabled by BEAMTRACE_LTTNG=off"'
check "missing provider library: loader returns NULL with dlerror" \
    '"$drv" "$out/nonexistent" | grep -q "loaded=0 why=cannot load .*beamtrace_lttng.so"'
fi

# 3. A session daemon.
if ! sessiond_up; then
    lttng-sessiond --daemonize --no-kernel >"$out/sessiond.out" 2>&1
    for _ in $(seq 50); do sessiond_up && break; sleep 0.1; done
    if sessiond_up; then our_sessiond=1; fi
fi
if ! sessiond_up; then
    why="lttng-sessiond does not start: $(head -c 200 "$out/sessiond.out" 2>/dev/null | tr '\n' ' ')"
    [ -n "$filtered" ] || for c in driver_fields metadata_types; do skip "$c" "$why"; done
    # The suite skips what needs a daemon, with its own reason.
    run_suite
    exit $((tap_failures > 0))
fi
echo "# session daemon: $([ -n "$our_sessiond" ] && echo ours || echo existing), namespace: $BMT_LTTNG_NS"

if [ -z "$filtered" ]; then
# 4. Every tracepoint from the driver, read back: values and CTF types.
lttng create bmt-driver --output="$out/driver-trace" >/dev/null &&
    lttng enable-event -u 'org_erlang_dyntrace:*' -s bmt-driver >/dev/null &&
    lttng start bmt-driver >/dev/null
"$drv" priv >"$out/driver.out" 2>&1
lttng stop bmt-driver >/dev/null
lttng view bmt-driver >"$out/driver.view" 2>&1
lttng destroy bmt-driver >/dev/null
check "driver: all 21 tracepoints enabled and emitted once each" \
    'grep -q "^emitted=21$" "$out/driver.out" && [ "$(grep -c org_erlang_dyntrace: "$out/driver.view")" -eq 21 ]'
check "driver: string, unsigned and signed field values read back" \
    'grep -q "function_call: { cpu_id = [0-9]* }, { pid = \"function_call.pid\", entry = \"function_call.entry\", depth = 9002 }" "$out/driver.view" &&
     grep -q "gc_major_end: .*{ pid = \"gc_major_end.pid\", reclaimed = 17001, heap = 17002, old_heap = 17003 }" "$out/driver.view" &&
     grep -q "user_trace_n: .*{ label = 20000, pid = \"user_trace_n.pid\", tag = \"user_trace_n.tag\", i1 = -20003, i2 = -20004, i3 = -20005, i4 = -20006, s1 = \"user_trace_n.s1\"" "$out/driver.view"'
meta=$(find "$out/driver-trace" -name metadata | head -1)
babeltrace2 --output-format=ctf-metadata "$(dirname "$meta")" >"$out/driver.tsdl" 2>&1
check "trace metadata: OTP's field names, order and C types for every event" \
    'python3 test/lttng/check_metadata.py "$out/driver.tsdl" >"$out/metadata.check" 2>&1' ||
    show "$out/metadata.check"
fi

# 5. Real nodes: the suite, each group on a peer node of its own.
run_suite

exit $((tap_failures > 0))
