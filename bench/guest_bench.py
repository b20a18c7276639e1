#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Core benchmarks, run inside the sched_ext VM by bench/core.sh.

For each scheduler (the kernel's default, scx_fairquota as built, and the
baseline build of scx_fairquota before core v2) it runs, one after the
other in the same VM:
  - hackbench -g 4 -l 500 (seconds);
  - cyclictest --policy=other at nice -5 beside `nice -n 5 stress-ng
    --cpu N` (wakeup latency p50/p99/max, us), traced with the kernel's
    timer and sched events to split a wakeup's latency into the timer's
    part (how late its interrupt came) and the scheduler's (wakeup to run);
  - the process-sharing experiment: 1, 2, 4 CPU-bound processes of 300
    units of ~1 ms on one CPU, 3 times each (median throughput, median
    longest gap between units);
  - a request/response workload at nice 0 (bench/reqresp.c), alone and
    beside two nice 5 CPU hogs (requests/s, p50/p99 latency);
  - (part fiforeq, not in the default set) the same workload at nice -5,
    FIFO under scx_fairquota, beside nice 0 tasks that wake all the time
    (`stress-ng --pipe N`): what RR wakeups cost FIFO work (the RR
    budget lets such a wakeup preempt a FIFO task);
  - (part moves, not in the default set) MOVES times (default 12): a nice
    10 hog on CPU 0 and a nice 0 pair on CPU 1 for 3 s, then a nice 0 hog
    on CPU 0, moved by sched_setaffinity to CPU 1 MOVE_AFTER s (default
    0.2) after its start: its part of what the three got on CPU 1 over
    the next 3 s (a third is fair), by the kernel's sched_switch events
    (tests/vm/guest.py's measure()); test_weight_split's case, which a
    lead carried from CPU 0's trailing clock starved;
  - (part nicemix, not in the default set) unpinned CPU hogs of mixed
    nice levels (NICEMIXES, below) for 3 + 15 s each: every hog's share of
    a CPU against its weighted fair share, capped at one CPU (the kernel's
    nice-to-weight table; what CFS aims at), as the least and the most
    share / ideal and the mean distance from it; run it on 8 vCPUs in 2
    LLCs (AB_CPUS=8), where the tasks must be balanced between LLCs by
    weight, not by count;
  - (part fifollc, not in the default set) FIFOLLC_ROUNDS times (default
    4): a nice -5 (FIFO) hog pinned on each CPU of the first LLC beside 8
    unpinned nice 0 hogs for 4 + 12 s: the FIFO hogs' shares (all but the
    RR budget's and the guard's turns are theirs) and the RR hogs' (the
    other LLC's CPUs: 50% each on 8 vCPUs in 2 LLCs), and the runs in
    which a FIFO hog kept less than 90% of its CPU (test_eight_cpus_two_llcs's
    case, which some runs failed: an RR hog left behind the FIFO hogs);
  - (part mix, not in the default set) a short mix that takes every
    callback through its common paths: `nice -n 5 stress-ng --cpu N`,
    cyclictest at nice -5 beside it for 6 s, then `hackbench -g 2 -l 100`;
    for counting BPF instructions per call (bench/ab.sh with
    VM_QEMU_EXTRA="-icount shift=1,sleep=on", see scripts/vm-run.sh);
  - for the BPF schedulers, the BPF run time per call of each struct_ops
    program (kernel.bpf_stats_enabled).
Writes OUT/<label>.json.

Usage: guest_bench.py OUT LABEL [BINARY]   (no BINARY = default scheduler)
Env:   BENCH_PARTS  comma-separated subset of hackbench,cyclictest,sharing,reqresp
       (quick experiments; the report needs all four), or fiforeq, mix, moves,
       nicemix, fifollc
       BENCH_CGROUP NAME=QUOTA/PERIOD: an empty cgroup NAME with that limit
       exists throughout (`--cgroup` for scx_fairquota, cpu.max for the
       default scheduler), as on a host where some container is limited:
       every task's cgroup is then looked up on the scheduler's hot path
