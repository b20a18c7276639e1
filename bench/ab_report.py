#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn bench/ab.sh's JSON results into bench/ab-report.md: per metric, the
default scheduler, every round of build A and build B, and the ratio of
B's mean to A's mean.

Usage: ab_report.py RESULTS_DIR SHA_A SHA_B ROUNDS COMMAND
"""
import datetime
import json
import os
import statistics
import sys

import emulation


def metrics(r):
    """The numbers of one guest_bench.py run, by row name."""
    m = {}
    if "hackbench" in r:
        m["hackbench -g 4 -l 500, median of 3 (s)"] = r["hackbench"]["median_s"]
    if "mix" in r:
        m["mix: hackbench -g 2 -l 100 beside the hogs (s)"] = r["mix"]["hackbench_s"]
    for k, v in r.get("sharing", {}).items():
        m[f"{k} process(es) on one CPU: throughput (proc/s)"] = v["throughput_per_s"]
        m[f"{k} process(es) on one CPU: longest gap (ms)"] = v["max_gap_ms"]
    for k, v in r.get("reqresp", {}).items():
        for f in ("req_per_s", "p50_us", "p99_us"):
            m[f"request/response {k}: {f}"] = v[f]
    for k, v in r.get("fiforeq", {}).items():
        for f in ("req_per_s", "p50_us", "p99_us", "max_us"):
            m[f"request/response at nice -5 {k}: {f}"] = v[f]
    if "moves" in r:
        p, n = r["moves"]["parts"], len(r["moves"]["parts"])
        what = f"hog moved {r['moves']['move_after_s']} s after its start onto a nice 0 pair's CPU"
        m[f"{what}: its part, median of {n} moves (%)"] = 100 * statistics.median(p)
        m[f"{what}: its part, least (%)"] = 100 * min(p)
        m[f"{what}: moves under 25%"] = sum(x < 0.25 for x in p)
    for k, v in r.get("nicemix", {}).items():
        what = f"unpinned hogs {k}, share / weighted fair share"
        m[f"{what}: least (%)"] = 100 * v["least"]
        m[f"{what}: most (%)"] = 100 * v["most"]
        m[f"unpinned hogs {k}: mean distance from the fair share (points)"] = 100 * v["mean_err"]
    if "fifollc" in r:
        f, rr, n = r["fifollc"]["fifo"], r["fifollc"]["rr"], len(r["fifollc"]["fifo"])
        what = f"FIFO hog on each CPU of LLC 0 beside 8 RR hogs, {n} runs"
        m[f"{what}: FIFO hogs' least share (%)"] = 100 * min(min(x) for x in f)
        m[f"{what}: FIFO hogs' mean share (%)"] = 100 * statistics.mean(y for x in f for y in x)
        m[f"{what}: runs with a FIFO hog under 90%"] = sum(min(x) < 0.90 for x in f)
        m[f"{what}: RR hogs' least share (%)"] = 100 * min(min(x) for x in rr)
        m[f"{what}: RR hogs' most share (%)"] = 100 * max(max(x) for x in rr)
    for k, v in r.get("cyclictest", {}).items():
        if k not in ("samples", "traced_wakeups"):
            m[f"cyclictest nice -5 beside nice 5 stress-ng: {k}"] = v
    for prog, v in sorted(r.get("bpf", {}).items()):
        m[f"BPF ns per call: {prog.removeprefix('fairquota_')}"] = v["ns_per_call"]
    return m


def fmt(x):
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return str(x)
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}"


def main():
    d, a, b, rounds, cmd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    runs = {}
    for f in os.listdir(d):
        if f.endswith(".json"):
            r = json.load(open(os.path.join(d, f)))
            runs[r["label"]] = r
    cols = ["default"] + [f"{s}-{i}" for i in range(1, rounds + 1) for s in (a, b)]
    ms = {c: metrics(runs[c]) if c in runs else {} for c in cols}
    rows = []
    for c in cols:
        rows += [k for k in ms[c] if k not in rows]
    kernel = next((r["kernel"] for r in runs.values()), "?")
    print(f"# A/B: scx_fairquota {a} vs {b}\n")
    print(emulation.header(cmd, kernel, next((r["ncpu"] for r in runs.values()), "?")))
    print(f"- date: {datetime.date.today().isoformat()}")
    print(f"- one VM boot: the default scheduler once, then {rounds} rounds of both builds in "
          "alternating order (the emulation's speed drifts within a boot); B / A is the ratio "
          "of the means of the rounds")
    for c in cols[1:]:
        r = runs.get(c, {})
        print(f"- {c}: state at the end `{r.get('state_at_end')}`, exit status {r.get('sched_rc')}")
    print()
    print("| metric | " + " | ".join(cols) + f" | {b} / {a} |")
    print("|---" * (len(cols) + 2) + "|")
    for k in rows:
        va = [ms[c].get(k) for c in cols if c.startswith(a + "-") and ms[c].get(k) is not None]
        vb = [ms[c].get(k) for c in cols if c.startswith(b + "-") and ms[c].get(k) is not None]
        ratio = (f"{statistics.mean(vb) / statistics.mean(va):.2f}x"
                 if va and vb and statistics.mean(va) else "n/a")
        print(f"| {k} | " + " | ".join(fmt(ms[c].get(k)) for c in cols) + f" | {ratio} |")
    print(f"\nRaw numbers: `{d}/<label>.json` after a run.")


if __name__ == "__main__":
    main()
