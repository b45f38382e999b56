#!/usr/bin/env bash
# Analysis subcommands (calls, sched, procs, gc, flame, export, report):
# workloads with known answers recorded on a real node, synthetic call-stack
# edge cases written through the real CTF writer, structural checks of the
# Chrome JSON, the flame graph and the HTML report (in headless Chromium),
# malformed traces and bad options under ASan/UBSan. TAP lines; exit 1 on
# failure. The node's own measurements (erlang:monotonic_time inside the
# workload) are the reference, so the checks do not depend on machine speed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=test/out/analyses
rm -rf "$out" && mkdir -p "$out/ebin"
CC=${CC:-cc}
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror"
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
CORE=$(make -s --no-print-directory print-CORE_SRC)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
TAP_PREFIX=""
. "$root/test/lib/tap.sh"
BT="$root/priv/beamtrace"
ASAN="$root/_build/asan/beamtrace"
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
expect() { sed -n "s/^$2 //p" "$1.expect"; }

check_cmd "make priv/beamtrace builds warning-free" make -s priv/beamtrace
# The CLI's sources exactly as the Makefile lists them.
CLI_SRC=$(make -s --no-print-directory print-CLI_SRC)
# The sanitizer build of the CLI (the Makefile's asan-cli: fields a command
# did not select read as NULL strings, so a missing one fails here).
check_cmd "sanitizer build of the CLI" make -s asan-cli
# shellcheck disable=SC2086
check_cmd "trace generator builds" $CC -std=gnu11 -O2 -g $WARN -Ic_src -o "$out/make_traces" \
    -Itest/lib test/analyses/make_traces.c test/lib/trace_gen.c $CORE
check_cmd "workload module compiles" erlc -o "$out/ebin" test/analyses/bmt_an_workload.erl
[ -x "$BT" ] && [ -x "$ASAN" ] && [ -x "$out/make_traces" ] || { echo "# cannot continue"; exit 1; }

# ---- workloads on a real node ----
for k in calls sched procs all names waker; do
    erl -noshell -pa ebin -pa "$out/ebin" -run bmt_an_workload main "$k" "$out/w_$k" \
        >"$out/w_$k.log" 2>&1
    rc=$?
    check_cmd "workload $k recorded without drops" \
        eval '[ "$rc" -eq 0 ] && [ "$(expect "$out/w_$k" discarded)" = 0 ]'
done

# Names on a real node: the state dump beamtrace:start/1 writes names the
# processes alive at start (a registered one; one whose '$initial_call' is
# an Elixir module's), a registration after start names the third from
# then on (and --pid finds its earlier calls too).
w=$out/w_names
early=$(expect "$w" early_pid | tr -d '"') elixir=$(expect "$w" elixir_pid | tr -d '"')
late=$(expect "$w" late_pid | tr -d '"')
"$ASAN" calls --by pid --format json "$w" >"$w.calls.json" 2>"$w.err"
check_cmd "names (real trace): calls --by pid shows the dump's names, the Elixir spelling and the later registration" \
    python3 - "$w.calls.json" "$early" "$elixir" "$late" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e, x, l = sys.argv[2:5]
got = {(f["pid"], f["process"], f["function"], f["count"]) for f in d["functions"]}
want = {(e, "bmt_an_early", "bmt_an_workload:sleep2/0", 5),
        (x, "BmtAn.Worker.init/1", "BmtAn.Worker.handle_call/3", 3),
        (l, "bmt_an_late", "bmt_an_workload:busy/0", 11)}
if got != want:
    print("# got  %r\n# want %r" % (sorted(got), sorted(want)))
sys.exit(0 if got == want else 1)
PY
check_cmd "names (real trace): no sanitizer report" [ ! -s "$w.err" ]
"$BT" calls --format json --pid bmt_an_late "$w" >"$w.late.json"
check_cmd "names (real trace): --pid bmt_an_late keeps its 11 calls, 7 made before it registered" \
    [ "$(jget "$w.late.json" "[(f['function'], f['count']) for f in d['functions']]")" = "[('bmt_an_workload:busy/0', 11)]" ]
"$BT" calls --format json --name 'BmtAn.*' "$w" >"$w.ex.json"
# A filter that matches nothing says so (issue 16): it used to print an
# empty table that read as "the trace has no function_call events".
"$BT" calls --name 'nomatch*' "$w" >"$w.nomatch.out" 2>"$w.nomatch.err"
rc=$?
check_cmd "names (real trace): calls --name 'nomatch*' exits 1 with one line saying it matches no process" \
    eval '[ $rc -eq 1 ] && [ "$(wc -l <"$w.nomatch.err")" -eq 1 ] && [ ! -s "$w.nomatch.out" ] &&
          grep -q "^beamtrace: .*--name .nomatch\*. matches no process of the trace" "$w.nomatch.err"'
# A filter that keeps a process without calls (code_server, named by the
# state dump) says the filter removed the trace's 19 calls, not that the
# trace has none (issue 16).
"$BT" calls --name code_server "$w" >"$w.nocalls.out" 2>&1
check_cmd "names (real trace): calls --name code_server says the filter removed the 19 function_call events" \
    eval 'grep -q "filter removed the 19 function_call events" "$w.nocalls.out" &&
          ! grep -q "trace with the call flag" "$w.nocalls.out"'
check_cmd "names (real trace): --name 'BmtAn.*' keeps the process whose initial call is BmtAn.Worker.init/1" \
    [ "$(jget "$w.ex.json" "[(f['function'], f['count']) for f in d['functions']]")" = "[('BmtAn.Worker.handle_call/3', 3)]" ]
"$BT" export -o "$w.chrome.json" "$w"
check_cmd "names (real trace): export names the tracks \"<pid> name\"" python3 - "$w.chrome.json" "$early" "$late" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {e["args"]["name"] for e in d["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name"}
want = {sys.argv[2] + " bmt_an_early", sys.argv[3] + " bmt_an_late"}
if not want <= names:
    print("# tracks %r" % sorted(names))
sys.exit(0 if want <= names and not any(n.endswith(" undefined") for n in names) else 1)
PY
check_cmd "names (real trace): view keeps OTP's text of the Elixir initial call (escaped as babeltrace2 does)" \
    grep -qF "entry = \"\\'Elixir.BmtAn.Worker\\':init/1\"" <("$BT" view "$w")

# The same workload written by LTTng: every analysis must agree.
bash test/analyses/lttng_compare.sh "$out" || tap_failures=$((tap_failures + 1))

"$BT" calls --format json "$out/w_calls" >"$out/calls.json"
for f in sleep2 busy; do
    want=$(expect "$out/w_calls" "${f}_p50_ns")
    got=$(jget "$out/calls.json" "[x['p50_ns'] for x in d['functions'] if x['function'] == 'bmt_an_workload:$f/0'][0]")
    n=$(jget "$out/calls.json" "[x['count'] for x in d['functions'] if x['function'] == 'bmt_an_workload:$f/0'][0]")
    check_cmd "calls: $f/0 p50 ${got} ns within 10% of the node's ${want} ns" \
        python3 -c "import sys; sys.exit(0 if abs($got - $want) <= 0.1 * $want else 1)"
    check_cmd "calls: $f/0 count ($n) as called" [ "$n" = "$([ $f = sleep2 ] && echo 100 || echo 10000)" ]
done
"$BT" calls "$out/w_calls" >"$out/calls.txt"
check_cmd "calls: text table lists both functions" \
    eval 'grep -q "bmt_an_workload:sleep2/0" "$out/calls.txt" && grep -q "bmt_an_workload:busy/0" "$out/calls.txt"'
"$BT" calls --slower-than 1ms --format json "$out/w_calls" >"$out/slow.json"
check_cmd "calls --slower-than 1ms lists all 100 sleeps and only calls over 1 ms, with pid and times" \
    python3 - "$out/slow.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["slow_calls"]
# busy/0 calls preempted for over 1 ms by a loaded machine may be listed too.
ok = sum(c["function"] == "bmt_an_workload:sleep2/0" for c in s) == 100
ok = ok and all(c["pid"].startswith("<") and c["end_ns"] - c["start_ns"] == c["duration_ns"] > 1000000
                and c["end_unix_ns"] - c["start_unix_ns"] == c["duration_ns"] for c in s)
sys.exit(0 if ok else 1)
PY
"$BT" calls --slower-than 1ms "$out/w_calls" >"$out/slow.txt"
n=$(jget "$out/slow.json" "len(d['slow_calls'])")
check_cmd "calls --slower-than text lists the same $n calls" \
    eval 'grep -q "^$n calls slower than 1.000 ms" "$out/slow.txt" && [ "$(grep -c " bmt_an_workload:" "$out/slow.txt")" -ge "$n" ]'
"$BT" calls --by pid --format json "$out/w_calls" >"$out/bypid.json"
check_cmd "calls --by pid: rows carry the pid" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["functions"] and all(f["pid"].startswith("<") for f in d["functions"]) else 1)' "$out/bypid.json"

