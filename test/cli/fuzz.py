#!/usr/bin/env python3
"""Mutation fuzzing of the trace reader against babeltrace2.

Each run copies one of the good traces, mutates it (random byte flips,
flips inside packet headers and contexts, truncation, zeroed runs, edits of
the metadata text: numbers changed, lines dropped or repeated, byte order
swapped, the text cut), then runs the sanitizer build of `beamtrace` on it
with each command given. Every command must end with exit 0 (stderr: only
"WARNING:" / "beamtrace: warning:" lines) or exit 1 with exactly one
"beamtrace: " error line: never a signal, a hang (10 s), a sanitizer
report, or another exit status.

With --vs-generic, every command but view runs a second time with
BEAMTRACE_READER=generic (every field of every event decoded by walking
its type tree, no field selection, no compiled decoder): both runs must end
alike (exit status, stdout and stderr byte for byte), so the compiled
decoders accept and reject exactly what the walk does.

With --bt2, babeltrace2 reads the same trace and `view`'s verdict is
compared with babeltrace2's: traces `view` accepts but babeltrace2 rejects
(other than by tolerating a last packet cut short, which beamtrace does on
purpose), traces `view` rejects but babeltrace2 accepts (other than for a
packet uuid that differs from the metadata's: CTF 1.8 requires them equal,
babeltrace2 2.0 does not check; and for an event id of 2^32 or more, which
babeltrace2 2.0 finds under the id's low 32 bits), and, when both
accept, whether the printed events are the same bytes. The counts are
printed; --max-disagree N fails the run when the unexplained disagreements
exceed N. Seeded, so a failure reproduces; failing traces are kept in
WORKDIR/fuzz-fail-N.

Usage: fuzz.py [--bt2 [--bt2-every K]] [--max-disagree N] [--seed S] [--cmds view,stats]
               [--vs-generic]
               BEAMTRACE_ASAN WORKDIR RUNS GOOD_TRACE...
"""
import argparse, concurrent.futures, os, random, re, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bt2_compare import compare  # noqa: E402  (its rule for babeltrace2 2.0's stale empty strings)

ap = argparse.ArgumentParser()
ap.add_argument("exe")
ap.add_argument("work")
ap.add_argument("runs", type=int)
ap.add_argument("good", nargs="+")
ap.add_argument("--bt2", action="store_true")
ap.add_argument("--bt2-every", type=int, default=1)
ap.add_argument("--max-disagree", type=int, default=-1)
ap.add_argument("--seed", type=int, default=1234)
ap.add_argument("--cmds", default="view,stats")
ap.add_argument("--vs-generic", action="store_true")
a = ap.parse_args()
rng = random.Random(a.seed)
cmds = a.cmds.split(",")
env = dict(os.environ, TZ="UTC", BEAMTRACE_PROGRESS="0")
ctf_magic = bytes.fromhex("c11ffcc1")


def packet_starts(data):
    return [m.start() for m in re.finditer(re.escape(ctf_magic), data)] or \
           [m.start() for m in re.finditer(re.escape(ctf_magic[::-1]), data)] or [0]


def mutate_stream(data):
    how = rng.choice(["flip", "flip", "header", "header", "header", "truncate", "zero", "splice"])
    if how == "flip":
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == "header":
        # Inside a packet's header and context (the first 88 bytes), where
        # sizes, times, ids and the uuid live.
        starts = packet_starts(bytes(data))
        at = rng.choice(starts) + rng.randrange(88)
        if at < len(data):
            if rng.random() < 0.5:
                data[at] = rng.randrange(256)
            else:
                data[at] ^= 1 << rng.randrange(8)
    elif how == "truncate":
        data = data[:rng.randrange(len(data) + 1)]
    elif how == "zero":
        if data:
            at = rng.randrange(len(data))
            data[at:at + 8] = bytes(len(data[at:at + 8]))
    else:
        # Move a run of bytes elsewhere.
        if len(data) > 32:
            i, j = rng.randrange(len(data) - 16), rng.randrange(len(data) - 16)
            n = rng.randint(1, 16)
            data[j:j + n] = data[i:i + n]
    return how, data


