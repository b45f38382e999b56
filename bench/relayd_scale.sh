#!/usr/bin/env bash
# Streaming at scale: 1, 5, 20 and 50 small nodes, each in a network
# namespace of its own behind a veth pair on one bridge, stream their traces
# to one lttng-relayd (docs/streaming.md has the figures and the 500-node
# estimate drawn from them).
#
#   bash bench/relayd_scale.sh [NODES...]        (root: namespaces, veths)
#
# Each node: `erl +S 1` recording a ping-pong between two traced processes
# at SCALE_RATE events a second (default 2000), live (SCALE_LIVE_MS, default
# 1000, LTTng's default live timer), for SCALE_SECONDS (default 20) that
# every node starts at the same wall-clock time. Per run it prints: events
# offered and accepted by the relayd (a second, all nodes), what was lost,
# the relayd's CPU (% of one core, over the window) and resident memory,
# and the time from an event to a live viewer (babeltrace2 lttng-live on
# one node's session: p50/p99; SCALE_VIEWER=0: no viewer). Figures only; nothing is asserted
# (STYLE.md). Leaves nothing: nodes, relayd, namespaces and links go at
# exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/bench/out/relayd_scale
rate=${SCALE_RATE:-2000}
seconds=${SCALE_SECONDS:-20}
live=${SCALE_LIVE_MS:-1000}
viewer=${SCALE_VIEWER:-1}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(1 5 20 50)
if [ "$(id -u)" != 0 ]; then
    echo "relayd_scale: needs root (network namespaces)" >&2
    exit 2
fi
for c in ip lttng-relayd babeltrace2 python3 erl; do
    command -v "$c" >/dev/null || { echo "relayd_scale: $c not found" >&2; exit 2; }
done
rm -rf "$out" && mkdir -p "$out"
make -s priv/beamtrace_nif.so beams
erlc -o "$out" bench/bmt_bench_relayd.erl

bridge=br-bmtscale
relayd_ip=10.77.0.1
ctl=25342 data=25343 livep=25344
max=0
for n in "${runs[@]}"; do [ "$n" -gt "$max" ] && max=$n; done

relayd_pid=
node_pids=()
cleanup() {
    local p i
    for p in "${node_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$relayd_pid" ] && kill "$relayd_pid" 2>/dev/null || true
    for i in $(seq 1 "$max"); do
        ip netns del "bmtscale$i" 2>/dev/null || true
        ip link del "bmts-h$i" 2>/dev/null || true
    done
    ip link del "$bridge" 2>/dev/null || true
}
trap cleanup EXIT

# The bridge, and one namespace per node with a veth into it.
ip link add "$bridge" type bridge
ip addr add "$relayd_ip/16" dev "$bridge"
ip link set "$bridge" up
for i in $(seq 1 "$max"); do
    ns=bmtscale$i
    ip netns add "$ns"
    ip link add "bmts-h$i" type veth peer name "bmts-n$i"
    ip link set "bmts-n$i" netns "$ns"
    ip link set "bmts-h$i" master "$bridge" up
    ip netns exec "$ns" ip addr add "10.77.$((i / 250 + 1)).$((i % 250 + 2))/16" dev "bmts-n$i"
    ip netns exec "$ns" ip link set "bmts-n$i" up
    ip netns exec "$ns" ip link set lo up
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)
host=$(hostname)