"$BT" sched --format json "$out/w_sched" >"$out/sched.json"
want=$(expect "$out/w_sched" sched_p50_ns)
woken=$(expect "$out/w_sched" sched_woken_p50_ns)
got=$(jget "$out/sched.json" "d['p50_ns']")
# The p50 is the trace's: each send to a process paired with its next
# schedule-in, read with view, within 1% (the histogram's 0.4%). The node's
# own figures are printed, and bound it from above only: each traced
# latency ends before the receiver handled the ping (Tb), but on a loaded
# machine the receiver can be scheduled in before its resume (to handle
# signals) and the sender preempted between T0 and its send, so the resume
# (T1) is no lower bound (CI saw 53 ms traced against 95 ms to the resume).
"$BT" view --no-delta --gmt -t '*:message_send' -t '*:process_scheduled' "$out/w_sched" \
    >"$out/sched_view.txt"
check_cmd "sched: p50 ${got} ns is the trace's own send-to-schedule-in p50 (within 1%) and at most the node's ${woken} ns to the ping's handling (the resume: ${want} ns)" \
    python3 - "$out/sched_view.txt" "$got" "$woken" <<'PY'
import math, re, sys
lines, got, woken = open(sys.argv[1]).read().splitlines(), int(sys.argv[2]), int(sys.argv[3])
def ns(l):
    h, m, s, f = re.match(r"\[(\d\d):(\d\d):(\d\d)\.(\d{9})\]", l).groups()
    return ((int(h) * 60 + int(m)) * 60 + int(s)) * 10**9 + int(f)
pending, lat, t0 = {}, [], None
for l in lines:
    t = ns(l)
    t0 = t if t0 is None else t0
    t += 86400 * 10**9 if t < t0 else 0     # across midnight (UTC)
    m = re.search(r":message_send: .* to = \"(<[^\"]*>)\"", l)
    if m:
        pending.setdefault(m.group(1), t)
        continue
    m = re.search(r":process_scheduled: .* pid = \"(<[^\"]*>)\", .* type = \"in\"", l)
    if m and m.group(1) in pending:
        lat.append(t - pending.pop(m.group(1)))
lat.sort()
exact = lat[math.ceil(0.5 * len(lat)) - 1] if lat else 0
print("# sched: %d traced latencies, p50 %d ns; the analysis %d ns" % (len(lat), exact, got))
sys.exit(0 if lat and abs(got - exact) <= exact / 100 and got <= woken * 1.02 else 1)
PY
check_cmd "sched: one latency per ping ($(jget "$out/sched.json" "d['count']") of $(expect "$out/w_sched" rounds))" \
    [ "$(jget "$out/sched.json" "d['count']")" -ge "$(expect "$out/w_sched" rounds)" ]
"$BT" sched "$out/w_sched" >"$out/sched.txt"
check_cmd "sched: quantize table with @ bars" \
    eval 'grep -q "value  ------------- Distribution ------------- count" "$out/sched.txt" && grep -qE "^ +[0-9]+ \|@+ +[0-9]+$" "$out/sched.txt"'

"$BT" procs --format json "$out/w_procs" >"$out/procs.json"
check_cmd "procs: spawns = $(expect "$out/w_procs" spawns)" \
    [ "$(jget "$out/procs.json" "d['spawns']")" = "$(expect "$out/w_procs" spawns)" ]
check_cmd "procs: the children's exits have lifetimes" \
    [ "$(jget "$out/procs.json" "len(d['longest_lived'])")" = 10 ]
check_cmd "procs: per-second spawns sum to the total" \
    [ "$(jget "$out/procs.json" "sum(s['spawns'] for s in d['per_second'])")" = "$(expect "$out/w_procs" spawns)" ]

"$BT" gc --format json "$out/w_all" >"$out/gc.json"
TZ=UTC "$BT" view "$out/w_all" >"$out/all.view"
check_cmd "gc: reclaimed totals and counts equal the gc events" python3 - "$out/gc.json" "$out/all.view" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
rec = {"minor": 0, "major": 0}; ends = {"minor": 0, "major": 0}
for line in open(sys.argv[2]):
    m = re.search(r"gc_(minor|major)_end: .* reclaimed = (\d+)", line)
    if m:
        rec[m.group(1)] += int(m.group(2)); ends[m.group(1)] += 1
ok = all(d[k]["reclaimed_words"] == rec[k] and d[k]["count"] + 0 <= ends[k] for k in rec)
ok = ok and d["minor"]["count"] + d["major"]["count"] + d["unmatched"] >= ends["minor"] + ends["major"]
ok = ok and ends["minor"] > 0
sys.exit(0 if ok else 1)
PY

# ---- Chrome JSON and flame graphs ----
for t in "$out/w_all" "$out/w_calls"; do
    n=$(basename "$t")
    "$BT" export --format chrome "$t" -o "$out/$n.chrome.json"
    check_cmd "export $n: structural check (nesting, flows, names, ts >= 0)" \
        eval 'python3 test/analyses/check_chrome.py "$out/$n.chrome.json" >"$out/$n.chrome.check"'
    root_ns=$(sed -n 's/^root_call_ns //p' "$out/$n.chrome.check")
    # %.0f: mawk's %d stops at 2^31-1 (a loaded machine makes w_calls longer than 2.1 s).
    folded_ns=$("$BT" flame --folded --unit ns "$t" | awk '{s += $NF} END {printf "%.0f", s}')
    check_cmd "flame $n: folded ns sum ($folded_ns) = root-level call time ($root_ns)" [ "$folded_ns" = "$root_ns" ]
done
check_cmd "export w_all: flows from sends to receives" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if sum(e["ph"]=="f" for e in d["traceEvents"]) >= 50 else 1)' "$out/w_all.chrome.json"
check_cmd "export w_all: the registered name labels the track" \
    grep -q '"name":"<0\.[0-9]*\.0> bmt_an_main"' "$out/w_all.chrome.json"
# Issue 16: a collection is a slice as long as its pause (was a zero-width
# instant); nesting among the calls is checked by check_chrome.py above.
check_cmd "export w_all: each GC a slice (ph X) whose dur is its pause, some longer than 0" \
    python3 - "$out/w_all.chrome.json" <<'PY'
import json, sys
gc = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "gc"]
bad = [e for e in gc if e["ph"] != "X" or round(e["dur"] * 1000) != e["args"]["pause_ns"]]
print("# %d gc events, %d not a slice of their pause %s" % (len(gc), len(bad), bad[:2]))
sys.exit(0 if gc and not bad and any(e["dur"] > 0 for e in gc) else 1)
PY
"$BT" flame --folded "$out/w_all" >"$out/all.folded"
check_cmd "flame --folded: pid root frame, integer us counts" \
    grep -qE '^<0\.[0-9]+\.0> bmt_an_main;bmt_an_workload:outer/1;bmt_an_workload:middle/1;bmt_an_workload:sleep2/0 [0-9]+$' "$out/all.folded"
"$BT" flame --folded --merge-processes "$out/w_all" >"$out/merged.folded"
check_cmd "flame --merge-processes: stacks start at a function" \
    eval '! grep -q "^<" "$out/merged.folded" && [ -s "$out/merged.folded" ]'
"$BT" flame "$out/w_all" -o "$out/flame.svg"
check_cmd "flame SVG is well-formed XML with frames, tooltips and the zoom script" python3 - "$out/flame.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
t = ET.parse(sys.argv[1]).getroot()
gs = t.findall(".//s:g[@class='f']", ns)
ok = len(gs) >= 5 and all(g.find("s:title", ns) is not None for g in gs) and t.find("s:script", ns) is not None
sys.exit(0 if ok else 1)
PY

# ---- synthetic call-stack edge cases ----
"$out/make_traces" edges "$out/edges"
check_cmd "edge traces generated" [ -d "$out/edges/both" ]
check_calls() { # TRACE PYTHON-DICT of function -> (count, unfinished, exceptions, total_ns, own_ns)
    "$ASAN" calls --format json "$out/edges/$1" >"$out/edges/$1.json" 2>"$out/edges/$1.err" &&
    python3 - "$out/edges/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = {f["function"]: (f["count"], f["unfinished"], f["exceptions"], f["total_ns"], f["own_ns"]) for f in d["functions"]}
want = eval(sys.argv[2])
if got != want:
    print("# got  %r\n# want %r" % (got, want))
sys.exit(0 if got == want else 1)
PY
}
check_cmd "edges: exceptions through frames, caught exception, death mid-call, trace ending mid-call, early return, tail recursion" \
    check_calls edges "{'m:a/0': (1,0,1,5000,2000), 'm:b/0': (1,0,1,3000,3000), 'm:c/0': (1,0,0,3000,2000),
        'm:d/0': (1,0,1,1000,1000), 'm:e/0': (0,1,0,3000,1000), 'm:f/0': (0,1,0,2000,2000),
        'm:h/0': (1,0,0,1000,1000), 'm:g/0': (0,1,0,20000,20000), 'm:loop/1': (3,0,0,9000,5000)}"