def mutate_metadata(data):
    text = bytes(data)
    if text[:4] in (b"\x57\x1d\xd1\x75", b"\x75\xd1\x1d\x57"):  # packetized
        how, d = mutate_stream(bytearray(text))
        return "packetized " + how, d
    how = rng.choice(["number", "number", "line", "dup", "order", "cut", "flip", "token"])
    lines = text.split(b"\n")
    if how == "number":
        nums = list(re.finditer(rb"\b\d+\b", text))
        if nums:
            m = rng.choice(nums)
            new = str(rng.choice([0, 1, 2, 3, 7, 8, 16, 31, 32, 33, 63, 64, 65, 128, 255, 65535,
                                  2 ** 32, 2 ** 63, 2 ** 64 + 1, int(m.group()) + 1])).encode()
            text = text[:m.start()] + new + text[m.end():]
    elif how == "line":
        if len(lines) > 2:
            del lines[rng.randrange(len(lines))]
        text = b"\n".join(lines)
    elif how == "dup":
        i = rng.randrange(len(lines))
        lines.insert(i, lines[rng.randrange(len(lines))])
        text = b"\n".join(lines)
    elif how == "order":
        text = text.replace(b"byte_order = le", b"byte_order = be", 1) if rng.random() < 0.5 \
            else text.replace(b"align = 8", b"align = %d" % rng.choice([1, 3, 16, 64]), 1)
    elif how == "cut":
        text = text[:rng.randrange(len(text) + 1)]
    elif how == "token":
        words = [b"struct", b"string", b"integer", b"enum", b"variant", b"{", b"}", b";", b"=",
                 b":=", b"[", b"]", b"<id>", b"typealias", b"_pid", b"signed = true;"]
        at = rng.randrange(len(text) + 1)
        text = text[:at] + b" " + rng.choice(words) + b" " + text[at:]
    else:
        d = bytearray(text)
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(len(d))] = rng.randrange(256)
        text = bytes(d)
    return how, bytearray(text)


generic_env = dict(env, BEAMTRACE_READER="generic")


def run(cmd, d, run_env=env):
    try:
        p = subprocess.run([a.exe] + cmd + [d], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=run_env, timeout=60)  # a hang, not a slow machine
    except subprocess.TimeoutExpired:
        return None, b"", "timeout (hang?)"
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


bad = 0
stats = {"both accept": 0, "both reject": 0, "view accepts, bt2 rejects (cut last packet)": 0,
         "view rejects, bt2 accepts (packet uuid differs from the metadata's)": 0,
         "view rejects, bt2 accepts (event id >= 2^32: bt2 aliases it)": 0,
         "view accepts, bt2 rejects": 0, "view rejects, bt2 accepts": 0,
         "both accept, output differs": 0}
EXPLAINED = ("both accept", "both reject", "view accepts, bt2 rejects (cut last packet)",
             "view rejects, bt2 accepts (packet uuid differs from the metadata's)",
             "view rejects, bt2 accepts (event id >= 2^32: bt2 aliases it)")
samples = {}


