#!/usr/bin/env python3
"""Runs a command with its stdout on a terminal (a pseudo-terminal), as a
user typing it would: prints its exit status and the number of bytes the
terminal received on the first line, then its stderr.

    python3 test/cli/on_terminal.py CMD [ARG...]
"""
import os
import pty
import select
import subprocess
import sys

master, slave = pty.openpty()
p = subprocess.run(sys.argv[1:], stdout=slave, stderr=subprocess.PIPE, timeout=120)
os.close(slave)
got = 0
while select.select([master], [], [], 0.2)[0]:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # the terminal closed
        break
    if not chunk:
        break
    got += len(chunk)
print(p.returncode, got)
sys.stdout.write(p.stderr.decode("utf-8", "replace"))
