#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Bandwidth benchmark, run inside the sched_ext VM by bench/bandwidth.sh.

Usage: bw_guest.py OUT_DIR LABEL PART [SCHEDULER ARGS...]
With no scheduler binary the kernel's default scheduler (and CFS bandwidth
control) runs. PART is one of two, written to OUT_DIR/LABEL.PART.json:
- nginx-R (round R; bandwidth.sh alternates the schedulers round by round,
  so a drift of the emulation's speed within the boot hits them alike):
  nginx (one worker) in a cgroup whose cpu.max is each of max,
  200000/1000000, 20000/100000, 2000/10000, loaded by
  `wrk -t1 -c10 -d15s --latency` from outside the cgroup: req/s, latency
  percentiles, and the nginx worker's CPU share twice: from the kernel's
  sched_switch events (guest.SwitchClock: the share reported) and from the
  cgroup's cpu.stat usage_usec (which under sched_ext misses turns: README,
  "The kernel's runtime clock under sched_ext");
- shares: the share of every (quota, period) pair of issue 6 under cpu.max, CPU
  hogs in one cgroup per pair, from /proc/PID/schedstat; then a bursty job
  within its quota: in a cgroup with each 20% cpu.max, a task that sleeps a
  period, then computes half a quota, again and again: how long each
  computation takes (whole periods let it run at once; smooth mode paces it
  at the limit's rate).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm"))
import guest as g  # noqa: E402

LIMITS = ["max", "200000 1000000", "20000 100000", "2000 10000"]
NGINX_CONF = """
worker_processes 1;
daemon off;
master_process on;
pid /tmp/fq-nginx/nginx.pid;
error_log /tmp/fq-nginx/error.log;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path /tmp/fq-nginx/body;
    proxy_temp_path /tmp/fq-nginx/proxy;
    fastcgi_temp_path /tmp/fq-nginx/fastcgi;
    uwsgi_temp_path /tmp/fq-nginx/uwsgi;
    scgi_temp_path /tmp/fq-nginx/scgi;
    server {
        listen 127.0.0.1:8080;
        root /tmp/fq-nginx/www;
    }
}
"""


def wrk_ms(v):
    m = re.match(r"([\d.]+)(us|ms|s)$", v)
    if not m:
        return None
    x, u = float(m.group(1)), m.group(2)
    return x / 1000 if u == "us" else x * 1000 if u == "s" else x


def parse_wrk(text):
    r = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    r["rps"] = float(m.group(1)) if m else None
    for pct in ("50", "90", "99"):
        m = re.search(rf"^\s+{pct}%\s+(\S+)", text, re.M)
        r[f"p{pct}_ms"] = wrk_ms(m.group(1)) if m else None
    m = re.search(r"^\s+Latency\s+\S+\s+\S+\s+(\S+)", text, re.M)
    r["max_ms"] = wrk_ms(m.group(1)) if m else None
    return r


def usage_us(rel):
    for line in g.read(os.path.join(g.CG, rel, "cpu.stat")).splitlines():
        k, v = line.split()
        if k == "usage_usec":
            return int(v)
    return 0


def start_nginx():
    """Start nginx (one worker) in cgroup fq_web: (its process, the worker's pid)."""
    os.makedirs("/tmp/fq-nginx/www", exist_ok=True)
    with open("/tmp/fq-nginx/www/index.html", "w") as f:
        f.write("<html><body>" + "scx_fairquota " * 40 + "</body></html>\n")
    with open("/tmp/fq-nginx/nginx.conf", "w") as f:
        f.write(NGINX_CONF)
    g.make_cgroup("fq_web")
    nginx = subprocess.Popen(["sh", "-c", f"echo $$ > {g.CG}/fq_web/cgroup.procs; "
                              "exec nginx -c /tmp/fq-nginx/nginx.conf"])
    time.sleep(3)
    workers = subprocess.run(["pgrep", "-f", "nginx: worker"], capture_output=True, text=True).stdout.split()
    if len(workers) != 1:
        raise SystemExit(f"bench: expected one nginx worker, found {workers}")
    return nginx, int(workers[0])


def stop_nginx(nginx):
    """Stop nginx and lift fq_web's limit."""
    nginx.send_signal(signal.SIGQUIT)
    try:
        nginx.wait(30)
    except subprocess.TimeoutExpired:
        nginx.kill()
    g.write_cg("fq_web", "cpu.max", "max")


def nginx_part():
    nginx, worker = start_nginx()
    res = {}
    for lim in LIMITS:
        g.write_cg("fq_web", "cpu.max", lim)
        time.sleep(2)
        sw = g.SwitchClock([worker])
        sw.start()
        u0, t0 = usage_us("fq_web"), time.monotonic()
        w = subprocess.run(["wrk", "-t1", "-c10", "-d15s", "--latency", "http://127.0.0.1:8080/"],
                           capture_output=True, text=True, timeout=120)
        cpu_stat = (usage_us("fq_web") - u0) / ((time.monotonic() - t0) * 1e6)
        ((cpu, wall),) = sw.stop()
        share = cpu / wall
        r = parse_wrk(w.stdout)
        r["share"] = share
        r["cpu_stat_share"] = cpu_stat
        r["wrk"] = w.stdout[-1500:]
        res[lim] = r
        print(f"bench: nginx {lim}: {r['rps']} req/s p99 {r['p99_ms']} ms share {share:.3f} "
              f"(cpu.stat {cpu_stat:.3f})", flush=True)
    stop_nginx(nginx)
    return res


def share_part():
    res = {}
    single = [x for x in g.PAIRS if x[2] == 1]
    multi = [x for x in g.PAIRS if x[2] > 1]
    for group, secs in [(single, 12), (multi, 8)]:
        for q, p, _ in group:
            g.make_cgroup(f"fqb_{q}_{p}")
            g.write_cg(f"fqb_{q}_{p}", "cpu.max", f"{q} {p}")
        hogs = g.start_group_hogs(group, "fqb")
        time.sleep(3)
        res.update(g.shares_of(group, hogs, secs))
        g.kill_all([h for v in hogs.values() for h in v])
    return res


def bursty_part():
    """Per 20% limit: the times a job of half a quota took, each started a
    period after the last ended (so no period sees more than half a quota
    of it), about 8 s of them."""
    g.make_cgroup("fqb_bursty")
    res = {}
    for lim in LIMITS[1:]:
        q, p = (int(x) for x in lim.split())
        g.write_cg("fqb_bursty", "cpu.max", lim)
        res[lim] = {"work_ms": q / 2000,
                    "took_ms": g.run_bursty("fqb_bursty", q / 2000, p / 1000, max(8, 8_000_000 // p))}
        print(f"bench: bursty {lim}: {len(res[lim]['took_ms'])} jobs of {q / 2000} ms", flush=True)
    g.write_cg("fqb_bursty", "cpu.max", "max")
    return res


def main():
    out, label, part, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    g.enable_cpu_controller()
    d = None
    if cmd:
        g.BIN = cmd[0]
        d = g.Daemon(out, f"bw-{label}", cmd[1:] + ["--stats-interval", "0"])
    res = {"label": label, "part": part, "args": cmd[1:], "kernel": os.uname().release}
    if part == "shares":
        res["shares"] = share_part()
        res["bursty"] = bursty_part()
    else:
        res["nginx"] = nginx_part()
    if d:
        res["rc"] = d.stop()
        res["state_after"] = g.sched_state()
    with open(os.path.join(out, f"{label}.{part}.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
