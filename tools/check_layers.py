#!/usr/bin/env python3
"""check_layers.py [DIR...]: the VM side's layering, from the #includes and
the names each file uses (default DIRs: c_src/core c_src/recorder
c_src/sinks c_src/nif c_src/compat, relative to the project root).

A module is a file name without its extension in its folder: nif/nif_format
is nif_format.h (the fast path, inline) plus nif_format.c (the slow path);
catalogue.def belongs to core/catalogue. Module A uses module B when a file
of A includes a file of B or names something B exports: what B's header
defines or declares (macros, struct/union/enum tags and constants,
typedefs, functions, variables) and what B's .c defines without `static`.

Rules, each an error naming the files:
  1. pure C: core/, recorder/ and sinks/ neither include erl_nif.h nor name
     anything enif_* or ERL_NIF_* (they are unit-tested outside the VM and
     shared with the command);
  2. pairs: a function declared in a header is defined in the .c beside it
     (same folder and name; INTERFACES below lists the wrapper headers
     that declare several files' functions on purpose), and a .c declares
     no function of another file;
  3. one meaning per name: a name a file keeps to itself (a static, a macro
     of a .c) is not also exported by another module, so that a reader (and
     this script) can tell which one a use means;
  4. no cycles between modules.
Prints the module graph's edges with -v. Exits 1 on any error.

Deliberately simple: comments, strings and preprocessor conditionals are
dropped, token pasting is not expanded (names made with ## are invisible),
and a local variable spelled like another module's export counts as a use
of it (rule 3 then asks for a rename, which also helps a reader).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_SRC = os.path.join(ROOT, "c_src")
DEFAULT_DIRS = ["c_src/core", "c_src/recorder", "c_src/sinks", "c_src/nif", "c_src/compat"]
PURE = ("core/", "recorder/", "sinks/")
# Interface headers that declare the functions of several files on
# purpose: one shape for every sink (STYLE.md: a sink is one file behind a
# small wrapper header), one CTF layout for the packet and metadata writers,
# one recorder API whose requests live in one file per job.
INTERFACES = {
    "sinks/sinks.h": ("sinks/lttng.c", "sinks/usdt.c"),
    "core/ctf.h": ("core/ctf_packet.c", "core/ctf_metadata.c"),
    "recorder/recorder.h": ("recorder/recorder.c", "recorder/start.c", "recorder/control.c"),
}
KEYWORDS = set("""auto break case char const continue default do double else enum extern float
for goto if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
_Noreturn _Static_assert _Thread_local __thread __attribute__ __extension__ __typeof__ typeof
__builtin_expect __asm__ asm defined""".split())

TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|->|\+\+|--|<<|>>|&&|\|\||[<>=!]=|\S")


def strip(text):
    """Comments, strings and character literals out; newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class File:
    def __init__(self, path):
        self.path = path                      # relative to c_src
        self.module = os.path.splitext(path)[0]
        self.is_header = path.endswith(".h")
        self.includes = []                    # resolved paths relative to c_src
        self.system_includes = []
        self.exports = set()                  # names other files may use
        self.private = set()                  # names this file keeps to itself
        self.declared = set()                 # functions declared, not defined
        self.defined = set()                  # functions defined (any linkage)
        self.uses = set()
        self.parse()

    def parse(self):
        raw = open(os.path.join(C_SRC, self.path), encoding="utf-8").read()
        text = strip(raw)
        lines, code = text.split("\n"), []
        local_macros, macros = set(), set()
        i = 0
        while i < len(lines):
            line = lines[i]
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i]
            i += 1
            m = re.match(r"\s*#\s*(\w+)\s*(.*)", line)
            if not m:
                code.append(line)
                continue
            directive, rest = m.groups()
            if directive == "include":
                inc = re.match(r'"([^"]+)"|<([^>]+)>', rest)
                if inc and inc.group(1):
                    self.includes.append(self.resolve(inc.group(1)))
                elif inc:
                    self.system_includes.append(inc.group(2))
            elif directive == "define":
                name = re.match(r"(\w+)", rest).group(1)
                macros.add(name)
                body = re.sub(r"^\w+(\([^)]*\))?", "", rest)
                self.uses.update(t for t in TOKEN.findall(body) if re.match(r"[A-Za-z_]", t))
            elif directive == "undef":
                local_macros.add(rest.split()[0])
            elif directive in ("if", "elif", "ifdef", "ifndef"):
                self.uses.update(t for t in TOKEN.findall(rest) if re.match(r"[A-Za-z_]", t))
        for name in macros:
            if self.is_header and name not in local_macros:
                self.exports.add(name)
            else:
                self.private.add(name)
        # include guards are nobody's business
        self.exports = {n for n in self.exports if not re.match(r"BMT_\w+_H$", n)}
        tokens = TOKEN.findall("\n".join(code))
        self.uses.update(t for t in tokens if re.match(r"[A-Za-z_]", t) and t not in KEYWORDS)
        self.statements(tokens)
        self.uses -= KEYWORDS

    def resolve(self, name):
        here = os.path.normpath(os.path.join(os.path.dirname(self.path), name))
        if os.path.exists(os.path.join(C_SRC, here)):
            return here
        return os.path.normpath(name)

    def statements(self, tokens):
        """File-scope declarations and definitions. A braced block is kept as
        one "{}" token (its contents are not file scope), except that enum
        bodies are read for their constants."""
        stmt, i, n = [], 0, len(tokens)
        while i < n:
            t = tokens[i]
            if t == "{":
                j, d = i, 0
                while j < n:
                    d += tokens[j] == "{"
                    d -= tokens[j] == "}"
                    if d == 0:
                        break
                    j += 1
                block = tokens[i + 1:j]
                if len(stmt) >= 1 and ("enum" in stmt[-2:]):
                    self.enum_constants(block)
                stmt.append("{}")
                i = j + 1
                # a function body ends the statement
                if self.is_function(stmt[:-1]):
                    self.statement(stmt, body=True)
                    stmt = []
                continue
            if t == ";":
                self.statement(stmt, body=False)
                stmt = []
            else:
                stmt.append(t)
            i += 1

    @staticmethod
    def is_function(head):
        if "(" not in head or "=" in head or not head or head[-1] != ")":
            return False
        return not any(k in head[-2:] for k in ("struct", "union", "enum"))

    def enum_constants(self, block):
        d = 0
        for k, t in enumerate(block):
            if t in "({[":
                d += 1
            elif t in ")}]":
                d -= 1
            elif d == 0 and (k == 0 or block[k - 1] == ",") and re.match(r"[A-Za-z_]", t):
                (self.exports if self.is_header else self.private).add(t)

    def statement(self, stmt, body):
        if not stmt:
            return
        static = "static" in stmt[:4]
        target = self.private if static and not self.is_header else self.exports
        tagset = self.exports if self.is_header else self.private
        for k in range(len(stmt) - 2):
            if stmt[k] in ("struct", "union", "enum") and stmt[k + 2] == "{}":
                tagset.add(stmt[k + 1])
        if stmt[0] == "typedef":
            name = None
            for k in range(len(stmt) - 2):
                if stmt[k] == "(" and stmt[k + 1] == "*":
                    name = stmt[k + 2]
                    break
                if re.match(r"[A-Za-z_]", stmt[k]) and stmt[k + 1] == "(" and stmt[k] not in KEYWORDS:
                    name = stmt[k]
                    break
            if name is None:
                ids = [t for t in stmt if re.match(r"[A-Za-z_]", t) and t not in KEYWORDS]
                name = ids[-1] if ids else None
            if name:
                tagset.add(name)
            return
        # a function: the first identifier at paren depth 0 followed by '('
        pd = 0
        for k in range(len(stmt) - 1):
            t = stmt[k]
            if t == "(":
                pd += 1
            elif t == ")":
                pd -= 1
            elif t == "=":
                break
            elif pd == 0 and re.match(r"[A-Za-z_]", t) and t not in KEYWORDS and stmt[k + 1] == "(":
                if t.isupper() or t.startswith("__"):
                    return  # a macro invocation at file scope (X-macro rows, ERL_NIF_INIT)
                target.add(t)
                (self.defined if body else self.declared).add(t)
                return
        # a variable: the identifier before '=', '[', ';' or __attribute__
        pd, last = 0, None
        for t in stmt:
            if pd == 0 and t in ("=", "[", "__attribute__"):
                break
            if t == "(":
                pd += 1
            elif t == ")":
                pd -= 1
            elif pd == 0 and re.match(r"[A-Za-z_]", t) and t not in KEYWORDS:
                last = t
        if last and not (len(stmt) >= 2 and stmt[-2] in ("struct", "union", "enum")) and \
                stmt[-1] != "{}" and last not in tagset:
            target.add(last)


