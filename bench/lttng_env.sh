# Sourced by bench/run.sh and bench/profile.sh: an lttng-sessiond of our
# own with one session per workload (bmt-call, bmt-send, bmt-spawn, and
# bmt-floor for bench/lttng_floor.c), each
# recording `org_erlang_dyntrace:*' into one channel of 8 x 4 MiB
# sub-buffers per CPU (32 MiB, as the recorder's beamtrace_big), so LTTng
# should not have to discard. Sessions are created, not started: bmt_bench
# starts one around each run of its `lttng' tracer.
#
# Needs LTTNG_OUT (an absolute directory, emptied) and BMT_BENCH_NS
# (private: this shell is in a private mount namespace, so it mounts its
# own /run/lttng and /dev/shm; shared: it starts a daemon only if none
# runs). lttng_setup exports BENCH_LTTNG=1, or BENCH_LTTNG=<reason the
# LTTng sink is skipped>, and prints one line saying which.
# stop_sessiond destroys the sessions and stops the daemon it started.

our_sessiond=
LTTNG_PIDFILE=/nonexistent
sessiond_up() { lttng list >/dev/null 2>&1; }
stop_sessiond() {
    [ -n "$our_sessiond" ] || return 0
    lttng destroy --all >/dev/null 2>&1 || true
    local pid
    pid=$(cat "$LTTNG_PIDFILE" 2>/dev/null) || return 0
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
    our_sessiond=
}
lttng_why=
_lttng_try() { # sets lttng_why= to the reason the LTTng sink is skipped
    [ "${BENCH_LTTNG:-1}" != 0 ] || { lttng_why="BENCH_LTTNG=0"; return; }
    command -v lttng-sessiond >/dev/null && command -v lttng >/dev/null ||
        { lttng_why="lttng-tools not installed"; return; }
    command -v babeltrace2 >/dev/null || { lttng_why="babeltrace2 not installed (needed to count events)"; return; }
    [ -f priv/beamtrace_lttng.so ] || { lttng_why="priv/beamtrace_lttng.so not built (no lttng-ust)"; return; }
    if [ "$BMT_BENCH_NS" = private ]; then
        mkdir -p /run/lttng /dev/shm
        mount -t tmpfs -o mode=1777 bmt-bench-lttng /run/lttng &&
            mount -t tmpfs -o mode=1777 bmt-bench-shm /dev/shm ||
            { lttng_why="cannot mount a private /run/lttng and /dev/shm"; return; }
    elif sessiond_up; then
        lttng_why="a session daemon we did not start runs, and no private mount namespace to start our own"
        return
    fi
    rm -rf "$LTTNG_OUT" && mkdir -p "$LTTNG_OUT/home"
    export LTTNG_HOME=$LTTNG_OUT/home
    if [ "$(id -u)" = 0 ]; then LTTNG_PIDFILE=/run/lttng/lttng-sessiond.pid
    else LTTNG_PIDFILE=$LTTNG_HOME/.lttng/lttng-sessiond.pid; fi
    our_sessiond=1
    lttng-sessiond --daemonize --no-kernel >"$LTTNG_OUT/sessiond.out" 2>&1 || true
    for _ in $(seq 50); do sessiond_up && break; sleep 0.1; done
    sessiond_up || { lttng_why="lttng-sessiond does not start: $(head -c 200 "$LTTNG_OUT/sessiond.out" | tr '\n' ' ')"; return; }
    local w
    for w in call send spawn floor; do
        { lttng create "bmt-$w" --output="$LTTNG_OUT/trace-$w" &&
          lttng enable-channel -u --subbuf-size=4M --num-subbuf=8 bmt -s "bmt-$w" &&
          lttng enable-event -u 'org_erlang_dyntrace:*' -c bmt -s "bmt-$w"; } >>"$LTTNG_OUT/setup.out" 2>&1 ||
            { lttng_why="lttng create/enable-event failed: $(tail -c 200 "$LTTNG_OUT/setup.out" | tr '\n' ' ')"; return; }
    done
}
lttng_setup() {
    _lttng_try
    if [ -z "$lttng_why" ]; then
        export BENCH_LTTNG=1
        echo "LTTng: lttng-sessiond $(lttng --version | sed -n '1s/.*) \([0-9.]*\).*/\1/p') started" \
             "(namespace: $BMT_BENCH_NS), sessions bmt-call, bmt-send, bmt-spawn"
    else
        export BENCH_LTTNG="$lttng_why"
        echo "LTTng sink: SKIPPED: $lttng_why"
        stop_sessiond
    fi
}
