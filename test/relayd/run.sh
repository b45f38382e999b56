#!/usr/bin/env bash
# Streaming to lttng-relayd: the recorder's relayd client against a real
# lttng-relayd (the one on PATH: Debian's, 2.13 on bookworm and trixie, 2.16
# in the sid chroot), read back with babeltrace2 and beamtrace. TAP lines
# (see test/run_all.sh).
#
#   bash test/relayd/run.sh        (or make test-relayd)
#
# 1. Without a VM (test/relayd/stream_recorder.c, ASan+UBSan): exact counts
#    in the relayd's copy, a local copy beside it, the relayd stopped
#    (SIGSTOP) for 10 s and restarted mid-recording, and the failures a
#    start must report (nothing listening, a relayd too old, one that closes,
#    one that never answers, one that refuses the session: fake_relayd.py).
# 2. On a real node (bmt_relayd_SUITE, Common Test through test/lib/ct_group.sh):
#    start/1 and trace/2 with `relayd', live viewing with babeltrace2
#    --input-format=lttng-live, beacons, the scheduler-stall probe with the
#    relayd stopped for 10 s, a relayd restart, a relayd stopped at stop;
#    and bmt_relayd_cluster_SUITE: three nodes streaming straight to the
#    relayd, read back as one cluster.
# The relayd listens on 127.0.0.1, on three free ports from 21342 up (from
# 21442 and 21542 in the OTP chroots' runs beside it), and
# writes under test/out/relayd/out; it is stopped (by pid) on exit.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=test/out/relayd
rm -rf "$out" && mkdir -p "$out"
TAP_PREFIX="relayd: "
. test/lib/tap.sh

cases="relayd_only first_lost local_copy sigstop restart refused old closes silent session_refused erlang"
if ! command -v lttng-relayd >/dev/null || ! command -v babeltrace2 >/dev/null; then
    for c in $cases; do skip "$c" "lttng-relayd or babeltrace2 not installed (apt-get install lttng-tools babeltrace2)"; done
    exit 0
fi
echo "# $(lttng-relayd --version 2>&1 | head -1), $(babeltrace2 --version | head -1)"

if ! make -s priv/beamtrace_nif.so priv/beamtrace beams >"$out/make.log" 2>&1; then
    not_ok "build (make)"; show "$out/make.log"; exit 1
fi
drv=$out/stream_recorder
# shellcheck disable=SC2046
check "stream_recorder builds (ASan+UBSan)" \
    'cc -std=gnu11 -g -O1 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror \
        -Ic_src -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
        -o "$drv" test/relayd/stream_recorder.c $(make -s print-CORE_SRC) $(make -s print-RECORDER_SRC) \
        -lpthread >"$out/build.log" 2>&1' || { show "$out/build.log"; exit 1; }
# The same under ThreadSanitizer: the consumer streams while another thread
# reads the figures (-Wno-tsan: see test/c/run.sh).
check "stream_recorder builds (TSan)" \
    'cc -std=gnu11 -g -O1 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror \
        -Ic_src -fsanitize=thread -Wno-tsan -o "$drv-tsan" test/relayd/stream_recorder.c \
        $(make -s print-CORE_SRC) $(make -s print-RECORDER_SRC) -lpthread >"$out/build-tsan.log" 2>&1' ||
    show "$out/build-tsan.log"
export TSAN_OPTIONS=halt_on_error=1:exitcode=66
export ASAN_OPTIONS=detect_leaks=1:exitcode=23 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# ---- the relayd ----
# Something listens on 127.0.0.1:PORT (bash's /dev/tcp: no ss in the OTP
# chroots).
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_free() { ! listening "$1"; }
# Each concurrent run (the host's, and the OTP chroots' beside it, which
# share the host's network) starts from ports of its own, told apart by
# its epmd port (test/otp/matrix.sh): a check-then-bind race between two
# runs picking the same free ports would otherwise let one run's tests talk
# to the other's relayd.
base=$((21342 + (${ERL_EPMD_PORT:-4369} - 4369) * 100))
while ! { port_free $base && port_free $((base + 1)) && port_free $((base + 2)); }; do
    base=$((base + 3))
