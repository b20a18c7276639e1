#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Scenarios run inside the sched_ext VM (see tests/test_vm.py).

Each scenario starts scx_fairquota and a workload, measures what happened
(CPU shares from the kernel's sched_switch events, exit codes, the kernel's
/sys/kernel/sched_ext state, the daemon's printed stats) and writes the
measurements as JSON to OUT/<scenario>.json. It asserts nothing itself:
the host-side tests compare the numbers with their targets. It exits
non-zero only if the scenario could not run (e.g. the scheduler did not
attach), with the reason on stderr.

Usage: guest.py SCENARIO OUT_DIR
       guest.py batch OUT_DIR SCENARIO...   (one boot, one process each)
"""
import bisect
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
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

    def __init__(self, out_dir, name, args, wait_attach=True, prefix=()):
        # Output goes to the guest's own /tmp, copied to out_dir at stop():
        # a write to the shared out_dir is a round trip to the host that
        # needs an unbound kworker, which waits its turn on a loaded guest.
        local = tempfile.mkdtemp(prefix=f"fq-{name}-")
        self.out_dir, self.name = out_dir, name
        self.out_path = os.path.join(local, f"{name}.stdout")
        self.err_path = os.path.join(local, f"{name}.stderr")
        self.proc = subprocess.Popen(
            [*prefix, BIN, *args],
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
        finally:
            for p in (self.out_path, self.err_path):
                shutil.copy(p, self.out_dir)
        return rc

    def stdout(self):
        return read(self.out_path)

    def stderr(self):
        return read(self.err_path)


def spawn_hog(nice, cpus=None, report=None, prefix=(), cmd=None, stdout=None):
    """A CPU hog (or the command `cmd`) at `nice`, optionally pinned, run
    through the command `prefix` (e.g. `chrt`, which execs it); its pid is
    the hog itself.

    The affinity is set in the child before its first exec: pinned by
    `taskset` after `nice`'s exec, a hog ran unpinned on another CPU for up
    to 0.8 s of its start (seen on a cold page cache), and a scenario's
    settling time measured that start instead of the pinned hogs.
    """
    if cmd is None:
        cmd = [PY, HOG, report] if report else ["sh", "-c", "while :; do :; done"]
    cmd = ["nice", "-n", str(nice), *prefix, *cmd]
    pin = None
    if cpus is not None:
        def pin():
            os.sched_setaffinity(0, {int(cpus)})
    return subprocess.Popen(cmd, preexec_fn=pin, stdout=stdout, text=stdout is not None)


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


TRACING = "/sys/kernel/tracing"
# A directory where SwitchClock keeps each window's raw trace (gzipped),
# so that a share that misses its target can be read event by event
# after the run; None: not kept.
KEEP_TRACES = None
SWITCH = re.compile(r"\s(\d+\.\d+): (?:sched_switch: .*?prev_pid=(\d+) .*? ==> .*?next_pid=(\d+)"
                    r"|tracing_mark_write: fq-(start|stop))")


class SwitchClock:
    """Time on a CPU of some pids over a window, from the kernel's
    sched_switch events (ftrace): each pid's time between its switch-in and
    its switch-out, within the window between two trace markers written by
    start() and stop() (timed by the trace itself, so a delay of this
    script between its clock and the trace is not counted).

    Unlike /proc/PID/schedstat (the kernel's sum_exec_runtime, which
    cpu.stat sums too), it sees every turn: under sched_ext the kernel's
    clock misses whole turns of a task that starts on an idle CPU (README,
    "The kernel's runtime clock under sched_ext"). measure() and the
    bandwidth benchmark (bench/bw_guest.py) read shares through it. Up to
    64 pids the trace is filtered to their switches; more are traced
    unfiltered."""

    def __init__(self, pids):
        self.pids = [int(p) for p in pids]
        self._w("tracing_on", "0")
        self._w("trace", "")
        self._w("trace_clock", "mono")
        # Per CPU: 8 MB up to 8 CPUs, 64 MB in all beyond.
        self._w("buffer_size_kb", str(max(2048, min(8192, 65536 // os.cpu_count()))))
        flt = " || ".join(f"prev_pid == {p} || next_pid == {p}" for p in self.pids)
        self._w("events/sched/sched_switch/filter", flt if len(self.pids) <= 64 else "0")
        self._w("events/sched/sched_switch/enable", "1")

    @staticmethod
    def _w(name, value):
        with open(os.path.join(TRACING, name), "w") as f:
            f.write(value)

    def start(self):
        self.exec0 = [cpu_ns(p) for p in self.pids]
        self._w("tracing_on", "1")
        self._w("trace_marker", "fq-start")

    def stop(self):
        """[(seconds on a CPU, seconds of window)] per pid, in order."""
        self._w("trace_marker", "fq-stop")
        self._w("tracing_on", "0")
        ran = [(cpu_ns(p) - c) / 1e9 for p, c in zip(self.pids, self.exec0)]
        text = self.text = read(os.path.join(TRACING, "trace"))
        self._w("events/sched/sched_switch/enable", "0")
        self._w("events/sched/sched_switch/filter", "0")
        self._w("trace", "")
        if KEEP_TRACES:
            n = len([f for f in os.listdir(KEEP_TRACES) if f.startswith("switch-")])
            with gzip.open(os.path.join(KEEP_TRACES, f"switch-{n:02d}.txt.gz"), "wt") as f:
                f.write(text)
        m = re.search(r"entries-in-buffer/entries-written: (\d+)/(\d+)", text)
        if not m or m.group(1) != m.group(2):
            raise ScenarioError("sched_switch events were overwritten: the trace buffer is too small")
        return switch_times(text, self.pids, ran)


def switch_times(text, pids, ran):
    """[(on-CPU seconds, window seconds)] of each of `pids` between the
    fq-start and fq-stop markers of a sched_switch trace. A pid with no
    switch in the window either ran all of it or none: `ran` (its
    schedstat time over about the window, right for a task that never
    switched) tells which."""
    want = set(pids)
    t0 = t1 = None
    since, busy, seen = {}, dict.fromkeys(pids, 0.0), set()
    for m in SWITCH.finditer(text):
        t = float(m.group(1))
        if m.group(4) == "start":
            t0 = t
            continue
        if m.group(4) == "stop":
            t1 = t
            break
        if t0 is None:
            continue
        prev, nxt = int(m.group(2)), int(m.group(3))
        if prev in want:
            # Its first event a switch-out: it was running at the start.
            start = since.pop(prev, None if prev in seen else t0)
            if start is not None:
                busy[prev] += t - start
            seen.add(prev)
        if nxt in want:
            since[nxt] = t
            seen.add(nxt)
    if t0 is None or t1 is None:
        raise ScenarioError("the sched_switch trace lacks its start or stop marker")
    for pid, start in since.items():
        busy[pid] += t1 - start
    for p, r in zip(pids, ran):
        if p not in seen and r > (t1 - t0) / 2:
            busy[p] = t1 - t0
    return [(busy[p], t1 - t0) for p in pids]


def first_runs(text, pids):
    """Seconds from the fq-start marker of a sched_switch trace to the first
    switch-in of each of `pids` after it (None: not in the window)."""
    t0, first = None, dict.fromkeys(pids)
    for m in SWITCH.finditer(text):
        if m.group(4) == "start":
            t0 = float(m.group(1))
        elif m.group(4) == "stop":
            break
        elif t0 is not None and first.get(int(m.group(3)), 0) is None:
            first[int(m.group(3))] = round(float(m.group(1)) - t0, 4)
    return [first[p] for p in pids]


def measure(pids, seconds, raw=False):
    """Share of one CPU each pid used over about `seconds` of wall time
    (with `raw`, each pid's CPU time and the window, in seconds), from the
    kernel's sched_switch events (SwitchClock), timed by the trace itself:
    neither this script's own turns (it is an RR task too, throttled like
    the hogs under a per-task quota) nor the kernel's runtime clock, which
    misses whole turns under sched_ext, enter the figure."""
    clock = SwitchClock(pids)
    clock.start()
    time.sleep(seconds)
    spans = clock.stop()
    return spans if raw else [cpu / wall for cpu, wall in spans]


def all_stats_rows(stdout):
    """Every row of the daemon's stats tables, oldest first, as dicts."""
    rows = []
    for line in stdout.splitlines():
        cols = line.split()
        if len(cols) == 11 and cols[0].isdigit():
            rows.append({
                "pid": int(cols[0]),
                "comm": cols[1],
                "class": cols[4],
                "cpu_pct": float(cols[5]),
                "periods": int(cols[7]),
                "throttled": int(cols[8]),
                "max_wait": float(cols[10].rstrip("s")),
            })
    return rows


def stats_rows(stdout, pid):
    """The daemon's stats rows for `pid`, oldest first."""
    return [r for r in all_stats_rows(stdout) if r["pid"] == pid]


HERD = os.path.join(REPO, "tests/vm/herd.py")
EXEC_THREAD = os.path.join(REPO, "tests/vm/exec_thread.py")
GP_PROBE = os.path.join(REPO, "tests/vm/gp_probe.py")
STORM = os.path.join(REPO, "target/storm")
SPIN = os.path.join(REPO, "target/spin")


def spawn_herd(n, out, name):
    """n nice 0 CPU hogs that measure their own longest stall (herd.py);
    returns (proc, pids, result_path)."""
    path = os.path.join(out, f"{name}.json")
    proc = subprocess.Popen([PY, HERD, str(n), path])
    wait_for_file(path + ".pids", timeout=180)
    pids = [int(x) for x in read(path + ".pids").split()]
    return proc, pids, path


def stop_herd(proc, path):
    """End the herd; {pid: [longest stall s, cpu s]} as its hogs saw it."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(300)
    return {int(k): v for k, v in json.loads(read(path, "{}") or "{}").items()}


def herd_stalls(seen):
    """From stop_herd()'s result: the longest stall of each hog that
    reported, and how many hogs never ran (no report or no CPU time)."""
    return ([v[0] for v in seen.values() if v],
            sum(1 for v in seen.values() if not v or v[1] <= 0))


def daemon_tasks_counts(stdout):
    """The `tasks=N` of every stats line, oldest first."""
    out = []
    for line in stdout.splitlines():
        for tok in line.split():
            if tok.startswith("tasks="):
                out.append(int(tok[6:]))
    return out


KTHREAD_PREFIXES = ("kworker/", "ksoftirqd/", "rcu_", "kcompactd", "kthreadd", "migration/")
PF_KTHREAD = 0x00200000


def is_kthread(pid):
    """True if `pid` is a kernel thread (PF_KTHREAD in /proc/PID/stat)."""
    stat = read(f"/proc/{pid}/stat")
    if not stat:
        return False
    # Fields after the ")" that ends comm: state is field 3, flags field 9.
    return bool(int(stat.rsplit(")", 1)[1].split()[6]) & PF_KTHREAD)


def run_cmd(args, timeout=120, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}


def sched_ext_log(n):
    """The kernel log's last `n` sched_ext lines (enabled, disabled and why)."""
    return [line for line in run_cmd(["dmesg"])["stdout"].splitlines() if "sched_ext" in line][-n:]


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
    res["init_fail"] = run_cmd([BIN, "--test-init-fail"])
    res["after_init_fail"] = sched_state()
    # The kernel unloads the scheduler (SysRq-S): the daemon must say why
    # and exit non-zero.
    # --verifier-stats: what loading cost the kernel's verifier.
    d = Daemon(out, "attach-sysrq", ["--stats-interval", "0", "--verifier-stats"])
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


def scenario_fifo_crowd(out):
    """bench/fifo_crowd.py's crowd under scx_fairquota: 200 nice -5 (FIFO)
    hogs forked and exec'd at once by one shell beside 20 nice 0 ones; 30 s
    later their states, then 15 s of their progress, sampled from the
    kernel's RT class (SCHED_FIFO, above sched_ext: the daemon is started
    first, so it is not)."""
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import fifo_crowd

    d = Daemon(out, "fifo-crowd", [])
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    try:
        r = fifo_crowd.one_run(200, 20, 30, 15)
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    r["state_after"] = sched_state()[0]
    r["rc"] = d.stop()
    r["totals"] = final_totals(d.stdout())
    r["stderr"] = d.stderr()[-3000:]
    return r


def scenario_exits_convoy(out):
    """bench/exits_convoy.py under scx_fairquota (--guard-ms 100), then
    under the default scheduler in the same boot: 30 nice 0 tasks behind two
    pinned CPU hogs (nice -5, FIFO; SCHED_FIFO under the default scheduler)
    each create 20 files in one directory of OUT (the virtiofs share, where
    every create sleeps for the host) and exit. The default scheduler's run
    stops once it has taken longer than scx_fairquota's (half a second
    past it): the test asks which took longer, and the default scheduler's
    whole run took 90-112 s on a quiet host and over 240 s on a busy one."""
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import exits_convoy

    fq = exits_convoy.one_run(BIN, "fq100", out)
    fq["log_tail"] = read(fq["log"])[-3000:]
    time.sleep(2)
    limit = fq["last"] + 0.5 if fq["last"] is not None else exits_convoy.LIMIT_S
    return {"fq": fq, "cfs": exits_convoy.one_run(BIN, "cfs", out, limit_s=limit)}


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


def moved_hog_parts(after):
    """A nice 10 hog on CPU 0 and a nice 0 pair on CPU 1 for 3 s, then a
    nice 0 hog on CPU 0, moved to CPU 1 `after` s after its start: the
    shares of CPU 1 of the moved hog and of the pair over the next 3 s
    (scenario_weight, bench/guest_bench.py's part moves)."""
    fast = spawn_hog(10, cpus=0)
    pair = [spawn_hog(0, cpus=1) for _ in range(2)]
    time.sleep(3)
    moved = spawn_hog(0, cpus=0)
    time.sleep(after)
    os.sched_setaffinity(moved.pid, {1})
    parts = measure([moved.pid] + [h.pid for h in pair], 3)
    kill_all([fast, moved] + pair)
    return parts


def scenario_weight(out):
    d = Daemon(out, "weight", [])
    n0 = spawn_hog(0, cpus=1)
    n5 = spawn_hog(5, cpus=1)
    time.sleep(3)
    s0, s5 = measure([n0.pid, n5.pid], 10)
    state = sched_state()
    kill_all([n0, n5])
    # A hog that ran alone for 3 s, then a newcomer on its CPU: both at
    # nice 0, they split the CPU from the start.
    old = spawn_hog(0, cpus=1)
    time.sleep(3)
    new = spawn_hog(0, cpus=1)
    join_first = measure([old.pid, new.pid], 1)
    join_next = measure([old.pid, new.pid], 2)
    # A hog stopped for 3 s while another ran, then continued: it gets no
    # more than a slice of credit for the time it slept, not 3 s.
    os.kill(old.pid, signal.SIGSTOP)
    time.sleep(3)
    os.kill(old.pid, signal.SIGCONT)
    wake_first = measure([old.pid, new.pid], 1)
    kill_all([old, new])
    # A hog moved by an affinity change from CPU 0, whose clock a nice 10
    # hog ran far ahead (9.3 s of vtime per second), to CPU 1, where a nice
    # 0 pair ran (0.5 s per second): it carries its place over, not a lead
    # of 25 s in CPU 1's terms, and gets its third of CPU 1 at once. It is
    # moved 0.2 s after its start, while CPU 0's clock still trails it by up
    # to seconds (the nice 10 hog ran far ahead, and the newcomer was raised
    # to within the lag bound of it): a move 1 s in failed two CI runs of
    # 2026-12-06 out of about five, one 0.2 s in 5 of 12 scratch moves
    # (0.2-24%), both before carry_lag() bounded the lead it carries.
    moved_parts = moved_hog_parts(0.2)
    # SCHED_IDLE at nice -5 beside a nice 0 hog: the policy, not the nice,
    # decides (RR at the kernel's idle weight, never FIFO).
    n0 = spawn_hog(0, cpus=1)
    idle = spawn_hog(-5, cpus=1, prefix=["chrt", "--idle", "0"])
    time.sleep(2)
    idle_shares = measure([n0.pid, idle.pid], 6)
    idle_rows = stats_rows(d.stdout(), idle.pid)
    kill_all([n0, idle])
    # An oversubscribed CPU: 20 nice 0 and 20 nice 10 hogs. A nice 10 hog's
    # fair turn comes about every 0.6 s, past the 100 ms guard, and under
    # TCG (turns stretched to a tick) often past the guard's 1 s bound,
    # which serves the hog out of its weighted order. One hog's share over
    # 4 s then read 0.18-0.81% (fair: 0.49%), a few turns ahead or behind
    # that its vtime evens out in the next seconds; over 12 s one CI run
    # read 0.4% and 0.7%. Over 24 s each hog's share is its weighted one.
    g0 = [spawn_hog(0, cpus=1) for _ in range(20)]
    g10 = [spawn_hog(10, cpus=1) for _ in range(20)]
    time.sleep(4)
    crowd_s = 24
    crowd = measure([h.pid for h in g0 + g10], crowd_s)
    kill_all(g0 + g10)
    rc = d.stop(signal.SIGTERM)
    return {"nice0_share": s0, "nice5_share": s5, "state_during": state, "rc": rc,
            "crowd_nice0": crowd[:20], "crowd_nice10": crowd[20:], "crowd_s": crowd_s,
            "join_first": join_first, "join_next": join_next, "wake_first": wake_first,
            "idle_shares": idle_shares, "moved_parts": moved_parts,
            "idle_class": idle_rows[-1]["class"] if idle_rows else None,
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


def run_spans(h):
    """A hog's runs in order as (begin, end) on the monotonic clock, from
    hog.py's `start` and `seq` (each run with the gap that ended it)."""
    t, spans = h.get("start", 0.0), []
    for run, gap in h.get("seq", []):
        spans.append((t, t + run))
        t += run + gap
    return spans


def turns_of(mine, other):
    """The turns of a hog from its runs and those of the other hog on its
    CPU (run_spans()): runs with no run of the other between them are one
    turn, the gaps included. Such a gap is the host stalling the guest's
    CPU, or a kernel thread's moment on it, which leave the turn going;
    under TCG on a busy host stalls split turns often and can be long: a CI
    run read a 5 ms slice's median run at 2.57 ms. (Runs apart by less
    than half a slice made one turn before: that CI run's median turn read
    4.68 ms, the stalls of over 2.5 ms splitting turns.) Only turns that
    start after the other hog's first run and end before its last one
    count: the others are cut by its start or end. The wall time of a turn
    is what its slice bounds."""
    if not mine or not other:
        return []
    starts = [b for b, _ in other]
    first, last = other[0][0], other[-1][1]
    turns, begin, end = [], None, None
    for b, e in mine:
        if begin is not None:
            i = bisect.bisect_left(starts, b)
            if i > 0 and other[i - 1][1] > end:
                if begin > first:
                    turns.append(end - begin)
                begin = None
        if e > last:
            break
        if begin is None:
            begin = b
        end = e
    return turns


def scenario_slice_lengths(out):
    """Two nice 0 hogs (hog.py) on CPU 1 for each slice in SLICE_LENGTHS_US:
    the lengths of their runs, and how many turns started a slice timer.
    At HZ 250 a 2 ms slice ends between ticks (slice timer at the start); a
    3 ms or 5 ms one is left to the ticks until one finds less than a tick
    but the slack left (bpf/slice.bpf.h, slice_needs_timer())."""
    res = {}
    runs_of = [(str(us), us, []) for us in SLICE_LENGTHS_US]
    # And 2 ms slices of hogs under a per-task quota they never use up
    # (80% each, 50% used; smooth 8 ms per 10 ms): quotas the tick ends,
    # so their turns start no timer when tokens cut them, but their RR
    # slices are still timed (arm_slice_timer()).
    runs_of.append(("2000-quota", 2000, ["--period-us", "100000", "--quota-us", "80000"]))
    for key, us, extra in runs_of:
        d = Daemon(out, f"slice-{key}", ["--slice-us", str(us)] + extra)
        files = [os.path.join(out, f"runs-{key}-{i}.json") for i in range(2)]
        hogs = [spawn_hog(0, cpus=1, report=f) for f in files]
        for f in files:
            wait_for_file(f + ".ready")
        # Past the 2 s in which the scheduler learns the tick period.
        time.sleep(SLICE_LENGTHS_S)
        for h in hogs:
            h.send_signal(signal.SIGTERM)
        for h in hogs:
            h.wait(60)
        rc = d.stop()
        hogs_out = [json.loads(read(f, "{}") or "{}") for f in files]
        runs = [r for h in hogs_out for r in h.get("runs_s", [])]
        spans = [run_spans(h) for h in hogs_out]
        turns = turns_of(spans[0], spans[1]) + turns_of(spans[1], spans[0])
        res[key] = {"slice_us": us, "runs_s": runs, "turns_s": turns,
                        "totals": final_totals(d.stdout()), "rc": rc}
    # Wakeup-driven work (two processes passing a byte back and forth
    # through pipes: turns that block long before their slice ends)
    # beside a hog on one CPU: how many turns start a slice timer.
    d = Daemon(out, "slice-wakeups", [])
    hog = spawn_hog(0, cpus=1)
    time.sleep(3)
    pp = run_cmd(["taskset", "-c", "1", PY, "-c", PING_PONG, "6"], timeout=300)
    kill_all([hog])
    rc = d.stop()
    res["wakeups"] = {"pingpong_rc": pp["rc"], "round_trips": pp["stdout"].strip(),
                      "totals": final_totals(d.stdout()), "rc": rc}
    # The same ping-pong under a per-task quota it never uses up (80% each,
    # about 50% used): its turns are limited but not cut short by tokens,
    # so they start no timer either (every limited turn did before).
    d = Daemon(out, "slice-wakeups-limited", ["--period-us", "100000", "--quota-us", "80000"])
    pp = run_cmd(["taskset", "-c", "1", PY, "-c", PING_PONG, "6"], timeout=300)
    rc = d.stop()
    res["wakeups_limited"] = {"pingpong_rc": pp["rc"], "round_trips": pp["stdout"].strip(),
                              "totals": final_totals(d.stdout()), "rc": rc}
    return res


# A parent and its child joined by two pipes (parent -> child: w1, child ->
# parent: r2); the child answers every byte with one, until w1 closes.
PIPE_PAIR = """
import os, re, sys, time
r1, w1 = os.pipe()
r2, w2 = os.pipe()
if os.fork() == 0:
    os.close(w1)
    while os.read(r1, 1):
        os.write(w2, b"x")
    os._exit(0)
os.close(r1)
"""

# Ping-pong through the pipes for argv[1] seconds; prints the round trips.
PING_PONG = PIPE_PAIR + """
end, n = time.monotonic() + float(sys.argv[1]), 0
while time.monotonic() < end:
    os.write(w1, b"x")
    os.read(r2, 1)
    n += 1
os.close(w1)
os.wait()
print(n)
"""

# A waker that goes on after its write: the parent writes a byte to its
# child, computes for 1 ms (a third of the default slice: TCG adds to
# it), then reads the answer, argv[1] times. Prints the parent's
# involuntary context switches over the loop, and the loop count.
WRITE_THEN_WORK = PIPE_PAIR + """
def invol():
    st = open("/proc/self/status").read()
    return int(re.search(r"nonvoluntary_ctxt_switches:\\s+(\\d+)", st).group(1))
n = int(sys.argv[1])
i0 = invol()
for _ in range(n):
    os.write(w1, b"x")
    end = time.perf_counter() + 0.001
    while time.perf_counter() < end:
        pass
    os.read(r2, 1)
print(invol() - i0, n)
os.close(w1)
os.wait()
"""


def scenario_sync_wakeup(out):
    """A pipe pair that may run on both CPUs, with a nice -5 (FIFO) hog
    holding CPU 0, so both wait on CPU 1: does the woken child preempt its
    parent, which computes for 1 ms after each write? (A sync wakeup does
    not preempt its waker: queues.bpf.h, preempt_or_kick().) The slice is
    3 ms (the default is 1.5 ms on 2 vCPUs): what is measured is
    preemption by the wakee, not the end of a slice that TCG stretched the
    parent's 1 ms of work past."""
    d = Daemon(out, "sync-wakeup", ["--stats-interval", "0", "--slice-us", "3000"])
    hog = spawn_hog(-5, cpus=0)
    time.sleep(2)
    r = run_cmd([PY, "-c", WRITE_THEN_WORK, "300"], timeout=300)
    kill_all([hog])
    # A task that sleeps 2 ms and computes 0.3 ms, beside a nice 0 hog on
    # CPU 1: as SCHED_OTHER its wakeups preempt the hog, as SCHED_BATCH
    # they wait for the hog's turn to end. Then two that sleep 50 ms, side
    # by side, one of each policy: the hog runs on alone between their
    # wakeups, its turn renewed a dozen times, and the SCHED_OTHER one's
    # wakeups must still preempt it. Side by side, both see the same host:
    # a slow emulator stretches the lateness of both (one after the other,
    # a busy spell in one run and not the other failed a CI run). They wake
    # on one grid, 25 ms apart: started together, each woke beside the
    # other, and the SCHED_BATCH one ran right after the SCHED_OTHER one's
    # preemption instead of waiting for the hog's turn (medians 1539 and
    # 1629 us in a failed run, each's 10th-90th percentiles alike). The
    # wakeup preemptions of each run are the difference of wake_preempt
    # between stats requests (SCHED_BATCH wakeups do not preempt).
    preempts, local, wakes, hog = {}, {}, {}, None
    # (a new hog first?, the sleepers side by side: name, policy, nap[, grid offset])
    phases = ((True, [("other", "other", "0.002")]), (False, [("batch", "batch", "0.002")]),
              (True, [("long_nap", "other", "0.05", "0"),
                      ("long_batch", "batch", "0.05", "0.025")]))
    for new_hog, phase in phases:
        if new_hog:
            kill_all([hog] if hog else [])
            hog = spawn_hog(0, cpus=1)
            time.sleep(1)
        before = counter_now("wake_preempt", "wake_local")
        sleepers = []
        for name, policy, *nap in phase:
            sleepers.append((name, spawn_hog(0, cpus=1, prefix=["chrt", f"--{policy}", "0"],
                                             cmd=[PY, "-c", SLEEPER, "4", *nap],
                                             stdout=subprocess.PIPE)))
        for name, sleeper in sleepers:
            wakes[name] = sleeper.communicate(timeout=120)[0].split()
        after = counter_now("wake_preempt", "wake_local")
        preempts[phase[0][0]] = after[0] - before[0]
        local[phase[0][0]] = after[1] - before[1]
    kill_all([hog])
    # The same 2 ms sleeper beside a nice 0 and a nice 5 hog on CPU 1
    # while a nice 10 hog runs alone on CPU 0: the vtimes of CPU 0 move 9
    # times as fast as real time, those of CPU 1 0.75 times, so the two
    # CPUs' tasks drift apart for ever. The sleeper must still get CPU 1
    # within a tick or so, and the pair split it 75/25.
    hogs = [spawn_hog(10, cpus=0), spawn_hog(0, cpus=1), spawn_hog(5, cpus=1)]
    time.sleep(1)
    sleeper = spawn_hog(0, cpus=1, cmd=[PY, "-c", SLEEPER, "4", "0.002"],
                        stdout=subprocess.PIPE)
    out_s, _ = sleeper.communicate(timeout=300)
    wakes["slow_cpu"] = out_s.split()
    pair = measure([h.pid for h in hogs[1:]], 4)
    kill_all(hogs)
    rc = d.stop()
    return {"rc_pair": r["rc"], "out": r["stdout"].split(), "err": r["stderr"][-500:], "rc": rc,
            "wake_preempts": preempts, "wake_local": local, "wakes": wakes, "slow_pair": pair}


# Sleeps argv[2] s and computes 0.3 ms, for argv[1] seconds; prints the
# number of wakeups and the median time a wakeup came late, in us, then
# its 10th, 25th, 75th and 90th percentiles. With argv[3], it wakes on a
# fixed grid of the system's monotonic clock instead: at the times t with
# t = argv[3] (mod argv[2]), so that two sleepers with the same nap and
# offsets half a nap apart never wake together, however late each comes.
SLEEPER = """
import sys, time
end = time.monotonic() + float(sys.argv[1])
nap = float(sys.argv[2])
off = float(sys.argv[3]) if len(sys.argv) > 3 else None
late = []
while time.monotonic() < end:
    t0 = time.monotonic()
    due = t0 + nap if off is None else (int((t0 - off) / nap) + 1) * nap + off
    time.sleep(due - t0)
    late.append(time.monotonic() - due)
    t = time.monotonic() + 0.0003
    while time.monotonic() < t:
        pass
late.sort()
print(len(late), round(late[len(late) // 2] * 1e6),
      *(round(late[int(len(late) * q)] * 1e6) for q in (0.1, 0.25, 0.75, 0.9)))
"""

SLICE_LENGTHS_US = (2000, 3000, 5000)
SLICE_LENGTHS_S = 8


def scenario_reconfig(out):
    d = Daemon(out, "reconfig", ["--period-us", "10000", "--quota-us", "2000"])
    hog = spawn_hog(0)
    time.sleep(3)
    (before,) = measure([hog.pid], 6)
    set_res = run_cmd([BIN, "set", "--quota-us", "5000"])
    time.sleep(1)
    (after,) = measure([hog.pid], 6)
    bad_set = run_cmd([BIN, "set", "--quota-us", "20000"])
    # Two `set` calls at once, each changing another tunable: both apply.
    both = [subprocess.Popen([BIN, "set", *a], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for a in (["--guard-ms", "250"], ["--slice-us", "4000"])]
    both_rc = [p.wait(120) for p in both]
    show_both = run_cmd([BIN, "show"])["stdout"]
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
        "concurrent_set_rc": both_rc,
        "show_after_concurrent_set": show_both,
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


# The guest's own stalls: in the kernel's RT class (SCHED_FIFO, above
# sched_ext, so no scheduling decision of ours delays it), sleep 5 ms
# again and again until SIGTERM; then print the longest time a wakeup came
# late, in s. What it reads is the emulator or the host not running the
# guest (or its timers firing late): time in which no wait in the guest
# can end, whatever the scheduler does. (It costs CPU time: 1.5 CPUs of
# a 2-CPU guest read 1.41 beside it, so no share is measured with it.)
STALL_PROBE = """
import os, signal, time
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
run, worst = [True], 0.0
signal.signal(signal.SIGTERM, lambda *_: run.clear())
while run:
    t0 = time.monotonic()
    time.sleep(0.005)
    worst = max(worst, time.monotonic() - t0 - 0.005)
print(round(worst, 4))
"""


# The windows steady() took a median of, for the test's report: label,
# then each window's values.
STEADY = []


def steady(label, what, windows=3):
    """The median of what() (CPU shares: a float, a list or a dict of
    them) over `windows` windows one after another, each value apart. A
    host that steals the emulator's CPU stops the guest unevenly: a hog
    stalled while it runs is counted as running, and a stall longer than a
    group's throttled part of a period takes quota it could not use. CI
    runs under 10-20% host steal read 18.9% and 20.9% for 20% limits that
    a quiet host measures at 19.96-20.02%; one window hit by a stall no
    longer decides. Every window is measured and reported: none is
    chosen or retried by its value. One window is just its value."""
    vals = [what() for _ in range(windows)]
    if windows > 1:
        STEADY.append([label] + vals)

    def median(xs):
        x0 = xs[0]
        if isinstance(x0, dict):
            return {k: median([x[k] for x in xs]) for k in x0}
        if isinstance(x0, list):
            return [median([x[i] for x in xs]) for i in range(len(x0))]
        return sorted(xs)[len(xs) // 2]

    return median(vals)


def scenario_guard_many(out):
    """Two FIFO hogs, one pinned per CPU, and many RR hogs: every RR hog
    must keep running, and the scheduler must not be ejected. Two views of
    each RR hog's longest stall: the scheduler's (its longest wait from
    runnable to running, MAX_WAIT in the stats table) and the hog's own (no
    progress of its loop, herd.py), which also counts time the emulator
    left the vCPU unrun."""
    res = {}
    for label, n, args in [("30 hogs, guard 1000 ms", 30, ["--guard-ms", "1000"]),
                           ("200 hogs, default guard", 200, [])]:
        probe = subprocess.Popen([PY, "-c", STALL_PROBE], stdout=subprocess.PIPE, text=True)
        d = Daemon(out, f"guard-{n}", args + ["--stats-interval", "5", "--top", "400"])
        # The herd first: a process that starts (reads files, blocks) behind
        # FIFO hogs waits up to the guard per block.
        # RCU grace periods over the same 25 s (gp_probe.py): they wait
        # for preempted readers and the grace-period kthread.
        gp_path = os.path.join(out, f"gp{n}.json")
        gp = subprocess.Popen([PY, GP_PROBE, "28", gp_path])
        wait_for_file(gp_path + ".ready")
        herd, pids, path = spawn_herd(n, out, f"herd{n}")
        fifo = [spawn_hog(-5, cpus=0), spawn_hog(-5, cpus=1)]
        gp.send_signal(signal.SIGUSR1)
        time.sleep(3)
        fifo_shares = measure([f.pid for f in fifo], 25)
        # A stats table (every 5 s) that covers the whole 25 s.
        time.sleep(5.5)
        state = sched_state()
        alive = d.proc.poll() is None
        kill_all([gp])
        # The FIFO hogs go before the herd is told to stop: behind them the
        # 30 hogs' exits (page faults, a file each in one directory, whose
        # lock a preempted hog holds for a guard period at a time) took
        # minutes at --guard-ms 1000 on a slower host (2026-11-27). Their
        # longest stall is recorded already; a hog that never ran then
        # shows one as long as the whole run.
        kill_all(fifo)
        seen = stop_herd(herd, path)
        # The scheduler's own record of every hog's longest wait (runnable
        # to running; MAX_WAIT is over the task's life), from the last
        # table that shows it. Read once the hogs are gone: behind the FIFO
        # hogs this process, an RR task too, ran about once per guard
        # period, and reading the tables and /proc took 2-2.5 minutes of
        # each case (2026-11-29).
        last, comms = {}, {}
        for row in all_stats_rows(d.stdout()):
            last[row["pid"]] = row["max_wait"]
            comms[row["pid"]] = row["comm"]
        waits = [last[p] for p in pids if p in last]
        # The kernel's own threads (workqueues, RCU's): the guard bounds
        # their waits apart, at 50 ms.
        kthread_waits = sorted(((w, comms[p]) for p, w in last.items() if is_kthread(p)),
                               reverse=True)
        rc = d.stop()
        probe.send_signal(signal.SIGTERM)
        stall = probe.communicate(timeout=60)[0].strip()
        gaps, never_ran = herd_stalls(seen)
        res[label] = {
            "reported": len(gaps),
            "max_stall_rr": max(gaps) if gaps else 99.0,
            "max_wait_sched": max(waits) if waits else 99.0,
            "waits_seen": len(waits),
            "kthread_waits": kthread_waits,
            "guest_stall": float(stall) if stall else 99.0,
            "rr_never_ran": never_ran,
            "fifo_shares": fifo_shares,
            "state_during": state, "daemon_alive": alive, "rc": rc,
            "totals": final_totals(d.stdout()), "stderr": d.stderr()[-3000:],
            "gp": json.loads(read(gp_path, "{}") or "{}"),
        }
    return res


def scenario_exec_thread(out):
    """exec from a non-leader thread under a per-task quota: the new image
    keeps the task's bucket; two at once each get the quota; at nice -5
    the new image is FIFO."""
    d = Daemon(out, "exec-thread", ["--period-us", "10000", "--quota-us", "2000", "--top", "50"])
    rr = [subprocess.Popen([PY, EXEC_THREAD]) for _ in range(2)]
    fifo = subprocess.Popen(["nice", "-n", "-5", PY, EXEC_THREAD])
    # Python starts slowly at 20% of a CPU: wait until all three exec'd.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and any(read(f"/proc/{p.pid}/comm") != "sh" for p in rr + [fifo]):
        time.sleep(0.5)
    time.sleep(2)
    comms = {p.pid: read(f"/proc/{p.pid}/comm") for p in rr + [fifo]}
    shares = measure([p.pid for p in rr + [fifo]], 8)
    time.sleep(1.5)
    rows = {p.pid: stats_rows(d.stdout(), p.pid) for p in rr + [fifo]}
    state = sched_state()
    kill_all(rr + [fifo])
    rc = d.stop()
    return {
        "comms": list(comms.values()),
        "rr_shares": shares[:2],
        "fifo_share": shares[2],
        "fifo_class": rows[fifo.pid][-1]["class"] if rows[fifo.pid] else None,
        "rr_classes": [rows[p.pid][-1]["class"] if rows[p.pid] else None for p in rr],
        "state_during": state, "rc": rc, "stderr": d.stderr()[-3000:],
    }


def scenario_fifo_order(out):
    """An older FIFO waiter must not be overtaken by a later FIFO waiter
    that is reniced and re-pinned while it waits, nor by 50 children
    forked by a FIFO task. B and C are gap-measuring hogs (hog.py): the end
    of the longest gap each saw is when it first ran after being woken."""
    d = Daemon(out, "fifo-order", ["--stats-interval", "2", "--top", "100"])
    gb, gc = os.path.join(out, "b-gap.json"), os.path.join(out, "c-gap.json")
    a = spawn_hog(0, cpus=1)
    keep0 = spawn_hog(0, cpus=0)
    b = spawn_hog(0, cpus=1, report=gb)
    c = spawn_hog(0, cpus=1, report=gc)
    wait_for_file(gb + ".ready")
    wait_for_file(gc + ".ready")
    time.sleep(1)
    # B and C stop; A (CPU 1) and another hog (CPU 0) become FIFO hogs that
    # hold both CPUs; B and C become FIFO while stopped.
    for p in (b, c):
        os.kill(p.pid, signal.SIGSTOP)
    run_cmd(["renice", "-n", "-5", "-p", str(a.pid), str(keep0.pid), str(b.pid), str(c.pid)])
    time.sleep(3)
    # B wakes first and waits behind A; C wakes later, then is reniced and
    # re-pinned while it waits (requeues).
    t_b = time.monotonic()
    os.kill(b.pid, signal.SIGCONT)
    time.sleep(0.3)
    os.kill(c.pid, signal.SIGCONT)
    run_cmd(["renice", "-n", "-6", "-p", str(c.pid)])
    run_cmd(["taskset", "-p", "-c", "0,1", str(c.pid)])
    # A FIFO task forks 50 children that move to CPU 1.
    forker = subprocess.Popen(["nice", "-n", "-5", PY, "-c",
                               "import os, time\n"
                               "for _ in range(50):\n"
                               "    if os.fork() == 0:\n"
                               "        os.sched_setaffinity(0, {1})\n"
                               "        while True: pass\n"
                               "time.sleep(3600)\n"])
    time.sleep(8)
    state = sched_state()
    # The scheduler's own record of B's longest wait, runnable to running.
    time.sleep(2.2)
    rows_b = stats_rows(d.stdout(), b.pid)
    run_cmd(["pkill", "-KILL", "-P", str(forker.pid)])
    kill_all([a, keep0, b, c, forker])
    rc = d.stop()
    rb = json.loads(read(gb, "{}") or "{}")
    rcj = json.loads(read(gc, "{}") or "{}")
    fb, fc = rb.get("max_gap_end"), rcj.get("max_gap_end")
    return {
        "b_wait": (fb - t_b) if fb else None,
        "b_before_c": bool(fb) and bool(fc) and fb <= fc,
        "c_wait": (fc - t_b) if fc else None,
        "b_gap": rb.get("second_gap_s", 99.0),
        "b_max_wait": rows_b[-1]["max_wait"] if rows_b else 99.0,
        "state_during": state, "rc": rc, "totals": final_totals(d.stdout()),
        "stderr": d.stderr()[-3000:],
    }


CPU1_ONLINE = "/sys/devices/system/cpu/cpu1/online"


def hotplug_steps(d, values, settle=0.0):
    """Write each of `values` ("0"/"1") to CPU 1's online file in turn; after
    each, wait (up to 120 s) until daemon `d` has attached once more
    (its "attached; reconfigure" lines) and sched_ext is enabled, then
    `settle` s. One dict per step: the value, whether it re-attached, the
    daemon alive, the state."""
    steps = []
    for val in values:
        want = d.stderr().count("attached; reconfigure") + 1
        with open(CPU1_ONLINE, "w") as f:
            f.write(val)
        ok, deadline = False, time.monotonic() + 120
        while time.monotonic() < deadline and d.proc.poll() is None:
            if d.stderr().count("attached; reconfigure") >= want and sched_state()[0] == "enabled":
                ok = True
                break
            time.sleep(0.2)
        steps.append({"online": val, "reattached": ok, "alive": d.proc.poll() is None,
                      "state": sched_state()})
        time.sleep(settle)
    return steps


def scenario_hotplug(out):
    """CPU 1 goes offline and back while the scheduler runs: the daemon
    re-attaches each time with the configuration set live."""
    d = Daemon(out, "hotplug", ["--period-us", "10000", "--quota-us", "5000", "--stats-interval", "0"])
    set_res = run_cmd([BIN, "set", "--quota-us", "3000"])
    hog = spawn_hog(0)
    time.sleep(1)
    res = {"set": set_res["rc"], "steps": hotplug_steps(d, ["0", "1"])}
    show = run_cmd([BIN, "show"])
    time.sleep(1)
    (share,) = measure([hog.pid], 4)
    kill_all([hog])
    res["show"] = show["stdout"]
    res["share_after"] = share
    res["rc"] = d.stop()
    res["stderr"] = d.stderr()[-4000:]
    return res


def thread_runs(pid):
    """{tid: times on a CPU} of every thread of `pid` (the third field of
    its schedstat: switch-ins, zero-length turns included)."""
    runs = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        f = read(f"/proc/{pid}/task/{tid}/schedstat", "")
        if f:
            runs[int(tid)] = int(f.split()[2])
    return runs


def scenario_hotplug_throttled(out):
    """CPU 1 offline and back twice while groups are throttled: 200
    runnable threads parked in a 1% cgroup (cpu.max), a hog in a
    `--cgroup` 20% group and one in a `cpu.max` 50% group, beside a FIFO
    hog (`spin 200`: 200 threads, the main one included). Each hotplug
    ejects the scheduler with parked tasks in its queues; the daemon must
    re-attach, both limits must hold after it (the command line's is the
    daemon's to re-apply, cpu.max the kernel's), and every parked thread
    must run again."""
    enable_cpu_controller()
    for rel in ("hpt_tiny", "hpt_cli", "hpt_max"):
        make_cgroup(rel)
    write_cg("hpt_max", "cpu.max", "50000 100000")
    d = Daemon(out, "hotplug-throttled", ["--cgroup", "hpt_cli=20000/100000", "--stats-interval", "5"])
    spin = subprocess.Popen(["sh", "-c", f"echo $$ > {CG}/hpt_tiny/cgroup.procs; exec {SPIN} 200"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(thread_runs(spin.pid)) < 200:
        time.sleep(0.5)
    write_cg("hpt_tiny", "cpu.max", "1000 100000")
    hogs = {"hpt_cli": spawn_hog(0), "hpt_max": spawn_hog(0)}
    for rel, h in hogs.items():
        move_to_cgroup(h.pid, rel)
    fifo = spawn_hog(-5)
    time.sleep(3)
    res = {"threads": len(thread_runs(spin.pid)),
           "steps": hotplug_steps(d, ["0", "1", "0", "1"], settle=3)}
    res["shares"] = dict(zip(hogs, measure([h.pid for h in hogs.values()], 10)))
    # Every parked thread runs again: a task parked 20 s gets a turn
    # anyway (PARK_FORCE_MS), and the window starts after the last attach.
    before = thread_runs(spin.pid)
    time.sleep(28)
    after = thread_runs(spin.pid)
    res["unrun"] = sorted(t for t in before if after.get(t, 0) <= before[t])
    res["state_end"] = sched_state()
    kill_all([spin, fifo, *hogs.values()])
    res["rc"] = d.stop()
    res["stderr"] = d.stderr()[-3000:]
    res["dmesg_sched_ext"] = sched_ext_log(20)
    return res


# stress-ng's stressors that change the scheduling of their own tasks
# all the time: nice (a move between the FIFO and RR classes here),
# policy (SCHED_OTHER, BATCH, IDLE, and the kernel's FIFO, RR and DEADLINE
# classes, so out of sched_ext and back), sched_yield(), and races of
# these with migrations; with futex, pthread and clone workers beside them.
CHURN_STRESSORS = ("resched", "race-sched", "schedpolicy", "yield")


def scenario_stress_smoke(out):
    """The community CI smoke test: stress-ng with the scheduler, which is
    then stopped with SIGTERM as `timeout --preserve-status` stops it;
    without and with a quota, then the same with stressors that churn
    their tasks' nice, policy and CPU under a quota (throttled tasks among
    them), and stress-ng's mutex stressor under a quota: SCHED_FIFO threads
    on every CPU, so sched_ext tasks run only by the kernel's ext server
    (50 ms a second per CPU), which stopped for good when it found only
    parked tasks (serve_starved(): ejected or wedged in 10 runs of 11 before
    2026-12-07). stress-ng starts once the scheduler is attached: a CI host
    took 61 s to verify and load the program, past a `timeout 45` that
    counted from the daemon's start (stop 58), so the time to attach is
    waited for (Daemon.wait_attached(), up to 180 s) and reported apart."""
    n = str(os.cpu_count())
    smoke = ["-c", n, "-f", n, "--affinity", "1", "--affinity-delay", "1", "--affinity-pin"]
    churn = [a for s in CHURN_STRESSORS + ("futex", "pthread", "clone") for a in (f"--{s}", n)]
    quota = ["--period-us", "10000", "--quota-us", "2000"]
    res = {}
    for label, args, stressors, check_ops in [
            ("default", [], smoke, []), ("quota 2000/10000", quota, smoke, []),
            ("policy churn, quota 2000/10000", quota, churn, list(CHURN_STRESSORS)),
            ("SCHED_FIFO mutex workers, quota 2000/10000", quota, ["--mutex", n], ["mutex"])]:
        sched_t0 = time.monotonic()
        # Waits for the attach (Daemon.wait_attached(): up to 180 s).
        d = Daemon(out, f"stress-{len(res)}", ["--stats-interval", "0", *args])
        attached = sched_state()[0] == "enabled"
        t0 = time.monotonic()
        stress = subprocess.Popen(["stress-ng", "-t", "31", "--aggressive", "-M", *stressors],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd="/tmp")
        # The kernel's state while stress-ng runs, sampled to its end (45 s
        # at most): an ejection shows as a state other than `enabled`.
        samples = []
        while stress.poll() is None and time.monotonic() - t0 < 45:
            samples.append([round(time.monotonic() - t0, 1), sched_state()[0]])
            time.sleep(0.5)
        samples.append([round(time.monotonic() - t0, 1), sched_state()[0]])
        stress_out = stress.communicate(timeout=300)[0]
        stress_s = time.monotonic() - t0
        # The stop `timeout` gives: SIGTERM, after which the daemon
        # detaches and exits 0 (an ejection would exit non-zero).
        rc = d.stop(signal.SIGTERM, timeout=120)
        err = d.stderr()
        res[label] = {"attached": attached, "stress_rc": stress.returncode,
                      "stress_s": stress_s, "attach_s": t0 - sched_t0,
                      "stress_out": stress_out,
                      "check_ops": check_ops,
                      "samples": samples,
                      "sched_rc": rc, "sched_stderr": err[-2000:]}
    return res


def scenario_storm(out):
    """10,000 short-lived processes and threads: no ejection, and the
    per-task state shrinks back when they are gone."""
    d = Daemon(out, "storm", ["--stats-interval", "1", "--top", "1"])
    time.sleep(2.5)
    t0 = time.monotonic()
    storm = run_cmd([STORM, "4000", "5000", "1000"], timeout=900)
    took = time.monotonic() - t0
    time.sleep(2.5)
    state = sched_state()
    rc = d.stop()
    counts = daemon_tasks_counts(d.stdout())
    return {"storm": storm, "seconds": took, "tasks_counts": counts,
            "state_during": state, "rc": rc, "stderr": d.stderr()[-2000:]}


def scenario_storm_limited(out):
    """A storm of short-lived tasks inside a group limited to 20% by
    cpu.max, beside a hog in the same group, so the group is out of quota
    most of the time: every fork lands in a throttled group, and tasks
    exit while their group is throttled (exiting tasks are never parked).
    The storm must complete, the group stay limited, the per-task state
    shrink back."""
    enable_cpu_controller()
    make_cgroup("storm_lim")
    write_cg("storm_lim", "cpu.max", "20000 100000")
    d = Daemon(out, "storm-limited", ["--stats-interval", "1", "--top", "1"])
    hog = spawn_hog(0)
    move_to_cgroup(hog.pid, "storm_lim")
    time.sleep(2.5)
    u0, t0 = cpu_stat_usage("storm_lim"), time.monotonic()
    storm = subprocess.run(["sh", "-c", f"echo $$ > {CG}/storm_lim/cgroup.procs; exec {STORM} 150 150 30"],
                           capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    share = (cpu_stat_usage("storm_lim") - u0) / (took * 1e6)
    kill_all([hog])
    time.sleep(2.5)
    state = sched_state()
    rc = d.stop()
    return {"storm": {"rc": storm.returncode, "stdout": storm.stdout}, "seconds": took,
            "share": share, "tasks_counts": daemon_tasks_counts(d.stdout()), "state_after": state,
            "rc": rc, "stderr": d.stderr()[-2000:],
            "dmesg_sched_ext": sched_ext_log(10)}


def narrow_affinity_shares():
    """12 hogs allowed on 6 CPUs of both LLCs (0-2 and 4-6, as a cpuset
    container or taskset may leave them), all started on CPU 0: their
    shares once the LLCs have balanced them (50% each when balanced; the
    idle CPUs alone take only 3 of them into the second LLC)."""
    hogs = [spawn_hog(0, cpus=0) for _ in range(12)]
    time.sleep(1)
    for h in hogs:
        os.sched_setaffinity(h.pid, {0, 1, 2, 4, 5, 6})
    # The LLC timers pull one task per run once the averages show the gap
    # (balanced within about 3 s here); a build that pulled only tasks of
    # the whole machine's affinity was still at 3 x 100% and 9 x 33% 5 s on.
    time.sleep(5)
    shares = measure([h.pid for h in hogs], 10)
    kill_all(hogs)
    return shares


def cpu_list(text):
    """The CPUs of a kernel CPU list such as "0-7,16"."""
    cpus = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def shares_then_kill(hogs, settle, seconds):
    """Each hog's share of one CPU over `seconds` after `settle` seconds;
    the hogs are ended."""
    time.sleep(settle)
    shares = measure([h.pid for h in hogs], seconds)
    kill_all(hogs)
    return shares


def pinned_pair_fracs(n):
    """A nice 0 and a nice 5 hog pinned to each of CPUs 0..n-1: the nice 0
    hog's part of each CPU over 20 s. Over 10 s on 32 vCPUs, two CPUs once
    read 71.7% and 81.6% while 30 read 74.6-75.7% (not traced; likely a
    vCPU the emulator left unrun, whose time the clock charges to the hog
    that was running)."""
    pairs = [(spawn_hog(0, cpus=c), spawn_hog(5, cpus=c)) for c in range(n)]
    time.sleep(4)
    flat = measure([p.pid for pr in pairs for p in pr], 20)
    kill_all([p for pr in pairs for p in pr])
    return [flat[2 * i] / max(flat[2 * i] + flat[2 * i + 1], 1e-9) for i in range(n)]


def wide_group(out, res, name, threads):
    """A cgroup "wide" with cpu.max 150000/100000 (1.5 CPUs) shared by
    `threads` busy threads under a daemon `name`: its CPUs, the daemon's
    exit status and final counters, and the state after, into `res`."""
    enable_cpu_controller()
    make_cgroup("wide")
    write_cg("wide", "cpu.max", "150000 100000")
    res["wide_cpus"], res["rc_cgroup"], res["wide_totals"] = group_under_daemon(out, name, [], "wide", threads, 20)
    res["state_after"] = sched_state()


def scenario_topology8(out):
    """8 vCPUs in 2 sockets (2 LLCs): equal shares for 16 hogs and for 12
    hogs of a narrower affinity, weights on every CPU, and the per-task
    quota for 8 hogs at once."""
    res = {"lscpu_llcs": read("/sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list"),
           "lscpu_llcs_cpu4": read("/sys/devices/system/cpu/cpu4/cache/index3/shared_cpu_list")}
    d = Daemon(out, "topo-equal", [])
    res["topology_log"] = [l for l in d.stderr().splitlines() if "topology" in l]
    # 10 s for the LLC timers to balance the hogs (one pull per run), then
    # 20 s: a vCPU the emulator leaves idle for a second or two shifts a
    # few hogs' shares by a third while it lasts (one 10 s window of the
    # build before read 41.2-56.8%, the next run 46.7-48.9%).
    res["equal_shares"] = shares_then_kill([spawn_hog(0) for _ in range(16)], 10, 20)
    # Balanced by weight: 6 nice 0 and 6 nice 5 hogs split 6 and 6 by
    # count, one LLC with 4 nice 0 hogs beside 2 nice 5 ones (84% each);
    # by weight both LLCs carry the same load and every nice 0 hog has a
    # CPU of its own.
    res["weighted_shares"] = shares_then_kill([spawn_hog(n) for n in [0] * 6 + [5] * 6], 6, 15)
    # RR hogs beside a FIFO hog on every CPU of LLC 0: its CPUs count as
    # taken, so the RR hogs share the other LLC's 4 CPUs evenly (50% each);
    # balanced by waiting tasks, two or three stayed behind the FIFO hogs
    # (35-65% each).
    # The FIFO hogs keep their CPUs but for the RR budget and the guard:
    # in some runs before 2026-12-07 one RR hog stayed in LLC 0 (its
    # capacity, averaged, never fell below 7/16 of a CPU) and took budget
    # turns on all four CPUs: the FIFO hogs kept 82% each.
    res["fifo_beside_rr_shares"], res["beside_fifo_shares"] = fifo_llc_beside_rr(8)
    res["narrow_shares"] = narrow_affinity_shares()
    res["pair_fracs"] = pinned_pair_fracs(8)
    res["rc_equal"] = d.stop()
    d = Daemon(out, "topo-quota", ["--period-us", "10000", "--quota-us", "2000"])
    res["quota_shares"] = shares_then_kill([spawn_hog(0) for _ in range(8)], 4, 10)
    # Pinned one per CPU: all CPUs of an LLC go idle while its hogs are
    # parked, so only the LLC's timer releases them (lost timers: 1-3 per
    # 14 s in bench/quota8.sh before timer_arm() restarted at every run).
    res["quota_pinned_shares"] = shares_then_kill([spawn_hog(0, cpus=c) for c in range(8)], 4, 10)
    res["rc_quota"] = d.stop()
    res["quota_totals"] = final_totals(d.stdout())
    # A cpu.max of 1.5 CPUs shared by 4 busy threads, spread over 2 LLCs.
    wide_group(out, res, "topo-cgroup", 4)
    return res


def llc0_cpus():
    """The CPUs of the first LLC (CPU 0's), by sysfs."""
    return cpu_list(read("/sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list", "0"))


def fifo_llc_beside_rr(nr_rr, warm=4, secs=12):
    """A nice -5 (FIFO) hog pinned on each CPU of the first LLC beside
    @nr_rr unpinned nice 0 hogs: (the FIFO hogs' shares, the RR hogs').
    Also run by bench/guest_bench.py (part fifollc)."""
    llc0 = llc0_cpus()
    hogs = [spawn_hog(-5, cpus=c) for c in llc0] + [spawn_hog(0) for _ in range(nr_rr)]
    got = shares_then_kill(hogs, warm, secs)
    return got[:len(llc0)], got[len(llc0):]


def scenario_topology_large(out):
    """All the vCPUs of a large VM (e.g. 32 in 4 LLCs of 8): the scheduler
    sees every LLC; 2 nice 0 hogs per CPU share evenly and fill the
    machine; a nice 0 / nice 5 pair pinned to every CPU splits by weight;
    one FIFO hog pinned per CPU of the first LLC beside 4 RR hogs per CPU
    (a herd that reports its own longest stall) never ejects the
    scheduler; one hog per CPU under a per-task quota; a cpu.max of 1.5
    CPUs shared by 8 busy threads."""
    n = os.cpu_count()
    res = {"cpus": n}
    # The same hogs under the kernel's default scheduler first: how much of
    # the vCPUs' time the emulator lets tasks have at this size.
    res["default_equal_shares"] = shares_then_kill([spawn_hog(0) for _ in range(2 * n)], 5, 20)
    d = Daemon(out, "large-equal", [])
    res["topology_log"] = [l for l in d.stderr().splitlines() if "topology" in l]
    res["equal_shares"] = shares_then_kill([spawn_hog(0) for _ in range(2 * n)], 10, 20)
    res["pair_fracs"] = pinned_pair_fracs(n)
    res["state_equal"] = sched_state()
    res["rc_equal"] = d.stop()

    d = Daemon(out, "large-guard", [])
    herd, pids, path = spawn_herd(4 * n, out, "large-herd")
    llc0 = llc0_cpus()
    fifo = [spawn_hog(-5, cpus=c) for c in llc0]
    time.sleep(3)
    res["fifo_shares"] = measure([f.pid for f in fifo], 20)
    res["state_guard"] = sched_state()
    kill_all(fifo)  # first, as in scenario_guard_many
    seen = stop_herd(herd, path)
    res["rc_guard"] = d.stop()
    res["herd_stalls"], res["herd_never_ran"] = herd_stalls(seen)
    res["herd_n"] = 4 * n

    d = Daemon(out, "large-quota", ["--period-us", "100000", "--quota-us", "20000"])
    # Over 20 s: a hog whose vCPU the emulator leaves unrun while it runs
    # is charged that time at once and pays it back over the next periods,
    # so a window that ends in such an overrun reads high (one of 32 hogs at
    # 23.2% over 10 s in one CI run; at most 20.9% over any 10 s of a 40 s
    # rerun, 19.8-20.2% over all of it).
    res["quota_shares"] = shares_then_kill([spawn_hog(0) for _ in range(n)], 4, 20)
    res["rc_quota"] = d.stop()
    res["quota_totals"] = final_totals(d.stdout())

    wide_group(out, res, "large-cgroup", 8)
    return res


CG = "/sys/fs/cgroup"


def make_cgroup(rel):
    path = os.path.join(CG, rel)
    os.makedirs(path, exist_ok=True)
    return path


def move_to_cgroup(pid, rel):
    with open(os.path.join(CG, rel, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def group_share(groups, seconds):
    """Share of one CPU each group of pids used together over `seconds`."""
    pids = [p for g in groups for p in g]
    shares = dict(zip(pids, measure(pids, seconds)))
    return [sum(shares[p] for p in g) for g in groups]


def group_under_daemon(out, name, args, rel, n, seconds, windows=1):
    """n nice 0 hogs in cgroup `rel` under a daemon started with `args`:
    (their share of one CPU together over `seconds`, the daemon's exit
    status, its final counters)."""
    d = Daemon(out, name, args)
    hogs = [spawn_hog(0) for _ in range(n)]
    for h in hogs:
        move_to_cgroup(h.pid, rel)
    time.sleep(3)
    share = steady(name, lambda: group_share([[h.pid for h in hogs]], seconds), windows)[0]
    kill_all(hogs)
    rc = d.stop()
    return share, rc, final_totals(d.stdout())


def scenario_cgroup_lost_timer(out):
    """A limited cgroup whose release timer is lost once every 3 s (a
    hidden test hook, as a parker stopped between its look at the deadline
    and its task landing on the group's queue could lose it): the
    once-a-second sweep must re-arm it. Without the sweep, its tasks
    stayed parked until the kernel's watchdog ejected the scheduler. One
    task: a second one's own park would re-arm a lost timer before the
    sweep looks, and the test could not tell the sweep worked."""
    enable_cpu_controller()
    make_cgroup("fq_lost")
    share, rc, totals = group_under_daemon(
        out, "cg-lost-timer", ["--cgroup", "fq_lost=2000/10000", "--test-lose-cg-timers"], "fq_lost", 1, 12)
    return {"share": share, "rc": rc, "totals": totals, "state_after": sched_state()}


def scenario_llc_lost_timer(out):
    """One hog pinned per CPU under --period-us 10000 --quota-us 2000, the
    LLC timer lost once every 2 s (a hidden hook). When every hog is
    parked every CPU is idle and none ticks, so only llc_sweep(), run from
    any CPU that starts a task (the daemon's thread wakes every second),
    finds the lost timer. Without it the hogs stayed parked until the
    kernel's watchdog ejected the scheduler (seen with a stable clock on
    8 vCPUs: 42 s)."""
    d = Daemon(out, "llc-lost-timer", ["--period-us", "10000", "--quota-us", "2000", "--test-lose-llc-timers"])
    hogs = [spawn_hog(0, cpus=c) for c in range(os.cpu_count())]
    time.sleep(3)
    shares = measure([h.pid for h in hogs], 12)
    state = sched_state()
    kill_all(hogs)
    rc = d.stop()
    return {"shares": shares, "rc": rc, "totals": final_totals(d.stdout()), "state_during": state}


def migrations(pid):
    """se.nr_migrations of `pid` from /proc/PID/sched (CPU changes)."""
    with open(f"/proc/{pid}/sched") as f:
        for line in f:
            if line.startswith("se.nr_migrations"):
                return int(line.split(":")[1])
    return 0


def scenario_release_home(out):
    """An unpinned hog under a 2000/10000 limit is throttled and released
    100 times a second with the other CPU idle: each release should put it
    back on the CPU it ran on (its cache), as CFS unthrottles on the same
    CPU. Per-task quota, then the same limit from a cgroup's cpu.max."""
    res = {}
    for kind in ("task", "cgroup"):
        if kind == "task":
            d = Daemon(out, "release-home-task", ["--period-us", "10000", "--quota-us", "2000"])
        else:
            enable_cpu_controller()
            make_cgroup("fq_home")
            write_cg("fq_home", "cpu.max", "2000 10000")
            d = Daemon(out, "release-home-cgroup", [])
        h = spawn_hog(0)
        if kind == "cgroup":
            move_to_cgroup(h.pid, "fq_home")
        time.sleep(2)
        m0 = migrations(h.pid)
        share = measure([h.pid], 6)[0]
        moved = migrations(h.pid) - m0
        kill_all([h])
        rc = d.stop()
        totals = final_totals(d.stdout())
        res[kind] = {"moved": moved, "share": share, "rc": rc,
                     "throttles": totals.get("throttles" if kind == "task" else "cg_throttles", 0)}
    return res


def cgroup_rows(stdout, path):
    """The daemon's `cgroup PATH ...` stats lines for `path`, as dicts."""
    rows = []
    for line in stdout.splitlines():
        f = line.split()
        if len(f) > 2 and f[0] == "cgroup" and f[1] == path:
            rows.append(dict(kv.split("=", 1) for kv in f[2:] if "=" in kv))
    return rows


def table_cgroup_rows(stdout):
    """Per stats table (each periodic one, then the final summary): its
    number of `cgroup ...` rows, and the number it said it left out."""
    tables = []
    for line in stdout.splitlines():
        if line.startswith(("[fairquota] t=", "[fairquota] final:")):
            tables.append([0, 0])
        elif tables and line.startswith("cgroup "):
            tables[-1][0] += 1
        elif tables and line.endswith(" more limited cgroups: --top-cgroups 0 shows all)"):
            tables[-1][1] = int(line[1:].split()[0])
    return tables


def scenario_cgroups(out):
    """Cgroup limits from --cgroup: shares of several groups at once (a
    docker-like nested path, a hierarchy), a live change with `set`, a
    limited cgroup removed while running; then a group above one CPU."""
    docker = "system.slice/docker-fq0123.scope"
    for rel in ["fq_a", docker, "fq_p/c1", "fq_p/c2", "fq_b"]:
        make_cgroup(rel)
    res = {}
    d = Daemon(out, "cgroups", ["--cgroup", "fq_a=2000/10000", "--cgroup", f"{docker}=20000/100000",
                                "--cgroup", "fq_p=3000/10000", "--cgroup", "fq_p/c1=5000/10000",
                                "--cgroup", "/sys/fs/cgroup/fq_p/c2=5000/10000"])
    groups = {"fq_a": [spawn_hog(0), spawn_hog(0)], docker: [spawn_hog(0)],
              "fq_p/c1": [spawn_hog(0)], "fq_p/c2": [spawn_hog(0)]}
    for rel, procs in groups.items():
        for p in procs:
            move_to_cgroup(p.pid, rel)
    time.sleep(3)
    names = list(groups)
    shares = steady("cgroups: 4 groups", lambda: group_share([[p.pid for p in groups[n]] for n in names], 10))
    res["shares"] = dict(zip(names, shares))
    res["set"] = run_cmd([BIN, "set", "--cgroup", "fq_a=5000/10000"])
    time.sleep(2)
    res["fq_a_after_set"] = steady("fq_a after set", lambda: group_share([[p.pid for p in groups["fq_a"]]], 6))[0]
    # Remove the docker-like group under load: its task leaves, the
    # directory goes; the daemon forgets the limit and keeps running.
    move_to_cgroup(groups[docker][0].pid, "")
    os.rmdir(os.path.join(CG, docker))
    time.sleep(3)
    res["state_after_rmdir"] = sched_state()
    procs = [p for g in groups.values() for p in g]
    kill_all(procs)
    res["rc"] = d.stop()
    res["stdout"] = d.stdout()
    res["stderr"] = d.stderr()
    res["rows_fq_a"] = cgroup_rows(res["stdout"], "fq_a")

    # The kernel's own cpu.max: set before the scheduler starts
    # (ops.cgroup_init), changed while it runs (ops.cgroup_set_bandwidth),
    # overridden by a command-line limit, lifted with "max".
    with open(os.path.join(CG, "cgroup.subtree_control"), "w") as f:
        f.write("+cpu")
    kdir = make_cgroup("fq_k")

    def cpu_max(v):
        with open(os.path.join(kdir, "cpu.max"), "w") as f:
            f.write(v)

    cpu_max("2000 10000")
    d = Daemon(out, "cgroups-kernel", [])
    hogs = [spawn_hog(0), spawn_hog(0)]
    for p in hogs:
        move_to_cgroup(p.pid, "fq_k")
    kernel = {}
    time.sleep(3)
    kernel["init 2000 10000"] = steady("cpu.max 2000 10000", lambda: group_share([[p.pid for p in hogs]], 6))[0]
    cpu_max("5000 10000")
    time.sleep(2)
    kernel["changed 5000 10000"] = steady("cpu.max 5000 10000", lambda: group_share([[p.pid for p in hogs]], 6))[0]
    kernel["set_rc"] = run_cmd([BIN, "set", "--cgroup", "fq_k=3000/10000"])["rc"]
    time.sleep(2)
    kernel["cli 3000/10000 over cpu.max"] = steady("cli 3000/10000 over cpu.max",
                                                   lambda: group_share([[p.pid for p in hogs]], 6))[0]
    run_cmd([BIN, "set", "--cgroup", "fq_k=max"])
    cpu_max("max 10000")
    time.sleep(2)
    kernel["max"] = group_share([[p.pid for p in hogs]], 6)[0]
    kill_all(hogs)
    kernel["rc"] = d.stop()
    kernel["rows"] = cgroup_rows(d.stdout(), "fq_k")
    res["kernel"] = kernel

    # Whole periods: the per-CPU slices are checked where the bucket has
    # room for them. Paced in 10 ms sub-periods, a busy group's tokens stay
    # under a sub-quota, and most charges take the lock (11% held).
    res["fq_b"], res["rc_multi"], res["fq_b_totals"] = group_under_daemon(
        out, "cgroups-multi", ["--cgroup", "fq_b=150000/100000", "--max-stall-us", "0"], "fq_b", 2, 10, 3)
    return res


def stopped(res, d):
    """`res` with the scheduler's state at the end, then daemon `d` stopped:
    its exit status, output, final counters and the kernel's sched_ext log."""
    res["state_end"] = sched_state()
    res["rc"] = d.stop()
    res["stdout"] = d.stdout()
    res["stderr"] = d.stderr()
    res["totals"] = final_totals(res["stdout"])
    res["dmesg_sched_ext"] = sched_ext_log(10)
    return res


def cgroup_gone(out, name, extra, emptied=0):
    """The cpu controller turned off above a group limited by its own
    cpu.max while its tasks are parked on its queue: the group leaves the
    controller (ops.cgroup_exit()) with its tasks still in it, unlimited
    from then on. A second group, limited by --cgroup, is looked at
    alongside: its limit does not depend on the controller. Then
    `emptied` more groups limited by cpu.max park a hog each, lose it and
    are removed. The daemon runs with `extra` arguments."""
    res = {}
    enable_cpu_controller()
    make_cgroup("fq_off/c")
    make_cgroup("fq_off/cli")
    write_cg("fq_off", "cgroup.subtree_control", "+cpu")
    write_cg("fq_off/c", "cpu.max", "2000 100000")
    d = Daemon(out, name, ["--cgroup", "fq_off/cli=10000/100000"] + extra)
    off = [spawn_hog(0) for _ in range(4)]
    cli = [spawn_hog(0) for _ in range(2)]
    for h in off:
        move_to_cgroup(h.pid, "fq_off/c")
    for h in cli:
        move_to_cgroup(h.pid, "fq_off/cli")
    time.sleep(3)
    res["limited"] = group_share([[h.pid for h in off], [h.pid for h in cli]], 5)
    write_cg("fq_off", "cgroup.subtree_control", "-cpu")
    time.sleep(3)
    res["state_after"] = sched_state()
    res["after"] = group_share([[h.pid for h in off], [h.pid for h in cli]], 5)
    kill_all(off + cli)
    if emptied:
        gone = [f"fq_gone{i}" for i in range(emptied)]
        hogs = []
        for rel in gone:
            make_cgroup(rel)
            write_cg(rel, "cpu.max", "2000 10000")
            hogs.append(spawn_hog(0))
            move_to_cgroup(hogs[-1].pid, rel)
        time.sleep(2)
        kill_all(hogs)
        time.sleep(0.5)
        for rel in gone:
            os.rmdir(os.path.join(CG, rel))
        time.sleep(3)
    return stopped(res, d)


def scenario_cgroup_gone(out):
    return cgroup_gone(out, "cgroup-gone", [])


def scenario_cgroup_gone_lost_start(out):
    """cgroup_gone with the hidden hook --test-lose-cg-timers, which fails
    every start of a release timer made as a group leaves the cpu
    controller (and loses one re-arm and one park's start every 3 s):
    the sweep must start those timers, for the parked tasks and for the
    3 removed groups with nothing parked, whose queues are then dropped."""
    return cgroup_gone(out, "cgroup-gone-lost-start", ["--test-lose-cg-timers"], emptied=3)


def group_threads(rel):
    """The number of threads in cgroup `rel` (its own, not its children's)."""
    return len(read(os.path.join(CG, rel, "cgroup.threads"), "").split())


def wait_threads(pid, n, secs=30):
    """Wait until process `pid` has `n` threads; return how many it has."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        have = len(os.listdir(f"/proc/{pid}/task"))
        if have >= n:
            return have
        time.sleep(0.05)
    return len(os.listdir(f"/proc/{pid}/task"))


def until_empty(rel, secs=40):
    """Seconds until cgroup `rel` holds no thread (None: not in `secs`)."""
    t0 = time.monotonic()
    while group_threads(rel):
        if time.monotonic() - t0 > secs:
            return None
        time.sleep(0.01)
    return round(time.monotonic() - t0, 3)


def scenario_killed_groups(out):
    """Throttled groups killed: their tasks die at once, not after the
    quota lets each run its exit. Group fqk_kern, limited by its own
    cpu.max 1000/1000000 (0.1% of a CPU), holds a 200-thread hog and 8
    single-thread hogs; fqk_cli, limited by --cgroup fqk_cli=1000/1000000,
    a 20-thread hog. All are started unlimited (so every thread exists),
    moved in, throttled for 4 s, then fqk_kern is emptied by cgroup.kill
    and the 20-thread hog gets SIGTERM (fatal: the kernel puts SIGKILL on
    each of its threads). Each group's time to hold no thread is measured
    from the kernel's own cgroup.threads. Before note_killed() this took
    10-30 s (each parked thread waited for tokens, or PARK_FORCE_MS), as
    under CFS bandwidth control (13-30 s, bench/kill-limited-report.md)."""
    res = {}
    enable_cpu_controller()
    make_cgroup("fqk_kern")
    make_cgroup("fqk_cli")
    d = Daemon(out, "killed-groups", ["--cgroup", "fqk_cli=1000/1000000"])
    big = subprocess.Popen([SPIN, "200"])
    singles = [subprocess.Popen([SPIN, "1"]) for _ in range(8)]
    term = subprocess.Popen([SPIN, "20"])
    res["threads_started"] = [wait_threads(big.pid, 200), wait_threads(term.pid, 20)]
    for p in [big] + singles:
        move_to_cgroup(p.pid, "fqk_kern")
    move_to_cgroup(term.pid, "fqk_cli")
    write_cg("fqk_kern", "cpu.max", "1000 1000000")
    time.sleep(2)
    res["share"] = group_share([[big.pid] + [p.pid for p in singles], [term.pid]], 2)
    res["threads"] = [group_threads("fqk_kern"), group_threads("fqk_cli")]
    res["state_during"] = sched_state()
    write_cg("fqk_kern", "cgroup.kill", "1")
    res["kill_s"] = until_empty("fqk_kern")
    term.send_signal(signal.SIGTERM)
    res["term_s"] = until_empty("fqk_cli")
    res["state_after"] = sched_state()
    for p in [big, term] + singles:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    time.sleep(1)
    return stopped(res, d)


def scenario_limits_lifted(out):
    """A limit lifted or loosened while its tasks are parked lets them go at
    once, not at the release time the old limit gave them. Three groups of
    a 20-thread hog, each throttled at 1000/1000000 (0.1% of a CPU) for
    3 s: fql_kern's cpu.max is then set to max, fql_loose's to 500000
    1000000, and fql_cli's --cgroup limit lifted by `set --cgroup
    fql_cli=max`. Each thread's first switch-in after the change is read
    from the kernel's sched_switch events, with the hog's share over the
    next second. The first thread runs at once; the last when the others
    have caught up with the CPU time it had before (fair order: 0.04-0.37
    s). Before (2026-12-07) the parked threads waited for the group's next
    release, which at 1000/1000000 comes every 0.5 s (smooth mode) or 1 s:
    0.38-1.97 s in scratch runs."""
    res = {"lifts": []}
    enable_cpu_controller()
    for rel in ("fql_kern", "fql_loose", "fql_cli"):
        make_cgroup(rel)
    d = Daemon(out, "limits-lifted", ["--cgroup", "fql_cli=1000/1000000"])
    for rel, how in (("fql_kern", "cpu.max max"), ("fql_loose", "cpu.max 500000 1000000"),
                     ("fql_cli", "set --cgroup fql_cli=max")):
        if rel != "fql_cli":
            write_cg(rel, "cpu.max", "1000 1000000")
        hog = subprocess.Popen([SPIN, "20"])
        threads = wait_threads(hog.pid, 20)
        move_to_cgroup(hog.pid, rel)
        time.sleep(3)
        tids = [int(t) for t in os.listdir(f"/proc/{hog.pid}/task")]
        clock = SwitchClock(tids)
        clock.start()
        t0 = time.monotonic()
        if rel == "fql_cli":
            set_rc = run_cmd([BIN, "set", "--cgroup", "fql_cli=max"])["rc"]
        else:
            set_rc = 0
            write_cg(rel, "cpu.max", how.split(None, 1)[1])
        act = round(time.monotonic() - t0, 3)
        time.sleep(1)
        spans = clock.stop()
        ran = [f for f in first_runs(clock.text, tids) if f is not None]
        res["lifts"].append({
            "how": how, "threads": threads, "act_s": act, "set_rc": set_rc,
            "ran": len(ran),
            "first_min_s": min(ran) if ran else None,
            "first_max_s": max(ran) if ran else None,
            "share": round(sum(c for c, _ in spans) / spans[0][1], 3),
        })
        hog.kill()
        hog.wait()
    res["state_after"] = sched_state()
    return stopped(res, d)


def scenario_quota_changed(out):
    """A limit raised while its tasks are parked lets them go at once, with
    a fresh quota, as a cpu.max write does under CFS; in whole periods
    (`--max-stall-us 0`), where a parked task's release under the old limit
    could be a second away. Under `--period-us 1000000 --quota-us 1000`:
    (1) an 8-thread hog at nice 0 (0.1% of a CPU per thread), parked for
    3 s, then `set --quota-us 100000` (8 fresh quotas of 100 ms: 0.8 of a
    CPU over the next second); (2) with the per-task quota lifted (`set
    --no-quota`), two cgroups at cpu.max 1000 1000000, each with a 4-thread
    hog at nice 0, one pinned to each CPU (so that neither waits its fair
    turn behind the other), started 0.5 s apart, so their periods are half
    a second apart, then both cpu.max raised to 400000 1000000 (0.4 of a
    CPU each). Each thread's first switch-in after the change is read from
    the kernel's sched_switch events, with each hog's CPU over the next
    second (a group's threads, released at once, run in their fair order).
    This script runs at nice -1 (FIFO: 1 ms a second would not run it).
    Before (2026-12-08) each waited for its release under the old limit,
    spread over the next second, and at most one of the two groups' came
    within 0.1 s."""
    os.setpriority(os.PRIO_PROCESS, 0, -1)
    enable_cpu_controller()
    # Started before the scheduler, whose quota would hold its thread
    # creation to 1 ms a second.
    hog = subprocess.Popen([SPIN, "8"], preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, 0))
    wait_threads(hog.pid, 8)
    d = Daemon(out, "quota-changed", ["--period-us", "1000000", "--quota-us", "1000",
                                      "--max-stall-us", "0"])
    res = {"lifts": []}

    def lift(how, hogs, change):
        tids = {n: [int(t) for t in os.listdir(f"/proc/{h.pid}/task")] for n, h in hogs}
        every = [t for ts in tids.values() for t in ts]
        clock = SwitchClock(every)
        clock.start()
        t0 = time.monotonic()
        rc = change()
        act = round(time.monotonic() - t0, 3)
        time.sleep(1)
        spans = dict(zip(every, clock.stop()))
        with open(os.path.join(out, f"quota-changed-{len(res['lifts'])}.trace"), "w") as f:
            f.write(clock.text)
        first = dict(zip(every, first_runs(clock.text, every)))
        for n, h in hogs:
            ran = [first[t] for t in tids[n] if first[t] is not None]
            res["lifts"].append({
                "how": how, "hog": n, "threads": len(tids[n]), "act_s": act, "rc": rc,
                "ran": len(ran), "first_min_s": min(ran) if ran else None,
                "first_max_s": max(ran) if ran else None,
                "firsts": sorted(ran),
                "share": round(sum(spans[t][0] for t in tids[n]) / spans[every[0]][1], 3),
            })
            h.kill()
            h.wait()

    time.sleep(3)
    lift("set --quota-us 100000", [("nice 0", hog)],
         lambda: run_cmd([BIN, "set", "--quota-us", "100000"])["rc"])
    res["no_quota_rc"] = run_cmd([BIN, "set", "--no-quota"])["rc"]
    hogs = []
    for cpu, rel in enumerate(("fql_whole_a", "fql_whole_b")):
        make_cgroup(rel)
        join = joiner(rel)

        def start(join=join, cpu=cpu):
            join()
            os.setpriority(os.PRIO_PROCESS, 0, 0)
            os.sched_setaffinity(0, {cpu})
        hogs.append((rel, subprocess.Popen([SPIN, "4"], preexec_fn=start)))
        wait_threads(hogs[-1][1].pid, 4)
        write_cg(rel, "cpu.max", "1000 1000000")
        time.sleep(0.5)
    time.sleep(2.5)

    def raise_both():
        for rel, _ in hogs:
            write_cg(rel, "cpu.max", "400000 1000000")
        return 0
    lift("cpu.max 400000 1000000", hogs, raise_both)
    res["state_after"] = sched_state()
    return stopped(res, d)


def enable_cpu_controller():
    with open(os.path.join(CG, "cgroup.subtree_control"), "w") as f:
        f.write("+cpu")


def write_cg(rel, name, value):
    with open(os.path.join(CG, rel, name), "w") as f:
        f.write(value)


def last_row(stdout, path):
    rows = cgroup_rows(stdout, path)
    return rows[-1] if rows else {}


def usage_at(stdout, path):
    """(daemon seconds, usage_usec) of the last periodic stats row of
    cgroup `path` in `stdout`, or None."""
    t, last = None, None
    for line in stdout.splitlines():
        if line.startswith("[fairquota] t="):
            t = float(line.split()[1][2:].rstrip("s"))
        elif t is not None:
            row = cgroup_rows(line, path)
            if row and "usage_usec" in row[0]:
                last = (t, int(row[0]["usage_usec"]))
    return last


def usage_share(before, after, path):
    """The share of cgroup `path` by the scheduler's own charging, between
    its last stats rows in two snapshots of the daemon's stdout (every
    --stats-interval): beside a share measured from sched_switch events, it
    tells a charging that disagrees with the kernel's switches from a
    group that was given less."""
    a, b = usage_at(before, path), usage_at(after, path)
    if not a or not b or b[0] <= a[0]:
        return None
    return (b[1] - a[1]) / 1e6 / (b[0] - a[0])


def steady_charged(label, what, daemon, groups):
    """steady(label, what) for cgroup shares, with its windows and what
    the scheduler charged each of `groups` ({pair: cgroup path}) over
    them (usage_share()): (median, windows, {pair: charged share})."""
    before = daemon.stdout()
    median = steady(label, what)
    after = daemon.stdout()
    return median, STEADY[-1][1:], {pair: usage_share(before, after, path)
                                     for pair, path in groups.items()}


# The exactness pairs of issue 6 (quota us, period us, busy threads).
PAIRS = [(1000, 10000, 1), (2000, 10000, 1), (20000, 100000, 1), (200000, 1000000, 1),
         (50000, 100000, 1), (150000, 100000, 2)]


def wait_throttled(pids, quiet_s=0.05, timeout=5.0):
    """Wait until the CPU time of `pids` stops growing for `quiet_s`: their
    group is throttled. A measurement of a whole number of periods that
    starts there also ends in the throttled part of a period (it is 80% of
    a 200000/1000000 period), so it counts whole bursts: a window that
    starts anywhere can cut one burst (200 ms in 12 s: up to 1.7%)."""
    deadline = time.monotonic() + timeout
    last, since = sum(cpu_ns(p) for p in pids), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.01)
        cur = sum(cpu_ns(p) for p in pids)
        if cur != last:
            last, since = cur, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return True
    return False


def shares_of(pairs, hogs, seconds, whole_periods=False):
    """Each group's share over `seconds`; with a 1 s period among them,
    the window starts while that group is throttled (see wait_throttled).
    With `whole_periods` (limits enforced in whole periods), the CPU time
    of a group with a 1 s period is divided by the whole periods in the
    window, not by its wall time: the window starts and ends in the
    throttled 80% of a period, so it holds whole bursts, and a read that
    comes late only adds throttled time (a CI run under steal read 19.73%
    for 20.00%, as 12 bursts over 12.16 s would)."""
    names = [f"{q}/{p}" for q, p, _ in pairs]
    long = [h.pid for q, p, _ in pairs if p >= 1_000_000 for h in hogs[f"{q}/{p}"]]
    if long:
        wait_throttled(long)
    groups = {name: [h.pid for h in hogs[name]] for name in names}
    pids = [pid for g in groups.values() for pid in g]
    spans = dict(zip(pids, measure(pids, seconds, raw=True)))

    def share(pid, period_us):
        cpu, wall = spans[pid]
        if whole_periods and period_us >= 1_000_000:
            wall = max(round(wall * 1e6 / period_us), 1) * period_us / 1e6
        return cpu / wall

    return {name: sum(share(pid, p) for pid in groups[name])
            for (_, p, _), name in zip(pairs, names)}


def start_group_hogs(pairs, prefix):
    hogs = {}
    for q, p, n in pairs:
        rel = f"{prefix}_{q}_{p}"
        make_cgroup(rel)
        hogs[f"{q}/{p}"] = [spawn_hog(0) for _ in range(n)]
        for h in hogs[f"{q}/{p}"]:
            move_to_cgroup(h.pid, rel)
    return hogs


# Sleeps argv[2] s, then computes argv[1] s of CPU time, argv[3] times;
# prints how long each computation took (wall clock, s).
BURSTY = """
import sys, time
work, gap, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
took = []
for _ in range(n):
    time.sleep(gap)
    t0, c0 = time.monotonic(), time.process_time()
    while time.process_time() - c0 < work:
        pass
    took.append(time.monotonic() - t0)
print(" ".join(f"{x:.6f}" for x in took))
"""


# Wakeup-driven work, forever: argv[1] s of CPU time, then a sleep of
# argv[2] s (a server's turn per request, which blocks between them).
SERVER = """
import sys, time
work, gap = float(sys.argv[1]), float(sys.argv[2])
while True:
    c0 = time.process_time()
    while time.process_time() - c0 < work:
        pass
    time.sleep(gap)
"""


def joiner(rel):
    """A preexec_fn that moves the new process into cgroup `rel`."""
    procs = os.path.join(CG, rel, "cgroup.procs")

    def join():
        with open(procs, "w") as f:
            f.write("0")
    return join


def spawn_in_cgroup(rel, script, *args):
    """Start `script` (Python source) with `args` in cgroup `rel`."""
    return subprocess.Popen([PY, "-c", script] + [str(a) for a in args], preexec_fn=joiner(rel))


def run_bursty(rel, work_ms, gap_ms, n):
    """Run BURSTY in cgroup `rel`: n jobs of work_ms CPU time, each after
    gap_ms of sleep. Return how long each took (ms)."""
    r = subprocess.run([PY, "-c", BURSTY, str(work_ms / 1000), str(gap_ms / 1000), str(n)],
                       preexec_fn=joiner(rel), capture_output=True, text=True, timeout=300)
    return [float(x) * 1000 for x in r.stdout.split()]


def scenario_cgroup_exact(out):
    """Every (Q,P) pair of the issue, from --cgroup and from cpu.max, each
    measured over 12 s (>= 10 periods of the longest); cpu.max.burst after
    an idle stretch; smooth mode on a 1 s period."""
    global KEEP_TRACES
    KEEP_TRACES = out
    enable_cpu_controller()
    res = {}
    single = [x for x in PAIRS if x[2] == 1]
    multi = [x for x in PAIRS if x[2] > 1]
    # --cgroup: the single-CPU pairs at once (1.2 CPUs in all), then the
    # two-CPU one alone.
    cli = [x for x in single if (x[0], x[1]) not in [(2000, 10000), (20000, 100000)]]
    args = []
    for q, p, _ in cli:
        make_cgroup(f"fqx_cli_{q}_{p}")
        args += ["--cgroup", f"fqx_cli_{q}_{p}={q}/{p}"]
    # And wakeup-driven work under a quota shorter than half a tick: turns
    # of 0.3 ms CPU, each ended by a 0.1 ms sleep, at 1000/10000. A turn
    # after a block is left to its own block and the tick, and its overrun
    # is charged (arm_slice_timer()). Measured alone, once the hogs are
    # gone (why: test_cgroup_limits_exact, bench/switch-gap-report.md).
    make_cgroup("fqx_wake")
    args += ["--cgroup", "fqx_wake=1000/10000"]
    # Beside them a group with cpu.max.burst that was idle, then busy
    # (cpu.max applies wherever no command-line limit replaces it).
    make_cgroup("fqx_burst")
    write_cg("fqx_burst", "cpu.max", "20000 100000")
    write_cg("fqx_burst", "cpu.max.burst", "20000")
    # Whole periods here (smoothing is on by default): the burst as cgroup
    # v2 defines it, and the stretch of a throttled 1 s period.
    d = Daemon(out, "exact-cli", args + ["--stats-interval", "2", "--max-stall-us", "0"])
    hogs = start_group_hogs(cli, "fqx_cli")
    # The burst group: a shell that runs a moment (the group's bucket
    # starts), sleeps 2 s (20 idle periods: the burst is saved), then spins.
    burst = subprocess.Popen(["sh", "-c", f"echo $$ > {CG}/fqx_burst/cgroup.procs; sleep 2; "
                              "exec sh -c 'while :; do :; done'"])
    time.sleep(3)
    res["cli"], res["cli_windows"], res["cli_charged"] = steady_charged(
        "exact: --cgroup pairs", lambda: shares_of(cli, hogs, 12, whole_periods=True), d,
        {f"{q}/{p}": f"fqx_cli_{q}_{p}" for q, p, _ in cli})
    res["burst_share"] = group_share([[burst.pid]], 6)[0]
    kill_all([h for v in hogs.values() for h in v] + [burst])
    wake = spawn_in_cgroup("fqx_wake", SERVER, 0.0003, 0.0001)
    time.sleep(2)
    res["wake_share"], res["wake_windows"], res["wake_charged"] = steady_charged(
        "exact: wakeup-driven 1000/10000", lambda: measure([wake.pid], 8)[0], d, {"wake": "fqx_wake"})
    kill_all([wake])
    res["rc_cli"] = d.stop()
    res["strict_1s_row"] = last_row(d.stdout(), "fqx_cli_200000_1000000")
    res["burst_row"] = last_row(d.stdout(), "fqx_burst")

    # cpu.max: every pair, written before the scheduler starts, under the
    # default smoothing (10 ms sub-periods for the longer periods).
    for q, p, _ in PAIRS:
        make_cgroup(f"fqx_k_{q}_{p}")
        write_cg(f"fqx_k_{q}_{p}", "cpu.max", f"{q} {p}")
    d = Daemon(out, "exact-kernel", ["--stats-interval", "2"])
    hogs = start_group_hogs(single, "fqx_k")
    time.sleep(3)
    res["kernel"], res["kernel_windows"], res["kernel_charged"] = steady_charged(
        "exact: cpu.max pairs", lambda: shares_of(single, hogs, 12), d,
        {f"{q}/{p}": f"fqx_k_{q}_{p}" for q, p, _ in single})
    kill_all([h for v in hogs.values() for h in v])
    hogs = start_group_hogs(multi, "fqx_k")
    time.sleep(3)
    res["kernel"].update(steady("exact: cpu.max, 2 CPUs", lambda: shares_of(multi, hogs, 8)))
    kill_all([h for v in hogs.values() for h in v])
    time.sleep(2.5)
    res["rc_kernel"] = d.stop()
    res["noburst_row"] = last_row(d.stdout(), "fqx_k_20000_100000")

    # Smooth mode: the 1 s period enforced over 10 ms sub-periods, for a
    # cgroup limit and for the per-task quota (a hog outside the group),
    # each hog measured alone, the group's first. Measured side by side,
    # one hog per vCPU, a CI run (2026-12-07) read the group at
    # 19.53/19.64/19.76% while the scheduler charged it 20.04% by its own
    # clock and the task hog beside it read 30.00%; that run's trace had
    # both hogs' releases at the same instants (0-1 ms of every 10 ms).
    # Under single-threaded TCG the two vCPUs take turns on one host
    # thread, so a switch on one vCPU can be held between the scheduler's
    # sched_switch probe and ftrace's while the other vCPU runs: that
    # stretch is the hog's to the scheduler and idle's to the trace (the
    # likeliest reading; not reproduced here). Eight local runs side by
    # side, two with the host loaded, had medians of 19.98-20.05%. Alone,
    # a hog's switches have no second release to collide with.
    make_cgroup("fqx_smooth")
    d = Daemon(out, "exact-smooth", ["--max-stall-us", "10000",
                                     "--cgroup", "fqx_smooth=200000/1000000",
                                     "--period-us", "1000000", "--quota-us", "300000"])
    t0 = time.monotonic()
    h = spawn_hog(0)
    move_to_cgroup(h.pid, "fqx_smooth")
    time.sleep(3)
    res["smooth_share"], res["smooth_windows"], res["smooth_charged"] = steady_charged(
        "smooth 10 ms: 200000/1000000 group", lambda: measure([h.pid], 10)[0], d,
        {"group": "fqx_smooth"})
    kill_all([h])
    res["smooth_run_s"] = time.monotonic() - t0
    t = spawn_hog(0)
    time.sleep(3)
    res["smooth_task_share"] = steady("smooth 10 ms: 300000/1000000 task",
                                      lambda: measure([t.pid], 10)[0])
    kill_all([t])
    res["rc_smooth"] = d.stop()
    res["smooth_row"] = last_row(d.stdout(), "fqx_smooth")
    res["smooth_totals"] = final_totals(d.stdout())
    res["smooth_show"] = d.stderr()[:3000]

    # Fine sub-periods: 2000/10000 over 2.5 ms (0.5 ms a turn), one hog
    # pinned to CPU 1 with nothing else there, so the slice timer that ends
    # each turn comes on time. A turn the timer ends is judged on the
    # runtime since the last tick too (charge_lagging()): renewed on the
    # kernel's lagging clock, it ran on to the next tick (12 ms stretches).
    make_cgroup("fqx_fine")
    d = Daemon(out, "exact-fine", ["--max-stall-us", "2000",
                                   "--cgroup", "fqx_fine=2000/10000"])
    h = spawn_hog(0, cpus="1")
    move_to_cgroup(h.pid, "fqx_fine")
    time.sleep(3)
    res["fine_share"] = steady("exact: smooth 2 ms", lambda: measure([h.pid], 8))[0]
    kill_all([h])
    res["rc_fine"] = d.stop()
    res["fine_row"] = last_row(d.stdout(), "fqx_fine")
    res["fine_totals"] = final_totals(d.stdout())

    # A bursty job under smooth mode: 10 ms of CPU after each 100 ms of
    # sleep, in a 20000/100000 group paced over 5 ms (1 ms a sub-period).
    # The sub-periods it sleeps through save up to half a quota (bw_smooth()),
    # so each job runs through as in a whole period.
    make_cgroup("fqx_bursty")
    d = Daemon(out, "exact-bursty", ["--max-stall-us", "5000",
                                     "--cgroup", "fqx_bursty=20000/100000"])
    res["bursty_took"] = run_bursty("fqx_bursty", 10, 100, 30)
    res["rc_bursty"] = d.stop()
    return res


def cpu_stat_usage(rel):
    """usage_usec of cgroup `rel`'s cpu.stat."""
    for line in read(os.path.join(CG, rel, "cpu.stat")).splitlines():
        k, _, v = line.partition(" ")
        if k == "usage_usec":
            return int(v)
    return 0


def scenario_cgroup_scale(out):
    """2,500 cgroups with the cpu controller, 4 of them limited (2 by
    cpu.max, 2 by --cgroup); 1,000 cgroups created and removed under load,
    every 10th with a cpu.max; then 1,000 threads in one 1% cgroup for 60 s."""
    enable_cpu_controller()
    make_cgroup("fqs")
    write_cg("fqs", "cgroup.subtree_control", "+cpu")
    t0 = time.monotonic()
    for i in range(2500):
        make_cgroup(f"fqs/g{i}")
    res = {"mkdir_2500_s": time.monotonic() - t0}
    write_cg("fqs/g10", "cpu.max", "20000 100000")
    write_cg("fqs/g2000", "cpu.max", "10000 100000")
    d = Daemon(out, "scale", ["--cgroup", "fqs/g500=20000/100000",
                              "--cgroup", "fqs/g2499=30000/100000", "--stats-interval", "5"])
    want = {"fqs/g10": 0.2, "fqs/g2000": 0.1, "fqs/g500": 0.2, "fqs/g2499": 0.3}
    hogs = {}
    for rel in want:
        hogs[rel] = [spawn_hog(0)]
        move_to_cgroup(hogs[rel][0].pid, rel)
    time.sleep(3)
    # 20 s: a window that starts and ends anywhere in a 100 ms period can
    # cut one quota's burst, up to period/window of the share (1.25% over
    # 8 s: g2000 measured 10.1%, over 1% rel, in a run; 0.5% over 20 s).
    got = group_share([[h.pid for h in hogs[r]] for r in want], 20)
    res["shares"] = {r: [s, want[r]] for r, s in zip(want, got)}
    # Churn under that load: create, limit every 10th, remove.
    t0 = time.monotonic()
    for i in range(1000):
        rel = f"fqs/churn{i}"
        make_cgroup(rel)
        if i % 10 == 0:
            write_cg(rel, "cpu.max", "5000 100000")
        if i % 50 == 0:
            pid = spawn_hog(0)
            move_to_cgroup(pid.pid, rel)
            kill_all([pid])
        os.rmdir(os.path.join(CG, rel))
    res["churn_s"] = time.monotonic() - t0
    res["state_after_churn"] = sched_state()
    # More finite cpu.max than the map holds (4,096, with g10 and g2000):
    # the ones past it are refused, counted and reported, never dropped
    # silently; the scheduler and the limits it holds go on.
    extra = [f"fqs/x{i}" for i in range(1600)]
    for rel in extra:
        make_cgroup(rel)
    more = [f"fqs/g{i}" for i in range(2500) if i not in (10, 2000)] + extra
    t0 = time.monotonic()
    for rel in more:
        write_cg(rel, "cpu.max", "50000 100000")
    res["limit_4100_s"] = time.monotonic() - t0
    time.sleep(3)
    res["full_share"] = group_share([[h.pid for h in hogs[r]] for r in ("fqs/g10", "fqs/g500")], 8)
    res["state_full"] = sched_state()
    for rel in more:
        write_cg(rel, "cpu.max", "max")
    for rel in extra:
        os.rmdir(os.path.join(CG, rel))
    kill_all([h for v in hogs.values() for h in v])
    # 1,000 runnable threads in one group (created while running), then
    # limited to 1% live (at 1% the threads would take minutes to start).
    make_cgroup("fqs_one")
    spin = subprocess.Popen(["sh", "-c", f"echo $$ > {CG}/fqs_one/cgroup.procs; exec {SPIN} 1000"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        res["threads"] = len(os.listdir(f"/proc/{spin.pid}/task"))
        if res["threads"] >= 1000:
            break
        time.sleep(0.5)
    if res["threads"] < 1000:
        # Where the process waits (for the report of a failure).
        res["spin_wait"] = {"wchan": open(f"/proc/{spin.pid}/wchan").read(),
                            "stat": open(f"/proc/{spin.pid}/stat").read(),
                            "stack": open(f"/proc/{spin.pid}/stack").read()}
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("w")
        time.sleep(1)
        res["spin_wait"]["blocked"] = run_cmd(["dmesg"])["stdout"].splitlines()[-150:]
    write_cg("fqs_one", "cpu.max", "1000 100000")
    time.sleep(2)
    u0, t0 = cpu_stat_usage("fqs_one"), time.monotonic()
    states = []
    while time.monotonic() - t0 < 60:
        states.append(sched_state()[0])
        time.sleep(1)
    res["one_pct_share"] = (cpu_stat_usage("fqs_one") - u0) / ((time.monotonic() - t0) * 1e6)
    res["states_60s"] = sorted(set(states))
    res["samples"] = len(states)
    spin.kill()
    spin.wait()
    res["rc"] = d.stop()
    res["rows_one"] = cgroup_rows(d.stdout(), "fqs_one")[-1:]
    res["tables"] = table_cgroup_rows(d.stdout())
    res["totals"] = final_totals(d.stdout())
    res["full_warnings"] = [l for l in d.stderr().splitlines() if "cgroup limits not enforced" in l]
    res["stderr"] = d.stderr()[-2000:]
    return res


UNIT = os.path.join(REPO, "dist/scx_fairquota.service")
DEFAULTS = os.path.join(REPO, "dist/scx_fairquota.default")


def unit_settings(path):
    """The [Service] keys of a unit file (last value wins, as in systemd)."""
    keys, section = {}, None
    for line in open(path):
        line = line.strip()
        if line.startswith("["):
            section = line
        elif line and not line.startswith("#") and "=" in line and section == "[Service]":
            k, v = line.split("=", 1)
            keys[k] = v
    return keys


def unit_command(keys, env_file):
    """ExecStart as systemd runs it: $VAR from the EnvironmentFile,
    split on whitespace; the binary is the one under test."""
    flags = subprocess.run(["bash", "-c", 'set -a; . "$1"; printf %s "$SCX_FAIRQUOTA_FLAGS"', "-", env_file],
                           capture_output=True, text=True, check=True).stdout
    argv = keys["ExecStart"].split()
    if argv[1:] != ["$SCX_FAIRQUOTA_FLAGS"]:
        raise ScenarioError(f"unexpected ExecStart: {keys['ExecStart']}")
    return flags.split()


def caps_prefix(caps, limit_nice=None):
    """Run as root with only `caps` (capability names as in the unit) and
    the unit's LimitNICE= (a nice level such as -20, or a raw rlimit)."""
    names = ",".join("+" + c.lower().removeprefix("cap_") for c in caps)
    pre = []
    if limit_nice is not None:
        raw = 20 - int(limit_nice) if limit_nice[:1] in "+-" else int(limit_nice)
        pre = ["prlimit", f"--nice={raw}"]
    return [*pre, "setpriv", f"--bounding-set=-all,{names}", f"--inh-caps=-all", "--no-new-privs"]


def thread_nices(pid):
    """The nice value of each of a process's threads."""
    return sorted({int(read(f"/proc/{pid}/task/{t}/stat").rsplit(")", 1)[1].split()[16])
                   for t in os.listdir(f"/proc/{pid}/task")})


def wait_state(want_enabled, timeout):
    """Seconds until the kernel's state is (or stops being) enabled."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if (sched_state()[0] == "enabled") == want_enabled:
            return time.monotonic() - t0
        time.sleep(0.005)
    return None


def scenario_unit(out):
    """The daemon run the way scx_fairquota.service runs it: the command
    line from the shipped environment file, only the unit's capabilities,
    stopped with its KillSignal; kill -9 under load and a restart as
    Restart=on-failure does; which capabilities attaching needs."""
    keys = unit_settings(UNIT)
    args = unit_command(keys, keys["EnvironmentFile"].lstrip("-").replace("/etc/default/scx_fairquota", DEFAULTS))
    caps = keys["CapabilityBoundingSet"].split()
    nice = keys.get("LimitNICE")
    sig = getattr(signal, keys["KillSignal"])
    res = {"args": args, "caps": caps, "kill_signal": keys["KillSignal"], "limit_nice": nice}
    # systemd mounts bpffs at boot; virtme-ng's init does not.
    if " /sys/fs/bpf bpf " not in read("/proc/mounts"):
        subprocess.run(["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"], check=True)
    hogs = [spawn_hog(n) for n in (0, 0, 5, -5)]
    # Started under the four hogs: the verifier runs at the nice LimitNICE=
    # allows, then every thread is back at nice 0.
    d = Daemon(out, "unit", args, prefix=caps_prefix(caps, nice))
    res["attached"] = sched_state()
    res["nices_attached"] = thread_nices(d.proc.pid)
    res["load_line"] = next((l for l in read(d.err_path).splitlines() if "verified and loaded" in l), "")
    time.sleep(3)
    res["rc_stop"] = d.stop(sig)
    res["after_stop"] = sched_state()
    # kill -9 under load: the kernel drops the scheduler when the last
    # reference to its struct_ops link goes away.
    d = Daemon(out, "unit-kill9", args, prefix=caps_prefix(caps, nice))
    time.sleep(3)
    os.kill(d.proc.pid, signal.SIGKILL)
    res["kill9_detach_s"] = wait_state(False, 10)
    d.stop()
    res["after_kill9"] = sched_state()
    res["alive_after_kill9"] = [h.poll() is None for h in hogs]
    res["shares_after_kill9"] = measure([h.pid for h in hogs], 2)
    # Restart=on-failure: the next start attaches (stale pins replaced).
    d = Daemon(out, "unit-restart", args, prefix=caps_prefix(caps, nice))
    res["restart_state"] = sched_state()
    res["restart_show"] = run_cmd([BIN, "show"])["rc"]
    res["restart_monitor"] = run_cmd(["timeout", "-s", "INT", "3", BIN, "--monitor", "1", "--json"])["stdout"]
    time.sleep(2)
    res["rc_restart_stop"] = d.stop(sig)
    res["restart_stderr"] = d.stderr()[-2000:]
    res["after_restart"] = sched_state()
    # Which capabilities attaching needs: each set alone, a short run.
    res["caps_tried"] = {}
    for name, cs in [("without CAP_PERFMON", [c for c in caps if c != "CAP_PERFMON"]),
                     ("without CAP_BPF", [c for c in caps if c != "CAP_BPF"]),
                     ("CAP_SYS_ADMIN alone", ["CAP_SYS_ADMIN"])]:
        # 8 s, then SIGINT; the daemon finishes a load it has begun (one
        # at nice 0 under the four hogs took 116 s, at nice -20 15 s).
        r = run_cmd([*caps_prefix(cs, nice), "timeout", "--preserve-status", "-s", "INT", "8", BIN,
                     "--stats-interval", "0"], timeout=180)
        res["caps_tried"][name] = {"rc": r["rc"], "attached": "attached" in r["stderr"],
                                   "stderr": r["stderr"][-600:], "after": sched_state()[0]}
    kill_all(hogs)
    return res


SOCKET = "/var/run/scx/root/stats"


def stats_request(req, timeout=30):
    """One request line on the stats socket; the decoded response."""
    import socket
    with socket.socket(socket.AF_UNIX) as c:
        c.settimeout(timeout)
        c.connect(SOCKET)
        c.sendall(req)
        return json.loads(c.makefile().readline())


def counter_now(*names):
    """The daemon's counter `name` since attach, from the stats socket (a
    new client's first request covers everything since attach); with
    several names, a tuple of them from the same request."""
    resp = stats_request(b'{"req":"stats","args":{}}\n')["args"]["resp"]
    return resp[names[0]] if len(names) == 1 else tuple(resp[n] for n in names)


def scenario_stats_socket(out):
    """The scx_stats socket: --monitor from another process (table and
    JSON), garbage, oversized and half-closed requests, 100 clients at
    once, a client that may not connect; the daemon keeps scheduling."""
    import socket
    import threading
    enable_cpu_controller()
    make_cgroup("mon")
    d = Daemon(out, "stats", ["--stats-interval", "0", "--cgroup", "mon=20000/100000"])
    hog = spawn_hog(0)
    move_to_cgroup(hog.pid, "mon")
    st = os.stat(SOCKET)
    res = {"mode": oct(st.st_mode & 0o777), "uid": st.st_uid}
    res["monitor"] = run_cmd(["timeout", "--preserve-status", "-s", "INT", "5", BIN, "--monitor", "1"])
    res["monitor_json"] = run_cmd(["timeout", "--preserve-status", "-s", "INT", "5", BIN, "--monitor", "1",
                                   "--json", "--top", "3"])
    res["json_lines"] = []
    for line in res["monitor_json"]["stdout"].splitlines():
        try:
            res["json_lines"].append(json.loads(line))
        except ValueError:
            res["json_lines"].append({"unparsed": line})
    res["all_tasks"] = len(stats_request(b'{"req":"stats","args":{"top":"0"}}\n')["args"]["resp"]["tasks"])
    res["meta_ok"] = "Metrics" in stats_request(b'{"req":"stats_meta","args":{}}\n')["args"]["resp"]
    # Bad requests: each gets an error answer (or a closed connection),
    # never a dead server.
    res["garbage"] = stats_request(b"garbage{\n")["errno"]
    res["unknown_target"] = stats_request(b'{"req":"stats","args":{"target":"nope"}}\n')["errno"]
    res["bad_top"] = stats_request(b'{"req":"stats","args":{"top":"x"}}\n')["errno"]
    res["oversized"] = stats_request(b'{"req":"' + b"x" * (16 << 20) + b'"}\n', timeout=120)["errno"]
    with socket.socket(socket.AF_UNIX) as c:
        c.connect(SOCKET)
        c.sendall(b'{"req":"sta')
        c.shutdown(socket.SHUT_WR)
        res["half_closed_reply"] = c.recv(100).decode()
    for _ in range(20):  # clients that connect and vanish
        c = socket.socket(socket.AF_UNIX)
        c.connect(SOCKET)
        c.close()
    ok = []

    def client():
        try:
            for _ in range(3):
                r = stats_request(b'{"req":"stats","args":{}}\n', timeout=120)
                ok.append(r["errno"] == 0 and "nr_tasks" in r["args"]["resp"])
        except Exception as e:  # noqa: BLE001 - recorded as a failure
            ok.append(repr(e))
    threads = [threading.Thread(target=client) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    res["many_clients_ok"] = sum(1 for x in ok if x is True)
    res["many_clients_errors"] = [x for x in ok if x is not True][:5]
    res["not_root"] = run_cmd(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               BIN, "--monitor", "1"], timeout=30)
    res["state_after_abuse"] = sched_state()
    res["alive_after_abuse"] = d.proc.poll() is None
    (res["hog_share"],) = measure([hog.pid], 4)
    kill_all([hog])
    res["rc"] = d.stop()
    res["socket_after_stop"] = os.path.exists(SOCKET)
    res["monitor_no_instance"] = run_cmd([BIN, "--monitor", "1"], timeout=30)
    return res


# Starved RR hogs of the trace scenario: the RR budget (5 ms per 100 ms)
# gives CPU 0 about 3 turns of 1.5 ms a window, so 8 hogs wait past the
# guard between them.
STARVED = 8


def scenario_trace(out):
    """`scx_fairquota trace` over a workload that shows every kind of
    event: a FIFO hog and STARVED RR hogs on CPU 0 (more than the CPU's RR
    budget serves, so the guard moves them too), a hog in a 20% cgroup and
    a free RR hog on CPU 1 (throttling). Also: a second tracer at once, and
    a trace with no scheduler running."""
    enable_cpu_controller()
    make_cgroup("tr")
    d = Daemon(out, "trace", ["--stats-interval", "0", "--cgroup", "tr=20000/100000"])
    hogs = {"fifo": spawn_hog(-5, 0), "limited": spawn_hog(0, 1), "free": spawn_hog(0, 1)}
    hogs.update({f"starved{i}": spawn_hog(0, 0) for i in range(STARVED)})
    move_to_cgroup(hogs["limited"].pid, "tr")
    time.sleep(1)
    local = tempfile.mkdtemp(prefix="fq-trace-")
    trace = os.path.join(local, "trace.pftrace")
    tracer = subprocess.Popen([BIN, "trace", "--duration", "3", "--out", trace],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    res = {"pids": {k: h.pid for k, h in hogs.items()}}
    res["second"] = run_cmd([BIN, "trace", "--duration", "1", "--out", os.path.join(local, "b.pftrace")])
    o, e = tracer.communicate(timeout=300)
    res["trace"] = {"rc": tracer.returncode, "stdout": o, "stderr": e}
    res["state_after"] = sched_state()
    res["alive_after"] = d.proc.poll() is None
    kill_all(list(hogs.values()))
    res["rc"] = d.stop()
    res["no_instance"] = run_cmd([BIN, "trace", "--duration", "1", "--out", os.path.join(local, "c.pftrace")])
    for f in os.listdir(local):
        shutil.copy(os.path.join(local, f), out)
    return res


def scenario_cgroup_fifo(out):
    """A nice -5 (FIFO) hog started inside a cgroup limited to 1000/10000,
    alone on CPU 1: its share, and the length of its runs (hog.py): a FIFO
    task of a limited group is stopped when the group's tokens run out, not
    at the next 4 ms tick."""
    enable_cpu_controller()
    make_cgroup("ff")
    d = Daemon(out, "cgroup-fifo", ["--cgroup", "ff=1000/10000", "--stats-interval", "1", "--top", "1"])
    gf = os.path.join(out, "fifo-runs.json")
    hog = subprocess.Popen(["sh", "-c", f"echo $$ > {CG}/ff/cgroup.procs && "
                            f"exec nice -n -5 taskset -c 1 {PY} {HOG} {gf}"])
    # Python starts at the group's 10%: its imports took over 60 s once,
    # on a busy host in a boot shared with other scenarios.
    wait_for_file(gf + ".ready", timeout=240)
    time.sleep(2)
    # The median of three 10 s windows, as for the other exactness
    # targets: a CI host's steal read 9.9% in one window (stop 59). Not
    # shorter: /proc/PID/schedstat is read without bringing a running
    # task's runtime up to date, so a read may lack up to a tick (4 ms) of
    # the hog's current run, 0.7% of a 6 s window's 0.6 s of CPU (one 6 s
    # window read 9.86% in CI), 0.4% of a 10 s window's.
    share = steady("cgroup_fifo: 1000/10000", lambda: measure([hog.pid], 10))[0]
    state = sched_state()
    kill_all([hog])
    rc = d.stop()
    runs = json.loads(read(gf, "{}") or "{}")
    rows = stats_rows(d.stdout(), hog.pid)
    return {"share": share, "runs_s": runs.get("runs_s", []), "nr_runs": runs.get("nr_runs", 0),
            "class": rows[-1]["class"] if rows else None, "state_during": state, "rc": rc,
            "totals": final_totals(d.stdout()), "stderr": d.stderr()[-2000:]}


def scenario_soak(out):
    """Reliability soak (issue 7) for SOAK_SECONDS (60 in CI, 600 from
    bench/soak.sh): stress-ng --aggressive cpu/fork/affinity/switch/exec
    (nice 0, as nobody: the exec stressor refuses root), hackbench in a
    loop at nice -5 (the FIFO class: it starves every RR task but for the
    guard), a cgroup created, limited and given a nice 0 hog every second
    (older ones emptied and removed as soon as their hog is dead), and a
    live `set` started every second (quota, slice, a --cgroup limit, in
    turn; they overlap when one takes longer). The driver's threads run at
    nice -5 too (an operator's tooling beside FIFO work); the kernel's
    state is sampled twice a second."""
    import threading
    secs = int(os.environ.get("SOAK_SECONDS", "60"))
    n = str(os.cpu_count())
    enable_cpu_controller()
    make_cgroup("soak")
    d = Daemon(out, "soak", ["--stats-interval", "10", "--cgroup", "soak=50000/100000"])
    t0 = time.monotonic()

    def at_nice(v):
        return lambda: os.setpriority(os.PRIO_PROCESS, 0, v)
    stress = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "stress-ng", "--aggressive", "--timeout", f"{secs}s", "--metrics-brief",
         "--cpu", n, "--fork", n, "--affinity", n, "--switch", n, "--exec", n],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd="/tmp", preexec_fn=at_nice(0))
    res = {"seconds": secs, "kernel": os.uname().release, "samples": [], "hackbench_rcs": [], "set_rcs": [], "set_errors": [],
           "churn": 0, "churn_errors": []}

    def every(period, fn):
        def loop():
            os.setpriority(os.PRIO_PROCESS, 0, -5)
            while time.monotonic() - t0 < secs:
                tick = time.monotonic()
                fn()
                time.sleep(max(0.0, period - (time.monotonic() - tick)))
        t = threading.Thread(target=loop)
        t.start()
        return t

    def hackbench():
        p = subprocess.run(["hackbench", "-g", "2", "-l", "100"], capture_output=True, timeout=600)
        res["hackbench_rcs"].append(p.returncode)

    sets = [["--period-us", "10000", "--quota-us", "3000"], ["--no-quota"],
            ["--slice-us", "2000"], ["--slice-us", "3000"],
            ["--cgroup", "soak=30000/100000"], ["--cgroup", "soak=50000/100000"]]

    pending = []

    def reconfigure():
        # Started every second, whether or not the previous one is done.
        args = sets[len(pending) % len(sets)]
        pending.append(subprocess.Popen([BIN, "set", *args], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True))

    live = []

    def churn():
        # Every second a group created, limited to 5%, given a nice 0 hog;
        # the reaper kills the hogs of older groups and removes them.
        name = f"churn{res['churn']}"
        try:
            make_cgroup(name)
            write_cg(name, "cpu.max", "5000 100000")
            # Started at the driver's nice -5 (so starting it does not wait
            # behind the FIFO work), then moved and reniced to 0.
            hog = subprocess.Popen(["sh", "-c", "while :; do :; done"])
            move_to_cgroup(hog.pid, name)
            os.setpriority(os.PRIO_PROCESS, hog.pid, 0)
            live.append((name, hog))
            res["churn"] += 1
        except OSError as e:
            res["churn_errors"].append(repr(e))

    def reap(keep):
        while len(live) > keep:
            old, p = live.pop(0)
            try:
                kill_all([p])
                os.rmdir(os.path.join(CG, old))
                res["removed"] += 1
            except OSError as e:
                res["churn_errors"].append(repr(e))

    res["removed"] = 0
    threads = [every(0.5, lambda: res["samples"].append((time.monotonic() - t0, sched_state()[0]))),
               every(0, hackbench), every(1.0, reconfigure), every(1.0, churn),
               every(0.2, lambda: reap(1))]
    for t in threads:
        t.join(secs + 900)
    stress_out = stress.communicate(timeout=900)[0]
    reap(0)
    for p in pending:
        _, err = p.communicate(timeout=300)
        res["set_rcs"].append(p.returncode)
        if p.returncode != 0:
            res["set_errors"].append(err[-300:])
    res.update({"elapsed": time.monotonic() - t0, "stress_rc": stress.returncode,
                "stress_out": stress_out[-4000:], "state_end": sched_state(),
                "alive_end": d.proc.poll() is None})
    res["rc"] = d.stop()
    res["stderr_tail"] = d.stderr()[-3000:]
    res["dmesg_sched_ext"] = sched_ext_log(10)
    return res

SCENARIOS = {
    "stats_socket": scenario_stats_socket,
    "trace": scenario_trace,
    "soak": scenario_soak,
    "unit": scenario_unit,
    "demo": scenario_demo,
    "attach": scenario_attach,
    "quota": scenario_quota,
    "fifo_guard": scenario_fifo_guard,
    "fifo_rotate": scenario_fifo_rotate,
    "fifo_crowd": scenario_fifo_crowd,
    "exits_convoy": scenario_exits_convoy,
    "weight": scenario_weight,
    "reconfig": scenario_reconfig,
    "slices": scenario_slices,
    "slice_lengths": scenario_slice_lengths,
    "sync_wakeup": scenario_sync_wakeup,
    "guard_many": scenario_guard_many,
    "exec_thread": scenario_exec_thread,
    "fifo_order": scenario_fifo_order,
    "hotplug": scenario_hotplug,
    "hotplug_throttled": scenario_hotplug_throttled,
    "stress_smoke": scenario_stress_smoke,
    "storm": scenario_storm,
    "storm_limited": scenario_storm_limited,
    "topology8": scenario_topology8,
    "topology_large": scenario_topology_large,
    "cgroups": scenario_cgroups,
    "cgroup_exact": scenario_cgroup_exact,
    "cgroup_scale": scenario_cgroup_scale,
    "cgroup_gone": scenario_cgroup_gone,
    "cgroup_gone_lost_start": scenario_cgroup_gone_lost_start,
    "killed_groups": scenario_killed_groups,
    "limits_lifted": scenario_limits_lifted,
    "quota_changed": scenario_quota_changed,
    "cgroup_fifo": scenario_cgroup_fifo,
    "cgroup_lost_timer": scenario_cgroup_lost_timer,
    "llc_lost_timer": scenario_llc_lost_timer,
    "release_home": scenario_release_home,
}


def user_pids():
    """Pids of the guest's user-space processes."""
    return {int(p) for p in os.listdir("/proc")
            if p.isdigit() and not is_kthread(int(p)) and proc_state(int(p)) not in ("Z", "")}


def proc_state(pid):
    stat = read(f"/proc/{pid}/stat")
    return stat.rsplit(")", 1)[1].split()[0] if stat else ""


def cgroup_dirs():
    return {root for root, _, _ in os.walk(CG)} if os.path.isdir(CG) else set()


def reset_guest(keep_pids, keep_cgroups):
    """Between the scenarios of one boot: end every process a scenario
    left (SIGINT first, so a daemon detaches itself), wait for sched_ext to
    be disabled, bring every CPU online, remove the cgroups it made and
    clear the kernel log (scenarios read it)."""
    left = user_pids() - keep_pids
    for sig, grace in ((signal.SIGINT, 10), (signal.SIGKILL, 10)):
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and left & user_pids():
            time.sleep(0.1)
        left &= user_pids()
    deadline = time.monotonic() + 60
    while sched_state()[0] not in ("disabled", "") and time.monotonic() < deadline:
        time.sleep(0.2)
    for cpu in os.listdir("/sys/devices/system/cpu"):
        online = f"/sys/devices/system/cpu/{cpu}/online"
        if cpu.startswith("cpu") and os.path.exists(online) and read(online) == "0":
            with open(online, "w") as f:
                f.write("1")
    for rel in sorted(cgroup_dirs() - keep_cgroups, key=len, reverse=True):
        try:
            os.rmdir(rel)
        except OSError:
            pass
    run_cmd(["dmesg", "-C"])
    return {"killed": len(left), "state": sched_state()[0]}


def run_batch(out, names, timeout):
    """Run scenarios one after another in this boot, each in its own
    process (a fresh interpreter, as after a boot), with the guest reset
    between them; OUT/<scenario>.log keeps each one's output and
    OUT/batch.json each one's exit status and time."""
    me = os.path.abspath(__file__)
    keep_pids, keep_cgroups = user_pids(), cgroup_dirs()
    status = {}
    for name in names:
        t0 = time.monotonic()
        with open(os.path.join(out, f"{name}.log"), "w") as log:
            p = subprocess.Popen([PY, me, name, out], stdout=log, stderr=subprocess.STDOUT)
            try:
                rc = p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = f"timed out after {timeout} s"
        status[name] = {"rc": rc, "seconds": round(time.monotonic() - t0, 1),
                        "reset": reset_guest(keep_pids | {p.pid}, keep_cgroups)}
        print(f"guest: batch: {name} rc {rc} in {status[name]['seconds']} s", flush=True)
        with open(os.path.join(out, "batch.json"), "w") as f:
            json.dump(status, f, indent=1)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "batch" and all(n in SCENARIOS for n in sys.argv[3:]):
        os.makedirs(sys.argv[2], exist_ok=True)
        print(f"guest: kernel {os.uname().release}, batch {' '.join(sys.argv[3:])}", flush=True)
        run_batch(sys.argv[2], sys.argv[3:], int(os.environ.get("SCENARIO_TIMEOUT", "900")))
        return
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: guest.py {{{'|'.join(SCENARIOS)}}} OUT_DIR\n"
                 f"       guest.py batch OUT_DIR SCENARIO...")
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    print(f"guest: kernel {os.uname().release}, sched_ext state {sched_state()}", flush=True)
    try:
        res = SCENARIOS[name](out)
    except ScenarioError as e:
        print(f"guest: scenario {name} could not run: {e}", file=sys.stderr, flush=True)
        sys.exit(3)
    if STEADY:
        res["steady"] = STEADY
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"guest: scenario {name} done", flush=True)


if __name__ == "__main__":
    main()
