#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Exits convoy behind FIFO work: guest side of bench/exits_convoy.sh.

30 CPU-bound Python processes (nice 0: RR under scx_fairquota, CFS under
the default scheduler) run behind two CPU hogs pinned one per CPU (nice -5:
FIFO under scx_fairquota; SCHED_FIFO 10 under the default scheduler, whose
fair server leaves fair tasks 50 ms a second). Each is told to stop, then
writes 20 files into one directory and exits: the creates take the
directory's lock in turn. Measures how long until all 30 exited.

Usage, in the VM (DIR on the virtiofs share makes each create wait for the
host; on the guest's own /tmp it does not):
  python3 bench/exits_convoy.py run BIN MODES RUNS DIR
MODES: space-separated, each fq100 / fq1000 (scx_fairquota with that
--guard-ms) or cfs; every run runs each mode once, in that order. The
files go to DIR/exits_convoy, removed and made again at each run; the
daemon's output (stats every 10 s) to DIR/daemon-MODE-RUN.log; the results to
DIR/exits_convoy.json, which
  python3 bench/exits_convoy.py report JSON COMMAND
turns into the markdown report (bench/exits_convoy.sh does both).
"""
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

HOG = """
import os, signal, sys
stop = False
def h(*a):
    global stop
    stop = True
signal.signal(signal.SIGUSR1, h)
print("ready", flush=True)
while not stop:
    pass
for k in range(20):
    with open(os.path.join(sys.argv[1], f"{os.getpid()}-{k}"), "w") as f:
        f.write("x" * 100)
"""
LIMIT_S = 240


def one_run(binary, mode, base, tag="", limit_s=LIMIT_S):
    """One run of MODE; the files go to BASE/exits_convoy. Returns what it
    measured (last: seconds until all 30 exited, None past limit_s, when
    the run is stopped)."""
    out = os.path.join(base, "exits_convoy")  # made afresh each run
    d, log_path = None, os.path.join(base, f"daemon-{mode}{tag}.log")
    if mode.startswith("fq"):
        log = open(log_path, "w")
        d = subprocess.Popen([binary, "--guard-ms", mode[2:], "--stats-interval", "10"],
                             stdout=log, stderr=subprocess.STDOUT)
        while open("/sys/kernel/sched_ext/state").read().strip() != "enabled":
            if d.poll() is not None:
                raise RuntimeError(f"scx_fairquota exited with {d.returncode}: see {log_path}")
            time.sleep(0.2)
        time.sleep(1)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rr = [subprocess.Popen([sys.executable, "-c", HOG, out], stdout=subprocess.PIPE)
          for _ in range(30)]
    for p in rr:
        p.stdout.readline()  # its handler is set: SIGUSR1 no longer kills it
    time.sleep(1)
    if mode == "cfs":
        hog = ["chrt", "-f", "10"]
    else:
        hog = ["nice", "-n", "-5"]
    fifo = [subprocess.Popen(["taskset", "-c", str(c)] + hog + ["sh", "-c", "while :; do :; done"])
            for c in range(2)]
    time.sleep(10)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    t0 = time.monotonic()
    for p in rr:
        p.send_signal(signal.SIGUSR1)
    left, done = set(rr), []
    while left and time.monotonic() - t0 < limit_s:
        for p in list(left):
            if p.poll() is not None:
                left.discard(p)
                done.append(time.monotonic() - t0)
        time.sleep(0.1)
    for p in fifo + list(left):
        p.kill()
    for p in rr:
        p.wait()
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    state = open("/sys/kernel/sched_ext/state").read().strip()
    rc = None
    if d:
        d.send_signal(signal.SIGINT)
        rc = d.wait()
    done.sort()
    return {
        "mode": mode,
        "exited": len(done),
        "files": len(os.listdir(out)),
        "last": done[-1] if len(done) == len(rr) else None,
        "median": done[len(done) // 2] if done else None,
        "limit": limit_s,
        "state": state,
        "rc": rc,
        "log": log_path if d else None,
        "totals": counters(log_path) if d else {},
    }


def run(binary, modes, runs, base):
    res = {"kernel": platform.release(), "ncpu": os.cpu_count(), "runs": []}
    for i in range(runs):
        for mode in modes.split():
            r = one_run(binary, mode, base, f"-{i + 1}")
            r["run"] = i + 1
            res["runs"].append(r)
            med = f"{r['median']:.1f}" if r["median"] is not None else "-"
            last = f"{r['last']:.1f}" if r["last"] is not None else f"> {LIMIT_S}"
            print(f"RESULT {mode}: {r['exited']} of 30 exited ({r['files']} files), last {last} s,"
                  f" median {med} s, sched_ext {r['state']}", flush=True)
            time.sleep(2)
    with open(os.path.join(base, "exits_convoy.json"), "w") as f:
        json.dump(res, f, indent=1)


def counters(log):
    """The daemon's final counters, from its log."""
    for line in open(log).read().splitlines() if log and os.path.exists(log) else []:
        if line.startswith("[fairquota] final:"):
            return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[2:])}
    return {}


def secs(x):
    return f"{x:.1f}" if x is not None else f"> {LIMIT_S}"


def report(path, cmd):
    res = json.load(open(path))
    print("# Exits convoy behind FIFO work\n")
    print(f"- command: `{cmd}`")
    print(f"- kernel: {res['kernel']} (Debian sid, sched_ext), virtme-ng VM under single-threaded"
          f" TCG, {res['ncpu']} vCPUs")
    print(f"- date: {datetime.date.today().isoformat()}")
    print("- workload: 30 CPU-bound Python processes (nice 0: RR under scx_fairquota, CFS under"
          " the default scheduler) behind two CPU hogs pinned one per CPU (nice -5, FIFO under"
          " scx_fairquota; `SCHED_FIFO` 10 under the default scheduler, whose fair server"
          " leaves fair tasks 5%); each is told to stop, then creates 20 files in one directory"
          " of the VM's virtiofs share (each create waits for the host) and exits. Time from"
          " the stop signal to the last exit; the modes alternate within one boot\n")
    print("| run | mode | exited | last exit (s) | median exit (s) | last / default scheduler's"
          " | `rr_budget` | `rr_budget_tick` | `dsleep_guard` | `guard` | state after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    cfs = {r["run"]: r["last"] for r in res["runs"] if r["mode"] == "cfs"}
    for r in res["runs"]:
        ref = cfs.get(r["run"])
        ratio = f"{r['last'] / ref:.2f}x" if r["last"] and ref else "-"
        c = r["totals"]
        print(f"| {r['run']} | {'default scheduler' if r['mode'] == 'cfs' else r['mode']} |"
              f" {r['exited']} of 30 | {secs(r['last'])} | {secs(r['median'])} | {ratio} |"
              f" {c.get('rr_budget', '-')} | {c.get('rr_budget_tick', '-')} |"
              f" {c.get('dsleep_guard', '-')} | {c.get('guard', '-')} |"
              f" {r['state']} |")
    print("\nThe counters are the daemon's totals over its run (`-` under the default"
          " scheduler): RR wakeups that ran at once on a CPU's RR budget, ticks that gave a"
          " queued RR task a turn on it, tasks woken from a"
          " `D` sleep that waited past 50 ms, RR tasks the guard made urgent.")


def main():
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
