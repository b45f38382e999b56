#!/usr/bin/env python3
"""Compares `beamtrace view` output with `babeltrace2` output, line by line.

Exit 0 when they are byte-identical, except for one documented babeltrace2
2.0.x defect: an empty string field ("" in the stream, a lone NUL) is printed
with the value the same field had in an earlier event of that class (the
event object is recycled and the empty string does not overwrite it). Such
lines are accepted only when every differing value is "" on beamtrace's side
and the rest of the line is identical; their count is printed.
Usage: bt2_compare.py BEAMTRACE_OUT BABELTRACE2_OUT
"""
import re
import sys

STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def split(line):
    parts, pos = [], 0
    for m in STRING.finditer(line):
        parts.append((b"t", line[pos:m.start()]))
        parts.append((b"s", m.group(0)))
        pos = m.end()
    parts.append((b"t", line[pos:]))
    return parts


def compare(mine_text, theirs_text):
    """(ok, stale_lines, message): ok when identical but for the defect."""
    mine, theirs = mine_text.split(b"\n"), theirs_text.split(b"\n")
    if len(mine) != len(theirs):
        return False, 0, f"line count differs: beamtrace {len(mine) - 1}, babeltrace2 {len(theirs) - 1}"
    stale = 0
    for n, (a, b) in enumerate(zip(mine, theirs), 1):
        if a == b:
            continue
        pa, pb = split(a), split(b)
        ok = len(pa) == len(pb) and all(
            x == y or (kx == b"s" and x == b'""') for (kx, x), (_, y) in zip(pa, pb))
        if not ok:
            return False, stale, (f"first difference at line {n}:\n#  beamtrace:   " +
                                  a.decode("utf-8", "replace") + "\n#  babeltrace2: " +
                                  b.decode("utf-8", "replace"))
        stale += 1
    return True, stale, ""


def main():
    ok, stale, msg = compare(open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read())
    if not ok:
        print("# " + msg)
        return 1
    if stale:
        print(f"# {stale} lines differ only where babeltrace2 2.0 printed a stale value "
              f"for an empty string")
    return 0


if __name__ == "__main__":
    sys.exit(main())
