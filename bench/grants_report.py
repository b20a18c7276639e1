#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Report of bench/grants.sh: how much CPU each stall-free stretch of the
nginx worker got (its "grant": one sub-period's turn in smooth mode, one
period's under CFS), from the sched_switch trace grants_guest.py kept.

Usage: grants_report.py OUT_DIR COMMAND LABEL...
A grant is a run of the worker's turns with no gap of GAP_MS or more
between them (a throttled stretch of a 20% limit is 4.8 ms or more at a
6 ms sub-period; the gaps within a grant, waiting for wrk, are under a
millisecond). wrk keeps 10 requests in flight, so a grant shorter than
what 10 requests cost (the run's CPU time over its requests, times 10)
leaves some of them waiting a second stall: those set the p99.
"""
import gzip
import json
import os
import re
import statistics
import sys

GAP_MS = 2.0
EVENT = re.compile(r"\s(\d+\.\d+): sched_switch: prev_comm=.* prev_pid=(\d+) prev_prio=\d+ "
                   r"prev_state=(\S+) ==> next_comm=.* next_pid=(\d+) ")


def turns(text, pid):
    """[(start s, end s, state at the end)] of pid's turns, in time order."""
    out, start = [], None
    for line in text.splitlines():
        m = EVENT.search(line)
        if not m:
            continue
        ts, prev, state, nxt = float(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4))
        if prev == pid and start is not None:
            out.append((start, ts, state))
            start = None
        if nxt == pid:
            start = ts
    return out


def grants(runs, gap_ms=GAP_MS):
    """[(CPU ms, ended blocked)] of each grant, the first and last left out
    (cut by the trace's window)."""
    out, cpu, last = [], 0.0, None
    for s, e, state in runs:
        if last is not None and (s - last[1]) * 1e3 >= gap_ms:
            out.append((cpu, last[2].startswith("S")))
            cpu = 0.0
        cpu += (e - s) * 1e3
        last = (s, e, state)
    return out[1:]


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def summary(res, text):
    runs = turns(text, res["pid"])
    g = grants(runs)
    span = runs[-1][1] - runs[0][0]
    cpu_s = sum(e - s for s, e, _ in runs)
    reqs = res.get("requests") or 0
    round_ms = 10 * cpu_s * 1e3 / reqs if reqs else float("nan")
    cpus = [c for c, _ in g]
    mean = statistics.mean(cpus)
    after_long = [b for a, b in zip(cpus, cpus[1:]) if a > 1.15 * mean]
    return {
        "share": cpu_s / span,
        "per_s": len(g) / span,
        "p10": quantile(cpus, 0.1), "p50": statistics.median(cpus), "p90": quantile(cpus, 0.9),
        "round_ms": round_ms,
        "short": sum(c < round_ms for c in cpus) / len(cpus),
        "blocked": sum(b for _, b in g) / len(g),
        "cv": statistics.pstdev(cpus) / mean,
        "after_long": sum(c < round_ms for c in after_long) / len(after_long) if after_long else 0.0,
    }


def name(res):
    args = res["args"]
    if not args:
        return "default (CFS bandwidth)"
    return "scx_fairquota " + " ".join(args)


def main():
    out, cmd, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = []
    for label in labels:
        with open(os.path.join(out, f"{label}.json")) as f:
            res = json.load(f)
        with gzip.open(os.path.join(out, f"{label}.trace.gz"), "rt") as f:
            rows.append((res, summary(res, f.read())))
    ref = rows[0][0]["wrk"]["p99_ms"]
    print("# Smooth mode's grants: the CPU nginx gets per sub-period\n")
    print(f"- command: `{cmd}`")
    print(f"- kernel: {rows[0][0]['kernel']} (Debian sid, sched_ext), virtme-ng VM, 2 vCPUs")
    print(f"- date: {os.popen('date -u +%Y-%m-%d').read().strip()}")
    print(f"- nginx (one worker) in a cgroup with cpu.max {rows[0][0]['limit']}, "
          "`wrk -t1 -c10 --latency` outside it, one boot, the rows one after the other; "
          "the worker's `sched_switch` events traced throughout")
    print(f"- a grant: the worker's turns with no gap of {GAP_MS:g} ms or more between them; "
          "a round: the CPU 10 requests cost in that run (wrk keeps 10 in flight), "
          "so a grant shorter than a round leaves requests for a second stall; "
          "a long grant: over 1.15x the run's mean grant (an overrun of the sub-quota)\n")
    print("| scheduler | req/s | p50 ms | p99 ms | p99 / first row | share | grants/s "
          "| grant p10 / p50 / p90 ms | spread (cv) | round ms | grants < a round | the same after a long grant | grants ended blocked |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for res, s in rows:
        w = res["wrk"]
        print(f"| {name(res)} | {w['rps']:.0f} | {w['p50_ms']:.2f} | {w['p99_ms']:.2f} "
              f"| {w['p99_ms'] / ref:.2f}x | {s['share']:.1%} | {s['per_s']:.0f} "
              f"| {s['p10']:.2f} / {s['p50']:.2f} / {s['p90']:.2f} | {s['cv']:.2f} "
              f"| {s['round_ms']:.2f} | {s['short']:.0%} | {s['after_long']:.0%} | {s['blocked']:.0%} |")
    bad = [f"{r['label']} rc {r.get('rc')}" for r, _ in rows if r["args"] and r.get("rc") != 0]
    print("\nEvery scx_fairquota run detached cleanly." if not bad else f"\nDaemon exits: {bad}")


if __name__ == "__main__":
    main()
