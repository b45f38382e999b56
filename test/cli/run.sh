#!/usr/bin/env bash
# CLI tests: builds beamtrace (and a sanitizer build of it), writes the
# corpus, then checks `view` against babeltrace2 byte for byte, `stats`
# against babeltrace2's event count and the generator's drop count, clean
# one-line errors without sanitizer reports on every malformed trace, the
# filters, `list`, command-line errors, and every option of every command
# (test/cli/options.py). TAP lines; exit 1 on failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=test/out/cli
mkdir -p "$out"
CC=${CC:-cc}
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror"
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
# The Makefile's own source lists, so sanitizer builds never drift from it.
CORE=$(make -s --no-print-directory -C "$root" print-CORE_SRC)
CLI_SRC=$(make -s --no-print-directory -C "$root" print-CLI_SRC)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
TAP_PREFIX=""
. "$root/test/lib/tap.sh"

BT="$root/priv/beamtrace"
ASAN="$root/_build/asan/beamtrace"
check_cmd "make priv/beamtrace builds warning-free" make -s -C "$root" priv/beamtrace
check_cmd "the command's layers: base < ctf < model < out < cmd, record; no include cycle (tools/check_cli_layers.py)" \
    python3 "$root/tools/check_cli_layers.py" "$root/c_src/cli"
# The sanitizer build of the CLI (the Makefile's asan-cli: fields a command
# did not select read as NULL strings, so a missing one fails a check).
check_cmd "sanitizer build of the CLI" make -s -C "$root" asan-cli
# shellcheck disable=SC2086
check_cmd "corpus generator builds" $CC -std=gnu11 -O1 -g $WARN $SAN -Ic_src \
    -Itest/lib -o "$out/make_corpus" test/cli/make_corpus.c test/lib/trace_gen.c $CORE
rm -rf "$out/corpus"
check_cmd "corpus generated" "$out/make_corpus" "$out/corpus"
[ -x "$BT" ] && [ -x "$ASAN" ] && [ -d "$out/corpus/good" ] || { echo "# cannot continue"; exit 1; }
command -v babeltrace2 >/dev/null || { echo "not ok - babeltrace2 is installed"; exit 1; }

no_sanitizer_report() { ! grep -qE 'Sanitizer|runtime error:' "$1"; }
expect() { sed -n "s/^$2 //p" "$1.expect"; }

# ---- good traces ----
for dir in "$out"/corpus/good/*/; do
    dir=${dir%/}
    t=$(basename "$dir")
    TZ=UTC babeltrace2 "$dir" >"$out/$t.bt2" 2>"$out/$t.bt2.err"
    TZ=UTC "$BT" view "$dir" >"$out/$t.view" 2>"$out/$t.view.err"
    rc=$?
    check_cmd "view $t exits 0" [ "$rc" -eq 0 ]
    if [ "$t" = empty_strings ]; then
        check_cmd "view $t matches babeltrace2 (allowing its stale empty strings)" \
            python3 test/cli/bt2_compare.py "$out/$t.view" "$out/$t.bt2"
    else
        check_cmd "view $t is byte-identical to babeltrace2" cmp -s "$out/$t.view" "$out/$t.bt2"
    fi
    TZ=UTC "$ASAN" view "$dir" >"$out/$t.view.asan" 2>"$out/$t.view.asan.err"
    check_cmd "view $t under ASan/UBSan: same output, no report" \
        eval 'cmp -s "$out/$t.view" "$out/$t.view.asan" && no_sanitizer_report "$out/$t.view.asan.err"'
    "$ASAN" stats --format json "$dir" >"$out/$t.stats.json" 2>"$out/$t.stats.err"
    rc=$?
    check_cmd "stats $t under ASan/UBSan exits 0, no report" \
        eval '[ "$rc" -eq 0 ] && no_sanitizer_report "$out/$t.stats.err"'
    events=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$out/$t.stats.json")
    discarded=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["discarded_events"])' "$out/$t.stats.json")
    bt2_lines=$(wc -l <"$out/$t.bt2")
    check_cmd "stats $t events ($events) = babeltrace2 lines ($bt2_lines) = generated ($(expect "$dir" events))" \
        [ "$events" = "$bt2_lines" -a "$events" = "$(expect "$dir" events)" ]
    check_cmd "stats $t discarded ($discarded) = generator's drops ($(expect "$dir" discarded))" \
        [ "$discarded" = "$(expect "$dir" discarded)" ]
    warned=$(sed -n 's/^WARNING: Tracer discarded \([0-9]*\) events\{0,1\} .*/\1/p' "$out/$t.view.err" |
             awk '{s += $1} END {print s + 0}')
    check_cmd "view $t warns of $discarded discarded events on stderr (got $warned)" [ "$warned" = "$discarded" ]
    "$BT" stats "$dir" >"$out/$t.stats.txt" 2>&1
    check_cmd "stats $t text output" grep -qE "^events +$events\$" "$out/$t.stats.txt"
done

basic="$out/corpus/good/basic"
if [ -f /usr/share/zoneinfo/Asia/Kolkata ]; then
    check_cmd "view in local time (TZ=Asia/Kolkata) matches babeltrace2" \
        cmp -s <(TZ=Asia/Kolkata "$BT" view "$basic") <(TZ=Asia/Kolkata babeltrace2 "$basic")
else
    echo "ok - view in a non-UTC local time # SKIP no zoneinfo"
fi
check_cmd "view --gmt matches babeltrace2 --clock-gmt" \
    cmp -s <(TZ=Asia/Tokyo "$BT" view --gmt "$basic") <(TZ=Asia/Tokyo babeltrace2 --clock-gmt "$basic")
check_cmd "view --no-delta matches babeltrace2 --no-delta" \
    cmp -s <(TZ=UTC "$BT" view --no-delta "$basic") <(TZ=UTC babeltrace2 --no-delta "$basic")

# ---- filters ----
many="$out/corpus/good/many_packets"
TZ=UTC babeltrace2 --no-delta "$many" >"$out/many.nodelta"
check_cmd "view -t glob keeps exactly the matching tracepoints" \
    cmp -s <(TZ=UTC "$BT" view --no-delta -t 'org_erlang_dyntrace:process_*' "$many") \
           <(grep -a ' org_erlang_dyntrace:process_[a-z_]*: ' "$out/many.nodelta")
check_cmd "view -t twice unions the patterns" \
    cmp -s <(TZ=UTC "$BT" view --no-delta -t '*gc_minor_*' --tracepoint '*:port_exit' "$many") \
           <(grep -aE ' org_erlang_dyntrace:(gc_minor_[a-z]*|port_exit): ' "$out/many.nodelta")
