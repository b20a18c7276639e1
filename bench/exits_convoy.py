#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Exits convoy behind FIFO work (guest side, ad hoc; no report yet).

30 CPU-bound Python processes (nice 0: RR under scx_fairquota, CFS under
the default scheduler) run behind two CPU hogs pinned one per CPU (nice -5:
FIFO under scx_fairquota; SCHED_FIFO 10 under the default scheduler, whose
fair server leaves fair tasks 50 ms a second). Each is told to stop, then
writes 20 files into one directory and exits: the creates take the
directory's lock in turn. Prints how long until all 30 exited.

Usage, in the VM (DIR on the virtiofs share makes each create wait for the
host; on the guest's own /tmp it does not):
  python3 bench/exits_convoy.py BIN MODE RUNS DIR
MODE: fq100 / fq1000 (scx_fairquota with that --guard-ms) or cfs. The
files go to DIR/exits_convoy, removed and made again at each run; the
daemon's output (stats every 10 s) to DIR/daemon-MODE.log. From the
host, for the virtiofs case (after mkdir -p /tmp/ec):
  scripts/vm-run.sh --rwdir /tmp/ec -- \
    'python3 bench/exits_convoy.py target/release/scx_fairquota fq100 1 /tmp/ec'
and with DIR /tmp/ec_local (no --rwdir) for the guest's own /tmp.
"""
import os
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


def one_run(binary, mode, base):
    """One run of MODE; the files go to BASE/exits_convoy. Returns what it
    measured (last: seconds until all 30 exited, None past LIMIT_S)."""
    out = os.path.join(base, "exits_convoy")  # made afresh each run
    d, log_path = None, os.path.join(base, f"daemon-{mode}.log")
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
    while left and time.monotonic() - t0 < LIMIT_S:
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
        "state": state,
        "rc": rc,
        "log": log_path if d else None,
    }


def main():
    binary, mode, runs, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    for _ in range(runs):
        r = one_run(binary, mode, base)
        med = f"{r['median']:.1f}" if r["median"] is not None else "-"
        last = f"{r['last']:.1f}" if r["last"] is not None else f"> {LIMIT_S}"
        print(f"RESULT {mode}: {r['exited']} of 30 exited ({r['files']} files), last {last} s, "
              f"median {med} s, sched_ext {r['state']}", flush=True)
        time.sleep(2)


if __name__ == "__main__":
    main()
