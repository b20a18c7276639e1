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
reader, and for its grace-period kthread to run.

The clock and the schedstat are read in an order that no preemption can
turn into grace-period time. Read clock-first, a preemption between the
clock read and the schedstat read before the call put the probe's wait in
the call's wall time but not in its schedstat difference: at --guard-ms
1000 an RR probe preempted there waits about a second, and one CI run
measured a 1.097 s "grace period" (not traced; the mechanism fits). Now the
schedstat is read before and after the start's clock read (a start that
spanned a wait is read again, up to 10 times), and the clock before and after the end's
schedstat read (a call whose end spanned a wait is dropped, and counted).

Writes {"n", "max_s", "median_s", "dropped"} as JSON to OUT after every
call (a probe stopped early still leaves what it saw).
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


# Kept open: one pread() a read, so the windows between the probe's
# clock and schedstat reads (below) are as short as they can be.
SCHEDSTAT = os.open("/proc/self/schedstat", os.O_RDONLY)


def sched():
    run, wait, _ = (int(x) for x in os.pread(SCHEDSTAT, 128, 0).split())
    return run + wait


# A read pair more than this apart spanned a wait for the CPU.
SPAN_NS = 10_000_000


def grace_period():
    """One call's grace period in s, or None if its start (10 tries) or
    its end spanned a wait."""
    for _ in range(10):
        s0 = sched()
        t0 = time.monotonic_ns()
        if sched() - s0 <= SPAN_NS:
            break
    else:
        return None
    if libc.syscall(SYS_MEMBARRIER, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0:
        sys.exit(f"membarrier: errno {ctypes.get_errno()}")
    t1 = time.monotonic_ns()
    s1 = sched()
    if time.monotonic_ns() - t1 > SPAN_NS:
        return None
    return max(0, (t1 - t0) - (s1 - s0)) / 1e9


def write(gps, dropped):
    s = sorted(gps) or [None]
    with open(out + ".tmp", "w") as f:
        json.dump({"n": len(gps), "max_s": s[-1], "median_s": s[len(s) // 2], "dropped": dropped}, f)
    os.rename(out + ".tmp", out)


signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
grace_period()
with open(out + ".ready", "w") as f:
    f.write("1\n")
signal.sigwait({signal.SIGUSR1})
gps, dropped = [], 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    gp = grace_period()
    if gp is None:
        dropped += 1
    else:
        gps.append(gp)
    write(gps, dropped)
    time.sleep(0.1)
