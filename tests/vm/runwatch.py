#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Watch, from the kernel's side, how long each task goes without running.

Usage: runwatch.py SECONDS OUT PID...
Runs as a real-time (SCHED_FIFO) task, so no sched_ext scheduler can delay
it, and samples every PID's CPU time (/proc/PID/schedstat, the kernel's
sum_exec_runtime) every 0.1 s for SECONDS. A task's stall is the time
between two samples that show its CPU time unchanged in between; it is
bounded from above: from the sample before the previous change to the
sample that shows the next one. Writes {pid: longest stall s} as JSON to
OUT (the time to the end of the window counts if it never ran again).

The task's own view (how long its code made no progress) also includes
time the emulator did not run the vCPU at all: under single-threaded TCG a
turn the kernel gave can execute nothing. This script measures what the
scheduler decided.
"""
import json
import os
import sys
import time

secs, out, pids = float(sys.argv[1]), sys.argv[2], [int(x) for x in sys.argv[3:]]
# Started under chrt -f (a Python start-up behind FIFO hogs is slow).
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))


def cpu(pid):
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


t_prev = time.monotonic()
end = t_prev + secs
last = {p: cpu(p) for p in pids}
since = {p: t_prev for p in pids}   # sample before the last change
worst = {p: 0.0 for p in pids}
while True:
    time.sleep(0.1)
    t = time.monotonic()
    for p in pids:
        c = cpu(p)
        if c is not None and c != last[p]:
            worst[p] = max(worst[p], t - since[p])
            since[p], last[p] = t_prev, c
    t_prev = t
    if t >= end:
        break
for p in pids:
    worst[p] = max(worst[p], t_prev - since[p])
with open(out + ".tmp", "w") as f:
    json.dump(worst, f)
os.rename(out + ".tmp", out)
