#!/usr/bin/env python3
"""Checks the command's layers (STYLE.md: "A layer uses only the layers
below it") and that no two modules include each other, directly or round
a longer cycle.

    python3 tools/check_cli_layers.py [c_src/cli]

Layers, lowest first: base, ctf, model, out, then cmd and record side by
side (cmd may use record; record may not use cmd). A module is a .c/.h
pair (model/names.c with model/names.h, and a private header
names_priv.h if it has one); module A uses module B when
A.c or A.h includes B.h. c_src/core (pure C shared with the NIF) and
sinks/usdt_sdt.h sit below every layer. Prints one line per breach and
exits 1 if there is any, 0 otherwise.
"""
import os
import re
import sys

RANK = {"base": 0, "ctf": 1, "model": 2, "out": 3, "cmd": 4, "record": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# A module's file name without its suffix: names_priv.h (what a module's
# files share) and plan_run.h (plan's inline hot half, which the reader's
# loop includes) belong to the module they extend.
SUFFIX = re.compile(r"_(priv|run)$")


def modules(root):
    """{module: set of included header paths relative to root's parent}."""
    uses = {}
    for folder in sorted(os.listdir(root)):
        d = os.path.join(root, folder)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            mod = folder + "/" + SUFFIX.sub("", f.rsplit(".", 1)[0])
            for line in open(os.path.join(d, f), encoding="utf-8", errors="replace"):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                target = inc if "/" in inc else folder + "/" + inc
                uses.setdefault(mod, set()).add(SUFFIX.sub("", target.rsplit(".", 1)[0]))
            uses.setdefault(mod, set())
    return uses


def main(argv):
    root = argv[0] if argv else "c_src/cli"
    uses = modules(root)
    breaches = []
    for mod, targets in sorted(uses.items()):
        layer = mod.split("/")[0]
        for t in sorted(targets):
            tl = t.split("/")[0]
            if t == mod or tl not in RANK:
                continue  # its own header, or core/, sinks/ (below every layer)
            if RANK[tl] > RANK[layer] or (RANK[tl] == RANK[layer] and tl != layer and
                                          not (layer == "cmd" and tl == "record")):
                breaches.append("layer: %s uses %s (%s is above %s)" % (mod, t, tl, layer))
    # Cycles between modules (a module including its own header is none).
    graph = {m: {t for t in ts if t in uses and t != m} for m, ts in uses.items()}
    seen, stack, on_stack = set(), [], set()

    def visit(m):
        seen.add(m)
        stack.append(m)
        on_stack.add(m)
        for n in sorted(graph[m]):
            if n in on_stack:
                breaches.append("cycle: " + " -> ".join(stack[stack.index(n):] + [n]))
            elif n not in seen:
                visit(n)
        stack.pop()
        on_stack.discard(m)

    for m in sorted(graph):
        if m not in seen:
            visit(m)
    for b in breaches:
        print(b)
    print("%d modules, %d breaches" % (len(uses), len(breaches)))
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