"""
import json
import os
import re
import statistics
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNITS = os.path.join(REPO, "target/bench/units")
REQRESP = os.path.join(REPO, "target/bench/reqresp")
NCPU = os.cpu_count()


def state():
    try:
        return open("/sys/kernel/sched_ext/state").read().strip()
    except OSError:
        return "?"


def bench_cgroup():
    """Create BENCH_CGROUP's cgroup with its limit; return the scheduler's
    arguments for it."""
    spec = os.environ.get("BENCH_CGROUP")
    if not spec:
        return []
    name, limit = spec.split("=")
    quota, period = limit.split("/")
    with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
        f.write("+cpu")
    path = os.path.join("/sys/fs/cgroup", name)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "cpu.max"), "w") as f:
        f.write(f"{quota} {period}")
    return ["--cgroup", spec]


def start_scheduler(binary, log, args=()):
    p = subprocess.Popen([binary, "--stats-interval", "0", *args], stdout=log, stderr=log)
    deadline = time.monotonic() + 180
    while state() != "enabled":
        if p.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{binary} did not attach")
        time.sleep(0.2)
    time.sleep(1)
    return p


def hackbench():
    runs = []
    for _ in range(3):
        out = subprocess.run(["hackbench", "-g", "4", "-l", "500"], capture_output=True, text=True,
                             timeout=600).stdout
        for line in out.splitlines():
            if line.startswith("Time:"):
                runs.append(float(line.split()[1]))
    return {"runs_s": runs, "median_s": sorted(runs)[len(runs) // 2] if runs else None}


def percentile_from_hist(hist, q):
    total = sum(hist.values())
    if not total:
        return None
    acc = 0
    for us in sorted(hist):
        acc += hist[us]
        if acc >= q * total:
            return us
    return max(hist)


TRACEFS = "/sys/kernel/tracing"
TRACE_EVENTS = ("timer/hrtimer_start", "timer/hrtimer_expire_entry", "sched/sched_waking",
                "sched/sched_switch")
TRACE_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")


def trace_ctl(path, value):
    with open(os.path.join(TRACEFS, path), "w") as f:
        f.write(value)


def trace_start():
    """Record the kernel's timer and wakeup events (one clock for all CPUs)."""
    trace_ctl("tracing_on", "0")
    trace_ctl("trace", "")
    trace_ctl("trace_clock", "mono")
    trace_ctl("buffer_size_kb", "16384")
    for e in TRACE_EVENTS:
        trace_ctl(f"events/{e}/enable", "1")
    trace_ctl("tracing_on", "1")


def trace_stop():
    trace_ctl("tracing_on", "0")
    for e in TRACE_EVENTS:
        trace_ctl(f"events/{e}/enable", "0")
    with open(os.path.join(TRACEFS, "trace")) as f:
        text = f.read()
    trace_ctl("trace", "")
    return text


def wakeup_parts(trace, comm="cyclictest"):
    """Split the wakeups of @comm's timed sleeps into the timer's part and
    the scheduler's: how late the sleep's timer fired past the requested
    time (the interrupt's delivery, which under TCG is the emulator's), and
    from the wakeup (sched_waking) to the task running (sched_switch).
    Returns both lists, in us."""
    armed, waking, timer, sched = {}, {}, [], []
    for line in trace.splitlines():
        m = TRACE_LINE.match(line)
        if not m:
            continue
        who, _pid, _cpu, ts, ev, rest = m.groups()
        if ev == "hrtimer_start" and who == comm and "function=hrtimer_wakeup" in rest:
            h = re.search(r"hrtimer=(\w+)", rest).group(1)
            armed[h] = int(re.search(r"softexpires=(\d+)", rest).group(1))
        elif ev == "hrtimer_expire_entry" and "function=hrtimer_wakeup" in rest:
            h = re.search(r"hrtimer=(\w+)", rest).group(1)
            if h in armed:
                timer.append((int(re.search(r"now=(\d+)", rest).group(1)) - armed.pop(h)) / 1e3)
        elif ev == "sched_waking" and f"comm={comm} " in rest:
            waking[re.search(r" pid=(\d+)", rest).group(1)] = float(ts)
        elif ev == "sched_switch" and f"next_comm={comm} " in rest:
            t0 = waking.pop(re.search(r"next_pid=(\d+)", rest).group(1), None)
            if t0 is not None:
                sched.append((float(ts) - t0) * 1e6)
    return timer, sched


def quantile(values, q):
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))]) if values else None


