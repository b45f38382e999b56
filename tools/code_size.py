#!/usr/bin/env python3
"""Sizes of C code per folder: files, lines, functions over a length and
files over a length, so a change can say what it did to them.

    python3 tools/code_size.py [DIR...]        (default: c_src/cli)
    python3 tools/code_size.py --list DIR      also name each long function

A function is a definition in this tree's style: its signature starts at
column 0, its body opens with '{' alone on a line at column 0 and closes
with '}' at column 0. Its length counts every line from the first line of
the signature to the closing brace. Comments and blank lines count: they
are what a reader holds too. Static data tables ("= {" ... "};") are not
functions. The limits are the house style's (STYLE.md, issue 17): 80 lines
for a function, 700 for a product file.
"""
import os
import re
import sys

FUNC_MAX = 80
FILE_MAX = 700

SIGNATURE_START = re.compile(r"^[A-Za-z_][\w \t\*]*\b[A-Za-z_]\w*\s*\(")


def functions(lines):
    """Yields (name, first line number, length) for each definition."""
    for i, line in enumerate(lines):
        if line.rstrip("\n") != "{":
            continue
        # The signature: back from the line before '{' to a line at column 0
        # that starts a declaration (it may span several lines).
        j = i - 1
        while j >= 0 and not SIGNATURE_START.match(lines[j]) and lines[j][:1] in (" ", "\t"):
            j -= 1
        if j < 0 or not SIGNATURE_START.match(lines[j]) or lines[j].rstrip().endswith(";"):
            continue
        name = re.search(r"([A-Za-z_]\w*)\s*\(", lines[j]).group(1)
        k = i + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        yield name, j + 1, k - j + 1


def folder_of(path, roots):
    for r in roots:
        rel = os.path.relpath(path, r)
        if not rel.startswith(".."):
            parts = rel.split(os.sep)
            return os.path.join(r, parts[0]) if len(parts) > 1 else r
    return os.path.dirname(path)


def main(argv):
    listing = "--list" in argv
    roots = [a.rstrip("/") for a in argv if a != "--list"] or ["c_src/cli"]
    rows = {}
    long_funcs, long_files = [], []
    for root in roots:
        for d, _, files in sorted(os.walk(root)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                p = os.path.join(d, f)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    lines = fh.readlines()
                row = rows.setdefault(folder_of(p, roots), [0, 0, 0, 0])
                row[0] += 1
                row[1] += len(lines)
                if len(lines) > FILE_MAX:
                    row[3] += 1
                    long_files.append((p, len(lines)))
                for name, at, n in functions(lines):
                    if n > FUNC_MAX:
                        row[2] += 1
                        long_funcs.append((p, at, name, n))
    print("%-24s %6s %7s %14s %14s" % ("FOLDER", "FILES", "LINES", "FUNCS>%d" % FUNC_MAX,
                                         "FILES>%d" % FILE_MAX))
    total = [0, 0, 0, 0]
    for folder in sorted(rows):
        r = rows[folder]
        total = [a + b for a, b in zip(total, r)]
        print("%-24s %6d %7d %14d %14d" % (folder, r[0], r[1], r[2], r[3]))
    print("%-24s %6d %7d %14d %14d" % ("total", *total))
    if listing:
        for p, at, name, n in sorted(long_funcs, key=lambda x: -x[3]):
            print("function %s:%d %s: %d lines" % (p, at, name, n))
        for p, n in sorted(long_files, key=lambda x: -x[1]):
            print("file %s: %d lines" % (p, n))


if __name__ == "__main__":
    main(sys.argv[1:])
