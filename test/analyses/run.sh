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
CORE="c_src/catalogue.c c_src/event.c c_src/ctf_packet.c c_src/ctf_metadata.c c_src/ring.c c_src/trace_dir.c"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
failed=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; failed=1; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
skip() { echo "ok - $1 # SKIP $2"; }
BT="$root/priv/beamtrace"
ASAN="$root/$out/beamtrace-asan"
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
expect() { sed -n "s/^$2 //p" "$1.expect"; }

check "make priv/beamtrace builds warning-free" make -s priv/beamtrace
# The CLI's sources exactly as the Makefile lists them.
CLI_SRC=$(make -s --no-print-directory print-CLI_SRC)
# shellcheck disable=SC2086
check "sanitizer build of the CLI" $CC -std=gnu11 -O1 -g $WARN $SAN -Ic_src -Ic_src/cli \
    -o "$ASAN" $CLI_SRC -lm
# shellcheck disable=SC2086
check "trace generator builds" $CC -std=gnu11 -O2 -g $WARN -Ic_src -o "$out/make_traces" \
    -Itest/lib test/analyses/make_traces.c test/lib/trace_gen.c $CORE
check "workload module compiles" erlc -o "$out/ebin" test/analyses/bmt_an_workload.erl
[ -x "$BT" ] && [ -x "$ASAN" ] && [ -x "$out/make_traces" ] || { echo "# cannot continue"; exit 1; }

# ---- workloads on a real node ----
for k in calls sched procs all; do
    erl -noshell -pa ebin -pa "$out/ebin" -run bmt_an_workload main "$k" "$out/w_$k" \
        >"$out/w_$k.log" 2>&1
    check "workload $k recorded without drops" \
        eval '[ $? -eq 0 ] && [ "$(expect "$out/w_$k" discarded)" = 0 ]'
done

"$BT" calls --format json "$out/w_calls" >"$out/calls.json"
for f in sleep2 busy; do
    want=$(expect "$out/w_calls" "${f}_p50_ns")
    got=$(jget "$out/calls.json" "[x['p50_ns'] for x in d['functions'] if x['function'] == 'bmt_an_workload:$f/0'][0]")
    n=$(jget "$out/calls.json" "[x['count'] for x in d['functions'] if x['function'] == 'bmt_an_workload:$f/0'][0]")
    check "calls: $f/0 p50 ${got} ns within 10% of the node's ${want} ns" \
        python3 -c "import sys; sys.exit(0 if abs($got - $want) <= 0.1 * $want else 1)"
    check "calls: $f/0 count ($n) as called" [ "$n" = "$([ $f = sleep2 ] && echo 100 || echo 10000)" ]
done
"$BT" calls "$out/w_calls" >"$out/calls.txt"
check "calls: text table lists both functions" \
    eval 'grep -q "bmt_an_workload:sleep2/0" "$out/calls.txt" && grep -q "bmt_an_workload:busy/0" "$out/calls.txt"'
"$BT" calls --slower-than 1ms --format json "$out/w_calls" >"$out/slow.json"
check "calls --slower-than 1ms lists all 100 sleeps and only calls over 1 ms, with pid and times" \
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
check "calls --slower-than text lists the same $n calls" \
    eval 'grep -q "^$n calls slower than 1.000 ms" "$out/slow.txt" && [ "$(grep -c " bmt_an_workload:" "$out/slow.txt")" -ge "$n" ]'
"$BT" calls --by pid --format json "$out/w_calls" >"$out/bypid.json"
check "calls --by pid: rows carry the pid" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["functions"] and all(f["pid"].startswith("<") for f in d["functions"]) else 1)' "$out/bypid.json"

"$BT" sched --format json "$out/w_sched" >"$out/sched.json"
want=$(expect "$out/w_sched" sched_p50_ns)
got=$(jget "$out/sched.json" "d['p50_ns']")
check "sched: p50 ${got} ns in the power-of-two bucket of the node's ${want} ns" \
    python3 -c "import sys; sys.exit(0 if int($got).bit_length() == int($want).bit_length() else 1)"
check "sched: one latency per ping ($(jget "$out/sched.json" "d['count']") of $(expect "$out/w_sched" rounds))" \
    [ "$(jget "$out/sched.json" "d['count']")" -ge "$(expect "$out/w_sched" rounds)" ]
"$BT" sched "$out/w_sched" >"$out/sched.txt"
check "sched: quantize table with @ bars" \
    eval 'grep -q "value  ------------- Distribution ------------- count" "$out/sched.txt" && grep -qE "^ +[0-9]+ \|@+ +[0-9]+$" "$out/sched.txt"'

"$BT" procs --format json "$out/w_procs" >"$out/procs.json"
check "procs: spawns = $(expect "$out/w_procs" spawns)" \
    [ "$(jget "$out/procs.json" "d['spawns']")" = "$(expect "$out/w_procs" spawns)" ]
check "procs: the children's exits have lifetimes" \
    [ "$(jget "$out/procs.json" "len(d['longest_lived'])")" = 10 ]
