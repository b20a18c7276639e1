#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-task quota on 8 vCPUs, hogs pinned and unpinned (bench/quota8.sh).

Usage: quota8_guest.py OUT_DIR ROUNDS          (in the VM: writes OUT_DIR/quota8.json)
       quota8_guest.py --report OUT_DIR CMD    (on the host: prints the report)
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
                                "state_during": state[0], "rc": rc})
            print(f"quota8: round {r} {placement}: " + " ".join(f"{s * 100:.1f}" for s in shares), flush=True)
    with open(os.path.join(out, "quota8.json"), "w") as f:
        json.dump(res, f, indent=1)


def report(out, cmd):
    res = json.load(open(os.path.join(out, "quota8.json")))
    print("# Per-task quota on 8 vCPUs: hogs pinned one per CPU and unpinned\n")
    print(f"- command: `{cmd}`")
    print(f"- kernel: {res['kernel']}, virtme-ng VM, 8 vCPUs in 2 sockets (2 LLCs), single-threaded TCG")
    print(f"- date: {datetime.date.today().isoformat()}")
    print(f"- scheduler: `scx_fairquota {' '.join(res['args'])}`; 8 nice 0 hogs, measured over 10 s "
          "from /proc/PID/schedstat after 4 s; target 20% +- 3 each")
    print("- periods: in how many of its 10 ms periods each hog's bucket was charged, over the hog's "
          "whole life (about 16 s: 1,600 periods); few periods with the same CPU time means long turns\n")
    print("| round | hogs | share min | median | max | throttles | periods min-max | state | exit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run_ in res["runs"]:
        s = run_["shares"]
        per = [p for p in run_["periods"] if p is not None]
        print(f"| {run_['round']} | {run_['placement']} | {min(s) * 100:.1f}% | "
              f"{statistics.median(s) * 100:.1f}% | {max(s) * 100:.1f}% | {run_['throttles']} | "
              f"{min(per) if per else '?'}-{max(per) if per else '?'} | {run_['state_during']} | {run_['rc']} |")
    print("\nEach hog, in percent of a CPU:\n")
    for run_ in res["runs"]:
        print(f"- round {run_['round']}, {run_['placement']}: "
              + ", ".join(f"{x * 100:.1f}" for x in run_["shares"]))


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        report(sys.argv[2], sys.argv[3])
    else:
        run(sys.argv[1], int(sys.argv[2]))
