#!/usr/bin/env python3
"""Every documented option of every command, derived from the declarations
(`beamtrace help --format json`), not from a hand list. Per option, two
TAP lines:
  - accepted: each valid value of its type (every value of an enum or a
    list of values, a count's bounds, the declared example, a pid and a
    registered name of the trace, ...) exits 0 with output: stdout, or
    the file or directory the option names;
  - refused: a bad value of its type (a flag given a value, an unknown
    enum value, a count out of range, a duration without its unit, an
    empty value, a missing value) exits 2 with one line on stderr naming
    the option and what it accepts.
What a declaration cannot say is in FIXTURES below, each with its reason.
And per command, bash completion (made from the same declarations)
offers each of its options and each value of its enums.

`record`, and `flights`, `fetch` and `stop` (detached flight recordings),
run for real, each option against a live node started here
(with a workload that spawns, sends, calls lists:reverse/1, collects,
writes a file and an ETS table, and fires beamtrace:trigger(bmt_opt) once
beamtrace is there: a flight recording's probe trigger), a TLS-distribution
node for --ssl-dist-optfile when openssl can make it a certificate, and an
lttng-relayd for --relayd, --live and --local (their accepted lines are
SKIPs without lttng-relayd on PATH); --duration infinity is stopped by
Ctrl-C (SIGINT) 1 s after it says it is recording; fetch and stop find a detached flight recording
with captures (started if missing), and `record --detach` is stopped after.
`captures` reads the corpus's captures/ directory. Without `erl`, or when
`make` fails, its accepted lines are SKIPs; with them, nodes that do not
start are a failure. Its refused lines need no node: a bad value is
refused before anything connects.

Usage: options.py BEAMTRACE TRACE_DIR OUT_DIR"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

BT, TRACE, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
# The corpus's flight captures (make_corpus.c), beside good/basic.
CAPTURES = os.path.join(os.path.dirname(os.path.dirname(TRACE)), "captures")
# The commands that talk to a node.
NODE_COMMANDS = ("record", "flights", "fetch", "stop", "snapshot")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COOKIE = "bmt_opt_cookie_%d" % os.getpid()
HOST = socket.gethostname().split(".")[0]
UNBOUNDED = 2 ** 62
failures = 0


def tap(ok, name, notes=()):
    global failures
    print("%s - options: %s" % ("ok" if ok else "not ok", name))
    if not ok:
        failures += 1
        for n in notes[:12]:
            print("#   " + n.replace("\n", "\n#   "))


def run(argv, timeout=120, interrupt_when=None, env=None):
    """(exit status, stdout, stderr). interrupt_when: Ctrl-C (SIGINT) once
    stderr has a line with that text, and 1 s more (not after a fixed time:
    on a loaded machine the handshake alone has taken over 3 s)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         env=env)
    out_chunks, err_lines = [], []
    said = threading.Event()

    def read_out():
        out_chunks.append(p.stdout.read())

    def read_err():
        for line in p.stderr:
            err_lines.append(line)
            if interrupt_when is not None and interrupt_when.encode() in line:
                said.set()
        said.set()   # stderr closed: the command ended without saying it

    readers = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
    for r in readers:
        r.start()
    deadline = time.monotonic() + timeout
    if interrupt_when is not None and said.wait(timeout) and p.poll() is None:
        time.sleep(1)
        p.send_signal(signal.SIGINT)
    try:
        p.wait(max(1, deadline - time.monotonic()))
        status = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        status = 124
        err_lines.insert(0, b"timed out\n")
    for r in readers:
        r.join(5)
    return (status, b"".join(out_chunks).decode("utf-8", "replace"),
            b"".join(err_lines).decode("utf-8", "replace"))


_n = 0


def fresh(kind, create=False):
    """A new path under OUT for a file or directory an option names."""
    global _n
    _n += 1
    path = os.path.join(OUT, "%s%d" % (kind, _n))
    if create:
        os.makedirs(path)
    return path


def trace_process():
    """A pid and the registered name of one process of the trace: the
    thread names of its export, "<pid> name", the first whose name --pid
    takes (a track may be named by an initial call, which is no name)."""
    rc, out, _ = run([BT, "export", TRACE])
    for e in json.loads(out)["traceEvents"]:
        if e.get("name") == "thread_name":
            pid, _, name = e["args"]["name"].partition(" ")
            if pid.startswith("<") and re.fullmatch(r"[\x21-\x7e]+", name) and \
                    run([BT, "procs", "--pid", name, TRACE])[0] == 0:
                return pid, name
    sys.exit("options.py: no process with a printable registered name in %s" % TRACE)