done
ctl=$base data=$((base + 1)) live=$((base + 2))
url=net://127.0.0.1:$ctl:$data
relayd_out=$root/$out/out
relayd_pid=
pids_to_kill=()
# PID runs (not exited; an exited child stays a zombie until waited for,
# and kill -0 still finds it).
alive() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ] && [ -e "/proc/$1" ]; }
start_relayd() {
    lttng-relayd -C "tcp://127.0.0.1:$ctl" -D "tcp://127.0.0.1:$data" -L "tcp://127.0.0.1:$live" \
        -o "$relayd_out" >>"$out/relayd.log" 2>&1 &
    relayd_pid=$!
    for _ in $(seq 100); do
        # Listening, and by this relayd: one that failed to bind has exited.
        ! port_free $ctl && ! port_free $data && ! port_free $live &&
            alive "$relayd_pid" && return 0
        alive "$relayd_pid" || return 1
        sleep 0.05
    done
    return 1
}
stop_relayd() {
    [ -n "$relayd_pid" ] || return 0
    kill -CONT "$relayd_pid" 2>/dev/null
    kill "$relayd_pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$relayd_pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$relayd_pid" 2>/dev/null
    wait "$relayd_pid" 2>/dev/null
    relayd_pid=
}
cleanup() {
    # The node's tests may have restarted it: the pid file names the last.
    [ -f "$out/relayd.pid" ] && relayd_pid=$(cat "$out/relayd.pid")
    stop_relayd
    local p
    for p in "${pids_to_kill[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
check "lttng-relayd starts on 127.0.0.1:$ctl/$data/$live" start_relayd || { show "$out/relayd.log"; exit 1; }

# The relayd's trace directory a run wrote: relayd_path= of its output.
copy_of() { echo "$relayd_out/$(sed -n 's/^relayd_path=//p' "$1")"; }
field() { sed -n "s/^$2=//p" "$1" | head -1; }
# Sum of the losses babeltrace2 reports in its warnings (stderr file $1).
bt_discarded() { grep -o 'discarded [0-9]* events' "$1" | awk '{s += $2} END {print s + 0}'; }

# ---- 1. without a VM ----
run_drv() { # NAME ARGS...: runs the driver, output in $out/NAME.out
    local name=$1
    shift
    timeout 120 "$drv" "$@" >"$out/$name.out" 2>"$out/$name.err"
}

# Exact counts, relayd only.
run_drv relayd_only "$url" relayd 4 50000 pause_ms=1 every=200
copy=$(copy_of "$out/relayd_only.out")
TZ=UTC babeltrace2 "$copy" >"$out/relayd_only.bt2" 2>"$out/relayd_only.bt2err"
check "relayd only: babeltrace2 reads as many events as stop reports, and its losses" \
    '[ "$(wc -l <"$out/relayd_only.bt2")" = "$(field "$out/relayd_only.out" events)" ] &&
     [ "$(bt_discarded "$out/relayd_only.bt2err")" = "$(field "$out/relayd_only.out" discarded)" ] &&
     [ $(( $(field "$out/relayd_only.out" events) + $(field "$out/relayd_only.out" discarded) )) = 200000 ] &&
     [ "$(field "$out/relayd_only.out" relayd_state)" = closed ]' ||
    { show "$out/relayd_only.out"; show "$out/relayd_only.err"; }
check "relayd only: the layout lttng create --set-url gives (<host>/<session>-<datetime>/ust/pid/<proc>-<pid>-<datetime>, index/)" \
    '[[ "$copy" =~ /out/[^/]+/beamtrace-[0-9]{8}-[0-9]{6}/ust/pid/stream_recorder-[0-9]+-[0-9]{8}-[0-9]{6}$ ]] &&
     [ -f "$copy/metadata" ] && [ -f "$copy/channel0_0" ] && [ -f "$copy/index/channel0_0.idx" ]' ||
    echo "# copy: $copy"
check "relayd only: beamtrace view of the relayd's copy equals babeltrace2's" \
    'TZ=UTC priv/beamtrace view "$copy" 2>/dev/null | diff - "$out/relayd_only.bt2" >"$out/relayd_only.view.diff"' ||
    show "$out/relayd_only.view.diff"

# Every packet lost before a stream's first one reached the copy (packets
# of up to 256 KiB, a send queue of 64 KiB; an idle flush can make a
# smaller packet that fits): babeltrace2 must still count the
# losses, which it does only as the growth from one packet to the next (of
# a stream's first packet it says events "may" have been discarded).
run_drv first_lost "$url" relayd 2 20000 buffer=1048576 queue=65536 session=first-lost
copy=$(copy_of "$out/first_lost.out")
TZ=UTC babeltrace2 "$copy" >"$out/first_lost.bt2" 2>"$out/first_lost.bt2err"
check "losses before a stream's first packet: babeltrace2 counts them (no 'may have discarded')" \
    '[ "$(field "$out/first_lost.out" discarded)" -gt 0 ] &&
     [ $(( $(field "$out/first_lost.out" events) + $(field "$out/first_lost.out" discarded) )) = 40000 ] &&
     [ "$(bt_discarded "$out/first_lost.bt2err")" = "$(field "$out/first_lost.out" discarded)" ] &&
     [ "$(wc -l <"$out/first_lost.bt2")" = "$(field "$out/first_lost.out" events)" ] &&
     ! grep -q "may have discarded" "$out/first_lost.bt2err" &&
     [ "$(field "$out/first_lost.out" relayd_state)" = closed ]' ||
    { show "$out/first_lost.out"; show "$out/first_lost.bt2err" 5; }

# Under ThreadSanitizer, the figures read all along from another thread.
if [ -x "$drv-tsan" ]; then
    timeout 300 "$drv-tsan" "$url" relayd 4 20000 pause_ms=1 every=200 poll_info=1 \
        >"$out/tsan.out" 2>"$out/tsan.err"
    tsan_rc=$?
    check "relayd only under ThreadSanitizer, figures polled meanwhile: no report, exact counts" \
        '[ "$tsan_rc" -eq 0 ] && [ $(( $(field "$out/tsan.out" events) + $(field "$out/tsan.out" discarded) )) = 80000 ] &&
         [ "$(field "$out/tsan.out" info_polls)" -gt 0 ] && [ ! -s "$out/tsan.err" ]' ||
        { show "$out/tsan.out"; show "$out/tsan.err" 40; }
fi

# A local copy beside the stream: the same events, and the same losses
# when the rings dropped some (a loaded machine): babeltrace2's warnings
# name each copy's own path, so they are compared by their counts, apart
# from the events (stderr merged into stdout also lands mid-line).
run_drv local_copy "$url" both 2 20000 local="$root/$out/local" pause_ms=2 every=100 session=local-copy
copy=$(copy_of "$out/local_copy.out")
TZ=UTC babeltrace2 "$copy" >"$out/local_copy.relayd.bt2" 2>"$out/local_copy.relayd.bt2err"
TZ=UTC babeltrace2 "$out/local" >"$out/local_copy.local.bt2" 2>"$out/local_copy.local.bt2err"
check "local copy and relayd copy: babeltrace2 prints the same events" \
    '[ "$(field "$out/local_copy.out" relayd_lost)" = 0 ] &&
     diff "$out/local_copy.relayd.bt2" "$out/local_copy.local.bt2" >"$out/local_copy.diff" &&
     [ "$(wc -l <"$out/local_copy.relayd.bt2")" = "$(field "$out/local_copy.out" events)" ] &&
     [ "$(bt_discarded "$out/local_copy.relayd.bt2err")" = "$(field "$out/local_copy.out" discarded)" ] &&
     [ "$(bt_discarded "$out/local_copy.local.bt2err")" = "$(field "$out/local_copy.out" discarded)" ] &&
     [[ "$copy" == */local-copy/ust/pid/* ]]' ||
    { show "$out/local_copy.out"; show "$out/local_copy.diff"; show "$out/local_copy.relayd.bt2err" 5; }

# Driver runs that pause at signal_at (everything before it delivered) for
# run.sh to act on the relayd. Usage: paused_run NAME BEFORE AFTER ARGS...:
# BEFORE runs while the writers wait, AFTER once they go on.
paused_run() {
    local name=$1 before=$2 after=$3
    shift 3
    rm -f "$out/$name.fifo" && mkfifo -m 600 "$out/$name.fifo"
    timeout 180 "$drv" "$@" <"$out/$name.fifo" >"$out/$name.out" 2>"$out/$name.err" &
    local pid=$!
    exec 7>"$out/$name.fifo"
    for _ in $(seq 600); do grep -q '^SIGNAL' "$out/$name.out" && break; sleep 0.1; done
    $before
    echo go >&7
    exec 7>&-
    $after
    wait "$pid"
}

# The relayd stopped for 10 s: the writers go on, every loss counted, and
# the recording resumes.
stop_it() {
    kill -STOP "$relayd_pid"
    echo "# relayd $relayd_pid stopped: $(grep State "/proc/$relayd_pid/status")"
}
cont_in_10s() {
    sleep 10
    kill -CONT "$relayd_pid"
}
paused_run sigstop stop_it cont_in_10s "$url" relayd 2 1200000 pause_ms=1 every=100 signal_at=20000 queue=262144
copy=$(copy_of "$out/sigstop.out")
TZ=UTC babeltrace2 "$copy" 2>"$out/sigstop.bt2err" | wc -l >"$out/sigstop.bt2"
at_signal=$(sed -n 's/^SIGNAL relayd_events=\([0-9]*\).*/\1/p' "$out/sigstop.out")
echo "# sigstop: $(tr '\n' ' ' <"$out/sigstop.out" | cut -c1-400)"
check "relayd stopped 10 s: babeltrace2 events = stop's events, its losses = stop's discarded, some lost" \
    '[ "$(cat "$out/sigstop.bt2")" = "$(field "$out/sigstop.out" events)" ] &&
     [ "$(bt_discarded "$out/sigstop.bt2err")" = "$(field "$out/sigstop.out" discarded)" ] &&
     [ "$(field "$out/sigstop.out" relayd_lost)" -gt 0 ] &&
     [ $(( $(field "$out/sigstop.out" events) + $(field "$out/sigstop.out" discarded) )) = 2400000 ]' ||
    { show "$out/sigstop.out"; show "$out/sigstop.err"; }
check "relayd stopped 10 s: same connection, recording resumed after SIGCONT" \
    '[ "$(field "$out/sigstop.out" disconnections)" = 0 ] &&
     [ "$(field "$out/sigstop.out" relayd_events)" -gt "${at_signal:-0}" ] &&
     [ "$(field "$out/sigstop.out" relayd_state)" = closed ]'

# The relayd restarted: a second connection, a second per-process
# directory in the same session directory, read as one trace.
start_in_1s() {
    sleep 1
    start_relayd
}
paused_run restart stop_relayd start_in_1s "$url" relayd 2 200000 pause_ms=5 every=200 signal_at=20000 queue=262144
session_dir=$(dirname "$(copy_of "$out/restart.out")")
TZ=UTC babeltrace2 "$session_dir" >"$out/restart.bt2" 2>"$out/restart.bt2err"
echo "# restart: $(tr '\n' ' ' <"$out/restart.out" | cut -c1-400)"
check "relayd restarted: reconnected, two directories, babeltrace2 reads stop's events and losses across both" \
    '[ "$(field "$out/restart.out" connections)" = 2 ] && [ "$(field "$out/restart.out" disconnections)" = 1 ] &&
     [ "$(ls "$session_dir" | wc -l)" = 2 ] &&
     [ "$(wc -l <"$out/restart.bt2")" = "$(field "$out/restart.out" events)" ] &&
     [ "$(bt_discarded "$out/restart.bt2err")" = "$(field "$out/restart.out" discarded)" ] &&
     [ "$(field "$out/restart.out" relayd_unconfirmed)" = 0 ]' ||
    { show "$out/restart.out"; show "$out/restart.err"; show "$out/restart.bt2err" 5; }
# beamtrace too reads the two directories (one per connection, the same
# trace UUID) as one trace, as babeltrace2 does: the same events, and
# stop's events and losses in its stats.
TZ=UTC priv/beamtrace stats "$session_dir" >"$out/restart.stats" 2>&1
check "relayd restarted: beamtrace reads both directories as one trace: view = babeltrace2, stats = stop's counts" \
    'TZ=UTC priv/beamtrace view "$session_dir" 2>/dev/null | diff -q - "$out/restart.bt2" >/dev/null &&
     grep -Eq "^events +$(field "$out/restart.out" events)\$" "$out/restart.stats" &&
     grep -Eq "^discarded +$(field "$out/restart.out" discarded)\$" "$out/restart.stats"' ||
    show "$out/restart.stats"

# Byte level, through LTTng's own writer: in every copy the driver's runs
# made (both directories of the restart), the relayd's index entries, made
# from our SEND_INDEX commands, agree with the packets our data connection
# sent (offset, sizes, times, losses, sequence numbers).
check "relayd's index files agree with the packets in every copy (test/relayd/check_index.py)" \
    'python3 test/relayd/check_index.py $(for r in relayd_only first_lost local_copy sigstop; do copy_of "$out/$r.out"; done) \
         "$session_dir"/* >"$out/check_index.log" 2>&1' ||
    show "$out/check_index.log" 5

# Nothing left behind once a session stopped, whatever the relayd did: no
# descriptor and no thread (the driver counts /proc/self/fd and task after
# stopping; ASan's leak check covers the memory).
check "nothing left after stop (relayd only, first packets lost, SIGSTOP, restart): no fd, no thread" \
    '(for r in relayd_only first_lost sigstop restart; do
         [ "$(field "$out/$r.out" fds_left)" = 0 ] && [ "$(field "$out/$r.out" threads_left)" = 0 ] ||
             { echo "# $r: fds_left=$(field "$out/$r.out" fds_left) threads_left=$(field "$out/$r.out" threads_left)"; exit 1; }
     done)'

# Failures a start reports, in one line, and leaves nothing running.
check "nothing listening: start fails with connection refused and how to fix it" \
    '! run_drv refused net://127.0.0.1:1 relayd 1 10 &&
     grep -q "Connection refused.*is lttng-relayd running there" "$out/refused.err"' ||
    show "$out/refused.err"
fake() { # MODE NAME: a fake relayd on free ports, then the driver against it
    local mode=$1 name=$2 fb=$((base + 10))
    while ! { port_free $fb && port_free $((fb + 1)); }; do fb=$((fb + 2)); done
    python3 test/relayd/fake_relayd.py "$mode" $fb $((fb + 1)) >"$out/$name.fake" 2>&1 &
    local fpid=$!
    pids_to_kill+=("$fpid")
    for _ in $(seq 100); do grep -q ready "$out/$name.fake" && break; sleep 0.05; done
    ! run_drv "$name" "net://127.0.0.1:$fb:$((fb + 1))" relayd 1 10
    local rc=$?
    kill "$fpid" 2>/dev/null
    wait "$fpid" 2>/dev/null
    return $rc
}
check "relayd too old (2.4): start fails, naming the version needed" \
    'fake old old && grep -q "protocol 2.4: beamtrace needs 2.11 or later" "$out/old.err"' || show "$out/old.err"
check "relayd closes the connection: start fails and says so" \
    'fake closes closes && grep -q "closed the connection" "$out/closes.err"' || show "$out/closes.err"
check "relayd never answers: start fails within its bound" \
    'fake silent silent && grep -qi "timed out\|no answer" "$out/silent.err"' || show "$out/silent.err"
check "relayd refuses the session: start fails and says so" \
    'fake refuses session_refused && grep -q "refused to create the session" "$out/session_refused.err"' ||
    show "$out/session_refused.err"

# ---- 2. on a real node, and a cluster through the relayd ----
# The relayd's control for the node's tests: stop, cont (SIGSTOP, SIGCONT),
# down (SIGTERM, waited for), up (a new relayd on the same ports and
# output, unless one runs) and restart (down, up).
# The pid file always names the running relayd: cleanup() stops that one.
echo "$relayd_pid" >"$out/relayd.pid"
cat >"$out/relayd-ctl" <<EOF
#!/usr/bin/env bash
pidfile="$root/$out/relayd.pid"
pid=\$(cat "\$pidfile")
down() {
    kill -CONT "\$pid"; kill "\$pid"
    while kill -0 "\$pid" 2>/dev/null; do sleep 0.05; done
}
up() {
    lttng-relayd -C tcp://127.0.0.1:$ctl -D tcp://127.0.0.1:$data -L tcp://127.0.0.1:$live \\
        -o "$relayd_out" >>"$root/$out/relayd.log" 2>&1 </dev/null &
    echo \$! >"\$pidfile"
    for _ in \$(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$ctl) 2>/dev/null && break; sleep 0.05; done
}
case \$1 in
    stop) kill -STOP "\$pid" ;;
    cont) kill -CONT "\$pid" ;;
    down) down ;;
    up) kill -0 "\$pid" 2>/dev/null || up ;;
    restart) down; up ;;
