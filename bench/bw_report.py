#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn bench/bandwidth.sh's JSON results into a markdown report and a
latency plot.

Usage: bw_report.py RESULTS_DIR COMMAND PNG > report.md
"""
import datetime
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = ["default", "fairquota", "smooth-5ms", "smooth-10ms"]
NAMES = {"default": "default (CFS bandwidth)", "fairquota": "scx_fairquota (whole periods)",
         "smooth-5ms": "scx_fairquota smooth, --max-stall-us 5000",
         "smooth-10ms": "scx_fairquota smooth, --max-stall-us 10000"}
LIMITS = ["200000 1000000", "20000 100000", "2000 10000"]


def fmt(x, nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}"


def main():
    d, cmd, png = sys.argv[1], sys.argv[2], sys.argv[3]
    res = {lb: json.load(open(os.path.join(d, f"{lb}.json")))
           for lb in LABELS if os.path.exists(os.path.join(d, f"{lb}.json"))}
    kernel = next(iter(res.values()))["kernel"]
    unl = res["default"]["nginx"]["max"]
    fair = 0.2 * unl["rps"] / unl["share"]
    best_default_p99 = res["default"]["nginx"]["2000 10000"]["p99_ms"]
    print("# Bandwidth benchmark: nginx under a 20% cpu.max, and share errors\n")
    print(f"- command: `{cmd}`")
    print(f"- kernel: {kernel} (Debian sid, sched_ext), virtme-ng VM, 2 vCPUs, single-threaded TCG")
    print(f"- date: {datetime.date.today().isoformat()}")
    print("- all rows ran in one VM boot, one scheduler after the other; nginx has one worker in "
          "cgroup `fq_web`, `wrk -t1 -c10 -d15s --latency` runs outside it; the share is the "
          "cgroup's cpu.stat usage_usec over the run")
    print(f"- unlimited run (default scheduler): {unl['rps']:.0f} req/s at {unl['share'] * 100:.0f}% of a "
          f"CPU, so the fair rate at 20% is {fair:.0f} req/s\n")
    print("## nginx at 20% of a CPU\n")
    print("| scheduler | cpu.max | req/s | % of fair rate | p50 ms | p90 ms | p99 ms | max ms | CPU share | "
          "p99 / default's 2ms/10ms p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for lb, r in res.items():
        for lim in ["max"] + LIMITS:
            n = r["nginx"].get(lim)
            if not n:
                continue
            rel = (f"{n['p99_ms'] / best_default_p99:.2f}x" if lim != "max" and n["p99_ms"]
                   and best_default_p99 else "")
            pf = f"{n['rps'] / fair * 100:.0f}%" if lim != "max" and n["rps"] else ""
            print(f"| {NAMES[lb]} | {lim} | {fmt(n['rps'], 0)} | {pf} | {fmt(n['p50_ms'], 2)} | "
                  f"{fmt(n['p90_ms'], 1)} | {fmt(n['p99_ms'], 1)} | {fmt(n['max_ms'], 1)} | "
                  f"{n['share'] * 100:.1f}% | {rel} |")
    print("\nTargets for smooth at every period: 19-21% of a CPU, >= 90% of the fair rate, "
          "p99 <= 0.75x the default scheduler's 2ms/10ms p99.\n")
    print("![nginx p99 latency per period](nginx-latency.png)\n")
    print("## Share error of every (quota, period) under cpu.max\n")
    print("CPU hogs in one cgroup per pair (two for 150000/100000), the single-CPU pairs at once "
          "(1.2 CPUs of 2), each measured from /proc/PID/schedstat over 12 s (8 s for 150000/100000).\n")
    pairs = list(res["default"]["shares"])
    print("| quota/period | target | " + " | ".join(NAMES[lb] for lb in res) + " |")
    print("|---|---|" + "---|" * len(res))
    for pr in pairs:
        q, p = map(int, pr.split("/"))
        want = q / p
        cells = []
        for lb in res:
            s = res[lb]["shares"].get(pr)
            cells.append("n/a" if s is None else f"{s:.4f} ({(s - want) / want * 100:+.1f}%)")
        print(f"| {pr} | {want:.3f} | " + " | ".join(cells) + " |")
    print("\nEvery scx_fairquota run detached cleanly: " + ", ".join(
        f"{lb} exit {r.get('rc')}" for lb, r in res.items() if lb != "default"))

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    xs = range(len(LIMITS))
    width = 0.8 / len(res)
    for i, (lb, r) in enumerate(res.items()):
        ys = [r["nginx"][lim]["p99_ms"] or 0 for lim in LIMITS]
        ax.bar([x + i * width for x in xs], ys, width, label=NAMES[lb])
    ax.set_xticks([x + width * (len(res) - 1) / 2 for x in xs])
    ax.set_xticklabels(["200 ms / 1 s", "20 ms / 100 ms", "2 ms / 10 ms"])
    ax.set_yscale("log")
    ax.set_ylabel("p99 latency (ms, log scale)")
    ax.set_xlabel("cpu.max of nginx's cgroup (all 20% of a CPU)")
    ax.set_title("nginx p99 under wrk -t1 -c10, 2-vCPU VM")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png)


if __name__ == "__main__":
    main()