PID, NAME = trace_process()

# What the declarations cannot say, each for a reason. (command, option,
# value or None) -> extra arguments; "target" -> the node to record.
FIXTURES = {
    # --links links sends to receipts: it needs those events recorded.
    ("record", "links", None): ["--events", "send,receive"],
    # The call kind traces the calls a --calls SPEC names.
    ("record", "events", "call"): ["--calls", "lists:reverse/1"],
    # The options file is TLS distribution's: a node that runs it.
    ("record", "ssl-dist-optfile", None): ["--proto-dist", "inet_tls"],
    ("flights", "ssl-dist-optfile", None): ["--proto-dist", "inet_tls"],
    ("fetch", "ssl-dist-optfile", None): ["--proto-dist", "inet_tls"],
    ("stop", "ssl-dist-optfile", None): ["--proto-dist", "inet_tls"],
    ("snapshot", "ssl-dist-optfile", None): ["--proto-dist", "inet_tls"],
    # The calls' values need calls to record.
    ("record", "results", None): ["--calls", "lists:reverse/1 -> return"],
    ("record", "args", None): ["--calls", "lists:reverse/1"],
    # A flight recording needs a trigger (the workload fires this probe)
    # and, attached, ends at --until (7 days by default).
    ("record", "flight", None): ["--trigger", "probe=bmt_opt", "--until", "3s"],
    ("record", "trigger", None): ["--until", "3s"],
    ("record", "after", None): ["--trigger", "probe=bmt_opt", "--until", "3s"],
    ("record", "max-captures", None): ["--trigger", "probe=bmt_opt", "--until", "3s"],
    ("record", "until", None): ["--trigger", "probe=bmt_opt"],
    ("record", "detach", None): ["--trigger", "probe=bmt_opt"],
}


def values(c, o):
    """Valid values of option `o` of command `c` (None: a flag's or an
    optional value left out)."""
    t, name = o["type"], o["name"]
    if t == "flag":
        return [None]
    if t == "enum":
        return list(o["values"])
    if t == "count":
        lo = max(o["min"], 1)
        return ([str(lo)] + ([str(o["max"])] if o["max"] < UNBOUNDED and o["max"] != lo else [])
                + (["infinity"] if o["infinity"] else []))
    if t == "duration":
        return [o["example"] or "250us"] + (["infinity"] if o["infinity"] else [])
    if t == "size":
        return [o["example"] or "100M"]
    if t == "time":
        return [o["example"]]
    if t == "pid":
        return [PID]
    if t == "process":
        return [PID, NAME]
    if t == "pattern":
        return [o["example"] or NAME[:2] + "*"]
    if t == "node":
        return [live.name, live.name + "@" + HOST] if live else ["x"]
    if t == "list":
        if name == "nodes":
            return [live.name if live else "x"]
        return list(o["values"]) or [o["example"]]
    if t == "file":
        if name == "cookie-file":
            return [live.cookie_file if live else "cookie"]
        if name == "ssl-dist-optfile":
            return [live.tls_optfile if live and live.tls_optfile else "ssl.conf"]
        return [fresh("file")]
    if t == "dir":
        return ([None] if o["optional_value"] else []) + [fresh("dir", create=True)]
    if t == "text":
        if c["name"] == "record" and name == "relayd" and live and live.relayd_url:
            return [live.relayd_url]
        return [o["example"] or o["default"] or "x"]
    raise SystemExit("options.py: no valid value for type %r (--%s)" % (t, name))


