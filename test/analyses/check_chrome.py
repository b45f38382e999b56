#!/usr/bin/env python3
"""Structural check of a Chrome Trace Event JSON file written by
`beamtrace export --format chrome`:
  - valid UTF-8 JSON, an object with traceEvents and displayTimeUnit;
  - every event has ph, pid, tid; every timed event a non-negative ts;
  - complete (X) slices nest on each (pid, tid) track; B/E pair LIFO;
  - each flow id has one start (s) and one finish (f, bp "e"), s.ts <= f.ts,
    and both ends sit on an existing event of their track (an instant at that
    time, or a slice covering it);
  - every track used has a thread_name.
Prints "root_call_ns N": the summed duration of call slices not nested in
another call slice (the traced root-level time), for comparison with the
folded stacks. Exit 1 with a message on the first problem."""
import json, sys
from collections import defaultdict

def fail(msg):
    print("check_chrome: " + msg)
    sys.exit(1)

with open(sys.argv[1], "rb") as f:
    data = json.loads(f.read().decode("utf-8"))
if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
    fail("not an object with a traceEvents list")
if data.get("displayTimeUnit") not in ("ms", "ns"):
    fail("displayTimeUnit missing")
ns = lambda us: round(us * 1000)
slices = defaultdict(list)
be = defaultdict(list)
points = defaultdict(set)
flows = defaultdict(dict)
named = set()
used = set()
for e in data["traceEvents"]:
    ph = e.get("ph")
    if ph == "C":
        # Counter samples (session sources): a process-level track named by
        # `name`, values in args; no tid in Chrome's format.
        if "pid" not in e or not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0 or \
                not isinstance(e.get("args"), dict) or \
                not all(isinstance(v, (int, float)) for v in e["args"].values()):
            fail("bad counter event: %r" % e)
        continue
    if ph is None or "pid" not in e or "tid" not in e:
        fail("event without ph/pid/tid: %r" % e)
    track = (e["pid"], e["tid"])
    if ph == "M":
        if e.get("name") == "thread_name":
            named.add(track)
        continue
    ts = e.get("ts")
    if not isinstance(ts, (int, float)) or ts < 0:
        fail("bad ts: %r" % e)
    used.add(track)
    if ph == "X":
        if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
            fail("X without a non-negative dur: %r" % e)
        slices[track].append((ns(ts), ns(ts + e["dur"]), e.get("cat"), e.get("name")))
    elif ph in ("B", "E"):
        be[track].append((ns(ts), ph, e.get("name")))
    elif ph in ("i", "I"):
        points[track].add(ns(ts))
    elif ph in ("s", "f"):
        fid = e.get("id")
        if ph in flows[fid]:
            fail("flow id %r has two %s events" % (fid, ph))
        if ph == "f" and e.get("bp") != "e":
            fail("flow finish without bp e: %r" % e)
        flows[fid][ph] = (track, ns(ts))
    else:
        fail("unexpected ph %r" % ph)

root_call_ns = 0
for track, ss in slices.items():
    ss.sort(key=lambda s: (s[0], -s[1]))
    stack, call_stack = [], []
    for s in ss:
        while stack and stack[-1][1] <= s[0] and not (stack[-1][0] == stack[-1][1] == s[0]):
            stack.pop()
        if stack and s[1] > stack[-1][1]:
            fail("slices overlap without nesting on track %r: %r and %r" % (track, stack[-1], s))
        stack.append(s)
        if s[2] == "call":
            while call_stack and call_stack[-1][1] <= s[0] and call_stack[-1][1] > call_stack[-1][0]:
                call_stack.pop()
            if not call_stack or not (call_stack[-1][0] <= s[0] and s[1] <= call_stack[-1][1]):
                root_call_ns += s[1] - s[0]
                call_stack = []
            call_stack.append(s)
for track, evs in be.items():
    stack = []
    for ts, ph, name in sorted(evs, key=lambda x: x[0]):
        if ph == "B":
            stack.append(name)
        elif not stack:
            fail("E without B on %r" % (track,))
        else:
            stack.pop()
    if stack:
        fail("B without E on %r" % (track,))

def anchored(track, t):
    if t in points[track]:
        return True
    return any(a <= t <= b for a, b, _, _ in slices[track])

for fid, ends in flows.items():
    if set(ends) != {"s", "f"}:
        fail("flow %r is missing an end: %r" % (fid, ends))
    (st, sts), (ft, fts) = ends["s"], ends["f"]
    if sts > fts:
        fail("flow %r finishes before it starts" % fid)
    if not anchored(st, sts) or not anchored(ft, fts):
        fail("flow %r does not connect existing events" % fid)
missing = used - named
if missing:
    fail("tracks without thread_name: %r" % sorted(missing)[:5])
print("events %d flows %d tracks %d" % (len(data["traceEvents"]), len(flows), len(used)))
print("root_call_ns %d" % root_call_ns)