def nice5_hogs():
    """One nice 5 CPU hog per CPU (`stress-ng --cpu N`), for 40 s at most."""
    return subprocess.Popen(["nice", "-n", "5", "stress-ng", "--cpu", str(NCPU), "--timeout", "40s"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/tmp")


def cyclictest():
    hog = nice5_hogs()
    time.sleep(2)
    buckets = 20000
    trace_start()
    out = subprocess.run(["nice", "-n", "-5", "cyclictest", "--policy=other", "-t", str(NCPU), "-D", "15",
                          "-q", "-m", "-i", "1000", "-h", str(buckets)],
                         capture_output=True, text=True, timeout=120).stdout
    trace = trace_stop()
    hog.send_signal(signal.SIGINT)
    hog.wait()
    timer, sched = wakeup_parts(trace)
    hist, maxes, overflows = {}, [], 0
    for line in out.splitlines():
        if line.startswith("# Max Latencies:"):
            maxes = [int(x) for x in line.split(":")[1].split()]
        elif line.startswith("# Histogram Overflows:"):
            overflows = sum(int(x) for x in line.split(":")[1].split())
        elif line and line[0].isdigit():
            cols = line.split()
            n = sum(int(x) for x in cols[1:])
            if n:
                hist[int(cols[0])] = hist.get(int(cols[0]), 0) + n
    if overflows:
        hist[buckets] = hist.get(buckets, 0) + overflows
    return {"p50_us": percentile_from_hist(hist, 0.50), "p99_us": percentile_from_hist(hist, 0.99),
            "max_us": max(maxes) if maxes else None, "samples": sum(hist.values()),
            "timer_p50_us": quantile(timer, 0.50), "timer_p99_us": quantile(timer, 0.99),
            "sched_p50_us": quantile(sched, 0.50), "sched_p99_us": quantile(sched, 0.99),
            "traced_wakeups": len(sched)}


SHARING_UNITS = 300
SHARING_REPEATS = 3


def sharing(loops):
    """k = 1, 2, 4 processes of SHARING_UNITS units on CPU 1, SHARING_REPEATS
    times each: the median throughput (processes per second of the span
    from the first unit started to the last one done, so the 50-100 ms a
    fork and exec cost in the guest are not counted) and the median of the
    runs' longest gaps."""
    res = {}
    for k in (1, 2, 4):
        runs = []
        for _ in range(SHARING_REPEATS):
            procs = [subprocess.Popen(["taskset", "-c", "1", UNITS, "run", str(SHARING_UNITS), str(loops)],
                                      stdout=subprocess.PIPE, text=True) for _ in range(k)]
            outs = [[float(x) for x in p.communicate(timeout=600)[0].split()] for p in procs]
            span = max(o[3] for o in outs) - min(o[2] for o in outs)
            runs.append({"throughput_per_s": k / span,
                         "latency_ms": sum(o[0] for o in outs) / k * 1000,
                         "max_gap_ms": max(o[1] for o in outs) * 1000})
        res[str(k)] = {m: statistics.median(r[m] for r in runs) for m in runs[0]}
        res[str(k)]["runs"] = runs
    return res


def run_reqresp(seconds, prefix=()):
    """One run of reqresp with 2 workers and 200 us per request, through
    the command `prefix` (e.g. a tracer) if given: its numbers."""
    out = subprocess.run([*prefix, REQRESP, "2", "200", str(seconds)], capture_output=True, text=True,
                         timeout=120 + 10 * int(seconds)).stdout.split()
    return dict(zip(("req_per_s", "p50_us", "p99_us", "max_us"), map(float, out[-4:])))


def mix():
    hog = nice5_hogs()
    time.sleep(1)
    subprocess.run(["nice", "-n", "-5", "cyclictest", "--policy=other", "-t", str(NCPU), "-D", "6",
                    "-q", "-i", "1000"], capture_output=True, timeout=120)
    t0 = time.monotonic()
    subprocess.run(["hackbench", "-g", "2", "-l", "100"], capture_output=True, timeout=600)
    took = time.monotonic() - t0
    hog.send_signal(signal.SIGINT)
    hog.wait()
    return {"hackbench_s": took}


def reqresp():
    res = {}
    for label, nhogs in [("alone", 0), ("beside 2 nice 5 hogs", 2)]:
        hogs = [subprocess.Popen(["nice", "-n", "5", "sh", "-c", "while :; do :; done"]) for _ in range(nhogs)]
        time.sleep(1)
        res[label] = run_reqresp(10)
        for h in hogs:
            h.kill()
            h.wait()
    return res


def fiforeq():
    """reqresp at nice -5 alone and beside NCPU nice 0 pipe ping-pong pairs."""
    res = {}
    for label, wakers in [("alone", 0), ("beside nice 0 pipe wakers", NCPU)]:
        hog = (subprocess.Popen(["stress-ng", "--pipe", str(wakers), "--timeout", "60s"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/tmp")
               if wakers else None)
        time.sleep(2)
        res[label] = run_reqresp(10, prefix=("nice", "-n", "-5"))
        if hog:
            hog.send_signal(signal.SIGINT)
            hog.wait()
    return res


def moves():
    """The moved hog's part of CPU 1 in each of MOVES moves (see above)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "vm"))
    import guest  # noqa: E402 (test_weight_split's move)

    after = float(os.environ.get("MOVE_AFTER", "0.2"))
    parts = []
    for _ in range(int(os.environ.get("MOVES", "12"))):
        got = guest.moved_hog_parts(after)
        parts.append(got[0] / sum(got) if sum(got) else 0.0)
    return {"move_after_s": after, "parts": parts}


# nice levels of the hogs of each nicemix run: 12 nice 0 + 4 nice 10, 6 nice
# 0 + 6 nice 5, 7 nice 0 + 8 nice 19, 3 of each of 0, 5, 10 and 19.
NICEMIXES = {"12x0+4x10": [0] * 12 + [10] * 4, "6x0+6x5": [0] * 6 + [5] * 6,
             "7x0+8x19": [0] * 7 + [19] * 8, "3x(0,5,10,19)": [0, 5, 10, 19] * 3}
NICE_WEIGHT = {0: 1024, 5: 335, 10: 110, 19: 15}


def fair_shares(nices, ncpu):
    """Each task's weighted share of `ncpu` CPUs, none above one CPU (what
    a task capped at one CPU leaves is shared by the others by weight)."""
    w = [NICE_WEIGHT[n] for n in nices]
    share, left, cap = [0.0] * len(w), set(range(len(w))), float(ncpu)
    while left:
        tot = sum(w[i] for i in left)
        full = [i for i in left if cap * w[i] / tot > 1.0]
        if not full:
            for i in left:
                share[i] = cap * w[i] / tot
            break
        for i in full:
            share[i] = 1.0
            left.discard(i)
            cap -= 1.0
    return share


def nicemix():
    """Each NICEMIXES run: shares against fair_shares() (see above)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "vm"))
    import guest  # noqa: E402 (spawn_hog, shares_then_kill)

    res = {}
    for name, nices in NICEMIXES.items():
        got = guest.shares_then_kill([guest.spawn_hog(n) for n in nices], 3, 15)
        ideal = fair_shares(nices, NCPU)
        ratio = [g / i for g, i in zip(got, ideal)]
        res[name] = {"shares": got, "ideal": ideal, "least": min(ratio), "most": max(ratio),
                     "mean_err": sum(abs(g - i) for g, i in zip(got, ideal)) / len(got)}
        time.sleep(1)
    return res


def fifollc():
    """FIFOLLC_ROUNDS runs of FIFO hogs on the first LLC's CPUs beside 8 RR
    hogs (see above)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "vm"))
    import guest  # noqa: E402 (the scene of test_eight_cpus_two_llcs)

    fifo, rr = [], []
    for _ in range(int(os.environ.get("FIFOLLC_ROUNDS", "4"))):
        f, r = guest.fifo_llc_beside_rr(8)
        fifo.append(f)
        rr.append(r)
        time.sleep(1)
    return {"fifo": fifo, "rr": rr}


def bpf_costs():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    costs = {}
    for p in json.loads(out or "[]"):
        if p.get("type") == "struct_ops" and p.get("run_cnt"):
            costs[p["name"]] = {"calls": p["run_cnt"], "ns_per_call": p["run_time_ns"] / p["run_cnt"]}
    return costs


def main():
    out_dir, label = sys.argv[1], sys.argv[2]
    binary = sys.argv[3] if len(sys.argv) > 3 else None
    # One calibration per VM boot (the first column's, kept in out_dir): a
    # unit then costs the same work in every column, so the sharing
    # throughputs compare like for like.
    cal = os.path.join(out_dir, "units-loops")
    if not os.path.exists(cal):
        with open(cal, "w") as f:
            f.write(subprocess.run([UNITS, "calibrate", "1000"], capture_output=True, text=True).stdout)
    loops = int(open(cal).read())
    log = open(os.path.join(out_dir, f"{label}.log"), "w")
    sched = None
    cg_args = bench_cgroup()
    if binary:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        sched = start_scheduler(binary, log, cg_args)
    res = {"label": label, "ncpu": NCPU, "kernel": os.uname().release, "ops": None}
    runs = {"hackbench": hackbench, "cyclictest": cyclictest, "sharing": lambda: sharing(loops),
            "reqresp": reqresp, "fiforeq": fiforeq, "mix": mix, "moves": moves,
            "nicemix": nicemix, "fifollc": fifollc}
    default_parts = "hackbench,cyclictest,sharing,reqresp"
    for part in os.environ.get("BENCH_PARTS", default_parts).split(","):
        res[part] = runs[part]()
    if sched:
        res["bpf"] = bpf_costs()
        # A scheduler the kernel ejected has no root/ops left: record it
        # (the report shows its state and exit status) and go on.
        try:
            res["ops"] = open("/sys/kernel/sched_ext/root/ops").read().strip()
        except OSError:
            res["ops"] = None
        res["state_at_end"] = state()
        sched.send_signal(signal.SIGINT)
        res["sched_rc"] = sched.wait(60)
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("0")
    with open(os.path.join(out_dir, f"{label}.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"bench {label}: done", flush=True)


if __name__ == "__main__":
    main()
