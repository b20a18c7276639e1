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

import emulation
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The binary's --max-stall-us default (bandwidth.sh reads it from --help; 0: unknown).
DEFAULT_STALL_US = int(os.environ.get("BW_DEFAULT_STALL_US") or 0)


def stall_us(label):
    """The --max-stall-us of a smooth-<ms>ms label (bandwidth.sh's BW_STALLS)."""
    return round(float(label[len("smooth-"):-len("ms")]) * 1000)


def order(label):
    return (0, 0) if label == "default" else (1, 0) if label == "fairquota" else (2, stall_us(label))


def name(label):
    if label == "default":
        return "default (CFS bandwidth)"
    if label == "fairquota":
        return "scx_fairquota (whole periods)"
    us = stall_us(label)
    return f"scx_fairquota smooth, --max-stall-us {us}" + (
        " (the default)" if us == DEFAULT_STALL_US else "")

LIMITS = ["200000 1000000", "20000 100000", "2000 10000"]


def fmt(x, nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}"


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def load(d):
    """{label: {part: result}} of every JSON file bandwidth.sh left."""
    res = {}
    for name in sorted(os.listdir(d)):
        if name.endswith(".json"):
            r = json.load(open(os.path.join(d, name)))
            res.setdefault(r["label"], {})[r["part"]] = r
    return {lb: res[lb] for lb in sorted(res, key=order)}


def round_rows(res):
    """Per round: each nginx result with its % of that round's fair rate
    and its p99 over that round's default 2ms/10ms p99."""
    rounds = sorted((p for p in res["default"] if p.startswith("nginx-")),
                    key=lambda p: int(p.split("-")[1]))
    rows, fairs = {}, []
    for rd in rounds:
        base = res["default"][rd]["nginx"]
        unl = base["max"]
        fair = 0.2 * unl["rps"] / unl["share"]
        fairs.append((rd, unl, fair))
        ref = base["2000 10000"]["p99_ms"]
        for lb, parts in res.items():
            for lim, n in parts.get(rd, {}).get("nginx", {}).items():
                n = dict(n)
                if lim != "max":
                    n["pct_fair"] = n["rps"] / fair * 100 if n["rps"] else None
                    n["p99_rel"] = n["p99_ms"] / ref if n["p99_ms"] and ref else None
                rows.setdefault((lb, lim), []).append(n)
    return rounds, rows, fairs


def spread(vals, nd, unit=""):
    vals = [v for v in vals if v is not None]
    if not vals:
        return ""
    return f"{fmt(median(vals), nd)}{unit} ({fmt(min(vals), nd)}-{fmt(max(vals), nd)})"


