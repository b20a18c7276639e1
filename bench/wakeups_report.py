#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write the markdown report of bench/wakeups.sh from its wakeups.json.

Usage: wakeups_report.py WAKEUPS_JSON COMMAND
"""
import datetime
import json
import sys

from report import fmt, ratio


def main():
    res, cmd = json.load(open(sys.argv[1])), sys.argv[2]
    d, f = res["default"], res["fairquota"]
    print("# Where request/response latency goes: wakeups that change CPU\n")
    print(f"- command: `{cmd}`")
    print(f"- kernel: {res['kernel']} (Debian sid, sched_ext), virtme-ng VM under single-threaded"
          f" TCG, {res['ncpu']} vCPUs")
    print(f"- date: {datetime.date.today().isoformat()}")
    print("- workload: `reqresp 2 200` (a dispatcher thread and 2 workers, 200 us of work per"
          " request, pipes), alone; both schedulers in one VM boot, the default first")
    print(f"- scx_fairquota: state while measured `{f.get('state')}`, exit status {f.get('exit')}")
    print("- a wakeup's delay runs from `sched_waking` to the `sched_switch` that runs the thread;"
          " 'changed CPU' means a `sched_migrate_task` came in between (woken onto another CPU, or"
          " taken from the LLC's queue by another CPU). `perf sched record` slows the workload"
          " down, so the traced rows compare the schedulers with each other, not with the plain"
          " rows\n")
    print("| run | metric | default | fairquota | fairquota / default |")
    print("|---|---|---|---|---|")
    for run in ("plain", "traced"):
        for m in ("req_per_s", "p50_us", "p99_us", "max_us"):
            print(f"| {run} | {m} | {fmt(d[run][m], 0)} | {fmt(f[run][m], 0)} |"
                  f" {ratio(f[run][m], d[run][m])} |")
    for kind, name in (("moved", "changed CPU"), ("stayed", "stayed on their CPU")):
        for m in ("n", "p50_us", "p99_us", "over_2ms"):
            a, b = d["wakeups"][kind][m], f["wakeups"][kind][m]
            print(f"| traced, wakeups that {name} | {m} | {fmt(a, 0)} | {fmt(b, 0)} | {ratio(b, a)} |")


if __name__ == "__main__":
    main()