def bad_values(o):
    """[(value or None, [texts the error line must hold])]; None: the
    value left out (the option last on the line)."""
    t = o["type"]
    if t == "flag":
        return [("=x", ["takes no value"])]
    cases = [] if o["optional_value"] else [(None, ["needs a value"])]
    if t in ("enum",) or (t == "list" and o["values"]):
        return cases + [("bogus", list(o["values"]))]
    if t == "count":
        bounded = o["max"] < UNBOUNDED
        named = [str(o["min"])] + ([str(o["max"])] if bounded else [])
        cases.append(("x", named))
        if o["min"] > 0:
            cases.append((str(o["min"] - 1), named))
        if bounded:
            cases.append((str(o["max"] + 1), named))
        return cases
    if t == "duration":
        return cases + [("5", ["ns, us, ms, s, m, h or d"])]
    if t == "size":
        return cases + [("5X", ["K, M or G"])]
    if t == "time":
        return cases + [("+5", ["+DURATION"])]
    if t == "pid":
        return cases + [("notapid", ["expected a pid"])]
    if t == "list" and o["name"] == "nodes":
        return cases + [("a,,b", ["NAME,NAME,..."])]
    if t == "list":  # checked by the option's own function, whose line says what it takes
        return cases + [("", [])]
    # Any text is one of these (a name, a path, a pattern): only none.
    return cases + [("", ["expected " + o["arg"]])]


def words(c):
    """The literal words of the synopsis's first line (`completion bash`)."""
    first = c["synopsis"].split("\n")[0]
    return [w for w in first.split() if re.fullmatch(r"[a-z]+", w)]


def arg(o, v):
    if v is None:
        return ["--" + o["name"]]
    if o["optional_value"]:
        return ["--%s=%s" % (o["name"], v)]
    return ["--" + o["name"], v]


def record_base(c, o, extra):
    """`record`'s own start: the live node, something to trace, a short
    time and a fresh directory; less what option `o` or the `extra`
    arguments give, or what `o` excludes."""
    base = [("node", live.name), ("cookie-file", live.cookie_file), ("events", "procs"),
            ("duration", "500ms"), ("output", fresh("trace"))]
    by_name = {x["name"]: x for x in c["options"]}
    present = {o["name"], o["needs"]} | {a[2:] for a in extra if a.startswith("--")}
    present.discard(None)
    drop = set(present) | {by_name[n]["excludes"] for n in present if n in by_name}
    drop |= {n for n, _ in base if by_name[n]["excludes"] in present}
    if o["name"] == "nodes":
        drop.add("node")  # the synopsis's other form: --nodes names every node
    out = []
    for n, v in base:
        if n not in drop:
            out += ["--" + n, v]
    return out


def node_base(c, o):
    """flights, fetch, stop: the live node, its cookie, and (fetch, stop)
    a fresh -o DIR; less what option `o` gives."""
    base = [("node", live.name), ("cookie-file", live.cookie_file)]
    if c["name"] != "flights":
        base.append(("output", fresh("dir")))
    out = []
    for n, v in base:
        if n != o["name"]:
            out += ["--" + n, v]
    return out


def command_line(c, o, v, live_node):
    by_name = {x["name"]: x for x in c["options"]}
    argv = [BT, c["name"]] + words(c)
    extra = FIXTURES.get((c["name"], o["name"], v), FIXTURES.get((c["name"], o["name"], None), []))
    if live_node and c["name"] == "record":
        argv += record_base(c, o, extra)
    elif live_node:
        argv += node_base(c, o)
    for r in c["options"]:
        if r["required"] and r["name"] != o["name"] and "--" + r["name"] not in argv:
            argv += arg(r, values(c, r)[0])
    if o["needs"]:
        argv += arg(by_name[o["needs"]], values(c, by_name[o["needs"]])[0])
    argv += extra + arg(o, v)
    if c["dirs"]:
        argv.append(input_of(c))
    return argv


def input_of(c):
    """The trace a command reads: the corpus's captures for `captures`."""
    return CAPTURES if c["name"] == "captures" else TRACE


def ensure_flight():
    """A detached flight recording on the live node with a capture (its
    workload fires the probe once beamtrace is there), for fetch and stop.
    Returns None, or why there is none."""
    node = ["--node", live.name, "--cookie-file", live.cookie_file]
    rc, out, err = run([BT, "flights"] + node)
    if " running " not in out:
        rc, _, err = run([BT, "record"] + node + ["--events", "procs", "--flight", "1s",
                                                   "--trigger", "probe=bmt_opt", "--after", "100ms",
                                                   "--detach"])
        if rc != 0:
            return "record --detach: exit %d: %s" % (rc, err.strip()[-300:])
    deadline = time.time() + 60
    while time.time() < deadline:
        rc, out, err = run([BT, "flights"] + node)
        if "capture-" in out:
            return None
        time.sleep(0.5)
    return "no capture on %s within 60 s: %s" % (live.name, out.strip()[-300:])


