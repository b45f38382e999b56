#!/usr/bin/env python3
"""Checks an LTTng trace's metadata (babeltrace2 --output-format=
ctf-metadata: TSDL for CTF 1.8, or JSON fragments for CTF 2, which LTTng
2.15+ writes by default) against OTP's org_erlang_dyntrace provider: every event
present, its fields in declaration order, strings as `string`, integers with
OTP's C types (reference §1.1-1.2): depth `unsigned int` (32-bit unsigned),
gc fields `unsigned long` (64-bit unsigned); beamtrace's user probes: label
32-bit unsigned, i1..i4 `int64_t` (64-bit signed).

Written out here, not read from the catalogue, so that it is an independent
oracle. Prints one line per mismatch; exit status 1 if any."""
import re
import sys

S = "string"
U32 = ("integer", 32, 0)
U64 = ("integer", 64, 0)
S64 = ("integer", 64, 1)
GC_START = [("pid", S), ("need", U64), ("heap", U64), ("old_heap", U64)]
GC_END = [("pid", S), ("reclaimed", U64), ("heap", U64), ("old_heap", U64)]
USER = [("i1", S64), ("i2", S64), ("i3", S64), ("i4", S64),
        ("s1", S), ("s2", S), ("s3", S), ("s4", S)]
EXPECTED = {
    "process_spawn": [("pid", S), ("parent", S), ("entry", S)],
    "process_link": [("from", S), ("to", S), ("type", S)],
    "process_exit": [("pid", S), ("reason", S)],
    "process_register": [("pid", S), ("name", S), ("type", S)],
    "process_scheduled": [("pid", S), ("entry", S), ("type", S)],
    "port_open": [("pid", S), ("driver", S), ("port", S)],
    "port_exit": [("port", S), ("reason", S)],
    "port_link": [("from", S), ("to", S), ("type", S)],
    "port_scheduled": [("pid", S), ("entry", S), ("type", S)],
    "function_call": [("pid", S), ("entry", S), ("depth", U32)],
    "function_return": [("pid", S), ("entry", S), ("depth", U32)],
    "function_exception": [("pid", S), ("entry", S), ("class", S)],
    "message_send": [("from", S), ("to", S), ("message", S)],
    "message_receive": [("to", S), ("message", S)],
    "gc_minor_start": GC_START,
    "gc_minor_end": GC_END,
    "gc_major_start": GC_START,
    "gc_major_end": GC_END,
    "user_trace_s1": [("pid", S), ("tag", S), ("message", S)],
    "user_trace_i4s4": [("pid", S), ("tag", S)] + USER,
    "user_trace_n": [("label", U32), ("pid", S), ("tag", S)] + USER,
}


def parse(tsdl):
    events = {}
    for m in re.finditer(r'event \{\s*name = "org_erlang_dyntrace:(\w+)";.*?fields := struct \{(.*?)\};\s*\};',
                         tsdl, re.S):
        fields = []
        for line in m.group(2).strip().splitlines():
            line = line.strip()
            s = re.fullmatch(r"string _(\w+);", line)
            i = re.fullmatch(r"integer \{ size = (\d+); align = \d+; signed = (\d); .*\} _(\w+);", line)
            if s:
                fields.append((s.group(1), S))
            elif i:
                fields.append((i.group(3), ("integer", int(i.group(1)), int(i.group(2)))))
            else:
                fields.append(("?", line))
        events[m.group(1)] = fields
    return events


def parse_ctf2(text):
    """CTF 2: a sequence of JSON fragments (RS-separated in the file)."""
    import json
    dec, i, events = json.JSONDecoder(), 0, {}
    text = text.replace("\x1e", " ")
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return events
        frag, i = dec.raw_decode(text, i)
        name = frag.get("name", "")
        if frag.get("type") != "event-record-class" or not name.startswith("org_erlang_dyntrace:"):
            continue
        fields = []
        for m in frag.get("payload-field-class", {}).get("member-classes", []):
            fc = m["field-class"]
            if fc["type"] == "null-terminated-string":
                fields.append((m["name"], S))
            elif fc["type"] in ("fixed-length-unsigned-integer", "fixed-length-signed-integer"):
                fields.append((m["name"], ("integer", fc["length"], int("-signed" in fc["type"]))))
            else:
                fields.append(("?", fc["type"]))
        events[name.split(":", 1)[1]] = fields


def main():
    text = open(sys.argv[1]).read()
    events = parse_ctf2(text) if text.lstrip("\x1e \n").startswith("{") else parse(text)
    bad = 0
    for name, want in EXPECTED.items():
        got = events.get(name)
        if got != want:
            print(f"{name}: want {want}, metadata has {got}")
            bad += 1
    for name in sorted(set(events) - set(EXPECTED)):
        print(f"{name}: in the metadata but not in OTP's provider or beamtrace's user probes")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
