#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-task quota on 8 vCPUs, hogs pinned and unpinned (bench/quota8.sh).

Usage: quota8_guest.py OUT_DIR ROUNDS      (in the VM: writes OUT_DIR/quota8.json)
       quota8_guest.py --report CMD LABEL=OUT_DIR...
                                           (on the host: prints the report, one
                                           table row per run of each boot)
"""
import datetime
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm"))
import guest as g  # noqa: E402

ARGS = ["--period-us", "10000", "--quota-us", "2000"]


def hog_periods(stdout, pids):
    """PERIODS of each hog in the daemon's last table that lists it."""
    last = {}
    for row in g.all_stats_rows(stdout):
        if row["pid"] in pids:
            last[row["pid"]] = row["periods"]
    return [last.get(p) for p in pids]


def run(out, rounds):
    res = {"kernel": os.uname().release, "args": ARGS, "runs": []}
    for r in range(1, rounds + 1):
        for placement in ("pinned", "unpinned"):
            d = g.Daemon(out, f"quota8-{r}-{placement}", ARGS + ["--top", "20"])
            hogs = [g.spawn_hog(0, cpus=(c if placement == "pinned" else None)) for c in range(8)]
            time.sleep(4)
            shares = g.measure([h.pid for h in hogs], 10)
            state = g.sched_state()
            g.kill_all(hogs)
            rc = d.stop()
            stdout = d.stdout()
            res["runs"].append({"round": r, "placement": placement, "shares": shares,
                                "periods": hog_periods(stdout, [h.pid for h in hogs]),
                                "throttles": g.final_totals(stdout).get("throttles"),
                                "llc_rescue": g.final_totals(stdout).get("llc_rescue"),
                                "state_during": state[0], "rc": rc})
            print(f"quota8: round {r} {placement}: " + " ".join(f"{s * 100:.1f}" for s in shares), flush=True)
    with open(os.path.join(out, "quota8.json"), "w") as f:
        json.dump(res, f, indent=1)


def report(cmd, boots):
    """boots: (label, out_dir) pairs, one per VM boot."""
    print("# Per-task quota on 8 vCPUs: hogs pinned one per CPU and unpinned\n")
    print(f"- command: `{cmd}`")
    kernel = json.load(open(os.path.join(boots[0][1], "quota8.json")))["kernel"]
    print(f"- kernel: {kernel}, virtme-ng VM, 8 vCPUs in 2 sockets (2 LLCs), single-threaded TCG")
    print(f"- date: {datetime.date.today().isoformat()}")
    print("- clock: `unstable` is the guest's own choice under TCG: the kernel finds the emulated TSCs "
          "unsynchronized and runs on HPET with an unstable sched_clock, whose per-CPU clock lags on "
          "a vCPU left idle and then charges the task it next runs with the lag (traced: single "
          "charges of 0.3-0.9 s after a 2 s throttle); `tsc-reliable` boots the guest with the kernel "
          "argument `tsc=reliable`, a stable clock as on a real host, as `scripts/vm-run.sh` (the tests, "
          "the other benchmarks) has done since 2026-11-26")
    args = json.load(open(os.path.join(boots[0][1], "quota8.json")))["args"]
    print(f"- scheduler: `scx_fairquota {' '.join(args)}`; 8 nice 0 hogs, measured over 10 s "
          "from /proc/PID/schedstat after 4 s; target 20% +- 3 each")
    print("- periods: in how many of its 10 ms periods each hog's bucket was charged, over the hog's "
          "whole life (about 16 s: 1,600 periods); few periods with the same CPU time means long turns")
    print("- llc_rescue: LLC timers found lost and re-armed by the sweep (`llc_sweep()`)\n")
    print("| clock | round | hogs | share min | median | max | throttles | periods min-max | llc_rescue | state | exit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, out in boots:
        res = json.load(open(os.path.join(out, "quota8.json")))
        for run_ in res["runs"]:
            s = run_["shares"]
            per = [p for p in run_["periods"] if p is not None]
            print(f"| {label} | {run_['round']} | {run_['placement']} | {min(s) * 100:.1f}% | "
                  f"{statistics.median(s) * 100:.1f}% | {max(s) * 100:.1f}% | {run_['throttles']} | "
                  f"{min(per) if per else '?'}-{max(per) if per else '?'} | {run_.get('llc_rescue', '?')} | "
                  f"{run_['state_during']} | {run_['rc']} |")
    print("\nEach hog, in percent of a CPU:\n")
    for label, out in boots:
        res = json.load(open(os.path.join(out, "quota8.json")))
        for run_ in res["runs"]:
            print(f"- {label}, round {run_['round']}, {run_['placement']}: "
                  + ", ".join(f"{x * 100:.1f}" for x in run_["shares"]))


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        report(sys.argv[2], [tuple(a.split("=", 1)) for a in sys.argv[3:]])
    else:
        run(sys.argv[1], int(sys.argv[2]))