check_cmd "edges: return_to only (tail-calling callers end when execution returns below them)" \
    check_calls return_to "{'m:run/0': (0,1,0,10000,5000), 'm:a/0': (1,0,0,5000,1000),
        'm:b/0': (1,0,0,4000,3000), 'm:c/0': (1,0,0,1000,1000)}"
# Before the first sign of return_to, a return_to pair looks like two returns:
# b/0 ends at its return_to (50) instead of its return (60); later pairs are exact.
check_cmd "edges: return_trace with return_to (OTP 25's sequence)" \
    check_calls both "{'m:run/0': (1,0,0,150,50), 'm:a/0': (1,0,0,60,30), 'm:b/0': (1,0,0,30,20),
        'm:c/0': (1,0,0,10,10), 'm:d/0': (1,0,0,40,30), 'm:e/0': (1,0,1,10,10)}"
check_cmd "edges: ignored returns counted" [ "$(jget "$out/edges/edges.json" "d['ignored_returns']")" = 1 ]
check_cmd "edges: folded stacks (ns) sum to root-level time 37000" \
    eval '[ "$("$ASAN" flame --folded --unit ns "$out/edges/edges" | awk "{s += \$NF} END {print s}")" = 37000 ]'
check_cmd "edges: dying process's stack in folded output" \
    eval '"$BT" flame --folded --unit ns "$out/edges/edges" | grep -qx "<0.3.0>;m:e/0;m:f/0 2000"'
for t in edges return_to both; do
    "$ASAN" export "$out/edges/$t" -o "$out/edges/$t.chrome.json" 2>"$out/edges/$t.export.err"
    check_cmd "export $t under ASan passes the structural check" \
        eval 'python3 test/analyses/check_chrome.py "$out/edges/$t.chrome.json" >/dev/null && [ ! -s "$out/edges/$t.export.err" ]'
done

# ---- where the time goes: a workload of known composition on one scheduler ----
# composed/1 computes 2 ms, waits ~5 ms for a reply, then stays runnable
# ~3 ms behind a high-priority process; the node measures each part itself.
erl +S 1:1 -noshell -pa ebin -pa "$out/ebin" -run bmt_an_workload main breakdown "$out/w_breakdown" \
    >"$out/w_breakdown.log" 2>&1
rc=$?
check_cmd "workload breakdown recorded without drops" \
    eval '[ "$rc" -eq 0 ] && [ "$(expect "$out/w_breakdown" discarded)" = 0 ]'
"$BT" calls --breakdown --format json "$out/w_breakdown" >"$out/breakdown.json"
"$BT" calls --breakdown "$out/w_breakdown" >"$out/breakdown.txt"
for k in waiting runnable; do
    want=$(expect "$out/w_breakdown" "${k}_p50_ns")
    got=$(jget "$out/breakdown.json" "[f['${k}_p50_ns'] for f in d['functions'] if f['function'] == 'bmt_an_workload:composed/1'][0]")
    # Within 25%: the parts are 2, 5 and 3 ms, so each is still told from
    # the others (the sum is checked exactly below); 10% failed on a loaded
    # machine (runnable 3.66 against the node's 3.09 ms, CI beside two runs).
    check_cmd "breakdown: composed/1 ${k} p50 ${got} ns within 25% of the node's ${want} ns" \
        python3 -c "import sys; sys.exit(0 if abs($got - $want) <= 0.25 * $want else 1)"
done
# On CPU: the node times its 2 ms spin by the wall clock, which is an upper
# bound: when the VM schedules the process out mid-spin (seen in CI, OTP 29
# beside two other runs: the node's p50 3.42 ms, the trace's 1.97 ms on CPU)
# the wall time grows and the time on CPU does not. So the trace's p50 is
# within 25% of the node's, or between 75% of the spin's 2 ms and the
# node's.
want=$(expect "$out/w_breakdown" on_cpu_p50_ns)
got=$(jget "$out/breakdown.json" "[f['on_cpu_p50_ns'] for f in d['functions'] if f['function'] == 'bmt_an_workload:composed/1'][0]")
check_cmd "breakdown: composed/1 on_cpu p50 ${got} ns within 25% of the node's ${want} ns, or between 1.5 ms and it" \
    python3 -c "import sys; sys.exit(0 if abs($got - $want) <= 0.25 * $want or 1500000 <= $got <= $want else 1)"
check_cmd "breakdown: per function, on CPU + runnable + waiting + GC + unknown = total; nothing lacking" python3 - "$out/breakdown.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d["functions"] if x["function"] == "bmt_an_workload:composed/1"][0]
parts = f["on_cpu_ns"] + f["runnable_ns"] + f["waiting_ns"] + f["gc_ns"] + f["unknown_ns"]
ok = parts == f["total_ns"] and d["lacks"] == [] and f["count"] == 30 and d["own_time"] == "on_cpu"
ok = ok and len(d["slowest_calls"]) == 10 and all(s["duration_ns"] >= d["slowest_calls"][-1]["duration_ns"] for s in d["slowest_calls"])
ok = ok and all(s["pid"].startswith("<") and s["on_cpu_ns"] + s["runnable_ns"] + s["waiting_ns"] + s["gc_ns"] + s["unknown_ns"] == s["duration_ns"] for s in d["slowest_calls"])
sys.exit(0 if ok else 1)
PY
check_cmd "breakdown: text shows the columns, per-call p50/p99 and the slowest calls" \
    eval 'grep -q "ON-CPU .*RUNNABLE .*WAITING .*GC" "$out/breakdown.txt" && grep -q "^the 10 slowest calls" "$out/breakdown.txt" && grep -q "OWN CPU" "$out/breakdown.txt"'
"$BT" calls --breakdown --format json "$out/w_calls" >"$out/nobreak.json"
check_cmd "breakdown without scheduling events: says it lacks them, all time unknown, OWN is wall time" python3 - "$out/nobreak.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = "running" in d["lacks"] and "receive" in d["lacks"] and d["own_time"] == "wall"
ok = ok and all(f["unknown_ns"] == f["total_ns"] and f["runnable_ns"] is None for f in d["functions"])
sys.exit(0 if ok else 1)
PY
"$BT" calls --breakdown "$out/w_calls" >"$out/nobreak.txt"
check_cmd "breakdown without scheduling events: the text says what to record" \
    grep -q "no process_scheduled events (the running flag)" "$out/nobreak.txt"
"$BT" flame --folded --unit ns "$out/w_breakdown" >"$out/breakdown.folded"
check_cmd "flame: off-CPU time as [runnable] and [waiting] frames above the function, on-CPU as its own" python3 - "$out/breakdown.folded" "$out/breakdown.json" <<'PY'
import json, sys
lines = [l.rsplit(" ", 1) for l in open(sys.argv[1]).read().splitlines()]
d = json.load(open(sys.argv[2]))
f = [x for x in d["functions"] if x["function"] == "bmt_an_workload:composed/1"][0]
get = lambda suffix: sum(int(n) for s, n in lines if s.endswith(suffix))
ok = get("composed/1;[waiting]") == f["waiting_ns"] and get("composed/1;[runnable]") == f["runnable_ns"]
ok = ok and get("composed/1") == f["on_cpu_ns"] + f["unknown_ns"]
sys.exit(0 if ok else 1)
PY
on=$("$BT" flame --folded --unit ns --on-cpu "$out/w_breakdown" | awk '{s += $NF} END {print s + 0}')
off=$("$BT" flame --folded --unit ns --off-cpu "$out/w_breakdown" | awk '{s += $NF} END {print s + 0}')
all=$(awk '{s += $NF} END {print s + 0}' "$out/breakdown.folded")
check_cmd "flame --on-cpu ($on ns) + --off-cpu ($off ns) = the default graph ($all ns) when no time is unknown" \
    python3 -c "import sys; sys.exit(0 if abs($on + $off - $all) <= $all * 0.001 else 1)"
"$BT" flame --on-cpu "$out/w_calls" >/dev/null 2>"$out/oncpu.err"
rc=$?
check_cmd "flame --on-cpu on a trace without scheduling events: exit 2, one line saying what is missing" \
    eval '[ $rc -eq 2 ] && [ "$(wc -l <"$out/oncpu.err")" -eq 1 ] && grep -q "running flag" "$out/oncpu.err"'

# Who ended the waits (issue 16), on a real node: ask/1 makes a
# gen_server:call to bmt_an_server, which sleeps 5 ms and replies (to the
# call's alias). The report's reading names the server as the state dump
# names it; calls' JSON gives its pid. Before: "mostly unknown" (a reply
# sent to an alias named no receiver, so the wait was not split).
w=$out/w_waker
server=$(expect "$w" server_pid | tr -d '"')
"$ASAN" report "$w" -o "$w.html" 2>"$w.err"
"$ASAN" calls --format json "$w" >"$w.json" 2>>"$w.err"
check_cmd "waker (real trace): no sanitizer report" [ ! -s "$w.err" ]
check_cmd "waker (real trace): the report reads ask/1 as mostly waiting on messages from bmt_an_server ($server), 100% of the wait" \
    python3 - "$w.html" "$server" <<'PY'