TZ=UTC "$BT" view -t '*:process_spawn' "$many" | head -3 >"$out/filtered.delta"
check_cmd "view -t deltas are between printed lines" python3 - "$out/filtered.delta" <<'PY'
import sys, re
lines = open(sys.argv[1], "rb").read().split(b"\n")[:3]
ts = [re.match(rb"\[(\d\d):(\d\d):(\d\d)\.(\d{9})\]", l).groups() for l in lines]
ns = [((int(h) * 60 + int(m)) * 60 + int(s)) * 10**9 + int(f) for h, m, s, f in ts]
d = re.search(rb"\(\+(\d+)\.(\d{9})\)", lines[2]).groups()
sys.exit(0 if int(d[0]) * 10**9 + int(d[1]) == ns[2] - ns[1] else 1)
PY
"$BT" list --format json >"$out/list.json"
TZ=UTC "$BT" view --no-delta -p '<0.66.0>' "$many" >"$out/pid.view"
check_cmd "view -p keeps exactly the events with that pid in an id field" python3 - "$out/list.json" "$out/many.nodelta" "$out/pid.view" <<'PY'
import json, re, sys
cat = json.load(open(sys.argv[1]))["tracepoints"]
ids = {t["name"]: [f["name"] for f in t["fields"] if f["kind"] == "id"] for t in cat}
want = []
for line in open(sys.argv[2], "rb").read().split(b"\n"):
    m = re.search(rb" (\S+): \{ cpu_id", line)
    if m and any(b" %s = \"<0.66.0>\"" % f.encode() in line for f in ids[m.group(1).decode()]):
        want.append(line)
got = open(sys.argv[3], "rb").read().split(b"\n")[:-1]
sys.exit(0 if want and got == want else 1)
PY
check_cmd "view -p 0.66.0 equals -p '<0.66.0>'" \
    cmp -s "$out/pid.view" <(TZ=UTC "$BT" view --no-delta -p 0.66.0 "$many")

# ---- malformed traces ----
one_error_line() { # FILE: exactly one line, starting "beamtrace: "
    [ "$(wc -l <"$1")" -eq 1 ] && grep -q '^beamtrace: ' "$1"
}
for dir in "$out"/corpus/bad/*/ "$out/corpus/bad/does_not_exist"; do
    dir=${dir%/}
    t=$(basename "$dir")
    for cmd in view stats; do
        "$ASAN" $cmd "$dir" >/dev/null 2>"$out/bad.$t.$cmd.err"
        rc=$?
        if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && one_error_line "$out/bad.$t.$cmd.err" &&
           no_sanitizer_report "$out/bad.$t.$cmd.err"; then
            ok "$cmd $t: exit $rc, one line: $(cut -c1-150 "$out/bad.$t.$cmd.err")"
        else
            not_ok "$cmd $t: exit $rc"
            sed 's/^/# /' "$out/bad.$t.$cmd.err" | head -20
        fi
    done
done
check_cmd "time going backwards is named in the error" \
    grep -q 'time goes backwards' "$out/bad.time_backwards.view.err"
check_cmd "a byte order other than the packets' is caught (magic number)" \
    grep -q 'magic' "$out/bad.wrong_byte_order.view.err"
for t in time_backwards wrong_byte_order; do
    check_cmd "babeltrace2 also refuses bad/$t" eval '! babeltrace2 "$out/corpus/bad/$t" >/dev/null 2>&1'
done

# ---- a last packet cut short: read up to it, one warning line ----
for dir in "$out"/corpus/truncated/*/; do
    dir=${dir%/}
    t=$(basename "$dir")
    [ -d "$dir.whole" ] || continue
    TZ=UTC "$ASAN" view "$dir" >"$out/cut.$t.view" 2>"$out/cut.$t.err"
    rc=$?
    TZ=UTC babeltrace2 "$dir.whole" >"$out/cut.$t.bt2" 2>/dev/null
    check_cmd "truncated $t: view exits 0 with what precedes the cut packet (= babeltrace2 on the trace cut before it)" \
        eval '[ $rc -eq 0 ] && cmp -s "$out/cut.$t.view" "$out/cut.$t.bt2" && [ -s "$out/cut.$t.bt2" ]'
    check_cmd "truncated $t: exactly one warning line naming the bytes skipped, no sanitizer report" \
        eval '[ "$(wc -l <"$out/cut.$t.err")" -eq 1 ] && grep -q "^beamtrace: warning: .*channel0_0: .*skipped" "$out/cut.$t.err" && no_sanitizer_report "$out/cut.$t.err"'
    "$ASAN" stats --format json "$dir" >"$out/cut.$t.json" 2>"$out/cut.$t.stats.err"
    check_cmd "truncated $t: stats counts the events before the cut ($(wc -l <"$out/cut.$t.bt2"))" \
        eval '[ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"events\"])" "$out/cut.$t.json")" = "$(wc -l <"$out/cut.$t.bt2" | tr -d " ")" ]'
done