def start_overwrite_record(node):
    """A `record --mode overwrite` running on `node` (in the background)
    for snapshot to copy from, once it says it records. Returns (process,
    None) or (None, why there is none)."""
    err_path = os.path.join(fresh("record-err", create=True), "stderr")
    err = open(err_path, "w")
    p = subprocess.Popen([BT, "record", "--node", node, "--cookie-file", live.cookie_file,
                          "--events", "procs", "--mode", "overwrite", "--duration", "60s",
                          "-o", fresh("trace")] +
                         (["--proto-dist", "inet_tls", "--ssl-dist-optfile", live.tls_optfile]
                          if node == live.tls_name else []),
                         stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        with open(err_path) as f:
            if "recording on" in f.read():
                return p, None
        time.sleep(0.2)
    stop_record(p)
    with open(err_path) as f:
        return None, "record --mode overwrite did not start: " + f.read()[-300:]


def stop_record(p):
    """Ends a background record as Ctrl-C does, and waits for it."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def stop_flight():
    """Ends a detached flight recording `record --detach` left running."""
    run([BT, "stop", "--node", live.name, "--cookie-file", live.cookie_file, "-o", fresh("dir")])


def has_output(path):
    if os.path.isdir(path):
        return any(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.isfile(path) and os.path.getsize(path) > 0


def accepted(c, o):
    is_record = c["name"] in NODE_COMMANDS and o["name"] not in ("help", "version")
    name = "%s --%s accepted: exit 0 with output" % (c["name"], o["name"])
    if is_record and not live:
        print("ok - options: %s # SKIP %s" % (name, why_not_live))
        return
    if is_record and "relayd" in (o["name"], o["needs"]) and not live.relayd_url:
        print("ok - options: %s # SKIP no lttng-relayd on PATH to stream to "
              "(apt-get install lttng-tools)" % name)
        return
    vals = values(c, o)
    shown = ", ".join("(none)" if v is None else repr(v) for v in vals)
    notes = []
    for v in vals:
        argv = command_line(c, o, v, is_record)
        interrupt = "recording on " if is_record and v == "infinity" else None
        if is_record and o["name"] == "ssl-dist-optfile":
            argv[argv.index("--node") + 1] = live.tls_name
        elif is_record and c["name"] in ("fetch", "stop"):
            why = ensure_flight()
            if why:
                notes.append(why)
        bg = None
        if is_record and c["name"] == "snapshot":
            bg, why = start_overwrite_record(argv[argv.index("--node") + 1])
            if why:
                notes.append(why)
        rc, out, err = run(argv, interrupt_when=interrupt)
        if bg:
            stop_record(bg)
        if is_record and "--detach" in argv:
            stop_flight()
        paths = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-o", "--output")]
        paths += [a.split("=", 1)[1] for a in argv if a.startswith("--remote-dir=")]
        # An option naming where the output goes: there it must be.
        own = o["type"] in ("file", "dir") and v is not None and v in paths
        produced = has_output(v) if own else out.strip() or any(has_output(p) for p in paths)
        if rc != 0 or not produced:
            notes.append("%s -> exit %d, stdout %d bytes, paths %s\n%s" %
                         (" ".join(argv[1:]), rc, len(out), paths, err.strip()[-600:]))
    tap(not notes, "%s (%s)" % (name, shown), notes)


def refused_lines(c, o):
    """[(argv, texts the error line must hold, what it shows)]: each bad
    value, and the option without what it needs, with what it excludes,
    or (a required one) left out."""
    head = [BT, c["name"]] + words(c) + (["--node", "x"] if c["name"] == "record" else [])
    for r in c["options"]:
        if r["required"] and r["name"] != o["name"]:
            head += arg(r, values(c, r)[0])
    dirs = [input_of(c)] if c["dirs"] else []
    by_name = {x["name"]: x for x in c["options"]}
    cases = []
    for v, texts in bad_values(o):
        if o["type"] == "flag":
            cases.append((head + ["--%s%s" % (o["name"], v)], texts, "--%s%s" % (o["name"], v)))
        elif v is None:
            cases.append((head + dirs + ["--" + o["name"]], texts, "no value"))
        else:
            cases.append((head + arg(o, v) + dirs, texts, repr(v)))
    good = arg(o, values(c, o)[-1])
    if o["needs"]:
        cases.append((head + good + dirs, ["needs --" + o["needs"]], "without --" + o["needs"]))
    if o["excludes"]:
        other = by_name[o["excludes"]]
        need = arg(by_name[o["needs"]], values(c, by_name[o["needs"]])[0]) if o["needs"] else []
        cases.append((head + need + good + arg(other, values(c, other)[-1]) + dirs,
                      ["--" + o["excludes"]], "with --" + o["excludes"]))
    if o["required"]:
        cases.append((head + dirs, ["is required"], "left out"))
    return cases


def refused(c, o):
    notes, shown = [], []
    for argv, texts, what in refused_lines(c, o):
        shown.append(what)
        if c["name"] == "record" and o["name"] in ("node", "nodes") and argv[2:4] == ["--node", "x"]:
            del argv[2:4]
        rc, out, err = run(argv)
        lines = err.splitlines()
        line = lines[0] if lines else ""
        good = rc == 2 and len(lines) == 1 and not out and \
            line.startswith("beamtrace: %s: " % c["name"]) and "--" + o["name"] in line and \
            all(t in line for t in texts)
        if not good:
            notes.append("%s -> exit %d, stderr %r, want one line with --%s and %r" %
                         (" ".join(argv[1:]), rc, err[-400:], o["name"], texts))
    tap(not notes, "%s --%s refused (%s): exit 2, one line naming what it accepts" %
        (c["name"], o["name"], ", ".join(shown)), notes)


def completes(words_typed):
    """What `beamtrace completion bash` offers after `words_typed` (the
    last one being completed)."""
    script = ('source <("$0" completion bash) && COMP_WORDS=("$@") && '
              'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _beamtrace && '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    rc, out, _ = run(["bash", "-c", script, BT, "beamtrace"] + words_typed)
    return set(out.split())


def completion(c):
    """Bash completion, made from the same declarations, offers every
    option of `c`, and each value of its enums."""
    offered = completes([c["name"], "-"])
    missing = ["--" + o["name"] for o in c["options"] if "--" + o["name"] not in offered]
    missing += ["-" + o["letter"] for o in c["options"] if o["letter"] and "-" + o["letter"] not in offered]
    for o in c["options"]:
        if o["type"] == "enum":
            got = completes([c["name"], "--" + o["name"], ""])
            missing += ["--%s %s" % (o["name"], v) for v in o["values"] if v not in got]
    tap(not missing, "completion bash offers every option of %s and each value of its enums" % c["name"],
        ["missing: " + " ".join(missing)])


class Live:
    """Target nodes for `record`, started here and stopped at the end."""

    def __init__(self):
        self.name = "bmt_opt_%d" % os.getpid()
        self.tls_name = self.name + "_tls"
        self.tls_optfile = None
        self.cookie_file = os.path.join(OUT, "cookie")
        with open(self.cookie_file, "w") as f:
            f.write(COOKIE)
        os.chmod(self.cookie_file, 0o600)
        self.procs, self.cwds = [], []
        self.relayd_url = None
        try:
            self.start_all()
        except BaseException:
            self.stop()
            raise

    def start_all(self):
        self.start(self.name, [])
        openssl = shutil.which("openssl")
        if openssl:
            d = fresh("tls", create=True)
            key, cert = os.path.join(d, "key.pem"), os.path.join(d, "cert.pem")
            subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                            "-subj", "/CN=beamtrace-test", "-keyout", key, "-out", cert],
                           capture_output=True, check=True)
            self.tls_optfile = os.path.join(d, "ssl_dist.conf")
            side = '[{certfile, "%s"}, {keyfile, "%s"}, {verify, verify_none}]' % (cert, key)
            with open(self.tls_optfile, "w") as f:
                f.write("[{server, %s}, {client, %s}].\n" % (side, side))
            self.start(self.tls_name, ["-proto_dist", "inet_tls", "-ssl_dist_optfile",
                                       self.tls_optfile])
        self.wait_up([self.name] + ([self.tls_name] if self.tls_optfile else []))
        if shutil.which("lttng-relayd"):
            self.start_relayd()

    def start_relayd(self):
        """An lttng-relayd on three free ports of 127.0.0.1, for record
        --relayd, --live and --local to stream to (its own session, so stop()
        ends it)."""
        socks = [socket.socket() for _ in range(3)]
        for so in socks:
            so.bind(("127.0.0.1", 0))
        ctl, data, lv = (so.getsockname()[1] for so in socks)
        for so in socks:
            so.close()
        cwd = fresh("relayd", create=True)
        log = open(os.path.join(cwd, "log"), "w")
        self.procs.append(subprocess.Popen(
            ["lttng-relayd", "-C", "tcp://127.0.0.1:%d" % ctl, "-D", "tcp://127.0.0.1:%d" % data,
             "-L", "tcp://127.0.0.1:%d" % lv, "-o", os.path.join(cwd, "out")],
            cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", ctl), timeout=1).close()
                socket.create_connection(("127.0.0.1", data), timeout=1).close()
                self.relayd_url = "net://127.0.0.1:%d:%d" % (ctl, data)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("lttng-relayd did not start: " +
                           open(os.path.join(cwd, "log")).read()[-300:])

    WORK = ('spawn(fun() -> register(bmt_opt_loop, self()), '
            'T = ets:new(bmt_opt_tab, [named_table, public]), '
            '(fun L(N) -> P = spawn(fun() -> receive M -> lists:reverse(M) end end), '
            'P ! [N, 2, 3], ets:insert(T, {N rem 10, N}), '
            'file:write_file("bmt_opt_file", integer_to_list(N)), '
            'erlang:garbage_collect(), catch beamtrace:trigger(bmt_opt), '
            'timer:sleep(10), L(N + 1) end)(0) end), '
            'timer:apply_after(3600000, erlang, halt, [])')  # a safety net past the cli group's limit

    def start(self, name, dist):
        cwd = fresh("target", create=True)
        self.cwds.append(cwd)
        log = open(os.path.join(cwd, "log"), "w")
        env = dict(os.environ, TMPDIR=cwd)
        self.procs.append(subprocess.Popen(
            ["erl", "-noshell", "-sname", name, "-setcookie", COOKIE, "-eval", self.WORK] + dist,
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))

    def wait_up(self, names):
        deadline = time.time() + 60
        while time.time() < deadline:
            rc, out, _ = run(["epmd", "-names"])
            if all(re.search(r"\bname %s at port" % n, out) for n in names):
                time.sleep(1)
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.2)
        logs = [open(os.path.join(d, "log")).read()[-300:] for d in self.cwds]
        raise RuntimeError("target nodes %s did not start: %s" % (names, " | ".join(logs)))

    def stop(self):
        for p in self.procs:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(p.pid, sig)  # its own session: only what it started
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=20)
                    break
                except subprocess.TimeoutExpired:
                    pass


def live_target():
    """Live targets, or None and why not."""
    if not shutil.which("erl") or not shutil.which("epmd"):
        return None, "no erl on PATH to run a node to record"
    r = subprocess.run(["make", "-s", "-C", ROOT], capture_output=True, text=True)
    if r.returncode != 0:
        return None, "make (the NIF and beams record ships) failed: " + r.stderr.strip()[-200:]
    try:
        live_nodes = Live()
    except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
        # erl is here and beamtrace built: a node that does not start is a failure.
        tap(False, "record: target nodes start", [str(e)])
        return None, "the target nodes did not start"
    tap(True, "record: target nodes start (%s%s)" % (
        live_nodes.name, ", TLS " + live_nodes.tls_name if live_nodes.tls_optfile else ""))
    return live_nodes, None


rc, out, err = run([BT, "help", "--format", "json"])
commands = json.loads(out)["commands"]
os.makedirs(OUT, exist_ok=True)
live, why_not_live = live_target()
# BMT_OPTIONS=CMD[:OPTION],...: only those (a quicker run while working
# on them); the group runs every option.
only = [w.split(":", 1) for w in os.environ.get("BMT_OPTIONS", "").split(",") if w]
try:
    for c in commands:
        for o in c["options"]:
            if only and not any(w[0] == c["name"] and (len(w) == 1 or w[1] == o["name"])
                                for w in only):
                continue
            accepted(c, o)
            refused(c, o)
        completion(c)
finally:
    if live:
        live.stop()
sys.exit(1 if failures else 0)
