#!/usr/bin/env python3
"""Checks that a Markdown document refers only to what exists in the repository.

usage: check_links.py ROOT FILE...

For each FILE (a path relative to ROOT), prints one line per problem and
exits 1 if there was any:
  - a relative link [text](target) whose file or directory does not exist,
    or whose #anchor is not a heading of the target (GitHub's anchors);
  - a #anchor link with no such heading in the same document;
  - a path the text names (in prose, code spans or code blocks) under one of
    the repository's top-level directories (c_src/, test/, docs/, ...) or a
    root file (Makefile, README.md, ...) that does not exist; globs
    (scripts/*.bt) must match something;
  - a file name in a code span (`nif_control.c`) that no file of the
    repository has;
  - any relative path outside a code block that leaves the repository or
    does not exist (../shared/DESIGN.md).
Paths under build outputs (priv/, ebin/, _build/, test/out/, bench/out/)
must exist too when they are files the build makes; directories that a run
makes (test/out/..., _build/chroots/...) are not checked.
"""
import glob
import os
import re
import sys
import unicodedata

BUILD_ONLY = ("_build/", "test/out/", "bench/out/", "beamtrace-traces/")
FILE_EXT = re.compile(r"^[A-Za-z0-9_.+-]+\.(c|h|def|erl|hrl|sh|py|awk|md|bt|exs|ex|js|app\.src|h2m)$")
# Files that are not the repository's by nature: the VM's and the system's
# headers, the user's own project files.
OUTSIDE = {"erl_nif.h", "sdt.h", "mix.exs", "rebar.config", "vm.args", "sys.config"}
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)           # code spans: their text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"[*_]{1,3}([^*_]+)[*_]{1,3}", r"\1", text)
    text = text.strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LN" or cat == "Mn":
            out.append(ch)
    return "".join(out).replace(" ", "-")


def anchors(path):
    """Every anchor of a Markdown file, as GitHub numbers repeated headings."""
    seen = {}
    result = set()
    fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
                continue
            m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                result.add(s if n == 0 else "%s-%d" % (s, n))
    return result


def main():
    root = os.path.realpath(sys.argv[1])
    top = set(os.listdir(root))
    top_dirs = {d + "/" for d in top if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")}
    top_files = {f for f in top if os.path.isfile(os.path.join(root, f)) and not f.startswith(".")}
    basenames = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "_build", "out")]
        basenames.update(filenames)
    # A repository path as prose or code names it: a top-level directory then
    # more components, or a root file by itself.
    path_re = re.compile(r"(?<![\w./~$@-])((?:%s)[A-Za-z0-9_.*+/-]*|(?:%s))(?![\w/-])" % (
        "|".join(re.escape(d) for d in sorted(top_dirs)),
        "|".join(re.escape(f) for f in sorted(top_files))))
    problems = 0
    cache = {}

    def bad(doc, lineno, what):
        nonlocal problems
        problems += 1
        print("%s:%d: %s" % (doc, lineno, what))

    def inside(path):
        return os.path.realpath(path) == root or os.path.realpath(path).startswith(root + os.sep)

    for doc in sys.argv[2:]:
        doc_path = os.path.join(root, doc)
        doc_dir = os.path.dirname(doc_path)
        own = anchors(doc_path)
        fence = False
        with open(doc_path, encoding="utf-8") as f:
            lines = f.readlines()
        for lineno, line in enumerate(lines, 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if not fence:
                for _, target in LINK.findall(line):
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                        continue
                    path, _, frag = target.partition("#")
                    if not path:
                        if frag not in own:
                            bad(doc, lineno, "no heading for #%s in this document" % frag)
                        continue
                    full = os.path.normpath(os.path.join(doc_dir, path))
                    if not inside(full):
                        bad(doc, lineno, "link leaves the repository: %s" % target)
                    elif not os.path.exists(full):
                        bad(doc, lineno, "link to a missing file: %s" % target)
                    elif frag:
                        if full not in cache:
                            cache[full] = anchors(full) if full.endswith(".md") else set()
                        if frag not in cache[full]:
                            bad(doc, lineno, "no heading for #%s in %s" % (frag, path))
                for _, span in CODE_SPAN.findall(line):
                    span = span.strip()
                    if FILE_EXT.match(span) and span not in basenames and span not in OUTSIDE:
                        bad(doc, lineno, "no file of the repository is named %s" % span)
            # Paths named in prose, code spans and code blocks.
            text = LINK.sub(lambda m: m.group(1), line)
            # (Code blocks show commands run elsewhere: a mix project's
            # path: "../beamtrace" is the user's, not ours.)
            for m in ([] if fence else re.finditer(r"(?<![\w/])\.\./[\w./-]+", text)):
                p = m.group(0).rstrip(".,;:)")
                full = os.path.join(doc_dir, p)
                if not inside(full):
                    bad(doc, lineno, "path leaves the repository: %s" % p)
                elif not os.path.exists(full):
                    bad(doc, lineno, "no such path (from %s): %s" % (os.path.dirname(doc) or ".", p))
            for m in path_re.finditer(text):
                p = m.group(1).rstrip(".,;:)")
                if p.startswith(BUILD_ONLY):
                    continue
                if any(c in p for c in "*?["):
                    if not glob.glob(os.path.join(root, p)):
                        bad(doc, lineno, "no file matches %s" % p)
                elif not os.path.exists(os.path.join(root, p)):
                    bad(doc, lineno, "no such path in the repository: %s" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
