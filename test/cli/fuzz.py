#!/usr/bin/env python3
"""Mutation fuzzing of the reader: random byte flips, truncations and
metadata edits of a good trace, each read by the sanitizer build of
`beamtrace view` and `stats`. Every run must end with exit 0, or exit 1 and
exactly one "beamtrace:" line on stderr; never a signal or a sanitizer
report. Seeded, so a failure reproduces.
Usage: fuzz.py BEAMTRACE_ASAN GOOD_TRACE WORKDIR RUNS
"""
import os, random, shutil, subprocess, sys

exe, good, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = random.Random(1234)
bad = 0
for i in range(runs):
    d = os.path.join(work, "fuzz")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(good, d)
    files = sorted(os.listdir(d))
    name = rng.choice(files)
    path = os.path.join(d, name)
    data = bytearray(open(path, "rb").read())
    how = rng.choice(["flip", "flip", "truncate", "zero"])
    if how == "flip":
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == "truncate":
        data = data[:rng.randrange(len(data) + 1)]
    else:
        if data:
            at = rng.randrange(len(data))
            data[at:at + 8] = bytes(len(data[at:at + 8]))
    open(path, "wb").write(data)
    for cmd in ("view", "stats"):
        p = subprocess.run([exe, cmd, d], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = p.stderr.decode("utf-8", "replace")
        lines = err.splitlines()
        errs = [l for l in lines
                if not l.startswith("WARNING: ") and not l.startswith("beamtrace: warning: ")]
        fine = ("Sanitizer" not in err and "runtime error" not in err and
                (p.returncode == 0 and not errs or
                 p.returncode == 1 and len(errs) == 1 and errs[0].startswith("beamtrace: ")))
        if not fine:
            bad += 1
            print(f"# run {i}: {how} {name}: {cmd} exit {p.returncode}")
            print("#  " + "\n#  ".join(err.splitlines()[:20]))
            shutil.copytree(d, os.path.join(work, f"fuzz-fail-{i}"), dirs_exist_ok=True)
sys.exit(1 if bad else 0)