def evaluate(i, d, what):
    """One mutated trace's checks: (lines to print, failures, the
    babeltrace2 verdict or None, whether to keep it as a disagreement)."""
    out_lines, failures = [], 0
    view_rc, view_out, view_err = None, b"", ""
    for cmd in cmds:
        argv = cmd.split()
        rc, out, err = run(argv, d)
        lines = err.splitlines()
        errs = [l for l in lines
                if not l.startswith("WARNING: ") and not l.startswith("beamtrace: warning: ")]
        fine = (rc is not None and "Sanitizer" not in err and "runtime error" not in err and
                (rc == 0 and not errs or
                 rc == 1 and len(errs) == 1 and errs[0].startswith("beamtrace: ")))
        if not fine:
            failures += 1
            out_lines.append(f"# run {i}: {what}: {cmd} exit {rc}")
            out_lines.append("#  " + "\n#  ".join(err.splitlines()[:20]))
            shutil.copytree(d, os.path.join(a.work, f"fuzz-fail-{i}"), dirs_exist_ok=True)
        if argv[0] == "view":
            view_rc, view_out, view_err = rc, out, err
        elif a.vs_generic and fine and "/dev/null" not in cmd:
            grc, gout, gerr = run(argv, d, generic_env)
            if (grc, gout, gerr) != (rc, out, err):
                failures += 1
                out_lines.append(f"# run {i}: {what}: {cmd}: exit {rc}, with BEAMTRACE_READER=generic exit {grc}")
                out_lines.append("#  fast:    " + "\n#  ".join(err.splitlines()[:3]))
                out_lines.append("#  generic: " + "\n#  ".join(gerr.splitlines()[:3]))
                shutil.copytree(d, os.path.join(a.work, f"fuzz-generic-{i}"), dirs_exist_ok=True)
    k = None
    if a.bt2 and view_rc is not None and i % a.bt2_every == 0:
        try:
            p = subprocess.run(["babeltrace2", d], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=env, timeout=30)
            bt2_ok, bt2_out = p.returncode == 0, p.stdout
        except subprocess.TimeoutExpired:
            bt2_ok, bt2_out = False, b""
        ours = view_rc == 0
        if ours and bt2_ok:
            k = "both accept" if compare(view_out, bt2_out)[0] else "both accept, output differs"
        elif not ours and not bt2_ok:
            k = "both reject"
        elif ours:
            k = "view accepts, bt2 rejects (cut last packet)" if "is cut short" in view_err or \
                "ends inside the last packet" in view_err or "cut short by the end" in view_err else "view accepts, bt2 rejects"
        elif "which the metadata does not declare" in view_err and \
                any(int(x) >= 1 << 32 for x in re.findall(rb"\bid = (\d+);",
                                                          open(os.path.join(d, "metadata"), "rb").read())):
            # babeltrace2 2.0 finds an event id of 2^32 or more under its low 32 bits
            k = "view rejects, bt2 accepts (event id >= 2^32: bt2 aliases it)"
        elif "has a uuid other than the metadata's" in view_err:
            # CTF 1.8 requires the packet's uuid to be the metadata's; bt2 2.0 does not check
            k = "view rejects, bt2 accepts (packet uuid differs from the metadata's)"
        else:
            k = "view rejects, bt2 accepts"
    return out_lines, failures, k


# The mutations are drawn in order from one seeded generator, so a seed
# always gives the same traces; their checks (each a few processes that
# only read the trace) run on every core, and are reported in run order.
jobs = []
with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
    for i in range(a.runs):
        good = a.good[i % len(a.good)]
        d = os.path.join(a.work, f"fuzz-{i}")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(good, d)
        files = sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
        name = rng.choice(files)
        path = os.path.join(d, name)
        data = bytearray(open(path, "rb").read())
        how, data = (mutate_metadata if name == "metadata" else mutate_stream)(data)
        open(path, "wb").write(data)
        jobs.append((i, d, pool.submit(evaluate, i, d, f"{os.path.basename(good)} {how} {name}")))
    for i, d, job in jobs:
        out_lines, failures, k = job.result()
        for line in out_lines:
            print(line)
        bad += failures
        if k is not None:
            stats[k] += 1
            if k not in EXPLAINED:
                samples.setdefault(k, []).append(i)
                if len(samples[k]) <= 5:
                    shutil.copytree(d, os.path.join(a.work, f"fuzz-disagree-{i}"), dirs_exist_ok=True)
        shutil.rmtree(d, ignore_errors=True)
if a.bt2:
    for k, v in stats.items():
        print(f"# {k}: {v}" + (f" (runs {samples[k][:8]})" if k in samples else ""))
    disagree = stats["view accepts, bt2 rejects"] + stats["view rejects, bt2 accepts"] + \
        stats["both accept, output differs"]
    if a.max_disagree >= 0 and disagree > a.max_disagree:
        print(f"# {disagree} unexplained disagreements with babeltrace2 (at most {a.max_disagree} allowed)")
        bad += 1
print(f"# {a.runs} mutated traces, {bad} failures")
sys.exit(1 if bad else 0)