import html, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
rows = dict(re.findall(r'<td class="l name">([^<]*)</td>.*?<div class="reading">([^<]*)</div>', page, re.S))
got = html.unescape(rows.get("bmt_an_workload:ask/1", "(no row)"))
want = "mostly waiting on messages from bmt_an_server (%s), 100%% of the wait" % sys.argv[2]
print("# got %r" % got)
sys.exit(0 if got == want else 1)
PY
"$BT" calls --breakdown "$w" >"$w.txt"
check_cmd "waker (real trace): calls --breakdown says who ended ask/1's waits: 100% from bmt_an_server ($server)" \
    grep -qE "^ +[0-9.]+ [mu]?s  bmt_an_workload:ask/1  100% from bmt_an_server \($server\)\$" "$w.txt"
check_cmd "waker (real trace): calls --format json gives ask/1's waiting time all to the server's pid" \
    python3 - "$w.json" "$server" <<'PY'
import json, sys
f = [f for f in json.load(open(sys.argv[1]))["functions"] if f["function"] == "bmt_an_workload:ask/1"][0]
w = f.get("waiting_from", [])
print("# %r %r" % (f["waiting_ns"], w))
sys.exit(0 if f["waiting_ns"] > 0 and [(x["pid"], x["process"], x["waiting_ns"]) for x in w] ==
         [(sys.argv[2], "bmt_an_server", f["waiting_ns"])] and f["waiting_from_other_ns"] == 0 else 1)
PY

# ---- scenario traces with known answers ----
"$out/make_traces" scenarios "$out/sc"
sc=$out/sc
check_cmd "scenario traces generated" [ -d "$sc/names" ]

# Who ended the waits, synthetic (make_traces.c wakers): no sender over
# half of m:gather/0's wait, so the top two with their shares (one reply
# to an alias, one sender with no name); m:fanin/0's five senders fold the
# fifth into other (the tally keeps four).
"$ASAN" report "$sc/wakers" -o "$sc/wakers.html" 2>"$sc/wakers.err"
"$ASAN" calls --format json "$sc/wakers" >"$sc/wakers.json" 2>>"$sc/wakers.err"
check_cmd "wakers: the reading names the top two senders with their shares of the wait; no sanitizer report" \
    python3 - "$sc/wakers.html" "$sc/wakers.err" <<'PY'
import html, os, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
rows = dict(re.findall(r'<td class="l name">([^<]*)</td>.*?<div class="reading">([^<]*)</div>', page, re.S))
got = html.unescape(rows.get("m:gather/0", "(no row)"))
want = "mostly waiting on messages: 40% of the wait from a_one (<0.121.0>), 30% from <0.122.0>"
print("# got %r" % got)
sys.exit(0 if got == want and os.path.getsize(sys.argv[2]) == 0 else 1)
PY
"$BT" calls --breakdown "$sc/wakers" >"$sc/wakers.txt"
check_cmd "wakers: calls --breakdown lists each function's senders, most first, then others" \
    eval 'grep -qx " *10.000 ms  m:gather/0  40% from a_one (<0.121.0>), 30% from <0.122.0>" "$sc/wakers.txt" &&
          grep -qx " *5.000 ms  m:fanin/0  20% from <0.130.0>, 20% from <0.131.0>, 20% from <0.132.0>, 20% from <0.133.0>, 20% from others" "$sc/wakers.txt"'
check_cmd "wakers: calls --format json: four senders of m:fanin/0 named with 1 ms each, the fifth's 1 ms in other" \
    python3 - "$sc/wakers.json" <<'PY'
import json, sys
fs = {f["function"]: f for f in json.load(open(sys.argv[1]))["functions"]}
f, g = fs["m:fanin/0"], fs["m:gather/0"]
ok = [(x["pid"], x["waiting_ns"]) for x in f["waiting_from"]] == \
     [("<0.13%d.0>" % i, 1000000) for i in range(4)] and f["waiting_from_other_ns"] == 1000000
ok = ok and [(x["pid"], x["process"], x["waiting_ns"]) for x in g["waiting_from"]] == \
     [("<0.121.0>", "a_one", 4000000), ("<0.122.0>", "", 3000000)] and g["waiting_ns"] == 10000000
sys.exit(0 if ok else 1)
PY

# Names: state dump, spawn, late registration, Elixir.
"$ASAN" calls --by pid --format json "$sc/names" >"$sc/names.json" 2>"$sc/names.err"
check_cmd "names: every process shown with its name (dump name, label, initial call, later registration)" python3 - "$sc/names.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = {(f["pid"], f["process"], f["function"]) for f in d["functions"]}
want = {("<0.50.0>", "my_server", "my_server:handle_call/3"),
        ("<0.51.0>", '{queue,"q1"}', "rabbit_amqqueue_process:handle_cast/2"),
        ("<0.52.0>", "MyApp.Worker.init/1", "MyApp.Worker.handle_call/3"),
        ("<0.52.0>", "MyApp.Worker.init/1", "anonymous fn/1 in MyApp.Worker.handle_call/3"),
        ("<0.60.0>", "MyApp.Registry", "MyApp.Worker.handle_call/3")}
if got != want:
    print("# got  %r\n# want %r" % (sorted(got), sorted(want)))
sys.exit(0 if got == want else 1)
PY
funcs() { jget "$1" "sorted({f['function'] for f in d['functions']})"; }
"$BT" calls --format json --pid my_server "$sc/names" >"$sc/p1.json"
check_cmd "names: --pid NAME (from the state dump) keeps that process" \
    [ "$(funcs "$sc/p1.json")" = "['my_server:handle_call/3']" ]
kept() { jget "$1" "d['window']['processes']"; }
"$BT" calls --format json --pid MyApp.Registry "$sc/names" >"$sc/p2.json"
check_cmd "names: --pid NAME registered after the process's calls still keeps all of them (Elixir spelling)" \
    [ "$(funcs "$sc/p2.json") $(kept "$sc/p2.json")" = "['MyApp.Worker.handle_call/3'] ['<0.60.0>']" ]
"$BT" calls --format json --name 'MyApp.*' "$sc/names" >"$sc/p3.json"
check_cmd "names: --name PATTERN matches names and initial calls (Elixir's spelling)" \
    [ "$(kept "$sc/p3.json")" = "['<0.52.0>', '<0.60.0>']" ]
"$BT" calls --format json --pid 0.51.0 "$sc/names" >"$sc/p4.json"
"$BT" calls --format json --pid '<0.51.0>' "$sc/names" >"$sc/p4b.json"
check_cmd "names: --pid 0.51.0 and --pid '<0.51.0>' keep the same process" \
    [ "$(funcs "$sc/p4.json") $(kept "$sc/p4b.json")" = "['rabbit_amqqueue_process:handle_cast/2'] ['<0.51.0>']" ]
"$BT" calls --pid no_such_name "$sc/names" >"$sc/p5.txt" 2>"$sc/p5.err"
rc=$?
check_cmd "names: --pid of an unknown name: exit 1, one line saying it matches no process" \
    eval '[ $rc -eq 1 ] && [ ! -s "$sc/p5.txt" ] && grep -q "no_such_name. matches no process" "$sc/p5.err"'
"$BT" view "$sc/names" >"$sc/names.view"
check_cmd "names: view keeps OTP's text (escaped as babeltrace2 does)" \
    grep -qF "entry = \"\\'Elixir.MyApp.Worker\\':handle_call/3\"" "$sc/names.view"
"$BT" flame --folded --unit ns "$sc/names" >"$sc/names.folded"
check_cmd "names: flame roots and frames carry names, Elixir spelling" \
    eval 'grep -qx "<0.50.0> my_server;my_server:handle_call/3 1000000" "$sc/names.folded" && grep -q "^<0.52.0> MyApp.Worker.init/1;MyApp.Worker.handle_call/3;anonymous fn/1 in MyApp.Worker.handle_call/3" "$sc/names.folded"'
"$BT" export "$sc/names" -o "$sc/names.chrome.json"
check_cmd "names: export tracks named \"<pid> name\", functions in Elixir spelling, structure valid" \
    eval 'python3 test/analyses/check_chrome.py "$sc/names.chrome.json" >/dev/null && grep -q "\"name\":\"<0.60.0> MyApp.Registry\"" "$sc/names.chrome.json" && grep -q "\"name\":\"MyApp.Worker.handle_call/3\"" "$sc/names.chrome.json"'
check_cmd "names: procs shows the exited process by name" \
    eval '"$BT" procs "$sc/names" | grep -q "<0.60.0> MyApp.Registry"'
check_cmd "names: gc's top collectors carry names" \
    eval '"$BT" gc "$sc/names" | grep -q "<0.52.0> MyApp.Worker.init/1"'
