#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn bench/core.sh's JSON results into bench/core-report.md.

Each scheduler's runs are named <scheduler>-<round>.json; a column is the
mean of its rounds, and with more than one round the report also gives
the ratio of each round (fairquota / default of the same round).

Usage: report.py RESULTS_DIR COMMAND
"""
import datetime
import json
import os
import statistics
import sys

import emulation

SCHEDULERS = ("default", "fairquota", "baseline")


def load(d):
    """{cpus: {scheduler: [result of round 1, round 2, ...]}}"""
    out = {}
    for cpus in sorted(os.listdir(d), key=int):
        out[cpus] = {s: [] for s in SCHEDULERS}
        names = sorted(f for f in os.listdir(os.path.join(d, cpus)) if f.endswith(".json"))
        for f in sorted(names, key=lambda f: int(f[:-5].rpartition("-")[2] or 0)):
            sched = f[:-5].rpartition("-")[0]
            if sched in out[cpus]:
                out[cpus][sched].append(json.load(open(os.path.join(d, cpus, f))))
    return out


def mean_of(runs, get):
    """Mean of @get over @runs (None if a run lacks it or there are none)."""
    try:
        vals = [get(x) for x in runs]
    except (KeyError, TypeError):
        return None
    return statistics.mean(vals) if vals and None not in vals else None


def round_ratios(f, d, get):
    """Each round's fairquota / default, as "a-b" (min-max) when rounds > 1."""
    rs = []
    for fx, dx in zip(f, d):
        try:
            fv, dv = get(fx), get(dx)
        except (KeyError, TypeError):
            return ""
        if fv is not None and dv:
            rs.append(fv / dv)
    if len(rs) < 2:
        return ""
    return f"{min(rs):.2f}-{max(rs):.2f}x"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def fmt(x, nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}"


def main():
    res, cmd = load(sys.argv[1]), sys.argv[2]
    kernel = next((r[0]["kernel"] for c in res.values() for r in c.values() if r), "?")
    rounds = max((len(r) for c in res.values() for r in c.values()), default=0)
    print("# Core benchmarks: scx_fairquota vs the default scheduler\n")
    print(emulation.header(cmd, kernel))
    print(f"- date: {datetime.date.today().isoformat()}")
    print("- each column ran in the same VM boot, one after the other; ratios are "
          "scx_fairquota / default (baseline = the build before core v2)")
    if rounds > 1:
        print("- a section of several rounds (in its title) ran them in one VM in rotated order "
              "(default fairquota baseline, then fairquota baseline default, ...): each column "
              "is the mean of its rounds, the ratio is that of the means, and 'per round' gives "
              "the range of the rounds' own ratios (the emulation's speed drifts within a boot)")
    print("- process sharing: k processes of 300 units of ~1 ms pinned to one CPU, 3 runs each; "
          "throughput is k per second of the span from the first unit to the last (process "
          "start-up not counted), both sharing columns are medians of the 3 runs\n")
    for cpus, r in res.items():
        d, f, b = r["default"], r["fairquota"], r["baseline"]
        if not (d and f):
            continue
        n = len(f)
        print(f"## {cpus} vCPUs" + (" (2 sockets = 2 LLCs)" if int(cpus) >= 4 else "") +
              (f", {n} rounds" if n > 1 else "") + "\n")
        print("| metric | default | fairquota | baseline | fairquota / default | per round | target |")
        print("|---|---|---|---|---|---|---|")

        def row(name, get, target, nd=1):
            dv, fv, bv = mean_of(d, get), mean_of(f, get), mean_of(b, get)
            print(f"| {name} | {fmt(dv, nd)} | {fmt(fv, nd)} | {fmt(bv, nd)} | {ratio(fv, dv)} | "
                  f"{round_ratios(f, d, get)} | {target} |")

        row("hackbench -g 4 -l 500, median of 3 (s)", lambda x: x["hackbench"]["median_s"], "<= 1.0x", 3)
        for k in ("p50_us", "p99_us", "max_us"):
            tgt = {"p50_us": "", "p99_us": "<= 0.8x", "max_us": "<= 0.6x"}[k]
            row(f"cyclictest nice -5 beside nice 5 stress-ng: {k}", lambda x, k=k: x["cyclictest"][k], tgt, 0)
        # The traced split of those wakeups (guest_bench.wakeup_parts()).
        for k, what in (("timer", "the timer's lateness"), ("sched", "wakeup to run")):
            for q in ("p50", "p99"):
                row(f"cyclictest, {what}: {q}_us", lambda x, k=k, q=q: x["cyclictest"].get(f"{k}_{q}_us"), "", 0)
        for n in ("1", "2", "4"):
            row(f"{n} process(es) on one CPU: throughput (proc/s)",
                lambda x, n=n: x["sharing"][n]["throughput_per_s"], ">= 0.98x", 2)
            row(f"{n} process(es) on one CPU: longest gap (ms)",
                lambda x, n=n: x["sharing"][n]["max_gap_ms"], "<= 1.2x", 1)
        for lab in ("alone", "beside 2 nice 5 hogs"):
            for k, tgt in (("req_per_s", ">= 0.9x"), ("p50_us", "<= 1.0x"), ("p99_us", "<= 1.0x")):
                row(f"request/response {lab}: {k}", lambda x, lab=lab, k=k: x["reqresp"][lab][k],
                    tgt if lab != "alone" else "", 1)
        print()
        print("BPF run time per struct_ops call (ns, `kernel.bpf_stats_enabled`), during the runs above:\n")
        print("| program | fairquota calls | fairquota ns/call | baseline calls | baseline ns/call "
              "| fairquota / baseline |")
        print("|---|---|---|---|---|---|")
        progs = sorted({p for x in f + b for p in x.get("bpf", {})})
        for name in progs:
            cols = []
            for runs in (f, b):
                have = [x["bpf"][name] for x in runs if name in x.get("bpf", {})]
                calls = sum(v["calls"] for v in have) // len(have) if have else None
                ns = statistics.mean(v["ns_per_call"] for v in have) if have else None
                cols.append((calls, ns))
            (fc, fn), (bc, bn) = cols
            print(f"| {name} | {'' if fc is None else fc} | {fmt(fn, 0)} | "
                  f"{'' if bc is None else bc} | {fmt(bn, 0)} | {ratio(fn, bn)} |")
        print()
        for lab, runs in (("fairquota", f), ("baseline", b)):
            for i, x in enumerate(runs, 1):
                print(f"- {lab} round {i}: ops `{x.get('ops')}`, state at the end "
                      f"`{x.get('state_at_end')}`, exit status {x.get('sched_rc')}")
        print()
    print("Raw numbers: `target/bench/results/<cpus>/<scheduler>-<round>.json` after a run; "
          "the BPF table gives calls per round and the mean ns per call.")


if __name__ == "__main__":
    main()
