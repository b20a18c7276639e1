#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Scenarios run inside the sched_ext VM (see tests/test_vm.py).

Each scenario starts scx_fairquota and a workload, measures what happened
(CPU shares from /proc/PID/schedstat, exit codes, the kernel's
/sys/kernel/sched_ext state, the daemon's printed stats) and writes the
measurements as JSON to OUT/<scenario>.json. It asserts nothing itself:
the host-side tests compare the numbers with their targets. It exits
non-zero only if the scenario could not run (e.g. the scheduler did not
attach), with the reason on stderr.

Usage: guest.py SCENARIO OUT_DIR
"""
import json
import os
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("FQ_BIN", os.path.join(REPO, "target/release/scx_fairquota"))
SCX = "/sys/kernel/sched_ext"
PY = sys.executable
HOG = os.path.join(REPO, "tests/vm/hog.py")


class ScenarioError(Exception):
    pass


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def sched_state():
    return read(f"{SCX}/state"), read(f"{SCX}/root/ops")


class Daemon:
    """scx_fairquota running in the background, its output kept in files."""

    def __init__(self, out_dir, name, args, wait_attach=True):
        self.out_path = os.path.join(out_dir, f"{name}.stdout")
        self.err_path = os.path.join(out_dir, f"{name}.stderr")
        self.proc = subprocess.Popen(
            [BIN, *args],
            stdout=open(self.out_path, "w"),
            stderr=open(self.err_path, "w"),
        )
        if wait_attach:
            self.wait_attached()

    def wait_attached(self, timeout=180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state, ops = sched_state()
            if state == "enabled" and ops.startswith("fairquota"):
                # The daemon logs this right after attaching.
                if "attached" in read(self.err_path):
                    return
            if self.proc.poll() is not None:
                raise ScenarioError(
                    f"scx_fairquota exited with {self.proc.returncode} before attaching:\n"
                    + read(self.err_path)
                )
            time.sleep(0.2)
        raise ScenarioError(f"scx_fairquota did not attach within {timeout}s:\n" + read(self.err_path))

    def stop(self, sig=signal.SIGINT, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise ScenarioError("scx_fairquota did not exit on SIGINT within 60s")
        return rc

    def stdout(self):
        return read(self.out_path)

    def stderr(self):
        return read(self.err_path)


def spawn_hog(nice, cpus=None, report=None):
    """A CPU hog at `nice`, optionally pinned; its pid is the hog itself."""
    cmd = ["nice", "-n", str(nice)]
    if cpus is not None:
        cmd += ["taskset", "-c", str(cpus)]
    if report:
        cmd += [PY, HOG, report]
    else:
        cmd += ["sh", "-c", "while :; do :; done"]
    return subprocess.Popen(cmd)


def wait_for_file(path, timeout=60):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise ScenarioError(f"{path} did not appear within {timeout}s")
        time.sleep(0.1)


def kill_all(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def cpu_ns(pid):
    """CPU time of `pid` in ns (first field of /proc/PID/schedstat)."""
    return int(read(f"/proc/{pid}/schedstat", "0 0 0").split()[0])


def measure(pids, seconds):
    """Share of one CPU each pid used over `seconds` of wall time."""
    t0 = time.monotonic()
    c0 = [cpu_ns(p) for p in pids]
    time.sleep(seconds)
    c1 = [cpu_ns(p) for p in pids]
    wall = (time.monotonic() - t0) * 1e9
    return [(b - a) / wall for a, b in zip(c0, c1)]


def all_stats_rows(stdout):
    """Every row of the daemon's stats tables, oldest first, as dicts."""
    rows = []
    for line in stdout.splitlines():
        cols = line.split()
        if len(cols) == 10 and cols[0].isdigit():
            rows.append({
                "pid": int(cols[0]),
                "comm": cols[1],
                "class": cols[4],
                "cpu_pct": float(cols[5]),
                "periods": int(cols[7]),
                "throttled": int(cols[8]),
            })
    return rows


def stats_rows(stdout, pid):
    """The daemon's stats rows for `pid`, oldest first."""
    return [r for r in all_stats_rows(stdout) if r["pid"] == pid]


KTHREAD_PREFIXES = ("kworker/", "ksoftirqd/", "rcu_", "kcompactd", "kthreadd", "migration/")


def run_cmd(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)
    return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}


# ----------------------------------------------------------------- scenarios