esac
EOF
chmod +x "$out/relayd-ctl"
export BMT_RELAYD_URL=$url BMT_RELAYD_OUT=$relayd_out BMT_RELAYD_LIVE=net://127.0.0.1:$live \
       BMT_RELAYD_CTL=$root/$out/relayd-ctl
# The cluster's three nodes have only test/cluster's workload on their code
# path.
mkdir -p "$out/target"
if ! erlc -Werror -o "$out/target" test/cluster/bmt_cluster_target.erl test/lib/bmt_beamtrace_left.erl \
        >"$out/target.log" 2>&1; then
    not_ok "cluster: target modules compile"; show "$out/target.log"
fi
export BMT_TARGET_BEAMS=$root/$out/target
# bmt_relayd_SUITE and bmt_relayd_cluster_SUITE under Common Test, in one
# node (+S 2: the stall probe needs two schedulers; the cluster suite makes
# the node distributed). Their TAP lines carry the group's prefix.
. test/lib/ct_group.sh
ct_group relayd +S 2 | sed -u "s/^\(not ok\|ok\) - /\1 - $TAP_PREFIX/" | tee "$out/ct.log"
rc=${PIPESTATUS[0]}
tap_failures=$((tap_failures + $(grep -c '^not ok - ' "$out/ct.log")))
[ "$rc" -eq 0 ] || grep -q '^not ok - ' "$out/ct.log" || not_ok "Common Test node exited with status $rc"

exit $((tap_failures > 0))
