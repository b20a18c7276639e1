#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How long a throttled group takes to die: bench/kill_limited.sh.

`run OUT BIN LIMIT REPS` (in the guest, as root): under the kernel's
default scheduler (CFS bandwidth control), then under scx_fairquota (which
enforces the same cpu.max), for each workload REPS times: start it in an
unlimited cgroup, set its cpu.max to LIMIT ("1000 1000000": 0.1% of a
CPU), let it be throttled for 3 s, write cgroup.kill and time how long
until the kernel's cgroup.threads is empty (at most 40 s). This driver is
a SCHED_FIFO task (chrt), above both schedulers; what it starts is not. Writes OUT/kill.json.

`report JSON COMMAND` (on the host): the markdown report.
"""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

CG = "/sys/fs/cgroup"
REL = "fq_killbench"
# The repository is the working directory of `run`; the workloads run in /tmp.
SPIN = os.path.abspath("target/spin")
# name: (shell command, what it is)
WORKLOADS = {
    "spin20": (f"exec {SPIN} 20", "one process of 20 spinning threads"),
    "procs8": (f"for i in 1 2 3 4 5 6 7 8; do {SPIN} 1 & done; wait", "8 single-thread processes and their shell"),
    "forkng": ("exec stress-ng --fork 2 -t 120", "stress-ng --fork 2 (processes forking and exiting)"),
    "spin200": (f"exec {SPIN} 200", "one process of 200 spinning threads"),
}
LIMIT_WAIT = 40


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


def threads():
    with open(f"{CG}/{REL}/cgroup.threads") as f:
        return len(f.read().split())


def one(cmd, limit):
    write(f"{CG}/{REL}/cpu.max", "max 100000")
    # chrt -o 0: not this driver's SCHED_FIFO, which children inherit.
    p = subprocess.Popen(["chrt", "-o", "0", "sh", "-c", f"echo $$ > {CG}/{REL}/cgroup.procs; {cmd}"], cwd="/tmp",
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    write(f"{CG}/{REL}/cpu.max", limit)
    time.sleep(3)
    n = threads()
    if n < 2:
        sys.exit(f"the workload did not start: {n} thread(s) in {REL} ({cmd})")
    t0 = time.monotonic()
    write(f"{CG}/{REL}/cgroup.kill", "1")
    while threads() and time.monotonic() - t0 < LIMIT_WAIT:
        time.sleep(0.01)
    dt = time.monotonic() - t0
    left = threads()
    p.wait()
    return {"threads": n, "secs": round(dt, 3), "left": left}


def sched_state():
    with open("/sys/kernel/sched_ext/state") as f:
        return f.read().strip()


def run(out, binary, limit, reps):
    write(f"{CG}/cgroup.subtree_control", "+cpu")
    os.makedirs(f"{CG}/{REL}", exist_ok=True)
    res = {"kernel": platform.release(), "date": datetime.date.today().isoformat(),
           "limit": limit, "reps": reps, "runs": {}}
    for sched in ("default", "scx_fairquota"):
        d = None
        if sched != "default":
            log = open(os.path.join(out, "daemon.log"), "w")
            d = subprocess.Popen(["chrt", "-o", "0", binary], stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 60
            while sched_state() != "enabled" and time.monotonic() < deadline:
                time.sleep(0.2)
        runs = res["runs"][sched] = {}
        for name, (cmd, _) in WORKLOADS.items():
            runs[name] = []
            for _ in range(reps):
                r = one(cmd, limit)
                r["state"] = sched_state()
                runs[name].append(r)
                print(f"{sched} {name}: {r}", flush=True)
        if d:
            d.send_signal(2)
            res["daemon_rc"] = d.wait(60)
    with open(os.path.join(out, "kill.json"), "w") as f:
        json.dump(res, f, indent=1)


def report(path, command):
    r = json.load(open(path))
    q, p = r["limit"].split()
    lines = [
        "# Killing a throttled group: time until its last thread is gone",
        "",
        f"A cgroup limited by cpu.max `{r['limit']}` ({int(q) / int(p):.1%} of a CPU), throttled for 3 s,",
        "then `cgroup.kill`: seconds until the kernel's `cgroup.threads` of the group is empty",
        f"({r['reps']} runs each; a run that did not finish in {LIMIT_WAIT} s counts as {LIMIT_WAIT}). The same cpu.max",
        "is enforced by CFS bandwidth control under the default scheduler and by scx_fairquota",
        "(which lets a killed task's parked threads go at once: `note_killed()` in",
        "`bpf/bandwidth.bpf.h`). Both in one VM boot (2 vCPUs, TCG).",
        "",
        "| workload | threads | default: median (max) s | scx_fairquota: median (max) s | ratio of medians |",
        "|---|---|---|---|---|",
    ]
    for name, (_, what) in WORKLOADS.items():
        d = r["runs"]["default"][name]
        f = r["runs"]["scx_fairquota"][name]
        dm = statistics.median(x["secs"] for x in d)
        fm = statistics.median(x["secs"] for x in f)
        lines.append(f"| {name}: {what} | {d[0]['threads']} | {dm:.2f} ({max(x['secs'] for x in d):.2f}) | "
                     f"{fm:.2f} ({max(x['secs'] for x in f):.2f}) | {fm / dm:.4f} |")
    states = {x["state"] for x in sum(r["runs"]["scx_fairquota"].values(), [])}
    lines += ["",
              f"scx_fairquota's state after each kill: {', '.join(sorted(states))}; its exit status: "
              f"{r.get('daemon_rc')}.",
              "",
              f"Command: `{command}`  ",
              f"Kernel: {r['kernel']}  ",
              f"Date: {r['date']}",
              ""]
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        report(sys.argv[2], sys.argv[3])
