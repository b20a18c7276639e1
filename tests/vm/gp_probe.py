#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Measure how long RCU grace periods take, from user space.

Usage: gp_probe.py SECONDS OUT
membarrier(MEMBARRIER_CMD_GLOBAL) returns after synchronize_rcu(), a full
grace period. The probe makes one call, writes OUT.ready and waits for
SIGUSR1 (so that its start, which reads files, is over before the load
begins); then for SECONDS it times each call and takes out the time it
spent itself running or waiting for a CPU during the call
(/proc/self/schedstat: CPU time and run-queue wait), which leaves the grace
period: how long the kernel waited for every CPU and every preempted RCU
reader, and for its grace-period kthread to run. Writes
{"n", "max_s", "median_s"} as JSON to OUT after every call (a probe
stopped early still leaves what it saw).
"""
import ctypes
import json
import os
import signal
import sys
import time

SYS_MEMBARRIER = 324  # x86_64
MEMBARRIER_CMD_GLOBAL = 1

seconds, out = float(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)


def sched():
    with open("/proc/self/schedstat") as f:
        run, wait, _ = (int(x) for x in f.read().split())
    return run + wait


def grace_period():
    t0, s0 = time.monotonic_ns(), sched()
    if libc.syscall(SYS_MEMBARRIER, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0:
        sys.exit(f"membarrier: errno {ctypes.get_errno()}")
    t1, s1 = time.monotonic_ns(), sched()
    return max(0, (t1 - t0) - (s1 - s0)) / 1e9


def write(gps):
    s = sorted(gps)
    with open(out + ".tmp", "w") as f:
        json.dump({"n": len(s), "max_s": s[-1], "median_s": s[len(s) // 2]}, f)
    os.rename(out + ".tmp", out)


signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
grace_period()
with open(out + ".ready", "w") as f:
    f.write("1\n")
signal.sigwait({signal.SIGUSR1})
gps = []
end = time.monotonic() + seconds
while time.monotonic() < end:
    gps.append(grace_period())
    write(gps)
    time.sleep(0.1)
