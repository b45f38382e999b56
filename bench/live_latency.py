#!/usr/bin/env python3
"""Event-to-live-viewer latency: runs babeltrace2 --input-format=lttng-live
on URL for SECONDS and, for every event line it prints, notes how long
after the event's own time (the trace clock, mapped to the epoch) the line
reached us. Prints "lines=N p50_ms=X p90_ms=Y p99_ms=Z max_ms=W" (all
zero when no line came).

Usage: live_latency.py URL SECONDS
"""
import subprocess
import sys
import threading
import time


def main():
    url, seconds = sys.argv[1], float(sys.argv[2])
    # The session may not exist yet when the viewer starts: wait for it.
    params = 'inputs=["%s"],session-not-found-action="continue"' % url
    proc = subprocess.Popen(
        ["babeltrace2", "--component=src.ctf.lttng-live", "--params=" + params,
         "--clock-seconds", "--no-delta"],
        stdout=subprocess.PIPE, stderr=open(sys.argv[3], "w") if len(sys.argv) > 3 else subprocess.DEVNULL,
        text=True, bufsize=1)
    lags = []
    end = time.time() + seconds
    # The loop below looks at the time only when a line comes: a viewer
    # that started late (a loaded machine) prints nothing once the nodes
    # stopped, and would be waited for forever.
    watchdog = threading.Timer(seconds + 10, proc.kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            now = time.time()
            if line.startswith("["):
                ts = float(line[1:line.index("]")])
                lags.append(now - ts)
            if now > end:
                break
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
    lags.sort()
    if not lags:
        print("lines=0 p50_ms=0 p90_ms=0 p99_ms=0 max_ms=0")
        return

    def pct(q):
        return lags[min(len(lags) - 1, int(q * len(lags)))] * 1000

    print("lines=%d p50_ms=%.0f p90_ms=%.0f p99_ms=%.0f max_ms=%.0f"
          % (len(lags), pct(0.5), pct(0.9), pct(0.99), lags[-1] * 1000))


if __name__ == "__main__":
    main()