check_cmd "sched --from first (default): the oldest unconsumed send, resolved through a name from the state dump (100 us)" \
    [ "$("$BT" sched --format json "$sc/names" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["from"], d["count"], d["max_ns"])')" = "first 1 100000" ]
check_cmd "sched --from last: the latest send, as the D script (60 us)" \
    [ "$("$BT" sched --from last --format json "$sc/names" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["from"], d["count"], d["max_ns"])')" = "last 1 60000" ]
"$BT" report "$sc/names" -o "$sc/names.html"
check_cmd "names: the report names processes" grep -q "&lt;0.60.0&gt; MyApp.Registry" "$sc/names.html"

# Runs the trace does not end (issue 16 item 1; make_traces.c phantom): each
# ends at its process's last event, never more running at once than the
# trace's 2 schedulers, and the report says how many runs ended so. (Before:
# A, C and E ran to the trace's end, 4 at once, the timeline at 100%, 70%,
# 60%.)
"$BT" export "$sc/phantom" -o "$sc/phantom.chrome.json"
check_cmd "phantom: export ends runs at the process's last event, at most 2 running at once" \
    python3 - "$sc/phantom.chrome.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in d["traceEvents"]
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
runs = sorted((names[(e["pid"], e["tid"])].split()[0], e["ts"], e["dur"], (e.get("args") or {}).get("end"))
              for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "running")
want = [("<0.70.0>", 0, 1000, "last event"), ("<0.71.0>", 2000, 3000, None),
        ("<0.72.0>", 6000, 0, "last event"), ("<0.73.0>", 7000, 3000, None),
        ("<0.74.0>", 8000, 1000, "last event")]
if [(p, round(t), round(u), e) for p, t, u, e in runs] != want:
    sys.exit("runs %r, want %r" % (runs, want))
edges = sorted([(t, 1) for _, t, u, _ in runs] + [(t + u, -1) for _, t, u, _ in runs],
               key=lambda x: (x[0], x[1]))
now = most = 0
for _, k in edges:
    now += k
    most = max(most, now)
sys.exit(0 if most <= 2 else "%d running at once on 2 schedulers" % most)
PY
# OWN CPU never counts time seen off CPU (issue 16 item 8; make_traces.c
# own_cpu): f/0 ran 2 ms of its 10, the other 8 off CPU for a reason the
# trace does not give. (Before: OWN CPU 10 ms against 2 ms on CPU.)
"$ASAN" calls --breakdown --format json "$sc/own_cpu" >"$sc/own_cpu.json" 2>"$sc/own_cpu.err"
check_cmd "own_cpu: OWN CPU 2 ms = ON-CPU, the 8 ms off CPU unknown, not own CPU" \
    eval '[ "$(jget "$sc/own_cpu.json" "[(f[\"own_ns\"], f[\"on_cpu_ns\"], f[\"unknown_ns\"], d[\"own_time\"]) for f in d[\"functions\"]]")" = "[(2000000, 2000000, 8000000, '"'"'on_cpu'"'"')]" ]'
