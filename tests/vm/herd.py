#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Start N CPU hogs quickly and have each measure how long it was kept off
the CPU.

Usage: herd.py N OUT
The parent runs at nice -10 while it forks; each child sets nice 0 and
waits for SIGUSR1, which the parent sends to all once all are forked (so
spinning children never slow the forking down); then each spins reading
the monotonic clock. Once all are forked the parent writes OUT.pids and sets
itself to nice 0. On SIGTERM every child reports the longest gap between
two clock reads after the first 3 s (time it did not run) and the CPU time
it used in that window; the parent writes {pid: [gap_s, cpu_s]} as JSON to
OUT and exits.
"""
import json
import os
import signal
import sys
import tempfile
import time

n, out = int(sys.argv[1]), sys.argv[2]
os.setpriority(os.PRIO_PROCESS, 0, -10)
tmp = tempfile.mkdtemp(prefix="herd-")
pids = []
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
        signal.sigwait({signal.SIGUSR1})
        stop = False

        def on_term(*_):
            global stop
            stop = True

        signal.signal(signal.SIGTERM, on_term)
        start = time.monotonic() + 3.0
        clock, cpu = time.monotonic, time.process_time
        last, gap, cpu0 = clock(), 0.0, None
        while not stop:
            now = clock()
            if now >= start:
                if cpu0 is None:
                    cpu0 = cpu()
                elif now - last > gap:
                    gap = now - last
            last = now
        with open(os.path.join(tmp, str(os.getpid())), "w") as f:
            json.dump([gap, cpu() - (cpu0 or cpu())], f)
        os._exit(0)
    pids.append(pid)

for p in pids:
    os.kill(p, signal.SIGUSR1)
with open(out + ".pids.tmp", "w") as f:
    f.write("\n".join(map(str, pids)) + "\n")
os.rename(out + ".pids.tmp", out + ".pids")
os.setpriority(os.PRIO_PROCESS, 0, 0)


def finish(*_):
    for p in pids:
        os.kill(p, signal.SIGTERM)
    res = {}
    for p in pids:
        os.waitpid(p, 0)
        try:
            with open(os.path.join(tmp, str(p))) as f:
                res[p] = json.load(f)
        except OSError:
            res[p] = None
    with open(out + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(out + ".tmp", out)
    sys.exit(0)


signal.signal(signal.SIGTERM, finish)
while True:
    time.sleep(1)