def scenario_attach(out):
    res = {"before": sched_state(), "bpffs_before": " /sys/fs/bpf bpf " in read("/proc/mounts")}
    d = Daemon(out, "attach", ["--stats-interval", "1"])
    res["while_running"] = sched_state()
    res["bpffs_while_running"] = " /sys/fs/bpf bpf " in read("/proc/mounts")
    res["pinned"] = os.path.exists("/sys/fs/bpf/scx_fairquota/config_seq")
    # Bad situations while it runs: a second instance, a non-root user.
    res["second_instance"] = run_cmd([BIN])
    res["not_root"] = run_cmd(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BIN])
    res["show"] = run_cmd([BIN, "show"])
    time.sleep(2)
    res["rc"] = d.stop()
    time.sleep(0.5)
    res["after"] = sched_state()
    res["pinned_after"] = os.path.exists("/sys/fs/bpf/scx_fairquota/config_seq")
    res["stdout"] = d.stdout()
    res["stderr"] = d.stderr()
    res["set_after_exit"] = run_cmd([BIN, "set", "--quota-us", "5000"])
    res["verifier_reject"] = run_cmd([BIN, "--test-verifier-reject"])
    res["after_reject"] = sched_state()
    # The kernel unloads the scheduler (SysRq-S): the daemon must say why
    # and exit non-zero.
    d = Daemon(out, "attach-sysrq", ["--stats-interval", "0"])
    with open("/proc/sysrq-trigger", "w") as f:
        f.write("S")
    try:
        res["sysrq_rc"] = d.proc.wait(60)
    except subprocess.TimeoutExpired:
        res["sysrq_rc"] = d.stop(signal.SIGKILL)
    res["sysrq_stderr"] = d.stderr()
    res["sysrq_after"] = sched_state()
    return res


def scenario_quota(out):
    res = {}
    for period, quota in [(10000, 2000), (100000, 20000)]:
        d = Daemon(out, f"quota-{period}",
                   ["--period-us", str(period), "--quota-us", str(quota), "--top", "200"])
        rr = spawn_hog(0)
        fifo = spawn_hog(-5)
        time.sleep(3)
        rr_share, fifo_share = measure([rr.pid, fifo.pid], 8)
        time.sleep(1.5)
        state = sched_state()
        kill_all([rr, fifo])
        rc = d.stop()
        stdout = d.stdout()
        res[f"{period}/{quota}"] = {
            "rr_share": rr_share,
            "fifo_share": fifo_share,
            "rr_rows": stats_rows(stdout, rr.pid),
            "fifo_rows": stats_rows(stdout, fifo.pid),
            "daemon_rows": stats_rows(stdout, d.proc.pid),
            "kthread_rows": [r for r in all_stats_rows(stdout)
                             if r["comm"].startswith(KTHREAD_PREFIXES)],
            "state_during": state,
            "rc": rc,
            "stderr": d.stderr(),
        }
    return res


def scenario_fifo_guard(out):
    gap_file = os.path.join(out, "rr-gap.json")
    d = Daemon(out, "fifo-guard", [])
    rr = spawn_hog(5, cpus=1, report=gap_file)
    wait_for_file(gap_file + ".ready")
    fifo = spawn_hog(-5, cpus=1)
    time.sleep(2)
    fifo_share, rr_share = measure([fifo.pid, rr.pid], 20)
    state = sched_state()
    kill_all([fifo, rr])
    alive = d.proc.poll() is None
    rc = d.stop()
    return {
        "fifo_share": fifo_share,
        "rr_share": rr_share,
        "rr_gap": json.loads(read(gap_file, "{}") or "{}"),
        "state_during": state,
        "daemon_alive": alive,
        "rc": rc,
        "stdout_tail": d.stdout()[-3000:],
        "stderr": d.stderr(),
    }


def final_totals(stdout):
    """The daemon's final counters as a dict."""
    for line in stdout.splitlines():
        if line.startswith("[fairquota] final:"):
            return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[2:])}
    return {}


def scenario_fifo_rotate(out):
    """Two FIFO hogs on one CPU for longer than the kernel watchdog timeout."""
    d = Daemon(out, "fifo-rotate", [])
    # Start them in the RR class so both reach their loop (a FIFO task
    # exec'ing behind a FIFO hog waits a rotation per I/O), then make
    # both FIFO.
    a = spawn_hog(0, cpus=1)
    b = spawn_hog(0, cpus=1)
    time.sleep(3)
    renice = run_cmd(["renice", "-n", "-5", "-p", str(a.pid), str(b.pid)])
    if renice["rc"] != 0:
        raise ScenarioError("renice failed: " + renice["stderr"])
    time.sleep(1)
    sa, sb = measure([a.pid, b.pid], 12)
    state = sched_state()
    kill_all([a, b])
    rc = d.stop()
    return {"shares": [sa, sb], "state_during": state, "rc": rc,
            "totals": final_totals(d.stdout()), "stderr": d.stderr()}