# Files opened before the trace (issue 16; make_traces.c files_before): the
# operations without a path are counted, and the files the node had open
# are named. (Before: nothing said about the 3 operations.)
"$ASAN" files "$sc/files_before" >"$sc/files_before.txt" 2>"$sc/files_before.err"
"$BT" files --format json "$sc/files_before" >"$sc/files_before.json"
check_cmd "files_before: 'opened before the trace: 3 operations', the two open files named (text and JSON)" \
    eval 'grep -qx "opened before the trace: 3 operations" "$sc/files_before.txt" &&
          grep -qx "  /var/lib/app/data.log" "$sc/files_before.txt" && grep -qx "  /etc/app.conf" "$sc/files_before.txt" &&
          [ "$(jget "$sc/files_before.json" "d[\"opened_before\"]")" = "{'"'"'operations'"'"': 3, '"'"'open_files'"'"': ['"'"'/var/lib/app/data.log'"'"', '"'"'/etc/app.conf'"'"']}" ] &&
          [ ! -s "$sc/files_before.err" ]'
"$BT" report "$sc/phantom" -o "$sc/phantom.html"
check_cmd "phantom: the report says 3 runs ended at the process's last event, 2 at most at once, shares 5/15/0/15/5%" \
    eval 'grep -q "runs ended at the process.s last event</th><td>3<" "$sc/phantom.html" &&
          grep -q "most processes running at once</th><td>2<" "$sc/phantom.html" &&
          grep -q "3 runs had no end in the trace" "$sc/phantom.html" &&
          [ "$(grep -o "data-pid=\"&lt;0.7[0-4].0&gt;\" data-share=\"[0-9.]*\"" "$sc/phantom.html" | sort | sed "s/.*share=//" | tr -d "\"" | tr "\n" " ")" = "0.0500 0.1500 0.0000 0.1500 0.0500 " ]'

# A thread runs one process at a time (runs.h; make_traces.c dangling): on
# a node with 12 scheduler threads and 2 busy, processes that die untraced
# while running end at their last event when the next process is scheduled
# in on their thread. (Before: 5 "running at once"; on RabbitMQ 14 of its
# 2 + 2 + 10 schedulers.)
"$BT" export "$sc/dangling" -o "$sc/dangling.chrome.json"
"$BT" report "$sc/dangling" -o "$sc/dangling.html"
check_cmd "dangling: each X ends at its call when the next is scheduled in on its thread: 1 ms each, 2 at most at once, 4 runs ended so" \
    python3 - "$sc/dangling.chrome.json" "$sc/dangling.html" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in d["traceEvents"]
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
runs = sorted((names[(e["pid"], e["tid"])].split()[0], round(e["ts"]), round(e["dur"]))
              for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "running")
want = [("<0.90.0>", 0, 1000), ("<0.91.0>", 2000, 1000), ("<0.92.0>", 4000, 1000),
        ("<0.93.0>", 6000, 1000), ("<0.95.0>", 0, 10000)]
if runs != want:
    sys.exit("runs %r, want %r" % (runs, want))
html = open(sys.argv[2]).read()
most = re.search(r"most processes running at once</th><td>(\d+)<", html)
ended = re.search(r"runs ended at the process.s last event</th><td>(\d+)<", html)
if not most or most.group(1) != "2" or not ended or ended.group(1) != "4":
    sys.exit("report: most at once %s, ended %s; want 2 and 4"
             % (most and most.group(1), ended and ended.group(1)))
PY

# Dirty schedulers counted apart (make_traces.c dirty): 2 processes at
# once on the 2 normal schedulers, 3 on the 3 dirty ones, none ended early.
# (Before: one bound of 2 + 1 + 2, and "5 running at once".)
"$BT" report "$sc/dirty" -o "$sc/dirty.html"
check_cmd "dirty: the report shows 2 running at once on normal schedulers and 3 on dirty ones" \
    eval 'grep -q "most processes running at once</th><td>2<" "$sc/dirty.html" &&
          grep -q "most on dirty schedulers at once</th><td>3<" "$sc/dirty.html" &&
          grep -q "runs ended at the process.s last event</th><td>0<" "$sc/dirty.html"'
"$BT" export "$sc/dirty" -o "$sc/dirty.chrome.json"
check_cmd "dirty: the export marks the runs on dirty schedulers (C dirty_cpu, D and E dirty_io), the others not" \
    python3 - "$sc/dirty.chrome.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in d["traceEvents"]
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
got = sorted((names[(e["pid"], e["tid"])].split()[0], e.get("args", {}).get("scheduler"))
             for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "running")
want = [("<0.100.0>", None), ("<0.101.0>", None), ("<0.102.0>", "dirty_cpu"),
        ("<0.103.0>", "dirty_io"), ("<0.104.0>", "dirty_io")]
if got != want:
    sys.exit("runs %r, want %r" % (got, want))
PY

# Windows cutting calls, a GC pause and a latency in half.
"$ASAN" calls --format json --begin +5ms --end +25ms "$sc/window" >"$sc/w.json" 2>"$sc/w.err"
check_cmd "window: calls cut by either edge count their inside part only, as unfinished; whole ones as samples" python3 - "$sc/w.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = {f["function"]: (f["count"], f["unfinished"], f["total_ns"]) for f in d["functions"]}
want = {"w:f/0": (0, 1, 5000000), "w:g/0": (1, 0, 2000000), "w:h/0": (0, 1, 5000000)}
w = d["window"]
if got != want:
    print("# got %r" % got)
sys.exit(0 if got == want and w["duration_ns"] == 20000000 else 1)
PY
check_cmd "window: flame covers exactly the window's 12 ms of calls (GC inside f as [gc])" \
    eval '[ "$("$BT" flame --folded --unit ns --begin +5ms --end +25ms "$sc/window" | awk "{s += \$NF} END {print s}")" = 12000000 ] && "$BT" flame --folded --unit ns --begin +5ms --end +25ms "$sc/window" | grep -qx "<0.70.0>;w:f/0;\[gc\] 1000000"'
check_cmd "window: a GC pause straddling the start is cut, not a sample" \
    [ "$("$BT" gc --format json --begin +5ms "$sc/window" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["minor"]["count"], d["cut_by_window"])')" = "1 1" ]
check_cmd "window: a send -> in latency straddling the start is not counted" \
    [ "$("$BT" sched --format json --begin +5ms "$sc/window" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["count"], d["cut_by_window"])')" = "0 1" ]
check_cmd "window: procs counts the exit inside, with the lifetime from a spawn before it" \
    [ "$("$BT" procs --format json --begin +5ms "$sc/window" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["spawns"], d["exits"], d["longest_lived"][0]["lifetime_ns"])')" = "0 2 7000000" ]
"$BT" export --begin +5ms --end +25ms "$sc/window" -o "$sc/w.chrome.json"
check_cmd "window: export clips slices to the window, marks cut ones, times from the window's start" python3 - "$sc/w.chrome.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = {e["name"]: (e["ts"], e["dur"], e.get("args", {}).get("end")) for e in d["traceEvents"] if e["ph"] == "X" and e["cat"] == "call"}
ok = x == {"w:f/0": (0.0, 5000.0, "cut"), "w:g/0": (7000.0, 2000.0, None), "w:h/0": (15000.0, 5000.0, "unfinished")}
ok = ok and all(e.get("ts", 0) >= 0 for e in d["traceEvents"])
if not ok:
    print("# %r" % x)
sys.exit(0 if ok else 1)
PY
first=$("$BT" view --gmt "$sc/window" | head -1 | sed 's/^\[\([0-9:.]*\)\].*/\1/')
"$BT" calls --format json --begin "${first%?????????}005000000Z" --end +25ms "$sc/window" >"$sc/w2.json"
check_cmd "window: --begin as a wall time (HH:MM:SS.nnnnnnnnnZ) equals +5ms" \
    [ "$(jget "$sc/w2.json" "d['functions']")" = "$(jget "$sc/w.json" "d['functions']")" ]
check_cmd "window: a bad --begin is a usage error (exit 2, one line)" \
    eval '"$BT" calls --begin 12:0x "$sc/window" >/dev/null 2>"$sc/bad.err"; [ $? -eq 2 ] && [ "$(wc -l <"$sc/bad.err")" -eq 1 ]'
check_cmd "window: --end before --begin is a usage error" \
    eval '"$BT" calls --begin +5ms --end +1ms "$sc/window" >/dev/null 2>&1; [ $? -eq 2 ]'

# A flight recorder: cut stream 0's oldest packets as an overwriting ring does.
python3 - "$sc/overwrite/channel0_0" <<'PY'
import struct, sys
p = sys.argv[1]; d = open(p, "rb").read()
offs, off = [], 0
while off + 84 <= len(d):
    offs.append(off); off += struct.unpack_from("<Q", d, off + 56)[0] // 8
open(p, "wb").write(d[offs[len(offs) // 2]:])
PY
"$ASAN" calls --format json "$sc/overwrite" >"$sc/ow.json" 2>"$sc/ow.err"
span=$("$BT" stats --format json "$sc/overwrite" | python3 -c 'import json,sys; print(json.load(sys.stdin)["duration_ns"])')
check_cmd "flight recorder: calls whose start came before every stream had data are skipped; no call runs to the end; total time <= span ($span ns)" python3 - "$sc/ow.json" "$span" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); span = int(sys.argv[2])
f = d["functions"][0]
ok = len(d["functions"]) == 1 and f["unfinished"] == 0 and f["max_ns"] == 3000000 and f["total_ns"] <= span
ok = ok and d["window"]["complete_from_unix_ns"] is not None and f["count"] == f["total_ns"] // 3000000
sys.exit(0 if ok else 1)
PY
check_cmd "flight recorder: one warning line saying from when the trace is counted" \
    eval '[ "$(wc -l <"$sc/ow.err")" -eq 1 ] && grep -q "flight-recorder trace .* counted from" "$sc/ow.err"'

# 34 years between the first and last events, 40 KB: bounded memory everywhere.
span_ok=1
for c in stats view calls "calls --breakdown" sched procs gc files flame "flame --folded" export "report -o $sc/s34.html"; do
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$sc/s34.rss" "$BT" $c "$sc/span34" >/dev/null 2>"$sc/s34.err"
    rc=$?
    rss=$(tail -1 "$sc/s34.rss")
    n=$(grep -c "corrupt or unusual trace" "$sc/s34.err")
    lines=$(wc -l <"$sc/s34.err")
    if [ $rc -ne 0 ] || [ "$rss" -gt 65536 ] || { [ "$c" != view ] && { [ "$n" -ne 1 ] || [ "$lines" -ne 1 ]; }; }; then
        echo "# $c: exit $rc, ${rss} KB, $n warning(s) in $lines line(s)"; span_ok=0
    fi
    # shellcheck disable=SC2086
    "$ASAN" $c "$sc/span34" >/dev/null 2>"$sc/s34.asan" || { echo "# $c under ASan failed"; span_ok=0; }
    grep -qE 'Sanitizer|runtime error' "$sc/s34.asan" && { echo "# $c: sanitizer report"; span_ok=0; }
done
check_cmd "34-year trace: every subcommand exits 0 under 64 MB with one 'corrupt or unusual trace' line" [ $span_ok = 1 ]

# Memory independent of the trace's length: the same 64 processes, the same
# 72 stacks at most (8 functions, 2 deep), no churn; only the number of
# events grows, 1 M to 4 M (37 to 145 MB of CTF). Peak RSS may differ by at
# most 16 MB: a record of 8 bytes per event kept to the end would add 24 MB,
# the trace's pages left resident behind the reader 108 MB; the margin is
# for the allocator and the reader's 2 MiB release step per stream. The
# optimised binary, not ASan's: its shadow memory would be measured too.
# Then 20 000 processes with 1 M events: under 96 MB (each process's call
# stack used to start at 64 frames, 7 KiB: 180 MB here).
if [ -x /usr/bin/time ]; then
    "$out/make_traces" bench "$out/len1m" 1000000 64 2 0
    "$out/make_traces" bench "$out/len4m" 4000000 64 2 0
    "$out/make_traces" bench "$out/procs20k" 1000000 20000 1 0
    peak_kb() { # CMD...: the command's peak RSS in KB (empty if it failed)
        /usr/bin/time -f "%M" -o "$out/mem.rss" "$@" >/dev/null 2>"$out/mem.err" &&
            tail -1 "$out/mem.rss"
    }
    for c in "flame --folded" "flame -o $out/mem.svg" "report -o $out/mem.html"; do
        # shellcheck disable=SC2086
        a=$(peak_kb "$BT" $c "$out/len1m") b=$(peak_kb "$BT" $c "$out/len4m")
        # shellcheck disable=SC2086
        p=$(peak_kb "$BT" $c "$out/procs20k")
        echo "# ${c%% -o *}: peak RSS ${a:-failed} KB on 1 M events, ${b:-failed} KB on 4 M, ${p:-failed} KB with 20 000 processes"
        check "${c%% -o *}: peak RSS on 4 M events within 16 MB of 1 M's" \
            '[ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) -le 16384 ]'
        check "${c%% -o *}: 20 000 processes under 96 MB" '[ -n "$p" ] && [ "$p" -le 98304 ]'
    done
else
    skip "flame and report memory independent of the trace's length" "/usr/bin/time is missing (apt-get install time)"
fi

# The call tree's cap: pruned calls keep their time (charged to callers).
full=$("$BT" flame --folded --unit ns "$sc/stacks" | awk '{s += $NF} END {print s}')
capped=$(BEAMTRACE_MAX_STACKS=64 "$BT" flame --folded --unit ns "$sc/stacks" 2>"$sc/cap.err" | awk '{s += $NF} END {print s}')
check_cmd "stack cap: with 64 stacks the flame graph keeps all the time ($capped = $full ns) and says it pruned" \
    eval '[ "$capped" = "$full" ] && grep -q "the call tree reached 64 stacks" "$sc/cap.err"'

# Progress on stderr (forced: stderr is not a terminal here).
BEAMTRACE_PROGRESS=always "$BT" stats "$out/w_all" >"$sc/progress.out" 2>"$sc/progress.err"
check_cmd "progress: a line rewritten in place on stderr, erased at the end, stdout untouched" \
    python3 -c 'import sys; e = open(sys.argv[1], "rb").read(); sys.exit(0 if b"reading the trace: " in e and b"%" in e and e.endswith(b"\r\x1b[K") else 1)' "$sc/progress.err"
check_cmd "progress: stdout untouched" cmp -s "$sc/progress.out" <("$BT" stats "$out/w_all")

# ---- every subcommand under ASan/UBSan on the real trace ----
for c in "calls" "calls --by pid --slower-than 10us" "sched" "procs" "gc" "flame" "flame --folded" \
         "export" "report -o $out/asan.html" "calls --format json" "sched --format json" \
         "procs --format json" "gc --format json" "files" "files --format json"; do
    # shellcheck disable=SC2086
    "$ASAN" $c "$out/w_all" >"$out/asan.out" 2>"$out/asan.err"
    rc=$?
    check_cmd "$c under ASan/UBSan: exit 0, no report, JSON valid when asked" \
        eval '[ "$rc" -eq 0 ] && [ ! -s "$out/asan.err" ] && { case "$c" in *json*|export) python3 -m json.tool "$out/asan.out" >/dev/null;; esac; }'
done

# ---- the HTML report in headless Chromium ----
"$BT" report "$out/w_all" -o "$out/report.html"
check_cmd "report writes one self-contained page (no external URLs)" \
    eval '[ -s "$out/report.html" ] && ! grep -qE "(src|href)=\"(https?:)?//" "$out/report.html"'
# Counter charts (issue 16): the unit in a chart's title is the unit of its
# axis (scheduler utilisation said ppm above axis labels in %).
"$BT" report "$sc/report" -o "$out/counters.html"
check_cmd "report: a counter chart's title names the unit of its axis (scheduler utilisation in %)" \
    python3 - "$out/counters.html" <<'PY'
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
charts = re.findall(r'<svg class="chart counters"[^>]*data-counter="([^"]*)" data-unit="([^"]*)"'
                    r'[^>]*>(.*?)</svg>', page, re.S)
bad = []
for counter, unit, body in charts:
    title = re.search(r'<text class="title"[^>]*>(.*?)</text>', body).group(1)
    axis = re.findall(r'<text class="axis"[^>]*>(.*?)</text>', body)
    if unit == "ppm" and not (title.endswith("(%)") and axis[0].endswith("%")):
        bad.append((counter, title, axis))
sys.exit(0 if charts and any(u == "ppm" for _, u, _ in charts) and not bad else 1)
PY
# A counter keeps its value until its next sample: the charts draw steps
# (every segment level or upright), not slopes between samples.
check_cmd "report: counters drawn as steps (each segment of a counter line horizontal or vertical)" \
    python3 - "$out/counters.html" <<'PY'
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
lines = re.findall(r'<svg class="chart counters".*?</svg>', page, re.S)
polys = [p for svg in lines for p in re.findall(r'<polyline[^>]*points="([^"]*)"', svg)]
sloped = []
for pts in polys:
    xy = [tuple(map(float, p.split(","))) for p in pts.split()]
    sloped += [(a, b) for a, b in zip(xy, xy[1:]) if a[0] != b[0] and a[1] != b[1]]
print("# %d counter lines, %d sloped segments %s" % (len(polys), len(sloped), sloped[:3]))
sys.exit(0 if polys and any(len(p.split()) > 2 for p in polys) and not sloped else 1)
PY
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    skip "report renders in headless Chromium without console errors" "chromium is not installed (apt-get install chromium)"
else
    cflags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
            --disable-background-networking --disable-component-update --disable-sync
            --enable-logging=stderr --v=0)
    page="file://$root/$out/report.html"
    timeout 120 "$CHROMIUM" "${cflags[@]}" --user-data-dir="$(mktemp -d)" --dump-dom "$page" \
        >"$out/report.dom" 2>"$out/chromium.err"
    check_cmd "report: Chromium loads it and logs no console message" \
        eval '[ -s "$out/report.dom" ] && ! grep -qE "CONSOLE|Uncaught" "$out/chromium.err"'
    check_cmd "report: the rendered DOM has the charts, the flame graph (zoom script ran) and the timeline" \
        python3 - "$out/report.dom" <<'PY'
import sys
dom = open(sys.argv[1], encoding="utf-8").read()
ok = dom.count('class="chart"') >= 4 and 'id="bmtflame"' in dom and 'class="timeline"' in dom
ok = ok and ">bmt_an_workload:outer/1<" in dom.replace("</text>", "<") or ok and "bmt_an_workload:outer/1</text>" in dom
sys.exit(0 if ok else 1)
PY
    timeout 120 "$CHROMIUM" "${cflags[@]}" --user-data-dir="$(mktemp -d)" --window-size=1280,2600 \
        --screenshot="$root/$out/report.png" "$page" >/dev/null 2>&1
    check_cmd "report: screenshot taken ($out/report.png)" [ -s "$out/report.png" ]
    # Geometry, measured in the rendered page by test/analyses/check_report.js.
    # saturated: the first section (issue 16: the report leads with the
    # answer), measured in a 1600 px window.
    for t in report names saturated; do
        size=1400,3000
        [ $t = saturated ] && size=1600,2000
        "$BT" report "$sc/$t" -o "$out/geo-$t.html"
        { cat "$out/geo-$t.html"; echo "<script>"; cat test/analyses/check_report.js; echo "</script>"; } \
            >"$out/geo-$t-check.html"
        timeout 120 "$CHROMIUM" "${cflags[@]}" --user-data-dir="$(mktemp -d)" --window-size=$size \
            --dump-dom "file://$root/$out/geo-$t-check.html" >"$out/geo-$t.dom" 2>/dev/null
        python3 - "$out/geo-$t.dom" >"$out/geo-$t.json" <<'PY'
import html, json, re, sys
found = re.findall(r'<pre id="bmt-check">(\{.*?)</pre>', open(sys.argv[1], encoding="utf-8").read(), re.S)
print(html.unescape(found[-1]) if found else "{}")
PY
    done
    geo=$out/geo-report.json
    check_cmd "report (Chromium): every chart text inside its chart, titles clear of the statistics line, no overlapping axis labels, every bar as tall as its count" python3 - "$geo" "$out/geo-names.json" <<'PY'
import json, sys
ok = True
for path in sys.argv[1:]:
    d = json.load(open(path))
    ok = ok and len(d.get("charts", [])) >= 5
    for c in d.get("charts", []):
        if c["outside"] or c["title_overlaps"] or c["label_overlaps"] or c.get("bar_height_mismatch", 1):
            print("# %s: %r" % (c["title"], c)); ok = False
sys.exit(0 if ok else 1)
PY
    # The answer first (saturated, make_traces.c): the slowest functions by
    # p99, each bar's segments as wide as the breakdown's shares, the plain
    # line reading the dominant share. Before: the page opened with the
    # summary's counts and the shares were cells of a table further down.
    check_cmd "report (Chromium): the first section is the slowest functions by p99 with p50/p99, bar segments as wide as the shares, and the plain line (70% runnable: the schedulers were saturated)" \
        python3 - "$out/geo-saturated.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d.get("slowest", [])
ok = d.get("first_section", "").startswith("Slowest functions")
ok = ok and [r["name"] for r in rows] == ["m:mixed/0", "broker:handle_cast/2", "m:wait_reply/0",
                                         "m:inner/0"]
want = {"m:mixed/0": ("10.500 ms", {"on-cpu": 4.5 / 10.5, "runnable": 3.5 / 10.5, "waiting": 2.5 / 10.5},
                      "43% on CPU, 33% runnable"),
        "broker:handle_cast/2": ("10.000 ms", {"on-cpu": 0.3, "runnable": 0.7, "waiting": 0},
                                 "mostly runnable: the schedulers were saturated"),
        "m:wait_reply/0": ("10.000 ms", {"on-cpu": 0.2, "runnable": 0.1, "waiting": 0.7},
                           "mostly waiting on messages from replier (<0.102.0>), 100% of the wait"),
        "m:inner/0": ("100.000 us", {"on-cpu": 1, "runnable": 0, "waiting": 0},
                      "mostly on CPU: the function's own work")}
for r in rows if ok else []:
    p, shares, reading = want[r["name"]]
    segs = {s["kind"]: s for s in r["segs"]}
    good = r["p50"] == p and r["p99"] == p and r["reading"] == reading and set(segs) == set(shares)
    for k, v in shares.items():
        good = good and k in segs and abs(segs[k]["share"] - v) < 1e-4 and abs(segs[k]["width"] - v) < 0.005
    if not good:
        print("# %r" % r)
    ok = ok and good
sys.exit(0 if ok else 1)
PY
    check_cmd "report (Chromium): in a 1600 px window the slowest functions, the timeline and the flame graph span >= 90% of its width" \
        python3 - "$out/geo-saturated.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["widths"]
print("# %r" % w)
sys.exit(0 if w["window"] == 1600 and min(w["slowest"], w["timeline"], w["flame"]) >= 0.9 * 1600 else 1)
PY
    check_cmd "report (Chromium): histogram labels keep their first digit (a 524288 ns call reads 524 µs)" python3 - "$geo" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["charts"] if c["title"] == "call latency: r:exact/0"][0]
sys.exit(0 if c["labels"] == ["524 \u00b5s"] else 1)
PY
    check_cmd "report (Chromium): a long chart title is cut to fit, the full title in its tooltip" python3 - "$geo" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["charts"] if c["full_title"].startswith("call latency: a_module")][0]