def main():
    d, cmd, png = sys.argv[1], sys.argv[2], sys.argv[3]
    res = load(d)
    kernel = next(iter(next(iter(res.values())).values()))["kernel"]
    rounds, rows, fairs = round_rows(res)
    print("# Bandwidth benchmark: nginx under a 20% cpu.max, and share errors\n")
    print(emulation.header(cmd, kernel, 2))
    print(f"- date: {datetime.date.today().isoformat()}")
    then_shares = ", then the share part once per scheduler" if any(
        "shares" in parts for parts in res.values()) else ""
    print(f"- all rows ran in one VM boot: {len(rounds)} nginx rounds, each running every scheduler "
          "once, starting one further along the list each round (so a drift of the emulation's "
          f"speed hits them alike){then_shares}. nginx has one worker in cgroup `fq_web`; "
          "`wrk -t1 -c10 -d15s --latency` runs outside it")
    print("- CPU share: the nginx worker's time on a CPU over the run, from the kernel's "
          "`sched_switch` events (ftrace, filtered to its pid). The kernel's own runtime clock, "
          "and with it the cgroup's cpu.stat `usage_usec` (the next column), misses whole turns "
          "of a task that starts on an idle CPU under sched_ext (README: \"The kernel's runtime "
          "clock under sched_ext\"); scx_fairquota charges its own clock between the kernel's "
          "switches (since 2026-12-05), so its limits hold by the switches and cpu.stat reads "
          "less")
    print("- the fair rate is what 20% of a CPU serves at the cost per request of the same round's "
          "unlimited run under the default scheduler: " + "; ".join(
              f"round {rd.split('-')[1]}: {u['rps']:.0f} req/s at {u['share'] * 100:.0f}% of a CPU, "
              f"fair rate {f:.0f} req/s" for rd, u, f in fairs))
    print("- each cell is the median of the rounds; ranges are (lowest-highest) over the rounds\n")
    print("## nginx at 20% of a CPU\n")
    print("| scheduler | cpu.max | req/s | % of fair rate | p50 ms | p90 ms | p99 ms | max ms | CPU share | "
          "cpu.stat | p99 / default's 2ms/10ms p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for lb in res:
        for lim in ["max"] + LIMITS:
            ns = rows.get((lb, lim))
            if not ns:
                continue
            col = lambda k: [n.get(k) for n in ns]  # noqa: E731
            share = median(col("share"))
            stat = median(col("cpu_stat_share"))
            print(f"| {name(lb)} | {lim} | {fmt(median(col('rps')), 0)} | "
                  f"{spread(col('pct_fair'), 0, '%')} | {fmt(median(col('p50_ms')), 2)} | "
                  f"{fmt(median(col('p90_ms')), 1)} | {fmt(median(col('p99_ms')), 1)} | "
                  f"{fmt(median(col('max_ms')), 1)} | {share * 100:.1f}% | "
                  f"{'' if stat is None else f'{stat * 100:.1f}%'} | "
                  f"{spread(col('p99_rel'), 2, 'x')} |")
    print("\nTargets for smooth at every period: 19-21% of a CPU, >= 90% of the fair rate, "
          "p99 <= 0.75x the default scheduler's 2ms/10ms p99.\n")
    print("### Each round\n")
    print("| scheduler | cpu.max | " + " | ".join(f"round {rd.split('-')[1]}: req/s, % fair, p99 ms"
                                                  for rd in rounds) + " |")
    print("|---|---|" + "---|" * len(rounds))
    for lb in res:
        for lim in ["max"] + LIMITS:
            ns = rows.get((lb, lim))
            if not ns:
                continue
            cells = [f"{fmt(n['rps'], 0)}, {fmt(n.get('pct_fair'), 0)}%, {fmt(n['p99_ms'], 1)}"
                     if lim != "max" else f"{fmt(n['rps'], 0)}, , {fmt(n['p99_ms'], 1)}" for n in ns]
            print(f"| {name(lb)} | {lim} | " + " | ".join(cells) + " |")
    print(f"\n![nginx p99 latency per period]({os.path.basename(png)})\n")
    print("## Share error of every (quota, period) under cpu.max\n")
    shares = {lb: parts["shares"]["shares"] for lb, parts in res.items() if "shares" in parts}
    if shares:
        share_table(shares)
    else:
        print("Not run in this boot (`BW_SHARES=0`).")
    bursty_table(res)
    exits_line(res)
    plot(res, rows, rounds, png)


def share_table(shares):
    print("CPU hogs in one cgroup per pair (two for 150000/100000), the single-CPU pairs at once "
          "(1.2 CPUs of 2), each measured from /proc/PID/schedstat over 12 s (8 s for 150000/100000).\n")
    print("| quota/period | target | " + " | ".join(name(lb) for lb in shares) + " |")
    print("|---|---|" + "---|" * len(shares))
    for pr in shares.get("default", {}):
        q, p = map(int, pr.split("/"))
        want = q / p
        cells = []
        for lb in shares:
            s = shares[lb].get(pr)
            cells.append("n/a" if s is None else f"{s:.4f} ({(s - want) / want * 100:+.1f}%)")
        print(f"| {pr} | {want:.3f} | " + " | ".join(cells) + " |")


def bursty_table(res):
    bursty = {lb: parts["shares"]["bursty"] for lb, parts in res.items()
              if "bursty" in parts.get("shares", {})}
    if bursty:
        print("\n## A bursty job within its quota\n")
        print("In a cgroup with each 20% cpu.max, one task sleeps a period, then computes half a "
              "quota (so no period sees more than half a quota of it), again and again for about "
              "8 s, with the rest of the VM idle. Each cell: the median time one computation took, "
              "its largest, and the median over its CPU time (1.0x: it ran at once).\n")
        print("| cpu.max | job (CPU ms) | " + " | ".join(name(lb) for lb in bursty) + " |")
        print("|---|---|" + "---|" * len(bursty))
        for lim in LIMITS:
            work = next(b[lim]["work_ms"] for b in bursty.values() if lim in b)
            cells = []
            for lb in bursty:
                took = bursty[lb].get(lim, {}).get("took_ms") or []
                m = median(took)
                cells.append("n/a" if m is None else
                             f"{m:.1f} ms, max {max(took):.1f} ({m / work:.1f}x)")
            print(f"| {lim} | {work:g} | " + " | ".join(cells) + " |")


def exits_line(res):
    exits = [f"{lb} {part} exit {r.get('rc')}" for lb, parts in res.items() if lb != "default"
             for part, r in parts.items()]
    clean = all(r.get("rc") == 0 for lb, parts in res.items() if lb != "default" for r in parts.values())
    print(f"\n{'Every' if clean else 'Not every'} scx_fairquota run detached cleanly: " + ", ".join(exits))


def plot(res, rows, rounds, png):
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    xs = range(len(LIMITS))
    width = 0.8 / len(res)
    for i, lb in enumerate(res):
        p99s = [[n["p99_ms"] or 0 for n in rows[(lb, lim)]] for lim in LIMITS]
        mid = [median(v) for v in p99s]
        err = [[m - min(v) for m, v in zip(mid, p99s)], [max(v) - m for m, v in zip(mid, p99s)]]
        ax.bar([x + i * width for x in xs], mid, width, yerr=err, capsize=2, label=name(lb))
    ax.set_xticks([x + width * (len(res) - 1) / 2 for x in xs])
    ax.set_xticklabels(["200 ms / 1 s", "20 ms / 100 ms", "2 ms / 10 ms"])
    ax.set_yscale("log")
    ax.set_ylabel("p99 latency (ms, log scale)")
    ax.set_xlabel("cpu.max of nginx's cgroup (all 20% of a CPU)")
    ax.set_title(f"nginx p99 under wrk -t1 -c10, 2-vCPU VM (median and range of {len(rounds)} rounds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png)


if __name__ == "__main__":
    main()
