#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where the kernel's sched_switch events and scx_fairquota's charges part:
guest and report sides of bench/switch_gap.sh.

The exactness test measures a limited task's CPU time from the kernel's
sched_switch events (ftrace); the scheduler charges its own clock, read by
its tracepoint program on the same sched_switch tracepoint
(fairquota_switch()). This benchmark runs a build with bench/switch_gap.patch,
which logs that program's clock at the first 2048 switches of limited tasks
and, every 100 ms of a limited task's CPU time, that time beside what the
scheduler charged it, and pairs each log entry with ftrace's event of the
same switch.

Workload: the wakeup-driven case of test_cgroup_limits_exact (0.3 ms of CPU
by the kernel's runtime clock, then a 0.1 ms sleep, forever) in a
1000/10000 `--cgroup` group, whole periods, beside a CPU hog in a
20000/100000 group (HOG 1; 0: no hog, that group's task sleeps), for
SECONDS. WORK "hog" makes the limited task a CPU hog instead (the
1000/10000 pair of the exactness tests). ORDER says when ftrace's sched_switch
event is enabled: "after" the scheduler attached (as the tests do: the
tracepoint calls the scheduler's program first, then ftrace's probe) or
"before" (ftrace's probe first).

Usage, in the VM:
  python3 bench/switch_gap.py run BIN "ORDER..." SECONDS OUTDIR HOG [WORK]
then on the host, for one or more such runs:
  python3 bench/switch_gap.py report COMMAND OUTDIR...
"""
import datetime
import gzip
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm"))
import guest  # noqa: E402

CG = guest.CG
T = guest.TRACING
tw = guest.SwitchClock._w  # write one tracefs file


# The limited task: the wakeup-driven case, or a CPU hog (a Python loop, so
# that ftrace's filter on its name keeps it).
WORK = {"waker": [guest.SERVER, "0.0003", "0.0001"], "hog": ["while True: pass"]}


def run_one(binary, order, seconds, outdir, n, hog_on, work):
    """One boot's run in ORDER; the trace goes to OUTDIR/trace-N-ORDER.txt.gz."""
    for g in ("fqg_wake", "fqg_hog"):
        os.makedirs(os.path.join(CG, g), exist_ok=True)
    tw("trace_clock", "mono")
    tw("buffer_size_kb", "65536")
    tw("events/sched/sched_switch/filter",
       'next_comm == "python3" || prev_comm == "python3"')
    tw("tracing_on", "0")
    tw("trace", "")
    if order == "before":
        tw("events/sched/sched_switch/enable", "1")
    log = open(os.path.join(outdir, f"daemon-{n}-{order}.log"), "w")
    d = subprocess.Popen([binary, "--cgroup", "fqg_wake=1000/10000",
                          "--cgroup", "fqg_hog=20000/100000", "--max-stall-us", "0",
                          "--stats-interval", "2"], stdout=log, stderr=subprocess.STDOUT)
    time.sleep(4)
    with open("/sys/kernel/sched_ext/state") as f:
        state = f.read().strip()
    if state != "enabled":
        d.kill()
        raise SystemExit(f"switch_gap: the scheduler did not attach (state {state})")
    if order == "after":
        tw("events/sched/sched_switch/enable", "1")
    hog = subprocess.Popen(["sh", "-c", "while :; do :; done" if hog_on else "sleep 1000"],
                           preexec_fn=guest.joiner("fqg_hog"))
    tw("tracing_on", "1")
    waker = subprocess.Popen(["python3", "-c"] + WORK[work], preexec_fn=guest.joiner("fqg_wake"))
    time.sleep(seconds)
    waker.kill()
    waker.wait()
    time.sleep(0.5)
    tw("tracing_on", "0")
    with open(os.path.join(T, "trace"), "rb") as f, \
            gzip.open(os.path.join(outdir, f"trace-{n}-{order}.txt.gz"), "wb") as g:
        g.write(f.read())
    tw("events/sched/sched_switch/enable", "0")
    tw("trace", "")
    hog.kill()
    hog.wait()
    d.send_signal(signal.SIGINT)
    rc = d.wait(timeout=30)
    return {"order": order, "run": n, "waker": waker.pid, "hog": hog.pid, "rc": rc,
            "state": state}


def run(binary, orders, seconds, outdir, hog_on, work):
    with open(os.path.join(CG, "cgroup.subtree_control"), "w") as f:
        f.write("+cpu")
    runs = [run_one(binary, o, seconds, outdir, i + 1, hog_on, work)
            for i, o in enumerate(orders.split())]
    meta = {"kernel": platform.release(), "cpus": os.cpu_count(), "hog": hog_on, "work": work,
            "date": datetime.date.today().isoformat(), "seconds": seconds, "runs": runs}
    with open(os.path.join(outdir, "switch_gap.json"), "w") as f:
        json.dump(meta, f, indent=1)


SWITCH = re.compile(r"\[(\d+)\][^\n]*?\s(\d+\.\d+): (?:sched_switch: prev_comm=\S+ prev_pid=(\d+) "
                    r"[^\n]*==> next_comm=\S+ next_pid=(\d+)|bpf_trace_printk: fqX (\d+) (\d+) (\d+))")


def analyse(path, pid):
    """The views of `pid`'s CPU time in one trace, and the switch pairs."""
    txt = gzip.open(path, "rt").read()
    ours = [(int(p), int(t) / 1e9) for p, t in re.findall(r"fqL (-?\d+) (\d+)", txt)]
    # ftrace's view, and the scheduler's at each of its 100 ms marks.
    cur, ftrace, marks = {}, 0.0, []
    events = []
    for m in SWITCH.finditer(txt):
        cpu, t = int(m.group(1)), float(m.group(2))
        if m.group(5):
            if int(m.group(5)) == pid:
                marks.append((ftrace, int(m.group(7)) / 1e9, int(m.group(6)) / 1e9))
            continue
        pp, np_ = int(m.group(3)), int(m.group(4))
        c = cur.get(cpu)
        if c and c[0] == pp == pid:
            ftrace += t - c[1]
        cur[cpu] = (np_, t)
        if pp == pid:
            events.append((-pid, t))
        if np_ == pid:
            events.append((pid, t))
    res = {}
    if len(marks) >= 2:
        (f0, s0, c0), (f1, s1, c1) = marks[0], marks[-1]
        res.update(ftrace_s=f1 - f0, ours_s=s1 - s0, charged_s=c1 - c0)
    # Pair each ftrace event of `pid` with the scheduler's log entry of the
    # same switch. Both see every switch of the task from the moment it is
    # in its limited group (the log only from then: its first few switches
    # are ftrace's alone), so the k-th of each kind pair up from the offset
    # that best lines the two up, to the end of the log.
    gaps = {"out": [], "in": []}
    for kind, sign in (("out", -1), ("in", 1)):
        logged = [t for p, t in ours if p == sign * pid]
        seen = [t for p, t in events if p == sign * pid]

        def pair(k):
            return [(f - o) * 1e6 for f, o in zip(seen[k:], logged)]
        def median_abs(k):
            xs = sorted(abs(g) for g in pair(k))
            return xs[len(xs) // 2] if xs else float("inf")
        k = min(range(min(50, len(seen))), key=median_abs)
        gaps[kind] = pair(k)
        if any(abs(g) > 50000 for g in gaps[kind]):
            raise SystemExit(f"{path}: the {kind} switches of {pid} do not pair up")
    res["gaps"] = gaps
    return res


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else 0.0


def report(outdirs, command):
    metas = [(d, json.load(open(os.path.join(d, "switch_gap.json")))) for d in outdirs]
    meta = metas[0][1]
    out = ["# Where the kernel's sched_switch events and scx_fairquota's charges part", "",
           f"- command: `{command}`",
           f"- kernel: {meta['kernel']} (Debian sid, sched_ext), virtme-ng VM under "
           f"single-threaded TCG, {meta['cpus']} vCPUs",
           f"- date: {meta['date']}",
           "- workload: a limited task in a `--cgroup` 1000/10000 group, whole periods: the "
           "wakeup-driven case of `test_cgroup_limits_exact` (0.3 ms of CPU, then a 0.1 ms "
           "sleep, forever) or a CPU hog (the task column), beside a CPU hog in a "
           "20000/100000 group or alone (the hog column), "
           f"{meta['seconds']} s per run, each setting in a VM boot of its own",
           "- build: HEAD with `bench/switch_gap.patch`, which logs the scheduler's clock at "
           "the first 2048 switches of limited tasks as its sched_switch program "
           "(`fairquota_switch()`) reads it, and its charges beside that program's time every "
           "100 ms of CPU (printed from `ops.running()`, never from the switch)",
           "- three views of the limited task's CPU time between the first and last "
           "100 ms mark: ftrace's `sched_switch` events (what the tests measure), the "
           "scheduler's own switch times, and what it charged",
           "- ftrace after: its event enabled after the scheduler attached, as in the tests "
           "(the tracepoint runs the scheduler's program first, then ftrace's probe); before: "
           "enabled before, so ftrace's probe runs first",
           "- gap: ftrace's timestamp of a switch less the scheduler's, for the task leaving "
           "the CPU (out) and coming on (in); a gap longer than a few us is a stretch in which "
           "the vCPU did not run: under single-threaded TCG the vCPUs take turns, and the one "
           "left waits for the other's next exit (its tick, 4 ms, if it runs a hog)", "",
           "| task | hog | run | ftrace | ftrace CPU s | scheduler's switches s | charged s | ftrace / switches "
           "| charged / switches | out: median, largest gap us | out: gaps over 100 us, their sum ms "
           "| in: median, largest gap us | in: gaps over 100 us, their sum ms "
           "| out less in, ms (the logged switches) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    runs = [(d, m, r) for d, m in metas for r in m["runs"]]
    for outdir, m, r in runs:
        task = "CPU hog" if m.get("work") == "hog" else "wakeup-driven"
        hog = m.get("hog", True)
        path = os.path.join(outdir, f"trace-{r['run']}-{r['order']}.txt.gz")
        a = analyse(path, r["waker"])
        g = a["gaps"]

        def cell(xs):
            if not xs:
                return "n/a (log not full)"
            m = max(xs, key=abs)
            return f"{pct(xs, 0.5):.1f}, {m:.0f}"

        def big(xs):
            b = [x for x in xs if abs(x) > 100]
            return f"{len(b)} of {len(xs)}, {sum(b) / 1000:.1f}"
        n = min(len(g["out"]), len(g["in"]))
        net = (sum(g["out"][:n]) - sum(g["in"][:n])) / 1000
        if "ours_s" not in a:
            out.append(f"| {task} | {'yes' if hog else 'no'} | {r['run']} | {r['order']} | "
                       "(fewer than two 100 ms marks) |")
            continue
        out.append(f"| {task} | {'yes' if hog else 'no'} | {r['run']} | {r['order']} | {a['ftrace_s']:.4f} | {a['ours_s']:.4f} | "
                   f"{a['charged_s']:.4f} | {a['ftrace_s'] / a['ours_s']:.4f} | "
                   f"{a['charged_s'] / a['ours_s']:.4f} | {cell(g['out'])} | {big(g['out'])} | "
                   f"{cell(g['in'])} | {big(g['in'])} | {net:.1f} |")
    out += ["", "Each run: the daemon exited "
            + ", ".join(f"{r['rc']}" for _, _, r in runs) + " (SIGINT), state while it ran "
            + ", ".join(r["state"] for _, _, r in runs) + "."]
    print("\n".join(out))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], sys.argv[6] == "1",
            sys.argv[7] if len(sys.argv) > 7 else "waker")
    elif sys.argv[1] == "report":
        report(sys.argv[3:], sys.argv[2])
    else:
        raise SystemExit(__doc__)