sys.exit(0 if c["title"].endswith("\u2026") and len(c["title"]) < len(c["full_title"]) and not c["outside"] else 1)
PY
    check_cmd "report (Chromium): a process that exits while running stops at its exit (65 us, not to the end)" python3 - "$geo" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = [l for l in d["lanes"] if l["pid"] == "<0.90.0>"][0]
sys.exit(0 if x["exit_x"] is not None and x["last_bar_right"] <= x["exit_x"] + 0.01 and x["data_share"] < 0.001 else 1)
PY
    check_cmd "report (Chromium): utilisation drawn as a share: 1.1% of the time paints 1.1% of the lane, and says 1.1%" python3 - "$geo" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
y = [l for l in d["lanes"] if l["pid"] == "<0.91.0>"][0]
z = [l for l in d["lanes"] if l["pid"] == "<0.92.0>"][0]
ok = abs(y["painted_share"] - 0.011) < 0.001 and y["share_text"] == "1.1%" and "mostly_idle" in y["label"]
ok = ok and z["painted_share"] > 0.99 and z["share_text"] == "100%" and all(l["label_inside"] for l in d["lanes"])
sys.exit(0 if ok else 1)
PY
    check_cmd "report (Chromium): counter charts - a line per instance with its peak (a queue's 12345 under a name cut to fit), 8 of 12 run queues drawn and the rest said, utilisation in %" python3 - "$geo" "$out/geo-report.html" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