def scenario_weight(out):
    d = Daemon(out, "weight", [])
    n0 = spawn_hog(0, cpus=1)
    n5 = spawn_hog(5, cpus=1)
    time.sleep(3)
    s0, s5 = measure([n0.pid, n5.pid], 10)
    state = sched_state()
    kill_all([n0, n5])
    rc = d.stop(signal.SIGTERM)
    return {"nice0_share": s0, "nice5_share": s5, "state_during": state, "rc": rc,
            "after": sched_state(), "stderr": d.stderr()}


def switches(pid):
    """Involuntary context switches of `pid` so far."""
    for line in read(f"/proc/{pid}/status").splitlines():
        if line.startswith("nonvoluntary_ctxt_switches:"):
            return int(line.split()[1])
    return 0


def scenario_slices(out):
    """Three nice 0 hogs on one CPU, fixed 20 ms slices vs split slices."""
    res = {}
    for mode in ["fixed", "split"]:
        d = Daemon(out, f"slices-{mode}",
                   ["--slice-us", "20000", "--slice-mode", mode, "--slice-min-us", "1000"])
        hogs = [spawn_hog(0, cpus=1) for _ in range(3)]
        time.sleep(3)
        s0 = sum(switches(h.pid) for h in hogs)
        t0 = time.monotonic()
        shares = measure([h.pid for h in hogs], 8)
        rate = (sum(switches(h.pid) for h in hogs) - s0) / (time.monotonic() - t0)
        kill_all(hogs)
        rc = d.stop()
        res[mode] = {"switches_per_s": rate, "shares": shares, "rc": rc}
    return res


def scenario_reconfig(out):
    d = Daemon(out, "reconfig", ["--period-us", "10000", "--quota-us", "2000"])
    hog = spawn_hog(0)
    time.sleep(3)
    (before,) = measure([hog.pid], 6)
    set_res = run_cmd([BIN, "set", "--quota-us", "5000"])
    time.sleep(1)
    (after,) = measure([hog.pid], 6)
    bad_set = run_cmd([BIN, "set", "--quota-us", "20000"])
    # renice to -5: the hog moves to the FIFO class and is no longer limited
    renice = run_cmd(["renice", "-n", "-5", "-p", str(hog.pid)])
    time.sleep(2)
    (fifo,) = measure([hog.pid], 5)
    time.sleep(1.5)
    rows = stats_rows(d.stdout(), hog.pid)
    kill_all([hog])
    rc = d.stop()
    return {
        "before": before,
        "after": after,
        "after_renice": fifo,
        "set": set_res,
        "bad_set": bad_set,
        "renice_rc": renice["rc"],
        "last_class": rows[-1]["class"] if rows else None,
        "rc": rc,
        "stderr": d.stderr(),
    }


def scenario_demo(out):
    """The README's demo: print the daemon's stats and the measured shares."""
    args = ["--period-us", "10000", "--quota-us", "2000", "--stats-interval", "2", "--top", "5"]
    print(f"$ scx_fairquota {' '.join(args)}", flush=True)
    d = Daemon(out, "demo", args)
    hogs = {"nice 0 hog A (RR, quota)": spawn_hog(0), "nice 0 hog B (RR, quota)": spawn_hog(0),
            "nice -5 hog (FIFO, no quota)": spawn_hog(-5)}
    time.sleep(3)
    shares = measure([h.pid for h in hogs.values()], 8)
    time.sleep(0.5)
    kill_all(hogs.values())
    rc = d.stop()
    print(d.stdout()[-4000:])
    print("measured CPU shares (8 s, one CPU = 100%):")
    expected = ["20%", "20%", "~100%"]
    for (name, h), share, exp in zip(hogs.items(), shares, expected):
        print(f"  {name:<30} pid {h.pid:<6} {share * 100:5.1f}%   expected {exp}")
    print(f"scx_fairquota exit status: {rc}", flush=True)
    return {"shares": shares, "rc": rc}


SCENARIOS = {
    "demo": scenario_demo,
    "attach": scenario_attach,
    "quota": scenario_quota,
    "fifo_guard": scenario_fifo_guard,
    "fifo_rotate": scenario_fifo_rotate,
    "weight": scenario_weight,
    "reconfig": scenario_reconfig,
    "slices": scenario_slices,
}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: guest.py {{{'|'.join(SCENARIOS)}}} OUT_DIR")
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    print(f"guest: kernel {os.uname().release}, sched_ext state {sched_state()}", flush=True)
    try:
        res = SCENARIOS[name](out)
    except ScenarioError as e:
        print(f"guest: scenario {name} could not run: {e}", file=sys.stderr, flush=True)
        sys.exit(3)
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"guest: scenario {name} done", flush=True)


if __name__ == "__main__":
    main()