echo "# $(uptime)"
echo "# per node: $rate events/s for $seconds s, live timer $live ms, erl +S 1; $(lttng-relayd --version | head -1)"
printf '%-6s %12s %12s %10s %10s %12s %10s %10s %s\n' nodes offered/s accepted/s lost relayd_cpu relayd_rss_MiB live_p50 live_p99 viewer_lines
for n in "${runs[@]}"; do
    rm -rf "$out/relayd-$n" && mkdir -p "$out/relayd-$n"
    lttng-relayd -C "tcp://$relayd_ip:$ctl" -D "tcp://$relayd_ip:$data" -L "tcp://$relayd_ip:$livep" \
        -o "$out/relayd-$n" >"$out/relayd-$n.log" 2>&1 &
    relayd_pid=$!
    for _ in $(seq 100); do ss -Htln "sport = :$ctl" | grep -q . && break; sleep 0.05; done
    go=$(( $(date +%s%3N) + 4000 + n * 200 ))
    node_pids=()
    for i in $(seq 1 "$n"); do
        session=scale$n
        [ "$i" = 1 ] && session=scale$n-probe
        ip netns exec "bmtscale$i" erl +S 1 +SDcpu 1 +SDio 1 -noshell -pa "$root/ebin" -pa "$out" \
            -run bmt_bench_relayd main "net://$relayd_ip:$ctl:$data" "$session" "$rate" "$seconds" \
            "$go" "$live" "$out/result-$n-$i" >"$out/node-$n-$i.log" 2>&1 &
        node_pids+=($!)
    done
    # The window: relayd CPU from its start to its end, a viewer during it.
    while [ "$(date +%s%3N)" -lt "$go" ]; do sleep 0.05; done
    c0=$(cpu_ticks "$relayd_pid")
    if [ "$viewer" = 1 ] && [ "$live" != 0 ]; then
        python3 bench/live_latency.py "net://$relayd_ip:$livep/host/$host/scale$n-probe" \
            "$((seconds - 2))" "$out/viewer-$n.err" >"$out/latency-$n" 2>&1 &
    else
        echo "lines=0" >"$out/latency-$n" &
    fi
    lat_pid=$!
    sleep "$seconds"
    c1=$(cpu_ticks "$relayd_pid")
    rss=$(rss_kib "$relayd_pid")
    wait "$lat_pid" || true
    for p in "${node_pids[@]}"; do wait "$p" || true; done
    node_pids=()
    kill "$relayd_pid"; wait "$relayd_pid" 2>/dev/null || true
    relayd_pid=
    # Every node's figures, summed.
    sums=$(erl -noshell -eval '
        [Dir, N] = init:get_plain_arguments(),
        Rs = [case file:consult(filename:join(Dir, "result-" ++ N ++ "-" ++ integer_to_list(I))) of
                  {ok, [R]} -> R;
                  _ -> #{error => missing}
              end || I <- lists:seq(1, list_to_integer(N))],
        Ok = [S || #{stop := {ok, S}} <- Rs],
        Sum = fun(F) -> lists:sum([F(S) || S <- Ok]) end,
        Offered = Sum(fun(#{events := E, discarded := D}) -> E + D end),
        Accepted = Sum(fun(#{relayd := #{events := E}}) -> E end),
        Lost = Sum(fun(#{discarded := D}) -> D end),
        Failed = length(Rs) - length(Ok),
        io:format("~b ~b ~b ~b~n", [Offered, Accepted, Lost, Failed]),
        halt().' -extra "$out" "$n")
    read -r offered accepted lost failed <<<"$sums"
    lat=$(cat "$out/latency-$n")
    p50=$(sed -n 's/.*p50_ms=\([0-9]*\).*/\1/p' <<<"$lat")
    p99=$(sed -n 's/.*p99_ms=\([0-9]*\).*/\1/p' <<<"$lat")
    lines=$(sed -n 's/.*lines=\([0-9]*\).*/\1/p' <<<"$lat")
    cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v s="$seconds" 'BEGIN {printf "%.1f%%", 100 * (b - a) / hz / s}')
    printf '%-6s %12d %12d %10d %10s %12.1f %8s ms %8s ms %s%s\n' "$n" $((offered / seconds)) \
        $((accepted / seconds)) "$lost" "$cpu" "$(awk -v r="$rss" 'BEGIN {print r / 1024}')" \
        "${p50:-?}" "${p99:-?}" "${lines:-0}" "$([ "$failed" = 0 ] || echo " ($failed nodes failed)")"
done
