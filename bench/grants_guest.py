#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Smooth mode's grants, run inside the sched_ext VM by bench/grants.sh.

Usage: grants_guest.py OUT_DIR LABEL QUOTA/PERIOD SECONDS [SCHEDULER ARGS...]
nginx (one worker, as in bench/bw_guest.py) in cgroup fq_web with that
cpu.max, loaded by `wrk -t1 -c10 --latency` from outside it for SECONDS,
while ftrace records the worker's sched_switch events.
Writes OUT_DIR/LABEL.trace.gz (the raw trace) and OUT_DIR/LABEL.json
(wrk's figures, the worker's pid). With no scheduler binary the kernel's
default scheduler (and CFS bandwidth control) runs.
"""
import gzip
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bw_guest as bw  # noqa: E402
from bw_guest import g  # noqa: E402


def trace_worker(pid, secs):
    """Run wrk for secs with the worker's switches traced (guest.SwitchClock,
    which also fails if the trace buffer overflowed): (wrk's output, the trace)."""
    sw = g.SwitchClock([pid])
    sw.start()
    r = subprocess.run(["wrk", "-t1", "-c10", f"-d{secs}s", "--latency", "http://127.0.0.1:8080/"],
                       capture_output=True, text=True, timeout=120)
    sw.stop()
    return r.stdout, sw.text


def main():
    out, label, limit, secs, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
    g.enable_cpu_controller()
    d = None
    if cmd:
        g.BIN = cmd[0]
        d = g.Daemon(out, f"grants-{label}", cmd[1:] + ["--stats-interval", "0"])
    nginx, worker = bw.start_nginx()
    g.write_cg("fq_web", "cpu.max", limit.replace("/", " "))
    time.sleep(2)
    wrk, text = trace_worker(worker, secs)
    bw.stop_nginx(nginx)
    res = {"label": label, "limit": limit, "args": cmd[1:], "pid": worker,
           "kernel": os.uname().release, "wrk": bw.parse_wrk(wrk), "wrk_text": wrk}
    res["requests"] = int(wrk.split(" requests in ")[0].split()[-1]) if " requests in " in wrk else None
    if d:
        res["rc"] = d.stop()
        res["state_after"] = g.sched_state()
    with gzip.open(os.path.join(out, f"{label}.trace.gz"), "wt") as f:
        f.write(text)
    with open(os.path.join(out, f"{label}.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"grants: {label}: {res['wrk']['rps']} req/s p99 {res['wrk']['p99_ms']} ms", flush=True)


if __name__ == "__main__":
    main()
