#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A crowd of FIFO hogs starting at once: bench/fifo_crowd.sh.

`run OUT BIN NF NR SETTLE WINDOW` (in the guest, as root): under the
kernel's default scheduler, then under scx_fairquota, start NR nice 0 CPU
hogs, then NF nice -5 ones (FIFO under scx_fairquota), each a `sh` busy
loop forked and exec'd by one shell; SETTLE s later, note every hog's
state (R runnable, D blocked in the kernel; the number in D is also
sampled once a second until then), then sample each hog's CPU
time (/proc/PID/schedstat) once a second for WINDOW s: the longest time a
hog made no progress, per class. The sampler is a SCHED_FIFO task of the
kernel's RT class, above both schedulers. Writes OUT/fifo_crowd.json.

`report JSON COMMAND` (on the host): the markdown report.
"""
import datetime
import json
import os
import platform
import subprocess
import sys
import time

HOG = "while :; do :; done"


def progress(pid):
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except OSError:
        return -1


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


def blocked_in(pid):
    """Where a task in D sleeps: its kernel stack's top frames (functions
    only), or its wchan where the stack cannot be read."""
    try:
        with open(f"/proc/{pid}/stack") as f:
            frames = [ln.split()[1].split("+")[0] for ln in f if len(ln.split()) > 1]
        return " < ".join(frames[:4])
    except OSError:
        try:
            with open(f"/proc/{pid}/wchan") as f:
                return f.read().strip()
        except OSError:
            return "?"


def children(ppid):
    out = subprocess.run(["pgrep", "-P", str(ppid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def crowd(nice, n):
    """n hogs at `nice`, forked and exec'd by one shell of the normal class."""
    return subprocess.Popen(["chrt", "-o", "0", "nice", "-n", str(nice), "sh", "-c",
                             f"for i in $(seq {n}); do sh -c '{HOG}' & done; wait"])


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def one_run(nf, nr, settle, window):
    rr = crowd(0, nr)
    time.sleep(1)
    ff = crowd(-5, nf)
    t0 = time.monotonic()
    while len(children(ff.pid)) < nf or len(children(rr.pid)) < nr:
        time.sleep(0.5)
    spawn_s = time.monotonic() - t0
    fifo, normal = children(ff.pid), children(rr.pid)
    # The hogs in D once a second until SETTLE: a convoy shows as a count
    # that stays up, a slow start as one that falls to 0 late.
    d_series = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < settle:
        time.sleep(min(1.0, max(0.0, settle - (time.monotonic() - t0))))
        d_series.append(sum(1 for p in fifo + normal if state(p) == "D"))
    states, where = {}, {}
    for p in fifo + normal:
        s = state(p)
        states[s] = states.get(s, 0) + 1
        if s == "D":
            w = blocked_in(p)
            where[w] = where.get(w, 0) + 1
    last = {p: progress(p) for p in fifo + normal}
    first = dict(last)
    since = {p: time.monotonic() for p in last}
    gap = {p: 0.0 for p in last}
    t1 = time.monotonic()
    while time.monotonic() - t1 < window:
        time.sleep(1.0)
        now = time.monotonic()
        for p in last:
            v = progress(p)
            if v != last[p]:
                last[p], since[p] = v, now
            gap[p] = max(gap[p], now - since[p])
    dt = time.monotonic() - t1
    blocked_end = sum(1 for p in fifo if state(p) == "D")
    for proc in (ff, rr):
        subprocess.run(["pkill", "-9", "-P", str(proc.pid)])
        proc.kill()
        proc.wait()

    def cls(pids):
        g = [gap[p] for p in pids]
        return {"gap_max": max(g), "gap_p50": quantile(g, 0.5), "gap_p90": quantile(g, 0.9),
                "over_3s": sum(1 for x in g if x > 3), "n": len(pids),
                "cpus": sum(last[p] - first[p] for p in pids) / 1e9 / dt}
    return {"spawn_s": spawn_s, "d_series": d_series, "states": states, "blocked_in": where,
            "fifo": cls(fifo), "normal": cls(normal), "fifo_blocked_end": blocked_end}


