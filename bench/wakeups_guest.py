#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where request/response latency goes, run inside the sched_ext VM (see
bench/wakeups.sh).

For the kernel's default scheduler and then scx_fairquota: the
request/response workload (target/bench/reqresp 2 200 SECONDS) once plain
and once under `perf sched record`. From the trace, every wakeup of a
reqresp thread (sched_waking to the sched_switch that runs it) is split by
whether the thread changed CPU on the way (woken onto another CPU, or
taken from the shared queue by another CPU) or not.

Writes OUT/wakeups.json.

Usage: wakeups_guest.py OUT SECONDS BINARY
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest_bench as gb  # noqa: E402

EVENT = re.compile(r"\s*\S.*?\s+\d+\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+): (.*)")


def field(rest, name):
    return int(re.search(name + r"=(\d+)", rest).group(1))


def split_delays(data):
    """Delays (us) of reqresp wakeups, by whether the thread changed CPU."""
    out = subprocess.run(["perf", "script", "-i", data], capture_output=True, text=True).stdout
    pending, delays = {}, {"moved": [], "stayed": []}
    for line in out.splitlines():
        m = EVENT.match(line)
        if not m:
            continue
        t, ev, rest = float(m.group(2)), m.group(3), m.group(4)
        if ev == "sched_waking" and "comm=reqresp" in rest:
            pending[field(rest, "pid")] = [t, False]
        elif ev == "sched_migrate_task" and "comm=reqresp" in rest:
            if field(rest, "pid") in pending:
                pending[field(rest, "pid")][1] = True
        elif ev == "sched_switch":
            w = pending.pop(field(rest, "next_pid"), None)
            if w:
                delays["moved" if w[1] else "stayed"].append((t - w[0]) * 1e6)
    res = {}
    for kind, d in delays.items():
        d.sort()
        res[kind] = {"n": len(d),
                     "p50_us": d[len(d) // 2] if d else None,
                     "p99_us": d[len(d) * 99 // 100] if d else None,
                     "over_2ms": sum(1 for x in d if x > 2000)}
    return res


def main():
    out_dir, seconds, binary = sys.argv[1], sys.argv[2], sys.argv[3]
    res = {"kernel": os.uname().release, "ncpu": os.cpu_count()}
    for label in ("default", "fairquota"):
        sched = None
        if label == "fairquota":
            log = open(os.path.join(out_dir, "fairquota.log"), "w")
            sched = gb.start_scheduler(binary, log)
        data = os.path.join(out_dir, f"perf-{label}.data")
        row = {"plain": gb.run_reqresp(seconds),
               "traced": gb.run_reqresp(seconds, ["perf", "sched", "record", "-q", "-a", "-o", data, "--"])}
        row["wakeups"] = split_delays(data)
        if sched:
            row["state"] = gb.state()
            sched.send_signal(2)
            row["exit"] = sched.wait(60)
        res[label] = row
    with open(os.path.join(out_dir, "wakeups.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