def main(argv):
    verbose = "-v" in argv
    dirs = [a for a in argv if a != "-v"] or DEFAULT_DIRS
    files = {}
    for d in dirs:
        d = os.path.relpath(os.path.join(ROOT, d), C_SRC)
        for base, _, names in os.walk(os.path.join(C_SRC, d)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    f = File(os.path.relpath(os.path.join(base, n), C_SRC))
                    files[f.path] = f
    errors = []
    modules = {}
    for f in files.values():
        modules.setdefault(f.module, []).append(f)
    exports = {}
    for m, fs in modules.items():
        for f in fs:
            for name in f.exports:
                exports.setdefault(name, set()).add(m)

    # 1. pure C
    for f in files.values():
        if f.path.startswith(PURE):
            if "erl_nif.h" in f.system_includes:
                errors.append(f"{f.path}: includes erl_nif.h (pure C: no VM)")
            vm = sorted(n for n in f.uses if n.startswith(("enif_", "ERL_NIF")))
            if vm:
                errors.append(f"{f.path}: names {', '.join(vm)} (pure C: no VM)")

    # 2. pairs
    for f in files.values():
        for name in sorted(f.declared):
            if name in f.defined:
                continue
            if f.is_header:
                definers = [g for g in files.values() if not g.is_header and name in g.defined
                            and name not in g.private]
                for g in definers:
                    if g.module != f.module and g.path not in INTERFACES.get(f.path, ()):
                        errors.append(f"{f.path}: declares {name}, defined in {g.path}: declare it in "
                                      f"{g.module}.h")
            else:
                errors.append(f"{f.path}: declares {name}, a function of another file: include its header")

    # 3. one meaning per name; 4. the graph. A header that declares a
    # function defined by another module's .c depends on that module (the
    # declaration must change with it), except an interface's.
    edges = {}
    for f in files.values():
        out = edges.setdefault(f.module, {})
        if f.is_header:
            for name in f.declared - f.defined:
                for g in files.values():
                    if not g.is_header and name in g.defined and name not in g.private and \
                            g.module != f.module and g.path not in INTERFACES.get(f.path, ()):
                        out.setdefault(g.module, f"{f.path} declares {name} of {g.path}")
        for inc in f.includes:
            target = os.path.splitext(inc)[0]
            if target in modules and target != f.module:
                out.setdefault(target, f"{f.path} includes {inc}")
        for name in f.uses:
            owners = exports.get(name, set()) - {f.module}
            if not owners:
                continue
            if name in f.private:
                errors.append(f"{f.path}: its own {name} is named like {', '.join(sorted(owners))}'s: rename it")
                continue
            if name in f.exports or any(name in g.exports for g in modules[f.module]):
                continue
            for m in sorted(owners):
                out.setdefault(m, f"{f.path} uses {name}")

    # cycles (Tarjan)
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in sccs:
        why = [f"{a} -> {b} ({edges[a][b]})" for a in comp for b in edges.get(a, {}) if b in comp]
        errors.append("include/use cycle between " + ", ".join(comp) + ":\n    " + "\n    ".join(why))

    if verbose:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}   ({edges[a][b]})")
    for e in errors:
        print("check_layers: " + e)
    print(f"check_layers: {len(files)} files, {len(modules)} modules, "
          f"{sum(len(v) for v in edges.values())} edges, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