page = open(sys.argv[2], encoding="utf-8").read()
by = {c["full_title"]: c for c in d["charts"]}
mq, rq, su, mem = (by.get(k) for k in ("message_queue (messages)", "run_queue (count)",
                                       "scheduler_utilization (%)", "memory (bytes)"))
ok = None not in (mq, rq, su, mem)
if ok:
    leg = mq["legend"]
    ok = len(leg) == 1 and leg[0].startswith("<0.93.0> a_registered") and leg[0].endswith("\u2026")
    ok = ok and 'data-peak="12345" data-samples="21"' in page
    ok = ok and rq["lines"] == 8 and len(rq["legend"]) == 8 and "run_queue (count): 12 instances, 8 drawn." in page
    ok = ok and su["legend"][0] == "total  peak 52%" and mem["legend"][0] == "total  peak 120 MiB"
    ok = ok and su["axis"][:2] == ["100%", "50%"]
    ok = ok and all(not c["outside"] for c in (mq, rq, su, mem))
if not ok:
    print("# %r" % [mq, rq, su, mem])
sys.exit(0 if ok else 1)
PY
fi

# ---- malformed traces and bad command lines ----
# shellcheck disable=SC2086
$CC -std=gnu11 -O1 $WARN -Ic_src -Itest/lib -o "$out/make_corpus" test/cli/make_corpus.c test/lib/trace_gen.c $CORE &&
    "$out/make_corpus" "$out/corpus" >/dev/null
check_cmd "malformed corpus generated" [ -d "$out/corpus/bad" ]
bad_ok=1
for dir in "$out"/corpus/bad/*/ /nonexistent; do
    dir=${dir%/}
    for c in calls sched procs gc flame export messages "report -o $out/bad.html"; do
        # shellcheck disable=SC2086
        "$ASAN" $c "$dir" >/dev/null 2>"$out/bad.err"
        rc=$?
        if [ "$rc" -ne 1 ] || [ "$(wc -l <"$out/bad.err")" -ne 1 ] || grep -qE 'Sanitizer|runtime error' "$out/bad.err"; then
            echo "# $c $dir: exit $rc, stderr:"; sed 's/^/#   /' "$out/bad.err"; bad_ok=0
        fi
    done
done
check_cmd "malformed traces: every subcommand prints one error line and exits 1, no sanitizer report" [ $bad_ok = 1 ]
# 60 mutated traces (FUZZ_RUNS_ANALYSES): each runs nine analyses twice under
# ASan, a few seconds of CPU a trace; `make fuzz` reads 10 000 with every command.
python3 test/cli/fuzz.py --seed 4242 --vs-generic --cmds "calls --breakdown,sched --from last,procs,gc,flame --folded,export -o /dev/null,messages,report -o /dev/null,calls --begin +1ms --name my*" \
    "$ASAN" "$out" "${FUZZ_RUNS_ANALYSES:-60}" "$out/w_all" "$sc/names" >"$out/fuzz.log" 2>&1
rc=$?
tail -1 "$out/fuzz.log"
check_cmd "mutation fuzz of every analysis under ASan/UBSan: no crash, hang or sanitizer report, the same with BEAMTRACE_READER=generic" [ $rc -eq 0 ]
[ $rc -eq 0 ] || grep '^# run' "$out/fuzz.log" | head
# ---- compiled decoders and field sets against the type-tree walk ----
# Each analysis decodes only the fields its accumulators read, with the
# compiled decoders (ctf/plan.h); BEAMTRACE_READER=generic decodes every
# field of every event by walking its type tree, as before. Same bytes out,
# on every trace of this group (real and synthetic).
same_ok=1 same_n=0
for t in "$out"/w_* "$out/edges" "$sc"/*/ "$out"/corpus/good/*/; do
    t=${t%/}
    [ -d "$t" ] && [ -n "$(find "$t" -name metadata -print -quit)" ] || continue
    for c in "calls --by pid --breakdown" "sched" "procs" "gc" "flame --folded" "messages" \
             "files --format json" "stats"; do
        # shellcheck disable=SC2086
        "$ASAN" $c "$t" >"$out/same.fast" 2>"$out/same.fast.err"
        a=$?
        # shellcheck disable=SC2086
        BEAMTRACE_READER=generic "$ASAN" $c "$t" >"$out/same.walk" 2>"$out/same.walk.err"
        b=$?
        same_n=$((same_n + 1))
        if [ $a != $b ] || ! cmp -s "$out/same.fast" "$out/same.walk" ||
           ! cmp -s "$out/same.fast.err" "$out/same.walk.err"; then
            echo "# $c $t: exit $a vs $b"; diff "$out/same.fast" "$out/same.walk" | head -5 | sed 's/^/#   /'
            same_ok=0
        fi
    done
    for c in export report; do
        "$ASAN" $c "$t" -o "$out/same.fast" 2>"$out/same.fast.err"
        a=$?
        BEAMTRACE_READER=generic "$ASAN" $c "$t" -o "$out/same.walk" 2>"$out/same.walk.err"
        b=$?
        same_n=$((same_n + 1))
        if [ $a != $b ] || ! cmp -s "$out/same.fast" "$out/same.walk" ||
           ! cmp -s "$out/same.fast.err" "$out/same.walk.err"; then
            echo "# $c $t: exit $a vs $b"; same_ok=0
        fi
    done
done
check_cmd "every analysis gives the same bytes with its field set and compiled decoders as with every field walked ($same_n runs, unselected fields poisoned)" \
    eval '[ $same_ok = 1 ] && [ $same_n -gt 100 ]'

good_ok=1
for dir in "$out"/corpus/good/*/; do
    for c in calls "calls --by pid --slower-than 1ns --format json" sched procs gc flame \
             "flame --folded" messages "messages --format json" "report -o $out/good.html"; do
        # shellcheck disable=SC2086
        "$ASAN" $c "$dir" >/dev/null 2>"$out/good.err" || { echo "# $c $dir failed"; good_ok=0; }
        grep -qE 'Sanitizer|runtime error' "$out/good.err" && { echo "# $c $dir: sanitizer report"; good_ok=0; }
    done
    "$ASAN" export "$dir" -o "$out/good.json" 2>"$out/good.err" &&
        python3 test/analyses/check_chrome.py "$out/good.json" >/dev/null || { echo "# export $dir"; good_ok=0; }
done
check_cmd "random good corpus (odd strings, drops, ties): every subcommand exits 0 under ASan, Chrome JSON valid" [ $good_ok = 1 ]
usage_ok=1
while IFS= read -r line; do
    # shellcheck disable=SC2086
    "$BT" $line >/dev/null 2>"$out/usage.err"
    rc=$?
    if [ "$rc" -ne 2 ] || [ "$(wc -l <"$out/usage.err")" -ne 1 ] || ! grep -q "^beamtrace: " "$out/usage.err"; then
        echo "# beamtrace $line: exit $rc"; sed 's/^/#   /' "$out/usage.err"; usage_ok=0
    fi
done <<EOF2
calls
calls --bogus $out/w_all
calls --slower-than 1parsec $out/w_all
calls --slower-than $out/w_all
calls --by module $out/w_all
calls --top x $out/w_all
calls --format xml $out/w_all
messages --top x $out/w_all
messages $out/w_all --bogus
sched --slower-than 1ms $out/w_all
procs --format
gc -x $out/w_all
flame --unit ms $out/w_all
flame --width 5 $out/w_all
export --format json2 $out/w_all
export --format text $out/w_all
report $out/w_all
EOF2
check_cmd "bad options: one 'beamtrace: ...' line and exit 2" [ $usage_ok = 1 ]
for c in calls sched procs gc flame export messages report; do
    check_cmd "$c --help prints usage and exits 0" eval '"$BT" $c --help | grep -q "^Usage: beamtrace $c"'
done
exit $((tap_failures > 0))