check "procs: per-second spawns sum to the total" \
    [ "$(jget "$out/procs.json" "sum(s['spawns'] for s in d['per_second'])")" = "$(expect "$out/w_procs" spawns)" ]

"$BT" gc --format json "$out/w_all" >"$out/gc.json"
TZ=UTC "$BT" view "$out/w_all" >"$out/all.view"
check "gc: reclaimed totals and counts equal the gc events" python3 - "$out/gc.json" "$out/all.view" <<'PY'
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
    check "export $n: structural check (nesting, flows, names, ts >= 0)" \
        eval 'python3 test/analyses/check_chrome.py "$out/$n.chrome.json" >"$out/$n.chrome.check"'
    root_ns=$(sed -n 's/^root_call_ns //p' "$out/$n.chrome.check")
    folded_ns=$("$BT" flame --folded --unit ns "$t" | awk '{s += $NF} END {printf "%d", s}')
    check "flame $n: folded ns sum ($folded_ns) = root-level call time ($root_ns)" [ "$folded_ns" = "$root_ns" ]
done
check "export w_all: flows from sends to receives" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if sum(e["ph"]=="f" for e in d["traceEvents"]) >= 50 else 1)' "$out/w_all.chrome.json"
check "export w_all: the registered name labels the track" \
    grep -q '"name":"<0\.[0-9]*\.0> bmt_an_main"' "$out/w_all.chrome.json"
"$BT" flame --folded "$out/w_all" >"$out/all.folded"
check "flame --folded: pid root frame, integer us counts" \
    grep -qE '^<0\.[0-9]+\.0> bmt_an_main;bmt_an_workload:outer/1;bmt_an_workload:middle/1;bmt_an_workload:sleep2/0 [0-9]+$' "$out/all.folded"
"$BT" flame --folded --merge-processes "$out/w_all" >"$out/merged.folded"
check "flame --merge-processes: stacks start at a function" \
    eval '! grep -q "^<" "$out/merged.folded" && [ -s "$out/merged.folded" ]'
"$BT" flame "$out/w_all" -o "$out/flame.svg"
check "flame SVG is well-formed XML with frames, tooltips and the zoom script" python3 - "$out/flame.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
t = ET.parse(sys.argv[1]).getroot()
gs = t.findall(".//s:g[@class='f']", ns)
ok = len(gs) >= 5 and all(g.find("s:title", ns) is not None for g in gs) and t.find("s:script", ns) is not None
sys.exit(0 if ok else 1)
PY

# ---- synthetic call-stack edge cases ----
"$out/make_traces" edges "$out/edges"
check "edge traces generated" [ -d "$out/edges/both" ]
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
check "edges: exceptions through frames, caught exception, death mid-call, trace ending mid-call, early return, tail recursion" \
    check_calls edges "{'m:a/0': (1,0,1,5000,2000), 'm:b/0': (1,0,1,3000,3000), 'm:c/0': (1,0,0,3000,2000),
        'm:d/0': (1,0,1,1000,1000), 'm:e/0': (0,1,0,3000,1000), 'm:f/0': (0,1,0,2000,2000),
        'm:h/0': (1,0,0,1000,1000), 'm:g/0': (0,1,0,20000,20000), 'm:loop/1': (3,0,0,9000,5000)}"
check "edges: return_to only (tail-calling callers end when execution returns below them)" \
    check_calls return_to "{'m:run/0': (0,1,0,10000,5000), 'm:a/0': (1,0,0,5000,1000),
        'm:b/0': (1,0,0,4000,3000), 'm:c/0': (1,0,0,1000,1000)}"
# Before the first sign of return_to, a return_to pair looks like two returns:
# b/0 ends at its return_to (50) instead of its return (60); later pairs are exact.
check "edges: return_trace with return_to (OTP 25's sequence)" \
    check_calls both "{'m:run/0': (1,0,0,150,50), 'm:a/0': (1,0,0,60,30), 'm:b/0': (1,0,0,30,20),
        'm:c/0': (1,0,0,10,10), 'm:d/0': (1,0,0,40,30), 'm:e/0': (1,0,1,10,10)}"
check "edges: ignored returns counted" [ "$(jget "$out/edges/edges.json" "d['ignored_returns']")" = 1 ]
check "edges: folded stacks (ns) sum to root-level time 37000" \
    eval '[ "$("$ASAN" flame --folded --unit ns "$out/edges/edges" | awk "{s += \$NF} END {print s}")" = 37000 ]'
check "edges: dying process's stack in folded output" \
    eval '"$BT" flame --folded --unit ns "$out/edges/edges" | grep -qx "<0.3.0>;m:e/0;m:f/0 2000"'
for t in edges return_to both; do
    "$ASAN" export "$out/edges/$t" -o "$out/edges/$t.chrome.json" 2>"$out/edges/$t.export.err"
    check "export $t under ASan passes the structural check" \
        eval 'python3 test/analyses/check_chrome.py "$out/edges/$t.chrome.json" >/dev/null && [ ! -s "$out/edges/$t.export.err" ]'