def run(out, binary, nf, nr, settle, window):
    res = {"kernel": platform.release(), "ncpu": os.cpu_count(), "nf": nf, "nr": nr,
           "settle": settle, "window": window}
    res["default"] = one_run(nf, nr, settle, window)
    d = subprocess.Popen(["chrt", "-o", "0", binary, "--stats-interval", "0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while (open("/sys/kernel/sched_ext/state").read().strip() != "enabled"
           and time.monotonic() < deadline and d.poll() is None):
        time.sleep(0.2)
    r = one_run(nf, nr, settle, window)
    r["sched_state"] = open("/sys/kernel/sched_ext/state").read().strip()
    d.send_signal(2)
    r["exit"] = d.wait(timeout=120)
    res["fairquota"] = r
    with open(os.path.join(out, "fifo_crowd.json"), "w") as f:
        json.dump(res, f, indent=1)


def report(path, cmd):
    res = json.load(open(path))
    d, f = res["default"], res["fairquota"]
    print("# A crowd of FIFO hogs starting at once\n")
    print(f"- command: `{cmd}`")
    print(f"- kernel: {res['kernel']} (Debian sid, sched_ext), virtme-ng VM under single-threaded"
          f" TCG, {res['ncpu']} vCPUs")
    print(f"- date: {datetime.date.today().isoformat()}")
    print(f"- workload: {res['nr']} nice 0 CPU hogs, then {res['nf']} nice -5 ones (FIFO under"
          " scx_fairquota), each a `sh` busy loop forked and exec'd by one shell; after"
          f" {res['settle']} s the hogs' states, then each hog's CPU time sampled once a second"
          f" for {res['window']} s by a SCHED_FIFO (kernel RT class) sampler; the default"
          " scheduler first, in one VM boot")
    print(f"- scx_fairquota: state at the end `{f.get('sched_state')}`, exit status {f.get('exit')}\n")
    print("| metric | default | scx_fairquota |")
    print("|---|---|---|")
    print(f"| seconds until every hog existed (1) | {d['spawn_s']:.1f} | {f['spawn_s']:.1f} |")
    print(f"| hogs' states {res['settle']} s later | {d['states']} | {f['states']} |")
    print(f"| hogs in D, once a second until then | {d.get('d_series', '-')}"
          f" | {f.get('d_series', '-')} |")
    print(f"| where the hogs in D slept (top kernel frames) | {d.get('blocked_in') or '-'}"
          f" | {f.get('blocked_in') or '-'} |")
    for key, label in (("fifo", "nice -5"), ("normal", "nice 0")):
        for m, name in (("gap_max", "longest time without progress, most"),
                        ("gap_p90", "longest time without progress, 90th percentile"),
                        ("gap_p50", "longest time without progress, median")):
            print(f"| {label} hogs: {name} (s) | {d[key][m]:.2f} | {f[key][m]:.2f} |")
        print(f"| {label} hogs without progress for over 3 s | {d[key]['over_3s']} of {d[key]['n']}"
              f" | {f[key]['over_3s']} of {f[key]['n']} |")
        print(f"| {label} hogs: CPUs used | {d[key]['cpus']:.2f} | {f[key]['cpus']:.2f} |")
    print(f"| nice -5 hogs blocked in the kernel (D) at the end | {d['fifo_blocked_end']}"
          f" | {f['fifo_blocked_end']} |")
    print("\n(1) The shell that starts the nice -5 hogs runs at nice -5 too: under the default"
          " scheduler it shares the CPU by weight with the hogs it has started, under"
          " scx_fairquota it is FIFO and keeps its CPU until it blocks.")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:8]))
    else:
        report(sys.argv[2], sys.argv[3])
