#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn bench/core.sh's JSON results into bench/core-report.md.

Usage: report.py RESULTS_DIR COMMAND
"""
import datetime
import json
import os
import sys


def load(d):
    out = {}
    for cpus in sorted(os.listdir(d), key=int):
        out[cpus] = {}
        for label in ("default", "fairquota", "baseline"):
            p = os.path.join(d, cpus, f"{label}.json")
            if os.path.exists(p):
                out[cpus][label] = json.load(open(p))
    return out


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def fmt(x, nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}"


def main():
    res, cmd = load(sys.argv[1]), sys.argv[2]
    kernel = next((r["kernel"] for c in res.values() for r in c.values()), "?")
    print("# Core benchmarks: scx_fairquota vs the default scheduler\n")
    print(f"- command: `{cmd}`")
    print(f"- kernel: {kernel} (Debian sid, sched_ext), virtme-ng VM under single-threaded TCG")
    print(f"- date: {datetime.date.today().isoformat()}")
    print("- each column ran in the same VM boot, one after the other; ratios are "
          "scx_fairquota / default (baseline = the build before core v2)")
    print("- process sharing: k processes of 300 units of ~1 ms pinned to one CPU, 3 runs each; "
          "throughput is k per second of the span from the first unit to the last (process "
          "start-up not counted), both sharing columns are medians of the 3 runs\n")
    for cpus, r in res.items():
        d, f, b = r.get("default"), r.get("fairquota"), r.get("baseline")
        if not (d and f):
            continue
        print(f"## {cpus} vCPUs" + (" (2 sockets = 2 LLCs)" if int(cpus) >= 4 else "") + "\n")
        print("| metric | default | fairquota | baseline | fairquota / default | target |")
        print("|---|---|---|---|---|---|")

        def row(name, get, target, nd=1):
            dv, fv = get(d), get(f)
            bv = get(b) if b else None
            print(f"| {name} | {fmt(dv, nd)} | {fmt(fv, nd)} | {fmt(bv, nd)} | {ratio(fv, dv)} | {target} |")

        row("hackbench -g 4 -l 500, median of 3 (s)", lambda x: x["hackbench"]["median_s"], "<= 1.0x", 3)
        for k in ("p50_us", "p99_us", "max_us"):
            tgt = {"p50_us": "", "p99_us": "<= 0.8x", "max_us": "<= 0.6x"}[k]
            row(f"cyclictest nice -5 beside nice 5 stress-ng: {k}", lambda x, k=k: x["cyclictest"][k], tgt, 0)
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
        print("| program | fairquota calls | fairquota ns/call | baseline calls | baseline ns/call |")
        print("|---|---|---|---|---|")
        fb = f.get("bpf", {})
        bb = (b or {}).get("bpf", {})
        for name in sorted(set(fb) | set(bb)):
            fv, bv = fb.get(name, {}), bb.get(name, {})
            print(f"| {name} | {fv.get('calls', '')} | {fmt(fv.get('ns_per_call'), 0)} | "
                  f"{bv.get('calls', '')} | {fmt(bv.get('ns_per_call'), 0)} |")
        print()
        for lab, x in (("fairquota", f), ("baseline", b)):
            if x:
                print(f"- {lab}: ops `{x.get('ops')}`, state at the end `{x.get('state_at_end')}`, "
                      f"exit status {x.get('sched_rc')}")
        print()
    print("Raw numbers: `target/bench/results/<cpus>/<scheduler>.json` after a run.")


if __name__ == "__main__":
    main()