done

# ---- every subcommand under ASan/UBSan on the real trace ----
for c in "calls" "calls --by pid --slower-than 10us" "sched" "procs" "gc" "flame" "flame --folded" \
         "export" "report -o $out/asan.html" "calls --format json" "sched --format json" \
         "procs --format json" "gc --format json"; do
    # shellcheck disable=SC2086
    "$ASAN" $c "$out/w_all" >"$out/asan.out" 2>"$out/asan.err"
    check "$c under ASan/UBSan: exit 0, no report, JSON valid when asked" \
        eval '[ $? -eq 0 ] && [ ! -s "$out/asan.err" ] && { case "$c" in *json*|export) python3 -m json.tool "$out/asan.out" >/dev/null;; esac; }'
done

# ---- the HTML report in headless Chromium ----
"$BT" report "$out/w_all" -o "$out/report.html"
check "report writes one self-contained page (no external URLs)" \
    eval '[ -s "$out/report.html" ] && ! grep -qE "(src|href)=\"(https?:)?//" "$out/report.html"'
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
    check "report: Chromium loads it and logs no console message" \
        eval '[ -s "$out/report.dom" ] && ! grep -qE "CONSOLE|Uncaught" "$out/chromium.err"'
    check "report: the rendered DOM has the charts, the flame graph (zoom script ran) and the timeline" \
        python3 - "$out/report.dom" <<'PY'
import sys
dom = open(sys.argv[1], encoding="utf-8").read()
ok = dom.count('class="chart"') >= 4 and 'id="bmtflame"' in dom and 'class="timeline"' in dom
ok = ok and ">bmt_an_workload:outer/1<" in dom.replace("</text>", "<") or ok and "bmt_an_workload:outer/1</text>" in dom
sys.exit(0 if ok else 1)
PY
    timeout 120 "$CHROMIUM" "${cflags[@]}" --user-data-dir="$(mktemp -d)" --window-size=1280,2600 \
        --screenshot="$root/$out/report.png" "$page" >/dev/null 2>&1
    check "report: screenshot taken ($out/report.png)" [ -s "$out/report.png" ]
fi

# ---- malformed traces and bad command lines ----
# shellcheck disable=SC2086
$CC -std=gnu11 -O1 $WARN -Ic_src -Itest/lib -o "$out/make_corpus" test/cli/make_corpus.c test/lib/trace_gen.c $CORE &&
    "$out/make_corpus" "$out/corpus" >/dev/null
check "malformed corpus generated" [ -d "$out/corpus/bad" ]
bad_ok=1
for dir in "$out"/corpus/bad/*/ /nonexistent; do
    dir=${dir%/}
    for c in calls sched procs gc flame export "report -o $out/bad.html"; do
        # shellcheck disable=SC2086
        "$ASAN" $c "$dir" >/dev/null 2>"$out/bad.err"
        rc=$?
        if [ "$rc" -ne 1 ] || [ "$(wc -l <"$out/bad.err")" -ne 1 ] || grep -qE 'Sanitizer|runtime error' "$out/bad.err"; then
            echo "# $c $dir: exit $rc, stderr:"; sed 's/^/#   /' "$out/bad.err"; bad_ok=0
        fi
    done
done
check "malformed traces: every subcommand prints one error line and exits 1, no sanitizer report" [ $bad_ok = 1 ]
good_ok=1
for dir in "$out"/corpus/good/*/; do
    for c in calls "calls --by pid --slower-than 1ns --format json" sched procs gc flame \
             "flame --folded" "report -o $out/good.html"; do
        # shellcheck disable=SC2086
        "$ASAN" $c "$dir" >/dev/null 2>"$out/good.err" || { echo "# $c $dir failed"; good_ok=0; }
        grep -qE 'Sanitizer|runtime error' "$out/good.err" && { echo "# $c $dir: sanitizer report"; good_ok=0; }
    done
    "$ASAN" export "$dir" -o "$out/good.json" 2>"$out/good.err" &&
        python3 test/analyses/check_chrome.py "$out/good.json" >/dev/null || { echo "# export $dir"; good_ok=0; }
done
check "random good corpus (odd strings, drops, ties): every subcommand exits 0 under ASan, Chrome JSON valid" [ $good_ok = 1 ]
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
calls $out/w_all $out/w_calls
sched --slower-than 1ms $out/w_all
procs --format
gc -x $out/w_all
flame --unit ms $out/w_all
flame --width 5 $out/w_all
export --format json2 $out/w_all
export --format text $out/w_all
report $out/w_all
EOF2
check "bad options: one 'beamtrace: ...' line and exit 2" [ $usage_ok = 1 ]
for c in calls sched procs gc flame export report; do
    check "$c --help prints usage and exits 0" eval '"$BT" $c --help | grep -q "^usage: beamtrace $c"'
done
exit $failed
