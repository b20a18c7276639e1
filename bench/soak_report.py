#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write the soak report (markdown) from the guest's soak.json, with the
same checks as tests/test_vm.py::test_soak_short.

Usage: soak_report.py SOAK_JSON COMMAND VCPUS > bench/soak-report.md
"""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_vm import bogo_ops, soak_checks  # noqa: E402


def vm_shape(cpus):
    """The VM's CPUs as soak.sh boots them (two sockets from 4 vCPUs)."""
    n = int(cpus)
    return f"{n} vCPUs" if n < 4 else f"{n} vCPUs (2 sockets = 2 LLCs)"


def main():
    r = json.load(open(sys.argv[1]))
    checks = soak_checks(r)
    kernel = r.get("kernel", "?")
    print("# Reliability soak: scx_fairquota under load and faults\n")
    print(f"- command: `{sys.argv[2]}`")
    print(f"- kernel: {kernel} (Debian sid, sched_ext), virtme-ng VM, "
          f"{vm_shape(sys.argv[3])} under single-threaded TCG")
    print(f"- date: {datetime.date.today().isoformat()}")
    print(f"- length: {r['seconds']} s of load ({r['elapsed']:.0f} s with the stress-ng wind-down)")
    print(f"- result: **{'PASS' if all(c[3] for c in checks) else 'FAIL'}** "
          f"({sum(c[3] for c in checks)} of {len(checks)} checks)\n")
    print("| check | measured | target | |")
    print("|---|---|---|---|")
    for label, value, target, ok in checks:
        print(f"| {label} | `{value}` | {target} | {'PASS' if ok else 'FAIL'} |")
    print("\nstress-ng bogo ops per stressor:\n")
    print("| stressor | bogo ops |")
    print("|---|---|")
    for s in ("cpu", "fork", "affinity", "switch", "exec"):
        print(f"| {s} | {bogo_ops(r['stress_out'], s)} |")
    print("\nThe workload: `stress-ng --aggressive --metrics-brief` with N cpu, fork, affinity, "
          "switch and exec workers (N = vCPUs; nice 0, as nobody since the exec stressor refuses "
          "root); `hackbench -g 2 -l 100` in a loop at nice -5 (the FIFO class, which every RR "
          "task waits behind but for the starvation guard); every second a cgroup created, "
          "limited to 5000/100000 and given a nice 0 hog, older groups emptied and removed as "
          "soon as their hog is dead; every second a live `scx_fairquota set` started (quota "
          "3000/10000, no quota, slice 2000, slice 3000, `--cgroup soak=30000/100000`, `--cgroup "
          "soak=50000/100000` in turn; they overlap when one takes longer). The driver threads "
          "run at nice -5 beside the FIFO work. Under single-threaded TCG with this load the "
          "driver manages fewer than one cycle per second (the counts above), and the kernel's "
          "state, sampled every 0.5 s nominally, is read less often.")
    print("\nThe daemon's last lines:\n\n```\n" + r["stderr_tail"][-1500:].rstrip() + "\n```")


if __name__ == "__main__":
    main()