# ---- odd metadata babeltrace2 reads: view matches it ----
for dir in "$out"/corpus/odd/*/; do
    dir=${dir%/}
    t=$(basename "$dir")
    TZ=UTC babeltrace2 "$dir" >"$out/odd.$t.bt2" 2>/dev/null
    TZ=UTC "$ASAN" view "$dir" >"$out/odd.$t.view" 2>"$out/odd.$t.err"
    check_cmd "odd $t: view prints every event as babeltrace2 does" \
        eval 'cmp -s "$out/odd.$t.view" "$out/odd.$t.bt2" && [ -s "$out/odd.$t.bt2" ] && no_sanitizer_report "$out/odd.$t.err"'
done
check_cmd "odd: the renamed event is printed under its new name" \
    grep -q ' org_erlang_dyntrace:process_spawned: ' "$out/odd.unknown_event_name.view"

# ---- other layouts: LTTng's compact and large headers (and their
# extended forms), contexts, big-endian, packetized metadata, every field
# type. view must print them as babeltrace2 does, and every analysis must
# give the same answer as on the same events in beamtrace's layout. ----
layouts="beamtrace|--layout beamtrace
large|--layout large --id-base 65530 --contexts --packetized
compact|--layout compact --id-base 20 --contexts --padding
compact-be|--layout compact --big-endian --padding
large-be|--layout large --big-endian --packetized
types-compact-be|--layout compact --big-endian --types --contexts --padding --id-base 25
types-large|--layout large --types --id-base 65533
large-align16|--layout large --header-align 128 --id-base 65533"
mkdir -p "$out/layouts"
while IFS='|' read -r name opts; do
    l="$out/layouts/$name"
    rm -rf "$l"
    # shellcheck disable=SC2086
    python3 test/cli/ctf_write.py "$BT" "$l" $opts --events 4000 >/dev/null 2>"$l.gen.err" ||
        { not_ok "layout $name: generated"; continue; }
    TZ=UTC babeltrace2 "$l" >"$l.bt2" 2>/dev/null
    TZ=UTC "$ASAN" view "$l" >"$l.view" 2>"$l.err"
    check_cmd "layout $name: view is byte-identical to babeltrace2 ($(wc -l <"$l.bt2") events), no sanitizer report" \
        eval 'cmp -s "$l.view" "$l.bt2" && [ -s "$l.bt2" ] && [ ! -s "$l.err" ]'
    case $name in types*) continue;; esac
    for c in calls sched procs gc; do
        "$BT" $c --format json "$l" | sed 's/"trace": "[^"]*"/"trace": ""/' >"$l.$c.json"
    done
    "$BT" flame --folded --unit ns "$l" >"$l.folded"
    if [ "$name" != beamtrace ]; then
        same=1
        for x in calls.json sched.json procs.json gc.json folded; do
            cmp -s "$l.$x" "$out/layouts/beamtrace.$x" || { echo "# $name: $x differs"; same=0; }
        done
        check_cmd "layout $name: calls, sched, procs, gc and flame give the same answers as beamtrace's layout" [ $same = 1 ]
    fi
done <<<"$layouts"
# The compiled decoders against the type-tree walk, event by event, on every
# layout above (test/cli/test_plan.c: random events, whole, cut short or
# with a changed byte; the little-endian layouts must be compiled whole).
# It links only ctf/, base/ and core/, as the layers require.
CTF_SRC=$(echo $CLI_SRC | tr ' ' '\n' | grep -E 'c_src/(core|cli/base|cli/ctf)/' | tr '\n' ' ')
# shellcheck disable=SC2086
if check_cmd "test_plan builds from ctf/, base/ and core/ alone" $CC -std=gnu11 -O1 -g $WARN $SAN \
       -Ic_src -Ic_src/cli -o "$out/test_plan" test/cli/test_plan.c $CTF_SRC -lm; then
    L=$out/layouts
    "$out/test_plan" --expect-fast "$L/beamtrace/metadata" "$L/large/metadata" "$L/compact/metadata" \
        "$L/types-large/metadata" "$L/large-align16/metadata" >"$out/test_plan.log" 2>&1 &&
    "$out/test_plan" "$L/compact-be/metadata" "$L/large-be/metadata" "$L/types-compact-be/metadata" \
        >>"$out/test_plan.log" 2>&1
    rc=$?
    check_cmd "compiled decoders accept and reject what the walk does, with its values, on every layout ($(grep -c '^ok' "$out/test_plan.log") checks)" \
        [ $rc -eq 0 ]
    [ $rc -eq 0 ] || grep -v '^ok' "$out/test_plan.log" | head -20
fi
# The interned-string table every analysis keys its state by: short
# strings are told apart by their key alone, so every length and every
# byte position is checked, under ASan (test/cli/test_strtab.c).
# shellcheck disable=SC2086
if check_cmd "test_strtab builds from base/ alone" $CC -std=gnu11 -O1 -g $WARN $SAN \
       -Ic_src -Ic_src/cli -o "$out/test_strtab" test/cli/test_strtab.c c_src/cli/base/strtab.c; then
    "$out/test_strtab" >"$out/test_strtab.log" 2>&1
    rc=$?
    check_cmd "strtab: every string of 0 to 40 bytes and its one-byte variants get their own ids, found again, no read outside ($(tail -1 "$out/test_strtab.log"))" \
        [ $rc -eq 0 ]
    [ $rc -eq 0 ] || grep -v '^ok' "$out/test_strtab.log" | head -20
fi
# Who ended a function's waits (issue 16): the bounded tally by waking
# sender and the process state that names it (test/cli/test_wakers.c).
# shellcheck disable=SC2086
if check_cmd "test_wakers builds from model/wakers.c and model/proc_state.c alone" $CC -std=gnu11 -O1 -g \
       $WARN $SAN -Ic_src -Ic_src/cli -o "$out/test_wakers" test/cli/test_wakers.c \
       c_src/cli/model/wakers.c c_src/cli/model/proc_state.c; then
    "$out/test_wakers" >"$out/test_wakers.log" 2>&1
    rc=$?
    check_cmd "wakers: the tally stays bounded, folds into other, never overcounts; a wait is its first sender's ($(tail -1 "$out/test_wakers.log"))" \
        [ $rc -eq 0 ]
    [ $rc -eq 0 ] || grep -v '^ok' "$out/test_wakers.log" | head -20
fi
# Packetized metadata is text up to its first NUL byte, for babeltrace2 as
# for view: a NUL inside the opening comment leaves it unclosed.
rm -rf "$out/layouts/meta-nul" && cp -r "$out/layouts/large" "$out/layouts/meta-nul" &&
    python3 -c 'import sys; p = sys.argv[1]; b = open(p, "rb").read(); i = b.index(b"CTF 1.8") + 3
open(p, "wb").write(b[:i] + b"\0" + b[i + 1:])' "$out/layouts/meta-nul/metadata"
babeltrace2 "$out/layouts/meta-nul" >/dev/null 2>&1
bt2_rc=$?
"$ASAN" view "$out/layouts/meta-nul" >/dev/null 2>"$out/layouts/meta-nul.err"
view_rc=$?
check_cmd "packetized metadata with a NUL byte: refused as babeltrace2 refuses it, one error line" \
    eval '[ $view_rc = 1 ] && [ $bt2_rc != 0 ] && one_error_line "$out/layouts/meta-nul.err"'
check_cmd "layouts: the analyses found calls, latencies and collections to compare" python3 - "$out/layouts/beamtrace" <<'PY'
import json, sys
b = sys.argv[1]
c = json.load(open(b + ".calls.json")); s = json.load(open(b + ".sched.json")); g = json.load(open(b + ".gc.json"))
sys.exit(0 if len(c["functions"]) >= 5 and s["count"] > 50 and g["minor"]["count"] > 50 else 1)
PY

# ---- mutation fuzz under ASan/UBSan, against babeltrace2 ----
# 400 mutated traces (our recorder's layout with drops, LTTng's compact
# header big-endian with contexts and every field type, LTTng's large header
# with packetized metadata): no crash, hang or sanitizer report, one error
# line or a clean exit; on every 4th, view must agree with babeltrace2 on
# whether the trace is readable and print the same bytes when both read it
# (the documented exceptions aside: see fuzz.py). stats and calls also run
# with BEAMTRACE_READER=generic and must end alike: the compiled decoders
# accept and reject exactly what the type-tree walk does. `make fuzz` runs
# 10 000, each compared with babeltrace2.
python3 test/cli/ctf_write.py "$BT" "$out/layouts/fuzz-compact" --layout compact --big-endian \
    --contexts --types --padding --id-base 20 --events 400 &&
python3 test/cli/ctf_write.py "$BT" "$out/layouts/fuzz-large" --layout large --packetized \
    --events 400 || not_ok "fuzz bases generated"
python3 test/cli/fuzz.py --bt2 --bt2-every "${FUZZ_BT2_EVERY:-4}" --max-disagree "${FUZZ_MAX_DISAGREE:-0}" --seed "${FUZZ_SEED:-2024}" \
    --cmds "view,stats,calls --format json" --vs-generic \
    "$ASAN" "$out" "${FUZZ_RUNS:-400}" "$out/corpus/good/basic" "$out/corpus/good/drops" \
    "$out/layouts/fuzz-compact" "$out/layouts/fuzz-large" >"$out/fuzz.log" 2>&1
rc=$?
sed -n 's/^# \(both\|view\)/#   \1/p; /mutated traces/p' "$out/fuzz.log"
check_cmd "mutation fuzz: ${FUZZ_RUNS:-400} traces, no crash, hang or sanitizer report, verdicts as babeltrace2's, compiled decoders as the walk" \
    [ $rc -eq 0 ]
[ $rc -eq 0 ] || grep '^# run' "$out/fuzz.log" | head -20

# ---- list ----
check_cmd "list --format json parses" python3 -m json.tool "$out/list.json" >/dev/null
# Event names, as the writer derived them from the catalogue.
grep -oE '^\s*name = "[^"]*:[^"]*"' "$basic/metadata" | sed 's/.*name = "\(.*\)"/\1/' | sort >"$out/meta.names"
check_cmd "list --format json has every catalogue tracepoint" \
    cmp -s "$out/meta.names" <(python3 -c 'import json,sys; [print(t["name"]) for t in json.load(open(sys.argv[1]))["tracepoints"]]' "$out/list.json" | sort)
"$BT" list >"$out/list.txt"
missing=0
while read -r name; do grep -q "^$name " "$out/list.txt" || missing=1; done <"$out/meta.names"
check_cmd "list (text) has every catalogue tracepoint" [ "$missing" -eq 0 ]
check_cmd "list shows fields as name:type" grep -q ' pid:string ' "$out/list.txt"

# ---- a cluster: two nodes' traces, one source (test/cli/make_corpus.c) ----
cl="$out/corpus/cluster"
TZ=UTC babeltrace2 "$cl" >"$out/cluster.bt2" 2>/dev/null
TZ=UTC "$ASAN" view "$cl" >"$out/cluster.view" 2>"$out/cluster.view.err"
# Each line names its node where babeltrace2 prints the host, which is the
# same for every node on one host (issue 16); the rest is babeltrace2's.
check_cmd "cluster: view names each line by its node, otherwise byte-identical to babeltrace2" \
    python3 - "$out/cluster.view" "$out/cluster.bt2" "$out/cluster.view.err" <<'PY'
import re, sys
view = open(sys.argv[1], "rb").read().split(b"\n")
bt2 = open(sys.argv[2], "rb").read().split(b"\n")
host = re.compile(rb"^(\[[^]]*\] \([^)]*\) )(\S+)( .*)$")
bad = [] if len(view) == len(bt2) and len(view) > 10 else ["line counts %d %d" % (len(view), len(bt2))]
for v, b in zip(view, bt2):
    mv, mb = host.match(v), host.match(b)
    if not v and not b:
        continue
    if not mv or not mb or mv.group(1) != mb.group(1) or mv.group(3) != mb.group(3) or \
            mv.group(2) not in (b"a@h", b"b@h"):
        bad.append(v[:120])
    # A node's own node_info line names that node.
    this = re.search(rb'node = "([^"]*)", type = "this"', v)
    if this and mv and this.group(1) != mv.group(2):
        bad.append(v[:120])
err = open(sys.argv[3]).read()
if bad or "Sanitizer" in err or "runtime error:" in err:
    print("# %r" % bad[:5])
sys.exit(1 if bad else 0)
PY
TZ=UTC "$ASAN" view "$cl/a@h" "$cl/b@h" >"$out/cluster.view2" 2>"$out/cluster.view2.err"
check_cmd "cluster: view of its two directories is the same" cmp -s "$out/cluster.view2" "$out/cluster.view"
"$ASAN" messages --format json "$cl" >"$out/cluster.messages.json" 2>"$out/cluster.messages.err"
rc=$?
check_cmd "cluster: messages exits 0, no sanitizer report" \
    eval '[ "$rc" -eq 0 ] && no_sanitizer_report "$out/cluster.messages.err"'
# The counts bmt_cluster_SUITE:matcher_rule_test expects of the reference
# matcher on the same cases (the loss: b@h discarded events around 42 us).
check_cmd "cluster: messages counts each case as the matching rule says" python3 - "$out/cluster.messages.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
want_s = {"linked": 4, "uncertain": 1, "not_received": 1, "in_flight": 4, "receiver_not_traced": 1,
          "dead": 1, "unresolved": 1, "external": 0, "not_queued": 0}
want_r = {"linked": 4, "unmatched": 0, "ambiguous": 2, "external": 1}
pairs = [(p["from"], p["to"]) for p in m["process_pairs"]]
ok = (m["sends"] == want_s and m["receipts"] == want_r and m["nodes"] == ["a@h", "b@h"]
      and ("a@h/<0.5.0>", "b@h/<0.9.0> srv") in pairs and m["node_pairs"][0]["links"] == 4)
if not ok:
    print("# " + json.dumps(m)[:800])
sys.exit(0 if ok else 1)
PY
"$BT" messages --format json "$cl/a@h" "$cl/b@h" >"$out/cluster.messages2.json"
check_cmd "cluster: messages of its two directories is the same" \
    eval 'diff <(sed 1s/\"trace\":[^,]*// "$out/cluster.messages.json") <(sed 1s/\"trace\":[^,]*// "$out/cluster.messages2.json") >/dev/null'
# The nodes come in node-name order whatever the directories are called
# (an lttng-relayd names each node's by its OS pid, which wraps) and in
# whatever order they are given: two copies of one recording give one output.
rm -rf "$out/cluster-renamed" && mkdir -p "$out/cluster-renamed" &&
    cp -r "$cl/a@h" "$out/cluster-renamed/beam.smp-30000-20260101-000000" &&
    cp -r "$cl/b@h" "$out/cluster-renamed/beam.smp-2000-20260101-000000"
"$ASAN" messages --format json "$out/cluster-renamed" >"$out/cluster.messages3.json" 2>"$out/cluster.messages3.err"
"$BT" messages --format json "$cl/b@h" "$cl/a@h" >"$out/cluster.messages4.json"
check_cmd "cluster: messages of its directories renamed in the other order, or given so, is the same" \
    eval 'diff <(sed 1s/\"trace\":[^,]*// "$out/cluster.messages.json") <(sed 1s/\"trace\":[^,]*// "$out/cluster.messages3.json") >/dev/null &&
          diff <(sed 1s/\"trace\":[^,]*// "$out/cluster.messages.json") <(sed 1s/\"trace\":[^,]*// "$out/cluster.messages4.json") >/dev/null &&
          no_sanitizer_report "$out/cluster.messages3.err" &&
          "$BT" stats --format json "$out/cluster-renamed" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)[\"nodes\"] == [\"a@h\", \"b@h\"] else 1)"'
"$ASAN" export "$cl" -o "$out/cluster.chrome.json" 2>"$out/cluster.export.err"
check_cmd "cluster: export draws the 3 certain links between the nodes' groups, says 1 is uncertain" \
    eval 'grep -q "1 message links are uncertain" "$out/cluster.export.err" && no_sanitizer_report "$out/cluster.export.err"'
check_cmd "cluster: export's flows go from a@h's group to b@h's" python3 - "$out/cluster.chrome.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
s = {e["id"]: e["pid"] for e in ev if e["ph"] == "s"}
f = {e["id"]: e["pid"] for e in ev if e["ph"] == "f"}
groups = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
tracks = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
ok = (len(s) == 3 and all(groups[s[i]].startswith("a@h: ") and groups[f[i]].startswith("b@h: ") for i in s)
      and "b@h/<0.9.0> srv" in tracks)
sys.exit(0 if ok else 1)
PY
# A trace recorded with --links has message_send_link events where OTP has
# message_send: -t naming OTP's event takes them too (issue 16).
TZ=UTC "$BT" view --no-delta "$cl" >"$out/cluster.nodelta"
check_cmd "cluster: view -t '*message_send' takes the message_send_link events (and receive likewise)" \
    eval 'cmp -s <(TZ=UTC "$BT" view --no-delta -t "*message_send" "$cl") \
                 <(grep -aE " org_erlang_[a-z]+:message_send(_link)?: " "$out/cluster.nodelta") &&
          cmp -s <(TZ=UTC "$BT" view --no-delta -t "org_erlang_dyntrace:message_receive" "$cl") \
                 <(grep -aE " org_erlang_[a-z]+:message_receive(_link)?: " "$out/cluster.nodelta") &&
          [ "$(grep -ac "message_send_link: " "$out/cluster.nodelta")" -gt 0 ]'
check_cmd "cluster: view -p takes a node-qualified pid (the sends of a@h's <0.5.0>)" \
    eval '[ "$("$BT" view -p "a@h/<0.5.0>" "$cl" | grep -c "message_send_link.*from = \"<0.5.0>\"")" -eq 8 ] &&
          [ "$("$BT" view -p "a@h/<0.5.0>" "$cl" | wc -l)" -eq 8 ]'
check_cmd "cluster: messages --pid NODE/PID keeps that process's pairs only" \
    eval '"$BT" messages --format json --pid "a@h/<0.7.0>" "$cl" | python3 -c "import json,sys; m = json.load(sys.stdin); sys.exit(0 if [(p[\"from\"], p[\"to\"]) for p in m[\"process_pairs\"]] == [(\"a@h/<0.7.0>\", \"b@h/<0.9.0> srv\")] and m[\"sends\"][\"linked\"] == 4 else 1)"'
check_cmd "cluster: stats names the nodes" \
    eval '"$BT" stats --format json "$cl" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)[\"nodes\"] == [\"a@h\", \"b@h\"] else 1)" &&
          "$BT" stats "$cl" | grep -q "^nodes  *a@h\$"'
cluster_error() { # cluster_error PATTERN ARGS...: exit 1 and one line matching PATTERN
    local re=$1; shift
    "$ASAN" "$@" >/dev/null 2>"$out/cluster.err"
    [ $? -eq 1 ] && one_error_line "$out/cluster.err" && grep -q "$re" "$out/cluster.err" &&
        no_sanitizer_report "$out/cluster.err"
}
check_cmd "cluster: two traces of one node: one line, exit 1" \
    cluster_error "two traces of node b@h" messages "$cl" "$cl/b@h"
mkdir -p "$out/cluster-empty"
check_cmd "cluster: a directory without a trace among several: one line, exit 1" \
    cluster_error "cluster-empty: no metadata file" stats "$cl" "$out/cluster-empty"

# ---- trace discovery never follows symbolic links ----
# A session directory whose trace sits below, next to a `loop -> ..` and a
# `root -> /` link: read at once (a version that followed links walked
# /proc for minutes), the links skipped. A symlinked stream file inside the
# trace directory is not read, and said. A directory whose only trace is
# behind a link: one error line naming the link and what to pass instead.
sl=$out/symlinks
rm -rf "$sl" && mkdir -p "$sl/session/ust/uid/0/64-bit" "$sl/only"
cp "$basic"/* "$sl/session/ust/uid/0/64-bit/"
ln -s .. "$sl/session/loop" && ln -s / "$sl/session/root" &&
    ln -s .. "$sl/session/ust/uid/0/64-bit/loop" && ln -s / "$sl/session/ust/uid/0/64-bit/root" &&
    ln -s "$root/Makefile" "$sl/session/ust/uid/0/64-bit/channel9_9" &&
    ln -s "$root/$sl/session/ust/uid/0/64-bit" "$sl/only/node"
timeout 20 "$ASAN" stats "$sl/session" >"$sl/stats.out" 2>"$sl/stats.err"
rc=$?
check_cmd "symlinks: a directory with loop -> .. and root -> / links is read at once, exit 0" \
    eval '[ $rc -eq 0 ] && [ "$(sed -n "s/^events  *//p" "$sl/stats.out")" = "$("$BT" stats "$basic" | sed -n "s/^events  *//p")" ]'
check_cmd "symlinks: a symlinked stream file is not read, one warning says so and how" \
    eval '[ "$(wc -l <"$sl/stats.err")" -eq 1 ] && grep -q "^beamtrace: warning: .*1 symbolic link (channel9_9) not read as stream file; copy" "$sl/stats.err" && no_sanitizer_report "$sl/stats.err"'
check_cmd "symlinks: a trace only behind a link: one error line naming the link, exit 1" \
    cluster_error "where 1 symbolic link (.*only/node) was not followed; pass the trace directory itself" \
    stats "$sl/only"
check_cmd "symlinks: the link's target itself is read" eval 'timeout 20 "$BT" stats "$sl/only/node" >/dev/null 2>&1'

# ---- sampled traces ----
# make_corpus.c's make_sampled: 10 calls of 1 ms kept 1 in 4, then 5 kept
# all, over 2 s: calls scales them back by the ratio in force at each call;
# and 3 collections kept 1 in 2 (gc).
smp=$out/corpus/sampled
"$ASAN" calls "$smp" >"$out/sampled.calls" 2>"$out/sampled.err"
check_cmd "calls of a sampled trace: counts and totals scaled back by the ratio in force, and says so" \
    eval 'grep -q "^ *45  *0  *0  *45\.000 ms .* kv:get/2$" "$out/sampled.calls" &&
          grep -q "sampled 1/4 (at most; of its call,garbage_collection events) for 90% of the trace; counts and totals are scaled back by the ratio in force at each event, percentiles are as measured" "$out/sampled.err" &&
          no_sanitizer_report "$out/sampled.err"'
check_cmd "calls --format json of a sampled trace: count scaled, kept_count, percentiles as measured, sampling" \
    eval '"$BT" calls --format json "$smp" 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
f = {x[\"function\"]: x for x in d[\"functions\"]}[\"kv:get/2\"]
s = d[\"sampling\"]
ok = (f[\"count\"], f[\"kept_count\"], f[\"total_ns\"], f[\"p50_ns\"]) == (45, 15, 45000000, 1000000) and s[\"ratio_max\"] == 4 and s[\"scaled_back\"] and s[\"kinds\"] == \"call,garbage_collection\" and abs(s[\"sampled_fraction\"] - 0.9) < 0.001
sys.exit(0 if ok else 1)"'
check_cmd "gc of a sampled trace: collections, pause total and words scaled back, percentiles as measured" \
    eval '"$BT" gc --format json "$smp" 2>/dev/null | python3 -c "
import json, sys
m = json.load(sys.stdin)[\"minor\"]
sys.exit(0 if (m[\"count\"], m[\"kept_count\"], m[\"pause_total_ns\"], m[\"reclaimed_words\"], m[\"p50_ns\"]) == (6, 3, 6000000, 600, 1000000) else 1)"'
check_cmd "calls --format json of an unsampled trace: sampling null, count as kept" \
    eval '"$BT" calls --format json "$out"/corpus/captures/capture-1-*Z 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d[\"sampling\"] is None and all(x[\"count\"] == x[\"kept_count\"] for x in d[\"functions\"]) else 1)"'

# make_corpus.c's make_kinds: one workload recorded in full (kinds-full)
# and as a sampled session keeps it (kinds-sampled: procs 1/2; send 1/2,
# then 1 after 1 s; call 1/4; one event in N of each kind kept, in order):
# every analysis's counts and totals of the sampled trace, scaled back by
# the ratio in force at each event, equal the full trace's, and each says
# it scaled them.
kf=$out/corpus/kinds-full ks=$out/corpus/kinds-sampled
kinds_same() { # kinds_same CMD PYEXPR: PYEXPR(json) equal for both, and the sampled one says so
    local cmd=$1 expr=$2
    "$ASAN" $cmd --format json "$kf" >"$out/kinds.full.json" 2>"$out/kinds.full.err" &&
        "$ASAN" $cmd --format json "$ks" >"$out/kinds.sampled.json" 2>"$out/kinds.sampled.err" &&
        no_sanitizer_report "$out/kinds.sampled.err" && python3 - "$expr" <<'PY'
import json, sys
f, s = (json.load(open("test/out/cli/kinds.%s.json" % k)) for k in ("full", "sampled"))
get = eval("lambda d: " + sys.argv[1])
ok = get(f) == get(s) and f["sampling"] is None and s["sampling"]["scaled_back"] and s["sampling"]["kinds"] == "procs,send,call"
if not ok:
    print("full %r, sampled %r, sampling %r" % (get(f), get(s), s["sampling"]), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
check_cmd "stats of a sampled trace: each tracepoint's events scaled back = the full trace's, which are sampled said" \
    eval 'kinds_same stats "sorted((t[\"name\"], t[\"events_scaled\"]) for t in d[\"tracepoints\"])" &&
          python3 -c "
import json
d = json.load(open(\"$out/kinds.sampled.json\"))
t = {x[\"name\"].split(\":\")[1]: x for x in d[\"tracepoints\"]}
ok = sorted(k for k in t if t[k][\"sampled\"]) == [\"function_call\", \"function_return\", \"message_send_link\", \"process_exit\", \"process_spawn\"] and (t[\"function_call\"][\"events\"], t[\"function_call\"][\"events_scaled\"]) == (2, 8) and d[\"sampling\"][\"ratio_max\"] == 4
raise SystemExit(0 if ok else 1)" &&
          "$BT" stats "$ks" | grep -q "^org_erlang_dyntrace:process_spawn  *4 .*  *8\*$" &&
          "$BT" stats "$ks" | grep -q "^sampled  *1/4 at most, of procs,send,call events$" &&
          ! "$BT" stats "$kf" | grep -q "SCALED"'
check_cmd "procs of a sampled trace: spawns, exits, per second and per reason scaled back = the full trace's" \
    eval 'kinds_same procs "(d[\"spawns\"], d[\"exits\"], d[\"per_second\"], d[\"exit_reasons\"])" &&
          grep -q "\"spawns\": 8, \"exits\": 8, \"spawns_kept\": 4, \"exits_kept\": 4," "$out/kinds.sampled.json" &&
          grep -q "counts and totals are scaled back by the ratio in force at each event" "$out/kinds.sampled.err"'
check_cmd "messages of a sampled trace: sends, receipts and links (per node and process pair) scaled back = the full trace's" \
    eval 'kinds_same messages "(d[\"send_events\"], d[\"receipt_events\"], d[\"links\"], [p[\"links\"] for p in d[\"node_pairs\"]], [(p[\"from\"], p[\"to\"], p[\"links\"]) for p in d[\"process_pairs\"]])" &&
          grep -q "\"send_events_kept\": 12, .*\"outcomes\": \"of the events kept\"" "$out/kinds.sampled.json" &&
          "$BT" messages "$ks" 2>/dev/null | grep -q "^sampled   scaled back by the ratio in force at each: 16 sends, 16 receipts, 16 links;"'
check_cmd "sched of a sampled trace: sends scaled back = the full trace's; its latencies said to be of the events kept" \
    eval 'kinds_same sched "(d[\"sends\"], d[\"sends_to_known_pid\"])" &&
          grep -q "\"latencies_of_sampled_events\": true" "$out/kinds.sampled.json" &&
          grep -q "\"latencies_of_sampled_events\": false" "$out/kinds.full.json" &&
          grep -q "counts and totals are scaled back by the ratio in force at each event" "$out/kinds.sampled.err" &&
          "$BT" sched "$ks" 2>/dev/null | grep -q "^(sampled: the sends are scaled back by the ratio in force at each; the latencies pair"'
check_cmd "flame of a sampled trace: folded widths scaled back = the full trace's, and says so" \
    eval '"$ASAN" flame --folded "$ks" >"$out/kinds.flame" 2>"$out/kinds.flame.err" &&
          [ "$(cat "$out/kinds.flame")" = "$("$BT" flame --folded "$kf" 2>/dev/null)" ] &&
          [ "$(cat "$out/kinds.flame")" = "<0.88.0>;kv:get/2 8000" ] &&
          grep -q "counts and totals are scaled back by the ratio in force at each event" "$out/kinds.flame.err" &&
          no_sanitizer_report "$out/kinds.flame.err"'
check_cmd "report of a sampled trace: events per tracepoint and processes scaled back = the full trace's, the page says so" \
    eval '"$ASAN" report -o "$out/kinds.sampled.html" "$ks" 2>"$out/kinds.report.err" &&
          "$BT" report -o "$out/kinds.full.html" "$kf" 2>/dev/null && python3 -c "
import re
def rows(p):
    h = open(p).read()
    t = re.search(r\"<h3>Events per tracepoint</h3>(.*?)</table>\", h).group(1)
    return sorted(re.findall(r\"<td class=.l.>([^<]*)</td><td>([0-9]+)</td>\", t)), re.search(r\"<h2>Processes</h2><p>([^;<]*)\", h).group(1), h
f, s = rows(\"$out/kinds.full.html\"), rows(\"$out/kinds.sampled.html\")
ok = f[:2] == s[:2] and \"Sampled 1/4 (at most)\" in s[2] and \"scaled back by the ratio in force\" in s[2] and \"Sampled 1/4\" not in f[2] and \"<th>kept</th>\" in s[2]
raise SystemExit(0 if ok else 1)" && no_sanitizer_report "$out/kinds.report.err"'

# ---- flight-recorder captures ----
# The corpus's captures/ as `fetch` fills one: two captures of a call
# trigger on kv:get/2 by <0.86.0> (make_corpus.c's make_capture), the
# second with a slower call of another process in its window.
caps=$out/corpus/captures
cap1=$(ls -d "$caps"/capture-1-*Z) cap2=$(ls -d "$caps"/capture-2-*Z)
"$ASAN" captures "$caps" >"$out/captures.txt" 2>"$out/captures.err"
rc=$?
check_cmd "captures DIR: one line per capture, oldest first, what fired it, exit 0" \
    eval '[ $rc -eq 0 ] && [ "$(grep -c " call  *1[52]\.000 ms > 10\.000 ms  *<0\.86\.0>  *kv:get/2 " "$out/captures.txt")" = 2 ] &&
          awk "NR == 2 && \$1 == 1 && \$2 == \"2023-11-14\" && \$3 == \"23:53:32.999\" && \$4 == \"UTC\" {ok = 1} END {exit !ok}" "$out/captures.txt" &&
          grep -q "^2 captures, " "$out/captures.txt" && [ ! -s "$out/captures.err" ]'
check_cmd "captures --format json: trigger, when, how far before it, events" \
    eval '"$BT" captures --format json "$caps" | python3 -c "
import json, sys
c = json.load(sys.stdin)[\"captures\"]
ok = [x[\"capture\"] for x in c] == [1, 2] and all(x[\"kind\"] == \"call\" and x[\"pid\"] == \"<0.86.0>\" and x[\"function\"] == \"kv:get/2\" and x[\"bound\"] == 10000000 and x[\"unit\"] == \"ns\" and x[\"before_ns\"] >= 2000000000 and x[\"events\"] > 0 and not x[\"incomplete\"] for x in c) and [x[\"value\"] for x in c] == [15000000, 12000000]
sys.exit(0 if ok else 1)"'
check_cmd "captures of one capture directory: that one" \
    eval '"$BT" captures "$cap2" | grep -q "^1 capture, "'
cap_error() { # cap_error PATTERN ARGS...: exit 1 and one line matching PATTERN
    local re=$1; shift
    "$ASAN" "$@" >/dev/null 2>"$out/cap.err"
    [ $? -eq 1 ] && one_error_line "$out/cap.err" && grep -q "$re" "$out/cap.err" &&
        no_sanitizer_report "$out/cap.err"
}
check_cmd "captures of a trace that is no capture: one line, exit 1" \
    cap_error "is a trace but not a flight capture" captures "$basic"
mkdir -p "$out/no-captures"
check_cmd "captures of a directory holding none: one line saying how to get them, exit 1" \
    cap_error "holds no flight capture.*beamtrace fetch --node" captures "$out/no-captures"
"$ASAN" calls --breakdown --slowest 1 "$cap1" >"$out/cap1.calls" 2>"$out/cap1.calls.err"
check_cmd "calls --breakdown of a capture: says what fired it, the triggering call marked among the slowest" \
    eval 'head -1 "$out/cap1.calls" | grep -q "^capture 1, fired 2023-11-14 23:53:32.999 UTC by call kv:get/2 in <0.86.0>: 15.000 ms > 10.000 ms" &&
          grep -A2 "^the 1 slowest calls" "$out/cap1.calls" | grep -q "^ *15.000 ms .*<0.86.0>  *kv:get/2  <- the capture.s trigger$" &&
          no_sanitizer_report "$out/cap1.calls.err"'
"$BT" calls --breakdown --slowest 1 "$cap2" >"$out/cap2.calls"
check_cmd "calls --breakdown: a triggering call slower ones outrank is listed after them, marked" \
    eval 'grep -A2 "^the 1 slowest calls" "$out/cap2.calls" | grep -q "^ *40.000 ms .*<0.87.0>" &&
          grep -A1 "^and the capture.s trigger, not among them:" "$out/cap2.calls" | grep -q "^ *12.000 ms .*<0.86.0>  *kv:get/2  <- the capture.s trigger$"'
check_cmd "calls --format json of a capture: the capture, the trigger call" \
    eval '"$BT" calls --format json --breakdown --slowest 1 "$cap2" | python3 -c "
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d[\"capture\"][\"number\"] == 2 and d[\"capture\"][\"pid\"] == \"<0.86.0>\" and d[\"trigger_call\"][\"duration_ns\"] == 12000000 and not d[\"slowest_calls\"][0].get(\"trigger\") else 1)"'
"$BT" report -o "$out/cap1.html" "$cap1" 2>/dev/null
check_cmd "report of a capture says what fired it" \
    eval 'grep -q "<p class=\"trigger\">Flight recorder capture 1, fired 2023-11-14 23:53:32.999 UTC by call kv:get/2" "$out/cap1.html"'
# Every analysis reads a capture (it is a trace).
bad=""
for c in view stats calls sched procs gc files flame export messages; do
    "$ASAN" "$c" "$cap1" >"$out/cap.$c.out" 2>"$out/cap.$c.err" || bad="$bad $c"
    no_sanitizer_report "$out/cap.$c.err" || bad="$bad $c(sanitizer)"
done
check_cmd "every analysis reads a capture, exit 0${bad:+ (failed:$bad)}" [ -z "$bad" ]

# ---- command line ----
usage_error() { # usage_error ARGS...: exit 2 and one "beamtrace:" line
    "$BT" "$@" >/dev/null 2>"$out/usage.err"
    [ $? -eq 2 ] && one_error_line "$out/usage.err"
}
check_cmd "unknown command: exit 2, one line" usage_error frobnicate
check_cmd "no command: exit 2, one line" usage_error
check_cmd "unknown option of view: exit 2, one line" usage_error view --bogus "$basic"
check_cmd "unknown option of stats: exit 2, one line" usage_error stats -x "$basic"
check_cmd "bad --format: exit 2, one line" usage_error stats --format xml "$basic"
check_cmd "view without a directory: exit 2, one line" usage_error view
check_cmd "-t pattern matching nothing: exit 2, one line" usage_error view -t 'nope:*' "$basic"
check_cmd "unknown top-level option: exit 2, one line" usage_error --frob
# Every duration carries its unit (issue 16): a bare 5 was 5 ns to calls
# and 5 s to record.
check_cmd "--slower-than 5 (no unit): exit 2, one line naming the units" \
    eval 'usage_error calls --slower-than 5 "$basic" && grep -q "ns, us, ms, s, m, h or d" "$out/usage.err"'
check_cmd "--begin +5 (no unit): exit 2, one line" usage_error calls --begin +5 "$basic"
# export writes as it reads: a bad value found then (a time is resolved on
# the trace) left the start of the JSON on stdout, or an -o file behind.
rm -f "$out/bad-begin.json"
check_cmd "export --begin +5: exit 2, one line, nothing on stdout, no -o file left" \
    eval 'usage_error export --begin +5 "$basic" && [ -z "$("$BT" export --begin +5 "$basic" 2>/dev/null)" ] &&
          { "$BT" export --begin +5 -o "$out/bad-begin.json" "$basic" 2>/dev/null; [ ! -e "$out/bad-begin.json" ]; }'
# A failed export removes only a file it made: a file or device named by
# -o that was there before stays (an export -o /dev/null once deleted
# /dev/null).
echo keep >"$out/keep.json"
check_cmd "export --begin +5 -o EXISTING: exit 2, the file that was there stays" \
    eval '"$BT" export --begin +5 -o "$out/keep.json" "$basic" 2>/dev/null; [ $? -eq 2 ] && [ -f "$out/keep.json" ]'
# An output holds the trace's contents: made private, like the trace, and
# never written through a symlink (one planted in /tmp would redirect it).
echo victim >"$out/victim.txt"
ln -sfn "$out/victim.txt" "$out/planted.html"
check_cmd "report -o SYMLINK: exit 1, one line saying so, the link's target untouched" \
    eval '"$BT" report -o "$out/planted.html" "$basic" >/dev/null 2>"$out/planted.err"; [ $? -eq 1 ] &&
          [ "$(wc -l <"$out/planted.err")" -eq 1 ] && grep -q "is a symbolic link" "$out/planted.err" &&
          [ "$(cat "$out/victim.txt")" = victim ]'
check_cmd "export -o SYMLINK: exit 1, the link's target untouched" \
    eval '"$BT" export -o "$out/planted.html" "$basic" >/dev/null 2>&1; [ $? -eq 1 ] &&
          [ "$(cat "$out/victim.txt")" = victim ]'
# -o - is standard output (/dev/stdout is a symlink, refused as any other:
# its error line says to give -o - or no -o).
check_cmd "export -o - and report -o - write to stdout, and make no file named -" \
    eval '(b=$(realpath "$basic") && cd "$out" && rm -f ./- &&
           "$BT" export -o - "$b" 2>/dev/null | python3 -c "import json,sys; json.load(sys.stdin)" &&
           "$BT" report -o - "$b" 2>/dev/null | sed -n 1p | grep -qx "<!DOCTYPE html>" && [ ! -e ./- ])'
check_cmd "report -o /dev/stdout: exit 1, one line naming -o - for standard output" \
    eval '"$BT" report -o /dev/stdout "$basic" >/dev/null 2>"$out/devstdout.err"; [ $? -eq 1 ] &&
          [ "$(wc -l <"$out/devstdout.err")" -eq 1 ] && grep -q "for standard output, -o - or no -o" "$out/devstdout.err"'
check_cmd "export -o - to a full device: exit 1, one line naming standard output" \
    eval '"$BT" export -o - "$basic" >/dev/full 2>"$out/full.err"; [ $? -eq 1 ] &&
          grep -q "^beamtrace: standard output: cannot write the output" "$out/full.err"'
rm -f "$out/private.html" "$out/private.json"
check_cmd "report -o and export -o make their file 0600, whatever the umask" \
    eval '(umask 022; "$BT" report -o "$out/private.html" "$basic" >/dev/null 2>&1 &&
           "$BT" export -o "$out/private.json" "$basic" >/dev/null 2>&1) &&
          [ "$(stat -c %a "$out/private.html")" = 600 ] && [ "$(stat -c %a "$out/private.json")" = 600 ]'
check_cmd "record --duration 10 (no unit): exit 2, one line" \
    usage_error record --node x --events procs --duration 10
check_cmd "a duration with its unit is taken (--slower-than 5ns, --begin +5us)" \
    eval '"$BT" calls --slower-than 5ns --begin +5us "$basic" >/dev/null'
check_cmd "beamtrace --help lists the commands" eval '"$BT" --help | grep -q "^  stats "'
for c in view list stats messages; do
    check_cmd "beamtrace $c --help" eval '"$BT" $c --help | grep -q "^Usage: beamtrace $c"'
done
# Bad values name what is accepted (issue 16): --format xml said "unknown
# option"; view -p took any text and printed nothing, exit 0.
check_cmd "calls --format xml: exit 2, one line naming text and json" \
    eval 'usage_error calls --format xml "$basic" && grep -q "xml: expected text or json" "$out/usage.err"'
check_cmd "view -p notapid: exit 2, one line naming what a pid looks like" \
    eval 'usage_error view -p notapid "$basic" && grep -q "expected a pid (<0.66.0>" "$out/usage.err"'
# Man pages from --help (help2man), one per command: each has its
# synopsis and every option the declarations give it.
if command -v help2man >/dev/null; then
    rm -rf "$out/man"
    check_cmd "tools/gen_man.sh makes beamtrace(1) and a page per command" \
        eval 'bash tools/gen_man.sh "$BT" "$out/man" test >/dev/null 2>&1'
    check_cmd "man pages: NAME, SYNOPSIS and every declared option of every command" python3 - "$BT" "$out/man" <<'PY'
import json, subprocess, sys
bt, man = sys.argv[1], sys.argv[2]
cmds = json.loads(subprocess.run([bt, "help", "--format", "json"], capture_output=True).stdout)["commands"]
bad = []
for c in cmds:
    page = open("%s/beamtrace-%s.1" % (man, c["name"])).read().replace("\\-", "-")
    for want in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", "beamtrace-%s" % c["name"]]:
        if want not in page:
            bad.append((c["name"], want))
    bad += [(c["name"], "--" + o["name"]) for o in c["options"] if "--" + o["name"] not in page]
top = open(man + "/beamtrace.1").read()
bad += [("beamtrace", c["name"]) for c in cmds if c["name"] not in top]
if bad:
    print("# missing: %r" % bad[:20])
sys.exit(1 if bad else 0)
PY
else
    skip "man pages from --help" "help2man is not installed (apt-get install help2man)"
fi
# flame's SVG is for a file or a pipe (issue 16): on a terminal, one line
# saying so, exit 2, nothing written; --folded is text and stays allowed.
python3 test/cli/on_terminal.py "$BT" flame "$basic" >"$out/flame.tty"
check_cmd "flame to a terminal: exit 2, nothing written, one line naming -o FILE" \
    eval '[ "$(head -1 "$out/flame.tty")" = "2 0" ] && [ "$(wc -l <"$out/flame.tty")" -eq 2 ] &&
          grep -q "^beamtrace: flame: .*terminal: give -o FILE" "$out/flame.tty"'
python3 test/cli/on_terminal.py "$BT" flame --folded "$basic" >"$out/folded.tty"
check_cmd "flame --folded to a terminal: exit 0" eval '[ "$(head -1 "$out/folded.tty" | cut -d" " -f1)" = 0 ]'
check_cmd "completion bash: a script bash parses" eval '"$BT" completion bash | bash -n'
# Every documented option of every command, from the declarations (help
# --format json): accepted with each valid value (exit 0, output), refused
# with a bad one (exit 2, one line naming what it takes), offered by bash
# completion. `record` records a live node here when erl is on PATH.
rm -rf "$out/options"
python3 test/cli/options.py "$BT" "$basic" "$out/options" || tap_failures=$((tap_failures + 1))


[ "$tap_failures" -eq 0 ]
