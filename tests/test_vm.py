# SPDX-License-Identifier: GPL-2.0
"""Scheduler behaviour measured in a sched_ext VM.

Each test runs one scenario of tests/vm/guest.py in the Debian sid
sched_ext kernel booted with virtme-ng (scripts/vm-run.sh), alone or in
the boot of its batch (BATCHES), and compares the measured numbers with
their targets. A VM that cannot boot, or a scheduler that cannot attach,
fails the test.
"""
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

import conftest
from conftest import REPO

VM_RUN = os.path.join(REPO, "scripts/vm-run.sh")

# Scenarios that need no VM settings of their own share boots: a boot
# costs 20-50 s of TCG before the command starts, 32 of them a quarter of
# CI's time. tests/vm/guest.py runs a batch's scenarios one after another,
# each in a fresh process, and between them ends whatever a scenario left
# running, waits for sched_ext to be disabled, onlines every CPU, removes
# the cgroups it made and clears the kernel log. A test still runs only
# its own scenario when it is selected alone (-k).
BATCHES = [
    ["attach", "quota", "fifo_guard", "fifo_rotate", "weight", "reconfig", "slices",
     "slice_lengths"],
    ["sync_wakeup", "fifo_crowd", "exits_convoy", "guard_many", "exec_thread", "fifo_order"],
    ["hotplug", "hotplug_throttled", "stress_smoke", "storm", "storm_limited", "stats_socket", "unit", "trace", "soak"],
    ["cgroups", "cgroup_exact", "cgroup_fifo", "cgroup_lost_timer", "llc_lost_timer",
     "release_home", "cgroup_gone", "cgroup_gone_lost_start", "killed_groups", "limits_lifted",
     "quota_changed", "cgroup_scale"],
]
SCENARIO_TIMEOUT = 900
_batch_out = {}
# The directory each scenario that ran wrote its files to.
SCENARIO_OUT = {}


def selected_scenarios():
    """The scenarios the selected tests of this module run (each test's
    one run_scenario call)."""
    names = set()
    for item in conftest.SELECTED:
        if getattr(item, "module", None) is sys.modules[__name__]:
            m = re.search(r'run_scenario\("(\w+)"', inspect.getsource(item.function))
            if m:
                names.add(m.group(1))
    return names


def vm_run(names, out, env=None):
    """Boot one VM that runs the scenarios `names` of tests/vm/guest.py
    (one: directly; more: as a batch); returns vm-run.sh's status."""
    args = [names[0], str(out)] if len(names) == 1 else ["batch", str(out), *names]
    timeout = SCENARIO_TIMEOUT * len(names)
    cmd = [VM_RUN, "--rwdir", str(out), "--",
           f"{sys.executable} tests/vm/guest.py {' '.join(args)}"]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout + 600,
                       env={**os.environ, "VM_TIMEOUT": str(timeout + 120), **(env or {})})
    print(p.stdout[-6000:])
    print(p.stderr[-6000:], file=sys.stderr)
    return p.returncode


def run_scenario(name, tmp_path, env=None):
    """Run scenario `name` of tests/vm/guest.py in a VM (`env`: for
    vm-run.sh on the host, e.g. VM_CPUS), or take its result from the
    boot of its batch."""
    batch = next((b for b in BATCHES if name in b), None)
    if batch is None or env:
        out = tmp_path / "out"
        out.mkdir()
        rc = vm_run([name], out, env)
        assert rc == 0, f"scenario {name}: VM run failed with status {rc}"
        SCENARIO_OUT[name] = out
        return load_result(out, name)
    key = tuple(batch)
    if key not in _batch_out:
        names = [n for n in batch if n in selected_scenarios()] or [name]
        out = tmp_path / "batch"
        out.mkdir()
        _batch_out[key] = (out, vm_run(names, out), names)
    out, rc, names = _batch_out[key]
    log = out / f"{name}.log"
    if len(names) > 1 and log.exists():
        print(log.read_text()[-6000:])
        status = json.loads((out / "batch.json").read_text()).get(name, {}) \
            if (out / "batch.json").exists() else {}
        assert status.get("rc") == 0, (f"scenario {name} (batch boot with {', '.join(names)}):"
                                       f" {status or 'did not finish'}; VM run status {rc}")
    else:
        assert rc == 0, f"scenario {name}: VM run failed with status {rc}"
    SCENARIO_OUT[name] = out
    return load_result(out, name)


def load_result(out, name):
    """A scenario's result; first, the windows of the shares it took as a
    median (guest.py steady())."""
    r = json.loads((out / f"{name}.json").read_text())

    def fmt(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {fmt(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(fmt(x) for x in v) + "]"
        return f"{v:.4f}"

    for label, *windows in r.get("steady", []):
        print(f"median of windows: {label}: " + " | ".join(fmt(w) for w in windows))
    return r


def report(label, value, target, ok):
    print(f"  {label:<44} measured {str(value):<12} target {str(target):<14} {'PASS' if ok else 'FAIL'}")
    return ok


def check_all(checks):
    """Print every measured value next to its target, then fail on any miss."""
    results = [report(*c) for c in checks]
    # The misses go into the assertion message too: pytest's short summary
    # shows it even when the printed table scrolled out of a CI log.
    missed = [f"{c[0]}: {c[1]} (target {c[2]})" for c, ok in zip(checks, results) if not ok]
    assert not missed, "missed targets: " + "; ".join(missed)


def kernel_trouble(lines):
    """The kernel's sched_ext lines that tell of a stall, the watchdog or a
    runtime error (a hotplug's own "unregistered from the main kernel" is
    not one)."""
    return [x for x in lines if "stall" in x or "watchdog" in x or "runtime error" in x]


def pct(x, digits=1):
    return f"{x * 100:.{digits}f}%"


def verifier_totals(stderr):
    """From --verifier-stats output: (programs, instructions processed,
    the programs named), or None if there is no total line."""
    total = re.search(r"verifier: (\d+) programs, (\d+) instructions processed", stderr)
    names = set(re.findall(r"verifier: (\w+) +\d+ instructions processed", stderr))
    return (int(total.group(1)), int(total.group(2)), names) if total else None


def test_attach_and_detach(binary, tmp_path):
    r = run_scenario("attach", tmp_path)
    state, ops = r["while_running"]
    vs = verifier_totals(r["sysrq_stderr"]) or (0, 0, set())
    want_ops = {"fairquota_init", "fairquota_enqueue", "fairquota_dispatch", "fairquota_tick",
                "fairquota_running", "fairquota_stopping", "fairquota_select_cpu"}
    check_all([
        ("state before", r["before"][0], "disabled", r["before"][0] == "disabled"),
        ("state while running", state, "enabled", state == "enabled"),
        ("root/ops while running", ops, "fairquota*", ops.startswith("fairquota")),
        ("bpffs mounted by the daemon (absent before)", (r["bpffs_before"], r["bpffs_while_running"]),
         "(False, True)", (r["bpffs_before"], r["bpffs_while_running"]) == (False, True)),
        ("config map pinned while running", r["pinned"], "True", r["pinned"]),
        ("second instance exit status", r["second_instance"]["rc"], "1", r["second_instance"]["rc"] == 1),
        ("second instance names the attached one", "already attached: fairquota" in r["second_instance"]["stderr"],
         "True", "already attached: fairquota" in r["second_instance"]["stderr"]),
        ("non-root exit status", r["not_root"]["rc"], "1", r["not_root"]["rc"] == 1),
        ("non-root message", "must run as root" in r["not_root"]["stderr"], "True",
         "must run as root" in r["not_root"]["stderr"]),
        ("show prints the tunables", r["show"]["rc"], "0", r["show"]["rc"] == 0 and "quota=unlimited" in r["show"]["stdout"]),
        ("exit status after SIGINT", r["rc"], "0", r["rc"] == 0),
        ("state after SIGINT", r["after"][0], "disabled", r["after"][0] == "disabled"),
        ("pin removed after exit", r["pinned_after"], "False", not r["pinned_after"]),
        ("final totals printed", "[fairquota] final:" in r["stdout"], "True", "[fairquota] final:" in r["stdout"]),
        ("stats table printed", "THROTTLED" in r["stdout"], "True", "THROTTLED" in r["stdout"]),
        ("set after exit refused", r["set_after_exit"]["rc"], "1", r["set_after_exit"]["rc"] == 1),
        ("verifier rejection exit status", r["verifier_reject"]["rc"], "1", r["verifier_reject"]["rc"] == 1),
        ("verifier rejection names the verifier", "verifier rejected" in r["verifier_reject"]["stderr"],
         "True", "verifier rejected" in r["verifier_reject"]["stderr"]),
        ("verifier rejection shows the log's reason", "invalid mem access" in r["verifier_reject"]["stderr"],
         "True", "invalid mem access" in r["verifier_reject"]["stderr"]),
        ("state after the rejection", r["after_reject"][0], "disabled", r["after_reject"][0] == "disabled"),
        ("ops.init() failure exit status", r["init_fail"]["rc"], "1", r["init_fail"]["rc"] == 1),
        # 7.x enables in a kernel worker: the attach returns, then the kernel
        # ends the scheduler with ops.init()'s reason.
        ("ops.init() failure gives the kernel's reason",
         "cannot create the per-LLC queues" in r["init_fail"]["stderr"]
         and "default scheduler" in r["init_fail"]["stderr"], "True",
         "cannot create the per-LLC queues" in r["init_fail"]["stderr"]
         and "default scheduler" in r["init_fail"]["stderr"]),
        ("state after the ops.init() failure", r["after_init_fail"][0], "disabled",
         r["after_init_fail"][0] == "disabled"),
        ("exit status after SysRq-S unload", r["sysrq_rc"], "1", r["sysrq_rc"] == 1),
        ("daemon says the kernel fell back", "fell back to its default scheduler" in r["sysrq_stderr"],
         "True", "fell back to its default scheduler" in r["sysrq_stderr"]),
        ("daemon gives the kernel's reason", "sysrq" in r["sysrq_stderr"].lower(), "True",
         "sysrq" in r["sysrq_stderr"].lower()),
        ("state after SysRq-S", r["sysrq_after"][0], "disabled", r["sysrq_after"][0] == "disabled"),
        # --verifier-stats: one line per program and the total. The total
        # is the verifier's own measure of the load's cost: 1,063,151
        # before the timer's walks and a cgroup's limit were global
        # functions (38-44 s under TCG), 486,889 since (15-20 s), about
        # 193,000 since a cgroup's bucket is charged outside its lock and
        # the task refresh, the charge and the timer arming are global
        # functions too (8-10 s, 2026-12-03).
        ("--verifier-stats: programs, the ops among them", (vs[0], len(want_ops & vs[2])),
         f"(>= {len(want_ops)}, {len(want_ops)})", vs[0] >= len(want_ops) and want_ops <= vs[2]),
        ("--verifier-stats: instructions processed", vs[1], "< 175000 (499941 before)", 0 < vs[1] < 175000),
    ])
    print(r["verifier_reject"]["stderr"])
    print(r["sysrq_stderr"])


def test_quota_period(binary, tmp_path):
    r = run_scenario("quota", tmp_path)
    checks = []
    for key, m in r.items():
        rr_thr = [row["throttled"] for row in m["rr_rows"]]
        fifo_thr = [row["throttled"] for row in m["fifo_rows"]]
        checks += [
            (f"{key}: nice 0 hog share", pct(m["rr_share"]), "20% +- 3", abs(m["rr_share"] - 0.20) <= 0.03),
            (f"{key}: nice -5 hog share", pct(m["fifo_share"]), ">= 90%", m["fifo_share"] >= 0.90),
            (f"{key}: nice 0 hog throttle counts", rr_thr[-3:], "growing, > 0",
             len(rr_thr) >= 2 and rr_thr[-1] > rr_thr[0] > 0),
            (f"{key}: nice 0 hog class", m["rr_rows"][-1]["class"] if m["rr_rows"] else None, "RR",
             bool(m["rr_rows"]) and m["rr_rows"][-1]["class"] == "RR"),
            # It starts at nice 0 until `nice` execs it, so count only the
            # second half of the run, long after it became nice -5.
            (f"{key}: nice -5 hog throttles, 2nd half of run", fifo_thr[len(fifo_thr) // 2:],
             "no growth", len(fifo_thr) >= 4 and fifo_thr[-1] == fifo_thr[len(fifo_thr) // 2]),
            (f"{key}: nice -5 hog class", m["fifo_rows"][-1]["class"] if m["fifo_rows"] else None, "FIFO",
             bool(m["fifo_rows"]) and m["fifo_rows"][-1]["class"] == "FIFO"),
            # Exempt tasks never charge a bucket: their PERIODS stay 0.
            (f"{key}: daemon rows / with periods > 0", (len(m["daemon_rows"]),
             sum(r["periods"] > 0 for r in m["daemon_rows"])), "(>= 1, 0)",
             len(m["daemon_rows"]) >= 1 and all(r["periods"] == 0 for r in m["daemon_rows"])),
            (f"{key}: kernel-thread rows / with periods > 0", (len(m["kthread_rows"]),
             sum(r["periods"] > 0 for r in m["kthread_rows"])), "(>= 1, 0)",
             len(m["kthread_rows"]) >= 1 and all(r["periods"] == 0 for r in m["kthread_rows"])),
            (f"{key}: state during", m["state_during"][0], "enabled", m["state_during"][0] == "enabled"),
            (f"{key}: exit status", m["rc"], "0", m["rc"] == 0),
        ]
    check_all(checks)


def test_fifo_starvation_guard(binary, tmp_path):
    r = run_scenario("fifo_guard", tmp_path)
    gap = r["rr_gap"].get("max_gap_s", 99.0)
    check_all([
        ("nice -5 (FIFO) hog share of CPU 1 over 20 s", pct(r["fifo_share"]), ">= 90%", r["fifo_share"] >= 0.90),
        ("nice 5 (RR) hog share of CPU 1 over 20 s", pct(r["rr_share"]), ">= 2%", r["rr_share"] >= 0.02),
        ("nice 5 hog longest wait", f"{gap * 1000:.0f} ms", "< 1000 ms", gap < 1.0),
        ("scheduler still attached (no watchdog)", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("daemon alive after 20 s", r["daemon_alive"], "True", r["daemon_alive"]),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_fifo_hogs_rotate(binary, tmp_path):
    r = run_scenario("fifo_rotate", tmp_path)
    a, b = r["shares"]
    rotations = r["totals"].get("fifo_rotate", 0)
    check_all([
        ("FIFO hog A share of CPU 1 over 12 s", pct(a), ">= 30%", a >= 0.30),
        ("FIFO hog B share of CPU 1 over 12 s", pct(b), ">= 30%", b >= 0.30),
        ("FIFO rotations counted", rotations, ">= 8", rotations >= 8),
        ("scheduler still attached after 12 s (watchdog 10 s)", r["state_during"][0], "enabled",
         r["state_during"][0] == "enabled"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def part(shares):
    """The first of `shares` as a part of their sum."""
    return shares[0] / max(sum(shares), 1e-9)


def test_weight_split(binary, tmp_path):
    r = run_scenario("weight", tmp_path)
    total = r["nice0_share"] + r["nice5_share"]
    frac = part([r["nice0_share"], r["nice5_share"]])
    crowd10 = sum(r["crowd_nice10"])
    crowd = crowd10 + sum(r["crowd_nice0"])
    check_all([
        ("nice 0 part of CPU 1 (vs nice 5)", pct(frac), "75% +- 5", abs(frac - 0.75) <= 0.05),
        ("CPU 1 busy", pct(total), ">= 90%", total >= 0.90),
        # Before the LLC clock followed renewed turns, the hog that had run
        # alone got 19-26% in the first second, then 3% for the next two.
        # Parts of what the pair got, not shares of wall time: under steal
        # the guest's CPU 1 runs for less than the wall time (a CI run's
        # first second read 37.9% of wall time; 49.0% alone, later).
        ("hog alone 3 s, then a newcomer on its CPU: its part, first 1 s", pct(part(r["join_first"])),
         ">= 40%", part(r["join_first"]) >= 0.40),
        ("  its part over the next 2 s", pct(part(r["join_next"])), "50% +- 5",
         abs(part(r["join_next"]) - 0.50) <= 0.05),
        ("a hog stopped 3 s, then continued: its part, first 1 s", pct(part(r["wake_first"])),
         "<= 60%", part(r["wake_first"]) <= 0.60),
        # Before a task carried its lag from CPU to CPU (carry_lag()), it
        # waited for the guard's 1 s bound at each turn: 0.2% here; before
        # the lead it carries was bounded, 0.1-0.2% in two CI runs.
        ("hog moved by taskset onto a nice 0 pair's CPU: its part, 3 s", pct(part(r["moved_parts"])),
         "33% +- 8", abs(part(r["moved_parts"]) - 1 / 3) <= 0.08),
        # Before SCHED_IDLE was RR whatever its nice, the nice -5 one was FIFO
        # and took the CPU (the guard leaving the nice 0 hog a few percent).
        ("SCHED_IDLE nice -5 hog beside nice 0: its share", pct(r["idle_shares"][1]),
         "<= 5%", r["idle_shares"][1] <= 0.05),
        ("  the nice 0 hog's share", pct(r["idle_shares"][0]), ">= 90%",
         r["idle_shares"][0] >= 0.90),
        ("  the SCHED_IDLE hog's class (stats)", r["idle_class"], "RR", r["idle_class"] == "RR"),
        # Weights 1024 : 110 per hog, so the nice 10 part is 9.7% (the
        # default scheduler: 9.4%). While the guard made every RR task that
        # had waited 100 ms urgent, whatever its weight: 28%.
        ("20 nice 0 + 20 nice 10 hogs on CPU 1: nice 10 part", pct(crowd10 / max(crowd, 1e-9)),
         "9.7% +- 2.5", abs(crowd10 / max(crowd, 1e-9) - 0.097) <= 0.025),
        (f"  the nice 10 hogs over {r['crowd_s']} s: least / most",
         f"{pct(min(r['crowd_nice10']), 2)}..{pct(max(r['crowd_nice10']), 2)}",
         "> 0 each, most <= 2x least", min(r["crowd_nice10"]) > 0
         and max(r["crowd_nice10"]) <= 2 * min(r["crowd_nice10"])),
        ("state during", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("exit status after SIGTERM", r["rc"], "0", r["rc"] == 0),
        ("state after SIGTERM", r["after"][0], "disabled", r["after"][0] == "disabled"),
    ])


def test_live_reconfiguration(binary, tmp_path):
    r = run_scenario("reconfig", tmp_path)
    check_all([
        ("hog share at 2000/10000", pct(r["before"]), "20% +- 3", abs(r["before"] - 0.20) <= 0.03),
        ("`set --quota-us 5000` exit status", r["set"]["rc"], "0", r["set"]["rc"] == 0),
        ("hog share at 5000/10000", pct(r["after"]), "50% +- 5", abs(r["after"] - 0.50) <= 0.05),
        ("`set --quota-us 20000` refused", r["bad_set"]["rc"], "2",
         r["bad_set"]["rc"] == 2 and "larger than --period-us" in r["bad_set"]["stderr"]),
        ("two concurrent `set`s: exit statuses", r["concurrent_set_rc"], "[0, 0]", r["concurrent_set_rc"] == [0, 0]),
        ("two concurrent `set`s: both applied (show)",
         "guard=250ms" in r["show_after_concurrent_set"] and "slice=4000us" in r["show_after_concurrent_set"],
         "True", "guard=250ms" in r["show_after_concurrent_set"] and "slice=4000us" in r["show_after_concurrent_set"]),
        ("renice -5 exit status", r["renice_rc"], "0", r["renice_rc"] == 0),
        ("hog share after renice to -5 (FIFO)", pct(r["after_renice"]), ">= 90%", r["after_renice"] >= 0.90),
        ("hog class after renice", r["last_class"], "FIFO", r["last_class"] == "FIFO"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_slice_modes(binary, tmp_path):
    r = run_scenario("slices", tmp_path)
    fixed, split = r["fixed"], r["split"]
    ratio = split["switches_per_s"] / max(fixed["switches_per_s"], 1e-9)
    checks = [
        ("fixed 20 ms: switches/s of 3 hogs on a CPU", f"{fixed['switches_per_s']:.0f}", "<= 65",
         fixed["switches_per_s"] <= 65),
        ("split 20 ms / (2 waiting + 1): switches/s", f"{split['switches_per_s']:.0f}", ">= 1.8x fixed",
         ratio >= 1.8),
    ]
    for mode in ["fixed", "split"]:
        for i, share in enumerate(r[mode]["shares"]):
            checks.append((f"{mode}: hog {i} share", pct(share), "33% +- 5", abs(share - 1 / 3) <= 0.05))
        checks.append((f"{mode}: exit status", r[mode]["rc"], "0", r[mode]["rc"] == 0))
    check_all(checks)


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def pingpong_timer_checks(name, res):
    """Checks of a ping-pong run (scenario slice_lengths): it and the
    scheduler exit 0, and at most 0.2 slice timers per turn are started
    for turns that end before it (`slice_arm` less `slice_timer`, the
    timers that ended a turn). A timer that ends a turn was needed: the
    hog's turns, timed once it ran a turn to its slice's end. How many of
    those there are follows the emulator's speed (one CI run: 3524 timers
    in 13880 turns, 0.254 per turn, 2912 of which ended the hog's turn;
    0.04-0.063 per turn in all before), so they are printed, not bounded.
    Before, every turn of the pair that started with the hog waiting
    started a timer, and nearly all of them ended unfired."""
    t = res["totals"]
    turns = max(t.get("rr_dispatch", 0), 1)
    arm = t.get("slice_arm", 0) / turns
    unfired = (t.get("slice_arm", 0) - t.get("slice_timer", 0)) / turns
    print(f"{name}: {res['round_trips']} round trips, totals {t}")
    return [
        (f"{name}: exit status", res["pingpong_rc"], "0", res["pingpong_rc"] == 0),
        (f"{name}: timers per turn (all)", f"{arm:.3f}", "(printed)", True),
        (f"{name}: timers per turn that ended before them", f"{unfired:.3f}", "<= 0.2",
         "slice_arm" in t and "slice_timer" in t and unfired <= 0.2),
        (f"{name}: scheduler exit", res["rc"], "0", res["rc"] == 0),
    ]


def test_rr_slices_honored(binary, tmp_path):
    """RR slices end within 1 ms of their length (issue 5), whether the
    slice timer or a tick ends them; and wakeup-driven turns, which block
    before their slice ends, start no slice timer (arm_slice_timer()), under
    a quota too.

    A slice timer the kernel fires late stretches its turn however the
    scheduler armed it. Under TCG on a busy host 4-29% of the 2 ms slice
    timers fired over 1 ms late (an instrumented build, six runs), and
    2.6-18% of the runs lasted over 3.5 ms, tracking them; one CI run read
    a 90th percentile of 3.99 ms, another 4.34. So at most 10% of the runs
    may last over 1.5 ms past the slice (the 90th percentile within
    1.5 ms), plus the share of timers the scheduler counted late
    (`slice_late` of `slice_timer`): a turn left untimed, or timed to the
    wrong deadline, still fails, its timer being on time or absent.
    A turn is the hog's runs with no run of the other hog between them
    (guest.py turns_of()): a gap without one is the host stalling the
    guest. Such stalls split 5 ms turns into runs of a 4.59 and a 4.67 ms
    median in two CI runs, and on a host with 20% steal into runs of a
    2.57 ms median; joining runs apart by less than half a slice, as
    before, then read a 4.68 ms median turn and failed.
    The 2 ms slices run twice: unlimited, and under a per-task quota the
    hogs never use up that the tick may end (tick_cuts_quota()). Only
    turns the tokens cut are left to the tick: on 87432d6 the tick ended
    those RR slices too, and their median turn read 3.27 ms."""
    r = run_scenario("slice_lengths", tmp_path)
    wake = r.pop("wakeups")
    limited = r.pop("wakeups_limited")
    checks = []
    for us, m in r.items():
        slice_ms = m["slice_us"] / 1000
        runs = [x * 1000 for x in m["turns_s"]]
        med, p90 = quantile(runs, 0.5), quantile(runs, 0.9)
        print(f"slice {us} us: median of the hogs' runs before merging "
              f"{quantile([x * 1000 for x in m['runs_s']], 0.5):.2f} ms")
        t = m["totals"]
        late = t.get("slice_late", 0) / max(t.get("slice_timer", 0), 1)
        long_runs = sum(x > slice_ms + 1.5 for x in runs) / max(len(runs), 1)
        print(f"slice {us} us: {len(runs)} turns, median {med:.2f} ms, p90 {p90:.2f} ms, "
              f"p99 {quantile(runs, 0.99):.2f} ms, over +1.5 ms {pct(long_runs)}, "
              f"late timers {pct(late)}, totals {t}")
        checks += [
            (f"{us} us: median turn (ms)", f"{med:.2f}", f"{slice_ms - 0.3:.1f}..{slice_ms + 1:.1f}",
             slice_ms - 0.3 <= med <= slice_ms + 1),
            (f"{us} us: turns over {slice_ms + 1.5:.1f} ms (90th percentile {p90:.2f} ms)",
             pct(long_runs), f"<= 10% + late timers ({pct(late)})",
             bool(runs) and long_runs <= 0.10 + late),
            # Past half, the host's timers say nothing of the slices.
            (f"{us} us: slice timers fired over 1 ms late", pct(late), "<= 50%",
             "slice_late" in t and late <= 0.5),
            (f"{us} us: exit status", m["rc"], "0", m["rc"] == 0),
        ]
    # Before, every turn that started with the hog waiting started a timer;
    # before 2026-11-26 every turn of a limited task did.
    checks += pingpong_timer_checks("ping-pong beside a hog", wake)
    checks += pingpong_timer_checks("ping-pong under an 80000/100000 quota", limited)
    check_all(checks)


def test_sync_wakee_waits_for_its_waker(binary, tmp_path):
    """A task woken by a pipe write (a sync wakeup) does not preempt its
    waker on the waker's CPU: the waker usually blocks next, and preempting
    it makes every exchange two context switches. Here the waker computes
    1 ms after each write; before, it was preempted at each write (308
    involuntary switches in 300 writes; now 59: a turn that TCG stretches
    past the 3 ms slice still ends at the slice). Then a SCHED_BATCH task's
    wakeups do not preempt, where a SCHED_OTHER one's do, and with nothing
    else queued they go to the CPU's own queue and preempt in the wakeup
    path (wake_local). Last, a sleeper
    that naps 50 ms preempts the hog that ran on alone meanwhile: before a
    renewed turn took its own deadline, the hog kept its first turn's and
    the sleeper waited for its slice to end (33-37 of 78 wakeups preempted,
    median lateness 1.56-1.58 ms; now all, 0.4-0.5 ms, up to 1.33 ms on
    slower hosts, 1.1-3.6 ms on busy ones: below that of a SCHED_BATCH
    sleeper napping 50 ms beside it at the same time, 25 ms out of phase,
    which waits for the hog's turns to end: 0.86-0.87 ms against 2.5-3.5 ms
    in two runs of 2026-12-02). Last, a sleeper pinned beside a nice 0 : nice 5
    pair while a nice 10 hog runs alone on the other CPU (the two CPUs'
    vtimes drift apart for ever): it gets its CPU within a tick or so, and
    the pair splits 75/25."""
    r = run_scenario("sync_wakeup", tmp_path)
    print(f"sync wakeup: {r}")
    invol, n = (int(x) for x in r["out"][:2]) if len(r["out"]) >= 2 else (-1, 0)
    long_wakes, long_late = (int(x) for x in r["wakes"]["long_nap"][:2]) \
        if len(r["wakes"]["long_nap"]) >= 2 else (0, -1)
    long_preempts = r["wake_preempts"]["long_nap"]
    batch_wakes, batch_late = (int(x) for x in r["wakes"]["batch"][:2]) \
        if len(r["wakes"]["batch"]) >= 2 else (0, -1)
    long_batch_late = int(r["wakes"]["long_batch"][1]) if len(r["wakes"]["long_batch"]) >= 2 else -1
    lag_wakes, lag_late = (int(x) for x in r["wakes"]["slow_cpu"][:2]) \
        if len(r["wakes"]["slow_cpu"]) >= 2 else (0, -1)
    pair = r["slow_pair"]
    nice0_part = part(pair)
    check_all([
        ("pipe pair: exit status", r["rc_pair"], "0", r["rc_pair"] == 0),
        ("waker's involuntary switches per write", f"{invol / max(n, 1):.3f}", "<= 0.5 (1.03 before)",
         n == 300 and 0 <= invol <= 0.5 * n),
        ("sleeper beside a nice 0 hog, 4 s: wakeup preemptions", r["wake_preempts"]["other"], ">= 100",
         r["wake_preempts"]["other"] >= 100),
        # Nothing else queued: the wakee goes to its CPU's own queue and
        # preempts in the wakeup path (preempt_local()), not after a
        # kick's irq_work and a dispatch round (before: none of them).
        ("  of them, straight to the CPU's own queue (wake_local)", r["wake_local"]["other"],
         ">= 0.8x", r["wake_local"]["other"] >= 0.8 * r["wake_preempts"]["other"]),
        # Before, SCHED_BATCH wakeups preempted as any other.
        ("  the same sleeper as SCHED_BATCH", r["wake_preempts"]["batch"], "<= 1/10 of that",
         r["wake_preempts"]["batch"] * 10 <= r["wake_preempts"]["other"]),
        # Before a renewed turn took a new deadline, a hog that ran on
        # alone kept its first turn's, and wakeups could not preempt it.
        ("a sleeper waking every 50 ms beside it: wakeup preemptions per wakeup",
         f"{long_preempts}/{long_wakes}", ">= 0.5", long_wakes > 0 and long_preempts >= 0.5 * long_wakes),
        # Waiting for the hog's 3 ms slice to end costs half a slice on
        # average (1560-1580 us before, on a host where a preempting
        # wakeup took 400-500 us). A preempting wakeup costs the
        # emulator's wakeup path, which grows with the host's load:
        # 712-1104 us in six runs of 2026-11-29, 1572-3610 us on busy
        # hosts. So the bound is the median of a SCHED_BATCH sleeper
        # that naps 50 ms beside it at the same time, which waits for
        # the hog's turns to end (a fixed 1500 us failed; so did the
        # 2 ms SCHED_BATCH sleeper's, measured seconds before: 3183 us
        # against 3610 in a CI run of 33836a0).
        ("  its median wakeup lateness (us)", long_late,
         f"< the 50 ms SCHED_BATCH sleeper's beside it, {long_batch_late} (1560-1580 before)",
         0 <= long_late < long_batch_late),
        # Before (66d4ba8), lags counted from the LLC's clock, which the
        # nice 10 hog carried: the pair's vtimes were held at the limit
        # behind it (46-54% nice 0), and the sleeper waited for them to
        # climb past its own: 65-157 wakeups, a median lateness of
        # 26-46 ms (default scheduler: 885, 1.7 ms). Now 972, 1.68 ms,
        # 75.2% (582, 1.77 ms, 75.0% in a CI run on a slow host).
        # Relative to the SCHED_BATCH sleeper's wakeups in the same run
        # too: 0.57-0.66x of them in four runs on a busy host (310-511),
        # where a fixed 350 failed once; 65-157 before, about 0.1x.
        ("a 2 ms sleeper on a CPU whose vtimes lag another's: wakeups in 4 s",
         lag_wakes, f">= 0.4x the SCHED_BATCH sleeper's {batch_wakes} (65-157 before)",
         lag_wakes >= 0.4 * batch_wakes > 0),
        # 5702 us on that busy host: at most 4x the SCHED_BATCH sleeper's
        # in the same run (1753-3511 us; 13-26x before).
        ("  its median wakeup lateness (us)", lag_late,
         "<= 4x the SCHED_BATCH sleeper's (26000-46000 before)",
         0 <= lag_late <= 4 * batch_late),
        ("  the nice 0 part of the pair beside it (vs nice 5)", f"{nice0_part:.1%}",
         "75% +- 5 (46-54% before)", abs(nice0_part - 0.75) <= 0.05),
        ("scheduler exit", r["rc"], "0", r["rc"] == 0),
    ])


def looked_per_run(totals):
    """Queued tasks the starvation guard looked at per housekeeping run."""
    return totals.get("guard_looked", 0) / max(totals.get("guard_runs", 0), 1)


def test_fifo_crowd_no_convoy(binary, tmp_path):
    """200 FIFO hogs exec'd at once beside 20 nice 0 hogs on 2 CPUs: every
    exec maps /bin/sh and libc under one lock per file. Before the guard
    served tasks woken from D within 50 ms, 138 of the 220 sat in D 30 s
    after the start and 136 FIFO hogs made no progress for over 3 s
    (bench/fifo_crowd.sh: 107 for over 25 s). With that bound alone, a
    slow guest (a busy host) still convoyed: 8-67 in D in 5 of 6 runs, up
    to 11.4 s without progress, until a FIFO task woken from D went first
    behind queued work (dsleep_head) and ticks stopped cutting turns inside
    the kernel (kernel_defer). A CI run on a busy host still read 29 in D
    (d9783d8; 64 in 1 of 4 runs with the host loaded) until a FIFO task cut
    in the kernel after the deferral went first too (kernel_head)."""
    r = run_scenario("fifo_crowd", tmp_path)
    f, n, t = r["fifo"], r["normal"], r["totals"]
    print(f"hogs in D once a second until the states: {r.get('d_series')}")
    print(f"where the hogs in D slept: {r.get('blocked_in')}; counters {t}")
    check_all([
        ("hogs blocked in the kernel (D) 30 s after the start", r["states"].get("D", 0),
         "<= 10 of 220", r["states"].get("D", 0) <= 10),
        ("nice -5 hogs: longest time without progress (s)", round(f["gap_max"], 2), "< 3",
         f["gap_max"] < 3),
        ("nice -5 hogs without progress for over 3 s", f["over_3s"], "0", f["over_3s"] == 0),
        ("nice 0 hogs without progress for over 3 s", n["over_3s"], "0", n["over_3s"] == 0),
        ("state after the run", r["state_after"], "enabled", r["state_after"] == "enabled"),
        ("scheduler exit status", r["rc"], "0", r["rc"] == 0),
    ])
    print(f"states {r['states']}, spawn {r['spawn_s']:.1f} s, FIFO CPUs {f['cpus']:.2f},"
          f" nice 0 CPUs {n['cpus']:.2f}, dsleep_guard {t.get('dsleep_guard')},"
          f" fifo_rotate {t.get('fifo_rotate')}")


def test_exits_convoy_rr_budget(binary, tmp_path):
    """30 nice 0 tasks behind two pinned nice -5 (FIFO) hogs each create 20
    files in one directory of the virtiofs share and exit; the same under
    the default scheduler (SCHED_FIFO hogs, whose fair server gives the
    rest 5%) in the same boot. Before the RR budget, every wakeup from a
    create waited behind the FIFO hog for the guard: 2.0-2.4x the default
    scheduler's time over 2 boots; with the budget for wakeups alone,
    1.16-1.5x; with it for queued RR tasks at ticks too, 0.33-0.49x in 3
    boots, so at most the default scheduler's time is asserted. The
    default scheduler's run stops half a second past scx_fairquota's time:
    tasks still running then mean it took longer (on a busy host its whole
    run took over 240 s, the bench's limit)."""
    r = run_scenario("exits_convoy", tmp_path)
    fq, cfs, t = r["fq"], r["cfs"], r["fq"]["totals"]
    if fq["last"] is None:
        ratio, verdict = None, False
    elif cfs["last"] is None:
        ratio, verdict = f"< {fq['last'] / cfs['limit']:.2f}", cfs["exited"] < 30
    else:
        ratio, verdict = round(fq["last"] / cfs["last"], 2), fq["last"] <= cfs["last"]
    check_all([
        ("scx_fairquota: tasks exited (of 30)", fq["exited"], "30", fq["exited"] == 30),
        ("default scheduler: tasks exited by then (of 30)", cfs["exited"], "(printed)", True),
        ("time to the last exit, fq / default scheduler", ratio, "<= 1.0", verdict),
        ("RR wakeups run on the RR budget (rr_budget)", t.get("rr_budget"), "> 0",
         t.get("rr_budget", 0) > 0),
        ("queued RR tasks run on it at ticks (rr_budget_tick)", t.get("rr_budget_tick"), "> 0",
         t.get("rr_budget_tick", 0) > 0),
        ("state during the fq run", fq["state"], "enabled", fq["state"] == "enabled"),
        ("scheduler exit status", fq["rc"], "0", fq["rc"] == 0),
    ])
    cfs_last = f"{cfs['last']:.1f} s" if cfs["last"] is not None else f"> {cfs['limit']:.1f} s"
    print(f"last exit: fq {fq['last']:.1f} s (median {fq['median']:.1f}), default scheduler"
          f" {cfs_last} ({cfs['exited']} of 30 by then); rr_budget {t.get('rr_budget')},"
          f" rr_budget_tick {t.get('rr_budget_tick')},"
          f" dsleep_guard {t.get('dsleep_guard')}, guard {t.get('guard')}")


def test_guard_bounds_every_wait(binary, tmp_path):
    r = run_scenario("guard_many", tmp_path)
    checks = []
    for label, m in r.items():
        n = int(label.split()[0])
        checks += [
            # The scheduler's own record: no RR hog waited 3 s from
            # runnable to running (every hog runs in every 3 s window).
            (f"{label}: longest RR hog wait (scheduler's MAX_WAIT)", f"{m['max_wait_sched']:.2f} s",
             "< 3 s", m["max_wait_sched"] < 3.0),
            (f"{label}: RR hogs in the stats table", m["waits_seen"], "all",
             m["waits_seen"] == n),
            # Kernel threads are made urgent after 50 ms, not the guard,
            # and go to the urgent queue's head: 50 ms + a timer interval
            # (20 ms) + ticks, deep in the queue too (the guard walks the
            # whole queue once a queued kernel thread may be overdue; at
            # the 250 ms full walk, 0.25-0.36 s beside 200 hogs). At
            # --guard-ms 1000 rcu_preempt and the unbound kworkers waited
            # 1.0 s, and grace periods 3.1 s.
            # Plus the guest's longest stall (guest.py STALL_PROBE: the
            # host not running the guest; no wait can end in it). A CI run
            # under 11-18% host steal read 0.206 s: its LLC's timer came
            # over 50 ms late (llc_rescue 1, 90% of slice timers over 1 ms
            # late), and the guard ran that much later.
            (f"{label}: longest kernel-thread wait (MAX_WAIT)",
             [f"{c} {w:.3f} s" for w, c in m["kthread_waits"][:2]],
             f"< 0.2 s + the guest's longest stall, {m['guest_stall']:.3f} s (0.25-0.36 s before)",
             bool(m["kthread_waits"]) and m["kthread_waits"][0][0] < 0.2 + m["guest_stall"]),
            (f"{label}: kernel threads made urgent by their own bound", m["totals"].get("kthread_guard", 0),
             "(printed)", True),
            (f"{label}: early whole-queue walks for a kernel thread", m["totals"].get("kthread_walk", 0),
             "(printed)", True),
            # The hog's own view adds the emulator: single-threaded TCG can
            # leave a vCPU unrun for a whole turn the kernel gave, so a hog
            # sees whole guard periods without progress (k s with exactly k
            # turns of ~4 ms each, traced). Bounded far inside the 30 s
            # watchdog; printed against the 3 s the hog would see on metal.
            (f"{label}: longest RR hog stall (hog's view)", f"{m['max_stall_rr']:.2f} s",
             "< 3 s on metal (fails > 15 s)", m["max_stall_rr"] < 15.0),
            (f"{label}: RR hogs that reported", m["reported"], "all", m["reported"] == n),
            (f"{label}: RR hogs that never ran", m["rr_never_ran"], "0", m["rr_never_ran"] == 0),
            (f"{label}: FIFO hogs ran", [pct(x) for x in m["fifo_shares"]], "> 0 each",
             all(x > 0 for x in m["fifo_shares"])),
            (f"{label}: guard activations", m["totals"].get("guard", 0), "> 0", m["totals"].get("guard", 0) > 0),
            # The guard's walk costs O(1) per run: the first 64 tasks of
            # each queue, all of them 4 times a second (before: every
            # queued task at every run, 50-100 runs a second).
            (f"{label}: queued tasks the guard looked at per run",
             f"{looked_per_run(m['totals']):.1f} ({m['totals'].get('guard_runs', 0)} runs)",
             f"< {n // 2}" if n > 128 else "(printed)",
             0 < looked_per_run(m["totals"]) < (n // 2 if n > 128 else n + 64)),
            # Waking kernel threads (the grace-period kthread) and
            # preempted RCU readers go first, and no kernel thread waits
            # the guard: 0.01-0.12 s measured at --guard-ms 1000; 4.8 and
            # 5.6 s behind the guard's backlog, and 1.0-3.1 s while kernel
            # threads waited the guard as RR tasks. One CI run's 1.097 s
            # at --guard-ms 1000 fits the probe's own wait read as grace
            # period (see gp_probe.py), since removed.
            (f"{label}: longest RCU grace period (membarrier)", f"{m['gp'].get('max_s') or 99:.3f} s",
             "< 1 s (1.0-5.6 s before)", (m["gp"].get("max_s") or 99) < 1.0),
            # Calls whose end the probe could not time (it waited for the
            # CPU between its clock and schedstat reads) are dropped.
            (f"{label}: grace periods timed (dropped)", (m["gp"].get("n", 0), m["gp"].get("dropped")), ">= 1",
             m["gp"].get("n", 0) >= 1),
            (f"{label}: state during (no ejection)", m["state_during"][0], "enabled",
             m["state_during"][0] == "enabled"),
            (f"{label}: daemon alive after 25 s", m["daemon_alive"], "True", m["daemon_alive"]),
            (f"{label}: exit status", m["rc"], "0", m["rc"] == 0),
        ]
    check_all(checks)


def test_exec_from_non_leader_thread(binary, tmp_path):
    r = run_scenario("exec_thread", tmp_path)
    a, b = r["rr_shares"]
    check_all([
        ("new images are the hog (comm)", r["comms"], "['sh', 'sh', 'sh']", r["comms"] == ["sh"] * 3),
        ("exec'd image A share at 2000/10000", pct(a), "20% +- 3", abs(a - 0.20) <= 0.03),
        ("exec'd image B share at 2000/10000", pct(b), "20% +- 3", abs(b - 0.20) <= 0.03),
        ("exec'd images' class", r["rr_classes"], "RR", r["rr_classes"] == ["RR", "RR"]),
        ("nice -5 exec'd image class", r["fifo_class"], "FIFO", r["fifo_class"] == "FIFO"),
        ("nice -5 exec'd image share", pct(r["fifo_share"]), ">= 90%", r["fifo_share"] >= 0.90),
        ("state during", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_fifo_order_requeue_and_fork(binary, tmp_path):
    r = run_scenario("fifo_order", tmp_path)
    gap = r["b_gap"]
    bw = r["b_wait"] if r["b_wait"] is not None else 99.0
    check_all([
        ("older FIFO waiter: first run after", f"{bw:.2f} s", "<= 1.5 s", bw <= 1.5),
        ("older waiter runs before the reniced/re-pinned one", r["b_before_c"], "True", r["b_before_c"]),
        ("reniced waiter ran too", r["c_wait"] is not None, "True", r["c_wait"] is not None),
        # The rotation bound, as the scheduler records it: B's longest wait
        # from runnable to running (MAX_WAIT), its first wait included.
        ("older waiter's longest wait (scheduler's MAX_WAIT)", f"{r['b_max_wait']:.2f} s", "<= 1.6 s",
         r["b_max_wait"] <= 1.6),
        # The hog's own view adds the emulator (a vCPU the host left unrun:
        # 1.03-1.10 s in most runs, 2.12 s once with the host loaded).
        ("older waiter's longest stall after its first run (hog's view)", f"{gap:.2f} s",
         "<= 1.6 s on metal (fails > 4 s)", gap <= 4.0),
        ("FIFO tasks made urgent after 1 s", r["totals"].get("fifo_rotate", 0), "> 0",
         r["totals"].get("fifo_rotate", 0) > 0),
        ("state during", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_cpu_hotplug_restart(binary, tmp_path):
    r = run_scenario("hotplug", tmp_path)
    checks = [("`set --quota-us 3000` before hotplug", r["set"], "0", r["set"] == 0)]
    for st in r["steps"]:
        checks += [
            (f"cpu1 online={st['online']}: daemon re-attached", st["reattached"], "True", st["reattached"]),
            (f"cpu1 online={st['online']}: state", st["state"][0], "enabled", st["state"][0] == "enabled"),
        ]
    checks += [
        ("config kept across restarts (show)", "quota=3000us" in r["show"], "True", "quota=3000us" in r["show"]),
        ("hog share after restarts (3000/10000)", pct(r["share_after"]), "30% +- 4",
         abs(r["share_after"] - 0.30) <= 0.04),
        ("exit status after SIGINT", r["rc"], "0", r["rc"] == 0),
    ]
    check_all(checks)


def test_hotplug_under_throttling(binary, tmp_path):
    """CPU hotplug while 200 threads are parked by a 1% cgroup limit, beside
    a `--cgroup` 20% hog, a `cpu.max` 50% hog and a FIFO hog: each of the
    four hotplugs ejects the scheduler with tasks in its queues."""
    r = run_scenario("hotplug_throttled", tmp_path)
    print("kernel's sched_ext lines:\n  " + "\n  ".join(r["dmesg_sched_ext"]))
    checks = [("threads in the 1% group", r["threads"], "200", r["threads"] == 200)]
    for n, st in enumerate(r["steps"], 1):
        checks += [
            (f"hotplug {n} (cpu1 online={st['online']}): daemon re-attached", st["reattached"], "True",
             st["reattached"]),
            (f"hotplug {n}: state", st["state"][0], "enabled", st["state"][0] == "enabled"),
        ]
    # Re-applied after four restarts: the command line's limit by the
    # daemon, cpu.max by the kernel (ops.cgroup_init()). Exactness is
    # test_cgroup_limits_exact's; a limit lost would read 50-100%.
    for rel, want in [("hpt_cli", 0.20), ("hpt_max", 0.50)]:
        got = r["shares"][rel]
        checks.append((f"{rel} hog after the hotplugs", pct(got), f"{pct(want)} +- 5% rel",
                       abs(got - want) <= 0.05 * want))
    bad = kernel_trouble(r["dmesg_sched_ext"])
    checks += [
        ("threads of the 1% group that did not run in 28 s", len(r["unrun"]), "0", not r["unrun"]),
        ("state at the end", r["state_end"][0], "enabled", r["state_end"][0] == "enabled"),
        ("kernel: no stall or runtime error", bad, "[]", not bad),
        ("exit status after SIGINT", r["rc"], "0", r["rc"] == 0),
    ]
    check_all(checks)


def sampled_to_the_end(m):
    """The state samples of a stress_smoke run cover stress-ng's run, from
    its start to its end, but for the last 3 s. They are taken by a Python
    loop at nice 0 beside stress-ng's aggressive workers, whose turns come
    late, so at least 5 are asked for, not one per 0.5 s. stress-ng starts
    once the scheduler is attached, however long the program took to
    verify and load (61 s on a slow CI host, stop 58)."""
    s = m["samples"]
    return len(s) >= 5 and s[-1][0] >= min(m["stress_s"], 45.0) - 3.0


def stress_ng_ok(m):
    """stress-ng succeeded: exit 0, or exit 2 whose only failures are one
    torn bogo-ops counter of its own (its count and the copy it checks it
    against one apart, and the hash over them): an instance killed between
    the two updates at the end of its run, which stress-ng's metrics-check
    reports as a failed stressor. The policy churn run hit it once in CI
    (resched, 3102 vs 3101) with every state sample `enabled`. Any other
    failure line still fails."""
    if m["stress_rc"] == 0:
        return True
    if m["stress_rc"] != 2:
        return False
    fails = [ln for ln in m["stress_out"].splitlines() if ln.startswith("stress-ng: fail:")]
    torn = re.compile(r"instance \d+ corrupted bogo-ops counter, (\d+) vs (\d+)$")
    counters = [torn.search(ln) for ln in fails]
    pairs = [(int(c.group(1)), int(c.group(2))) for c in counters if c]
    return bool(pairs) and all(abs(a - b) <= 1 for a, b in pairs) and all(
        torn.search(ln) or "hash error in bogo-ops counter and run flag" in ln
        or "metrics-check: stressor metrics corrupted" in ln for ln in fails)


def test_stress_ng_smoke(binary, tmp_path):
    r = run_scenario("stress_smoke", tmp_path)
    checks = []
    for label, m in r.items():
        s = m["samples"]
        checks += [
            (f"{label}: attached", m["attached"], "True", m["attached"]),
            (f"{label}: stress-ng exit status", m["stress_rc"], "0 (or 2 for a torn counter alone)",
             stress_ng_ok(m)),
            (f"{label}: state while stress-ng ran (31 s, from the attach)",
             f"{sorted({st for _, st in s})}, {len(s)} samples to {s[-1][0] if s else 0:.1f} s"
             f" (attached after {m['attach_s']:.1f} s)", "['enabled'], to 3 s before its end",
             {st for _, st in s} == {"enabled"} and sampled_to_the_end(m)),
            (f"{label}: scheduler exit status after SIGTERM (as from timeout)", m["sched_rc"], "0",
             m["sched_rc"] == 0),
        ]
        if m["check_ops"]:
            ops = {s: bogo_ops(m["stress_out"], s) for s in m["check_ops"]}
            checks.append((f"{label}: bogo ops of the churning stressors", ops, "> 0 each",
                           all(ops.values())))
    check_all(checks)
    for m in r.values():
        print(f"attach took {m['attach_s']:.1f} s, stress-ng {m['stress_s']:.1f} s")
        print(m["stress_out"][-1500:])


def test_task_storm(binary, tmp_path):
    r = run_scenario("storm", tmp_path)
    counts = r["tasks_counts"]
    before, peak, after = (counts[0], max(counts), counts[-1]) if counts else (0, 0, 10**9)
    check_all([
        ("storm completed (4000 forks, 5000 threads, 1000 execs)", r["storm"]["stdout"].strip(),
         "all", r["storm"]["rc"] == 0),
        ("tasks tracked before / peak / after", (before, peak, after), "after <= before + 20",
         after <= before + 20),
        ("state during", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])
    print(f"storm took {r['seconds']:.1f} s")


def test_task_storm_in_limited_group(binary, tmp_path):
    """test_task_storm's storm, smaller, in a cgroup limited to 20% whose hog
    keeps it out of quota: forks into a throttled group, exits from it."""
    r = run_scenario("storm_limited", tmp_path)
    counts = r["tasks_counts"]
    before, peak, after = (counts[0], max(counts), counts[-1]) if counts else (0, 0, 10**9)
    bad = kernel_trouble(r["dmesg_sched_ext"])
    print(f"storm in a 20% group took {r['seconds']:.1f} s")
    check_all([
        ("storm completed (150 forks, 150 threads, 30 execs)", r["storm"]["stdout"].strip(),
         "all", r["storm"]["rc"] == 0),
        # cpu.stat: the kernel's clock, which can only miss turns here
        # (README, "The kernel's runtime clock under sched_ext"); a lost
        # limit would read 50-100%.
        ("group's share during the storm (cpu.stat)", pct(r["share"]), "<= 22%", r["share"] <= 0.22),
        ("tasks tracked before / peak / after", (before, peak, after), "after <= before + 20",
         after <= before + 20),
        ("state after", r["state_after"][0], "enabled", r["state_after"][0] == "enabled"),
        ("kernel: no stall or runtime error", bad, "[]", not bad),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_eight_cpus_two_llcs(binary, tmp_path):
    r = run_scenario("topology8", tmp_path, env={"VM_CPUS": "8", "VM_SMP": "sockets=2,cores=4,threads=1",
                                                 "VM_MEMORY": "3G"})
    eq = r["equal_shares"]
    mean = sum(eq) / len(eq)
    ws = r["weighted_shares"]
    bf = r["beside_fifo_shares"]
    ff = r["fifo_beside_rr_shares"]
    nw = r["narrow_shares"]
    fr = r["pair_fracs"]
    q = r["quota_shares"]
    qp = r["quota_pinned_shares"]
    lr = r["quota_totals"].get("llc_rescue", 0)
    # Not asserted: with 8 vCPUs emulated on one host thread a vCPU's ticks
    # come 20+ ms apart, each charge above a CPU's 4.7 ms slice, so few are
    # held (162 of 1471 in one run; 2 vCPUs: test_cgroup_limits).
    t = r["wide_totals"]
    print(f"wide group: {t.get('cg_held', 0)} charges held, {t.get('cg_locked', 0)} under the lock")
    qt = r["quota_totals"]
    print(f"quota phases: {qt.get('llc_steal', 0)} tasks stolen from the other LLC, {qt.get('llc_pull', 0)} pulled")
    check_all([
        ("scheduler sees 2 LLCs", r["topology_log"], "2 LLCs", any("in 2 LLCs" in l for l in r["topology_log"])),
        ("16 nice 0 hogs: equal shares", f"{pct(min(eq))}..{pct(max(eq))}",
         "within 10% of mean", all(abs(x - mean) <= 0.10 * mean for x in eq)),
        ("16 hogs use the 8 CPUs", pct(sum(eq) / 8), ">= 90%", sum(eq) / 8 >= 0.90),
        # Ideal (capped at one CPU each): 100% and 33.3%; the default
        # scheduler read 94.9-96.5% and 32.9-40.7%; balanced by task count
        # (the build before 2026-12-06, late) 83.5-99.8% and 28.4-49.3%.
        ("6 nice 0 beside 6 nice 5 hogs: nice 0", f"{pct(min(ws[:6]))}..{pct(max(ws[:6]))}",
         ">= 90% each", min(ws[:6]) >= 0.90),
        ("the same: nice 5", f"{pct(min(ws[6:]))}..{pct(max(ws[6:]))}",
         "25-42% each", all(0.25 <= x <= 0.42 for x in ws[6:])),
        # Balanced: 50% each (49.7-50.1% in one run; a vCPU stall can
        # shift a few tasks for a second or two: 43-61% in another).
        # Without the LLCs balancing such tasks: 3 at 100%, 9 at 33%.
        # Balanced by waiting tasks (before 2026-12-06, late): 35.2-64.5%
        # and 42.0-65.2% in two runs; by weight, with LLC 0's CPUs counted
        # as taken: 48.3-67.6% in seven (the build and two drafts).
        ("8 RR hogs beside a FIFO hog on each CPU of LLC 0", f"{pct(min(bf))}..{pct(max(bf))}",
         ">= 45% each", min(bf) >= 0.45),
        # The FIFO hogs lose only the RR budget's turns (5%) and the
        # guard's: 81.8-84.1% in one run of four before 2026-12-07 (an RR
        # hog left in LLC 0 on its budget turns, each overrunning the
        # budget to the tick), 97.7-100% in the others.
        ("the FIFO hogs beside them", f"{pct(min(ff))}..{pct(max(ff))}",
         ">= 90% each", min(ff) >= 0.90),
        ("12 hogs on CPUs 0-2,4-6: most / least", f"{pct(min(nw))}..{pct(max(nw))}",
         "<= 2x", max(nw) <= 2 * min(nw)),
        ("12 hogs use their 6 CPUs", pct(sum(nw) / 6), ">= 90%", sum(nw) / 6 >= 0.90),
        ("nice 0 part of each CPU (vs nice 5)", [pct(x) for x in fr], "75% +- 5 each",
         all(abs(x - 0.75) <= 0.05 for x in fr)),
        # Target 20% +- 3 each. On the stable guest clock (tsc=reliable,
        # 2026-11-26) 19.0-19.9% unpinned and pinned (bench/quota8.sh);
        # before, the unstable clock charged parked hogs phantom runtime
        # and 14% was the floor. A running task's runtime in
        # /proc/PID/schedstat moves only at its ticks and switches, 20 ms or
        # more apart on these vCPUs, so a 10 s window reads up to about 1
        # point high or low.
        ("8 hogs under 2000/10000 (target 20% +- 3)", f"{pct(min(q))}..{pct(max(q))}", "17%..23% each",
         all(0.17 <= x <= 0.23 for x in q)),
        ("8 hogs pinned one per CPU, same quota", f"{pct(min(qp))}..{pct(max(qp))}", "17%..23% each",
         all(0.17 <= x <= 0.23 for x in qp)),
        # No LLC timer lost (the sweep re-arms one 50 ms past its deadline):
        # 0-3 per 14 s of hogs in bench/quota8.sh before every timer
        # callback restarted its timer (timer_arm()), 0 in 6 runs after.
        # A timer the emulator fires 50 ms late counts too: 1 in a CI run
        # of b2fb02f on a slow host (its shares 19.8-20.2%), 2 in a run of
        # bbb9fec under 4-12% host steal (8 vCPUs take turns on one host
        # thread). A lost timer that stays lost shows in the shares above;
        # test_llc_lost_timer checks the rescue itself.
        ("LLC timers re-armed by the sweep (llc_rescue)", lr, "<= 2 (0-3 before timer_arm())", lr <= 2),
        # Idle CPUs take queued work from the other LLC (steal(), led by
        # the work hints of queues.bpf.h): 483 in one run before the
        # hints. None would mean the hints hide the other LLC's queues.
        ("quota phases: tasks taken from the other LLC (llc_steal)", qt.get("llc_steal", 0), "> 0",
         qt.get("llc_steal", 0) > 0),
        # ... and pass over its empty queues without looking them up.
        ("quota phases: other LLC's queues skipped on their hint (hint_skip)", qt.get("hint_skip", 0),
         "> 0", qt.get("hint_skip", 0) > 0),
        # Issue target +- 1% (1.4982-1.5150 seen over 12 s); under 8-vCPU
        # TCG noise the failing limit is 2%, over 20 s.
        ("cpu.max 150000/100000, 4 busy threads (target +- 1%)", f"{r['wide_cpus']:.4f} CPUs", "1.5 +- 2%",
         abs(r["wide_cpus"] - 1.5) <= 0.03),
        ("exit statuses", (r["rc_equal"], r["rc_quota"], r["rc_cgroup"]), "(0, 0, 0)",
         (r["rc_equal"], r["rc_quota"], r["rc_cgroup"]) == (0, 0, 0)),
    ])


@pytest.mark.large
def test_large_host_32_cpus(binary, tmp_path):
    """32 vCPUs in 4 LLCs of 8: the per-LLC queues, stealing and
    balancing, the guard and the bandwidth timers at four times the 8-vCPU
    test's size. Under single-threaded TCG the emulator runs the 32 vCPUs
    in turn, so a vCPU often goes unrun for 100 ms or more: waits and
    wakeups are slow here, shares over 10-20 s are not. Marked `large`:
    it took 438 s of a 47 min CI run on one host and 766 s of a 76 min
    one on a slower host (2026-12-01), too close to CI's 90 minutes, so
    scripts/test.sh leaves it out unless TEST_MARKERS selects it."""
    r = run_scenario("topology_large", tmp_path, env={"VM_CPUS": "32", "VM_SMP": "sockets=4,cores=8,threads=1",
                                                      "VM_MEMORY": "4G", "VM_TIMEOUT": "1500"})
    n = r["cpus"]
    eq, base = r["equal_shares"], r["default_equal_shares"]
    mean = sum(eq) / len(eq)
    fr, q = r["pair_fracs"], r["quota_shares"]
    stalls = r["herd_stalls"]
    check_all([
        ("vCPUs", n, "32", n == 32),
        ("scheduler sees 4 LLCs", r["topology_log"], "4 LLCs", any("in 4 LLCs" in l for l in r["topology_log"])),
        # 0.464-0.499 and 0.468-0.497 in two runs. Before measure() timed
        # each pid's reads, a pass over 64 pids on a loaded guest made every
        # share seem lower (0.403-0.453).
        ("64 nice 0 hogs: equal shares", f"{pct(min(eq))}..{pct(max(eq))}", "within 10% of mean",
         all(abs(x - mean) <= 0.10 * mean for x in eq)),
        # 30.69 and 30.78 against 31.23 and 31.50 CPUs in two runs (27.7
        # against 26.0 when measured against the whole pass).
        ("64 hogs' CPU time against the default scheduler's", f"{sum(eq):.2f} / {sum(base):.2f} CPUs",
         ">= 0.95x", sum(eq) >= 0.95 * sum(base)),
        # 74.7-75.4% in the first run. With the guard making every RR task
        # that had waited 100 ms urgent, whatever its deadline, a vCPU the
        # emulator left unrun that long gave the nice 5 hog extra turns:
        # 63.6-75.9%.
        ("nice 0 part of each CPU (vs nice 5)", f"{pct(min(fr))}..{pct(max(fr))}", "75% +- 5 each",
         all(abs(x - 0.75) <= 0.05 for x in fr)),
        ("FIFO hog on each CPU of LLC 0 beside 128 RR hogs: RR hogs that never ran", r["herd_never_ran"], "0",
         r["herd_never_ran"] == 0 and len(stalls) == r["herd_n"]),
        # The hog's own view counts the time the emulator left its vCPU
        # unrun (4.1 s in the first run), as in test_guard_bounds_every_wait.
        ("  longest RR hog stall (hog's view)", f"{max(stalls):.2f} s", "< 15 s", max(stalls) < 15),
        ("  FIFO hogs ran", f"{pct(min(r['fifo_shares']))}..{pct(max(r['fifo_shares']))}", "> 0 each",
         min(r["fifo_shares"]) > 0),
        # As on 2 and 8 vCPUs. Before measure() timed each pid's reads on
        # their own, the scenario (an RR task under the same quota, so
        # throttled while it read 32 files) seemed to see 15-19% here;
        # 19.5-20.6% and 19.2-20.4% since; one CI run 19.4-23.2% over 10 s
        # (see scenario_topology_large), hence 20 s and bracketed reads.
        ("32 hogs under 20000/100000", f"{pct(min(q))}..{pct(max(q))}", "20% +- 3 each",
         all(abs(x - 0.20) <= 0.03 for x in q)),
        ("cpu.max 150000/100000, 8 busy threads over 4 LLCs", f"{r['wide_cpus']:.4f} CPUs", "1.5 +- 2%",
         abs(r["wide_cpus"] - 1.5) <= 0.03),
        ("state during (equal, guard)", (r["state_equal"][0], r["state_guard"][0]), "enabled",
         r["state_equal"][0] == r["state_guard"][0] == "enabled"),
        ("exit statuses", (r["rc_equal"], r["rc_guard"], r["rc_quota"], r["rc_cgroup"]), "(0, 0, 0, 0)",
         (r["rc_equal"], r["rc_guard"], r["rc_quota"], r["rc_cgroup"]) == (0, 0, 0, 0)),
    ])


def held_check(group, totals):
    """Per-CPU runtime slices (cgroups.bpf.h): a group whose quota is
    several slices per CPU charges a good part of its runs without its lock
    (held on the CPU, charged later together). CPU hogs under HZ=250 hold
    one 4 ms tick's runtime of each 5 ms slice, so about every other charge
    is held, less near the end of each period, where every charge takes
    the lock (exact throttling)."""
    held, locked = totals.get("cg_held", 0), totals.get("cg_locked", 0)
    return (f"{group}: charges held on their CPU, without the lock", f"{held} of {held + locked}", ">= 1/4",
            held > 0 and 4 * held >= held + locked)


def test_cgroup_limits(binary, tmp_path):
    """Cgroup limits from --cgroup and cpu.max. Each share checked to 1%
    relative is the median of 3 windows one after another (guest.py
    steady()): under host steal one window read 18.9% for 20%."""
    r = run_scenario("cgroups", tmp_path)
    s = r["shares"]
    docker = "system.slice/docker-fq0123.scope"

    def within(x, target, rel):
        return abs(x - target) <= target * rel

    rows = r["rows_fq_a"]
    last = rows[-1] if rows else {}
    checks = [
        ("fq_a 2000/10000, 2 hogs: group share", pct(s["fq_a"]), "20% +- 1% rel", within(s["fq_a"], 0.20, 0.01)),
        (f"{docker} 20000/100000", pct(s[docker]), "20% +- 1% rel", within(s[docker], 0.20, 0.01)),
        ("hierarchy: fq_p 30%, children 50% each: the pair",
         pct(s["fq_p/c1"] + s["fq_p/c2"]), "30% +- 1% rel", within(s["fq_p/c1"] + s["fq_p/c2"], 0.30, 0.01)),
        ("hierarchy: the children split it evenly", f"{pct(s['fq_p/c1'])}/{pct(s['fq_p/c2'])}",
         "15% +- 3 each", all(abs(x - 0.15) <= 0.03 for x in (s["fq_p/c1"], s["fq_p/c2"]))),
        ("set --cgroup fq_a=5000/10000: exit status", r["set"]["rc"], "0", r["set"]["rc"] == 0),
        ("fq_a after set", pct(r["fq_a_after_set"]), "50% +- 1% rel", within(r["fq_a_after_set"], 0.50, 0.01)),
        ("limited cgroup removed: daemon says so",
         "was removed; its limit is forgotten" in r["stderr"], "True",
         "was removed; its limit is forgotten" in r["stderr"]),
        ("state after the removal", r["state_after_rmdir"][0], "enabled", r["state_after_rmdir"][0] == "enabled"),
        ("fq_a stats rows (cpu.stat fields)", len(rows), ">= 5",
         len(rows) >= 5 and {"nr_periods", "nr_throttled", "throttled_usec", "usage_usec"} <= set(last)),
        ("fq_a nr_throttled in the final summary", last.get("nr_throttled"), "> 0",
         int(last.get("nr_throttled", 0)) > 0),
        ("exit status", r["rc"], "0", r["rc"] == 0),
        ("fq_b 150000/100000, 2 hogs on 2 vCPUs", f"{r['fq_b']:.3f} CPUs", "1.5 +- 1% rel",
         within(r["fq_b"], 1.5, 0.01)),
        ("exit status (fq_b)", r["rc_multi"], "0", r["rc_multi"] == 0),
    ]
    checks.append(held_check("fq_b", r["fq_b_totals"]))
    k = r["kernel"]
    froms = {row.get("from") for row in k["rows"]}
    checks += [
        ("cpu.max 2000 10000 before the start", pct(k["init 2000 10000"]), "20% +- 1% rel",
         within(k["init 2000 10000"], 0.20, 0.01)),
        ("cpu.max changed to 5000 10000 while running", pct(k["changed 5000 10000"]), "50% +- 1% rel",
         within(k["changed 5000 10000"], 0.50, 0.01)),
        ("set --cgroup 3000/10000 takes precedence", pct(k["cli 3000/10000 over cpu.max"]), "30% +- 1% rel",
         within(k["cli 3000/10000 over cpu.max"], 0.30, 0.01)),
        ("cpu.max max: 2 hogs unlimited", f"{k['max']:.2f} CPUs", ">= 1.8", k["max"] >= 1.8),
        ("stats rows name both sources", sorted(x for x in froms if x), "cli, cpu.max",
         {"cli", "cpu.max"} <= froms),
        ("exit status (cpu.max)", k["rc"], "0", k["rc"] == 0),
    ]
    check_all(checks)


def test_cgroup_limits_exact(binary, tmp_path):
    """Every (Q,P) pair of the issue to 1% relative, each the median of 3
    windows (guest.py steady()): a single window of the smooth 1 s pair read
    20.25% once under a loaded host."""
    r = run_scenario("cgroup_exact", tmp_path)

    def near(share, want):
        return abs(share - want) <= 0.01 * want

    def seen(share, windows, charged):
        """A share shown with each window and what the scheduler charged
        the group over them (its stats rows' usage_usec; None: no rows)."""
        wins = "/".join(f"{w:.4f}" for w in windows)
        return f"{share:.4f} CPUs (windows {wins}; charged " + \
            (f"{charged:.4f})" if charged is not None else "?)")

    checks = []
    for src in ["cli", "kernel"]:
        for pair, share in r[src].items():
            q, p = map(int, pair.split("/"))
            want = q / p
            # Shown with it: each window, and what the scheduler charged
            # the group over the three (its stats rows' usage_usec): a
            # charge that matches the target beside a share that misses
            # it is charging that disagrees with the kernel's switches.
            wins = [w[pair] for w in r.get(f"{src}_windows", []) if pair in w]
            shown = seen(share, wins, r.get(f"{src}_charged", {}).get(pair))
            checks.append((f"{src}: {pair} share", shown, f"{want:.3f} +- 1% rel",
                           near(share, want)))
    b, nb = r["burst_row"], r["noburst_row"]
    checks += [
        ("cpu.max.burst 20000, idle then busy: nr_bursts", b.get("nr_bursts"), ">= 1",
         int(b.get("nr_bursts", 0)) >= 1),
        # The saved 20 ms are drawn once after the idle time. Under TCG a
        # late release can leave a later period under-used, and drawing the
        # quota it saved counts as a burst too, as in the kernel (one CI run:
        # 4 bursts, 40000 us; the share below stayed 20.1%).
        ("  its burst_usec (the saved 20 ms, then any quota saved later)", b.get("burst_usec"),
         "15000 .. 20000 x nr_bursts",
         15000 <= int(b.get("burst_usec", 0)) <= 20000 * max(int(b.get("nr_bursts", 0)), 1)),
        ("  its burst shown", b.get("burst"), "20000", b.get("burst") == "20000"),
        ("  its share after (6 s, 20% + the one burst)", pct(r["burst_share"]), "20% +- 1 point",
         abs(r["burst_share"] - 0.20) <= 0.01),
        ("no burst set, always busy: nr_bursts", nb.get("nr_bursts"), "0", nb.get("nr_bursts") == "0"),
        # Its turns after a block are left to the tick: an overrun, up to a
        # tick, is charged as debt, so the share holds. Measured alone: a
        # fresh-clone CI run of 2b389bf (2026-12-06), beside the hogs, read
        # windows of 0.1001, 0.1025 and 0.1047 while the scheduler charged
        # 0.0998. bench/switch-gap-report.md found why: the scheduler
        # charges its own sched_switch program's time within 0.15%, but
        # beside a hog the emulator stops the task's vCPU for up to a tick
        # between that program and ftrace's probe as the task leaves the
        # CPU, and ftrace counts the stretch as the task's (+0.7% to +4.8%
        # over 20 s in six runs); alone the two agree within 0.35%.
        ("wakeup-driven (0.3 ms turns, 0.1 ms sleeps) at 1000/10000: share",
         seen(r["wake_share"], r["wake_windows"], r["wake_charged"]["wake"]),
         "0.100 +- 2% rel", abs(r["wake_share"] - 0.1) <= 0.002),
    ]
    strict, smooth = r["strict_1s_row"], r["smooth_row"]

    def stretch_ms(row, totals=None):
        """Mean throttled stretch of a group: its throttled time over its
        throttles. nr_throttled counts whole periods (as cpu.stat does),
        one throttle each unless smoothed; a smoothed group, alone under
        its daemon, takes its daemon's count of cgroup throttles."""
        n = int(totals["cg_throttles"] if totals else row.get("nr_throttled", 0))
        return int(row.get("throttled_usec", 0)) / 1000 / n if n else 0.0

    checks += [
        ("smooth 10 ms, 200000/1000000 (the group's hog alone): share",
         seen(r["smooth_share"], r["smooth_windows"], r["smooth_charged"]["group"]),
         "0.200 +- 1% rel", near(r["smooth_share"], 0.20)),
        ("smooth 10 ms, per-task --quota-us 300000 per 1 s (its hog alone): share", pct(r["smooth_task_share"]),
         "30% +- 1% rel", near(r["smooth_task_share"], 0.30)),
        # About one sub-period. The 2 ms sub-quota is half a tick at
        # HZ 250, so the tick ends its turns (tick_cuts_quota()): a turn
        # runs 2-4 ms, and at 20% a 4 ms turn waits 16 ms, the most when
        # the ticks come on time. 12.4 and 13.8 ms in the first runs (2026-12-03);
        # 6.6-6.8 ms when a slice timer ended every turn at 2 ms, 7.7-12.3
        # ms in 12 CI runs before the debt spreading, 15.7-15.9 ms with the
        # host loaded (late timers). The emulator's late ticks lengthen
        # turns beyond 4 ms: 24 ms is a 6 ms turn's wait.
        ("smooth: mean throttled stretch", f"{stretch_ms(smooth, r['smooth_totals']):.1f} ms",
         "<= 24 ms (a 6 ms turn's wait)", 0 < stretch_ms(smooth, r["smooth_totals"]) <= 24.0),
        # cpu.stat's meaning: whole 1 s periods, each throttled (one a
        # second of the group's life), not the sub-periods (about 100 a
        # second before). The last stats row can lag the end by a period.
        ("smooth: nr_periods and nr_throttled count whole periods",
         (smooth.get("nr_periods"), smooth.get("nr_throttled")),
         f"{0.7 * r['smooth_run_s']:.0f}..{r['smooth_run_s'] + 2:.0f} each (one a second)",
         all(0.7 * r["smooth_run_s"] <= int(smooth.get(k, 0)) <= r["smooth_run_s"] + 2
             for k in ("nr_periods", "nr_throttled"))),
        ("strict (no smoothing), same limit: mean stretch", f"{stretch_ms(strict):.1f} ms", ">= 500 ms",
         stretch_ms(strict) >= 500.0),
        ("smooth shown in the config line", "smooth=10000us" in r["smooth_show"], "True",
         "smooth=10000us" in r["smooth_show"]),
        ("smooth 2 ms, 2000/10000, a pinned hog alone: share", pct(r["fine_share"]),
         "20% +- 1% rel", near(r["fine_share"], 0.20)),
        # 2 ms of each 2.5 ms sub-period when a turn ends on time; TCG fires
        # the slice timer late (up to 3.6 ms seen), and the overrun is paid
        # for in stall: 2.0-8.5 ms in 7 runs. A turn renewed on the
        # kernel's lagging runtime clock ran on to the next tick:
        # 11.8-12.1 ms in 4 runs before charge_lagging(). The margin is thin
        # both ways: the emulator's timer lateness sets it.
        ("  its mean throttled stretch", f"{stretch_ms(r['fine_row'], r['fine_totals']):.1f} ms",
         "<= 11 ms (before the fix: 11.8-12.1)", 0 < stretch_ms(r["fine_row"], r["fine_totals"]) <= 11.0),
    ]
    took = sorted(r["bursty_took"])
    med = took[len(took) // 2] if took else 0.0
    checks += [
        # Paced at 1 ms per 5 ms, a 10 ms job took 39.8 ms; the sub-periods
        # slept through now save up to a quota, and it runs through.
        ("smooth 5 ms, 20000/100000: a 10 ms job after each 100 ms asleep: median time",
         f"{med:.1f} ms ({len(took)} jobs)", "<= 20 ms (without saving: 39.8)", len(took) == 30 and 0 < med <= 20.0),
    ]
    for k in ["rc_cli", "rc_kernel", "rc_smooth", "rc_fine", "rc_bursty"]:
        checks.append((f"{k} (exit status)", r[k], "0", r[k] == 0))
    check_all(checks)


def test_cgroup_fifo_task(binary, tmp_path):
    """A FIFO task in a limited cgroup: its turn is cut to the group's
    tokens and ended by the slice timer, not at the next 4 ms tick, and the
    group gets exactly its quota (the median of three 10 s windows, as the
    other exactness targets: one window read 9.9% under a CI host's
    steal). (Its run lengths are printed, not asserted: TCG fires the
    guest's timers 0.3-6 ms late, so the median run is 0.9-1.3 ms and the
    90th percentile 4 ms either way.)"""
    r = run_scenario("cgroup_fifo", tmp_path)
    runs = r["runs_s"]
    med = runs[len(runs) // 2] if runs else 99.0
    p90 = runs[len(runs) // 10] if runs else 99.0
    n = r["nr_runs"]
    timer = r["totals"].get("slice_timer", 0)
    print(f"runs: {n}, median {med * 1000:.2f} ms, 90th percentile {p90 * 1000:.2f} ms (TCG's late timers)")
    check_all([
        ("nice -5 hog's class", r["class"], "FIFO", r["class"] == "FIFO"),
        ("cgroup 1000/10000: its share", pct(r["share"]), "10% +- 1% rel", abs(r["share"] - 0.10) <= 0.001),
        ("turns ended by the slice timer", timer, ">= 300 (one per run)", timer >= 300),
        ("scheduler while it ran", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_cgroup_lost_release_timer(binary, tmp_path):
    """A limited cgroup's release timer lost once every 3 s (hidden hook):
    the sweep re-arms it within about a second, so the group keeps most
    of its quota and nothing nears the watchdog. The hook also fails one
    park's start of the timer every 3 s (as an allocation failure of the
    kernel's deferred start would): counted, and the scheduler goes on."""
    r = run_scenario("cgroup_lost_timer", tmp_path)
    rescues = r["totals"].get("cg_rescue", 0)
    fails = r["totals"].get("timer_fail", 0)
    check_all([
        ("2000/10000 group, timer lost every 3 s: share", pct(r["share"]), ">= 10% (20% less the lost seconds)",
         r["share"] >= 0.10),
        # One task in the group: nothing else parks and re-arms a lost timer
        # before the sweep looks (with two, a CI run of 2026-11-26 saw 0
        # rescues; 4-5 with one). Without the sweep the group stalled and
        # the watchdog ejected the scheduler.
        ("lost timers re-armed by the sweep (cg_rescue)", rescues, ">= 1", rescues >= 1),
        # The hook also fails a park's timer start once every 3 s: that
        # ended the scheduler (scx_bpf_error()) before 2026-11-26.
        ("failed timer starts survived (timer_fail)", fails, ">= 2", fails >= 2),
        ("scheduler after", r["state_after"][0], "disabled (exited cleanly)", r["state_after"][0] == "disabled"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_llc_lost_timer(binary, tmp_path):
    """An LLC's housekeeping timer lost once every 2 s (hidden hook: it
    leaves a deadline 20 ms ahead that nothing is armed for, as lost timers
    were found) while its hogs, pinned one per CPU under a 2000/10000
    quota, are parked and every CPU is idle: llc_sweep() re-arms it 50 ms
    past that deadline from whichever CPU next ticks or starts a task
    (llc_rescue 8 in 12 s, 18.7%; lost every 5 s it read 2, and none in
    a CI run under host steal, a busy CPU's tick having re-armed each loss
    first). A parker trusts the kept deadline, so without the sweep
    nothing re-arms it while every hog is parked (on 8
    vCPUs with a stable clock: 42 s, then the watchdog; 6.8% with the
    earlier hook, which left no deadline, so a tick re-armed it)."""
    r = run_scenario("llc_lost_timer", tmp_path)
    shares = r["shares"]
    rescues = r["totals"].get("llc_rescue", 0)
    check_all([
        ("pinned hogs, timer lost every 2 s: lowest share", pct(min(shares)), ">= 14% (20%, 0.6 s per loss)",
         min(shares) >= 0.14),
        ("highest share", pct(max(shares)), "23% (20% + 3)", max(shares) <= 0.23),
        ("lost timers re-armed by the sweep (llc_rescue)", rescues, ">= 1", rescues >= 1),
        ("scheduler while it ran", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_release_returns_to_its_cpu(binary, tmp_path):
    """An unpinned hog under 2000/10000, the other CPU idle, is throttled
    and released about 100 times a second: it resumes on the CPU it ran
    on (its cache), as CFS unthrottles on the same CPU, by its own quota
    and by a cgroup's cpu.max. Before, the release kicked whichever idle
    CPU the kernel picked, which rotates: 181 and 156 CPU changes in the
    6 s against 527 and 436 throttles in the whole run (0.34, 0.36); now
    0 and 2."""
    r = run_scenario("release_home", tmp_path)
    checks = []
    for kind in ("task", "cgroup"):
        x = r[kind]
        rate = x["moved"] / max(x["throttles"], 1)
        checks += [
            (f"{kind} limit: share", pct(x["share"]), "20% +- 3", abs(x["share"] - 0.20) <= 0.03),
            (f"{kind} limit: throttles (whole run)", x["throttles"], ">= 300", x["throttles"] >= 300),
            (f"{kind} limit: CPU changes per throttle in 6 s", f"{x['moved']} ({rate:.3f})", "<= 0.1 (0.34-0.36 before)",
             rate <= 0.1),
            (f"{kind} limit: exit status", x["rc"], "0", x["rc"] == 0),
        ]
    check_all(checks)


def cgroup_gone_checks(r):
    """Checks of a cgroup_gone scenario (see tests/vm/guest.py)."""
    (off0, cli0), (off1, cli1) = r["limited"], r["after"]
    errors = [x for x in r["dmesg_sched_ext"] if "disabled" in x and "unregistered" not in x]
    return [
        ("cpu.max 2000/100000 group before", pct(off0), "2% +- 1", abs(off0 - 0.02) <= 0.01),
        ("scheduler after the controller went", r["state_after"][0], "enabled",
         r["state_after"][0] == "enabled"),
        ("group out of the cpu controller (4 hogs, 2 vCPUs)", pct(off1), ">= 100% (unlimited)", off1 >= 1.0),
        ("scheduler at the end", r["state_end"][0], "enabled", r["state_end"][0] == "enabled"),
        ("kernel: no sched_ext error", errors, "[]", not errors),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ], cli0, cli1


def test_cgroup_gone_under_throttle(binary, tmp_path):
    """The cpu controller turned off above a group limited by its cpu.max
    at 2000/100000 (4 hogs) while they are throttled: the group leaves the
    controller with its tasks parked on its queue. They are let go
    (unlimited now) and the scheduler stays attached (it was ejected:
    "attempting to destroy in-use dsq"). A sibling limited to 10000/100000
    by --cgroup keeps its limit."""
    r = run_scenario("cgroup_gone", tmp_path)
    checks, cli0, cli1 = cgroup_gone_checks(r)
    gone = r["totals"].get("cg_gone", 0)
    check_all(checks + [
        ("--cgroup 10000/100000 group before", pct(cli0), "10% +- 2", abs(cli0 - 0.10) <= 0.02),
        ("--cgroup group after", pct(cli1), "10% +- 2", abs(cli1 - 0.10) <= 0.02),
        ("queues of the groups that left dropped (cg_gone)", gone, ">= 2", gone >= 2),
    ])


def test_cgroup_gone_lost_start(binary, tmp_path):
    """As above, but every start of a release timer made as a group leaves
    the cpu controller fails (hidden hook --test-lose-cg-timers; such a
    failure ended the scheduler with scx_bpf_error() before 2026-11-27 if
    tasks were parked). It is counted, the parked tasks are let go all the
    same, and the sweep starts the timers of 3 more limited groups removed
    with nothing parked, which drop their queues (before, their state and
    queue stayed for good: cg_gone 2)."""
    r = run_scenario("cgroup_gone_lost_start", tmp_path)
    checks, cli0, cli1 = cgroup_gone_checks(r)
    t = r["totals"]
    check_all(checks + [
        # The hook also loses this group's timers: one re-arm and one
        # park's start every 3 s, each taken by whichever limited group
        # comes first, and each parks the group until the sweep (at most
        # CG_SWEEP_NS + SWEEP_LATE_NS, 1.05 s). A 5 s window can hold 4
        # such losses (4.2 s): 10% of the 0.8 s left is 1.6%. CI runs read
        # 10.0%, 7.5% and 4.9% before (the last failed a 5% bound that did
        # not count both hooks), 9.9-10.0% after. The limit must hold.
        ("--cgroup 10000/100000 group (timers lost) before, after", f"{pct(cli0)}, {pct(cli1)}",
         "1.5%-12% (10%, less up to 4 lost seconds in 5)",
         min(cli0, cli1) >= 0.015 and max(cli0, cli1) <= 0.12),
        ("failed starts as groups left (timer_fail)", t.get("timer_fail", 0), ">= 5 (2 + 3 groups)",
         t.get("timer_fail", 0) >= 5),
        ("queues dropped: 2 groups that left, 3 removed (cg_gone)", t.get("cg_gone", 0), ">= 5",
         t.get("cg_gone", 0) >= 5),
    ])


def test_killed_groups_exit_at_once(binary, tmp_path):
    """Tasks of throttled groups that are killed die at once: a cpu.max
    1000/1000000 group of 208 hog threads (a 200-thread process and 8
    others) emptied by cgroup.kill, and a 20-thread hog of a --cgroup
    1000/1000000 group sent SIGTERM, each hold no thread within 2 s
    (measured 0.01-0.07 s; before, 10-30 s: every parked thread waited for
    its group's tokens to run its exit, as under CFS bandwidth control)."""
    r = run_scenario("killed_groups", tmp_path)
    kern, cli = r["share"]
    released = r["totals"].get("killed_release", 0)
    errors = [x for x in r["dmesg_sched_ext"] if "disabled" in x and "unregistered" not in x]
    check_all([
        ("threads started (200-thread, 20-thread hog)", r["threads_started"], "[200, 20]",
         r["threads_started"] == [200, 20]),
        ("threads in the groups at the kill", r["threads"], "[208, 20]", r["threads"] == [208, 20]),
        ("cpu.max 1000/1000000 group, 208 threads", pct(kern, 2), "<= 1% (throttled)", kern <= 0.01),
        ("--cgroup 1000/1000000 group, 20 threads", pct(cli, 2), "<= 1% (throttled)", cli <= 0.01),
        ("state during", r["state_during"][0], "enabled", r["state_during"][0] == "enabled"),
        ("cgroup.kill: seconds to no thread", r["kill_s"], "<= 2 (was 10-30)",
         r["kill_s"] is not None and r["kill_s"] <= 2),
        ("SIGTERM: seconds to no thread", r["term_s"], "<= 2", r["term_s"] is not None and r["term_s"] <= 2),
        ("parked tasks let go as killed (killed_release)", released, ">= 100", released >= 100),
        ("state after, at the end", f"{r['state_after'][0]}, {r['state_end'][0]}", "enabled",
         r["state_after"][0] == r["state_end"][0] == "enabled"),
        ("kernel: no sched_ext error", errors, "[]", not errors),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def lift_checks(what, lift, n, which, least):
    """Checks of one limit change while a hog's `n` threads were parked
    (scenarios quota_changed, limits_lifted): all ran within the second
    after it, its `which` ("first" or "last") thread's first run came
    within 0.1 s of the change's end, and the hog used at least `least`
    CPUs over that second."""
    first = lift[f"first_{'min' if which == 'first' else 'max'}_s"]
    bound = 0.1 + lift["act_s"]
    return [
        (f"{what}: threads that ran within 1 s (the last at)",
         f"{lift['ran']} of {lift['threads']} ({lift['first_max_s']} s)",
         f"{n} of {n}", lift["ran"] == lift["threads"] == n),
        (f"{what}: {which} thread's first run after the change (s)", first,
         f"<= {bound:.2f} (the change took {lift['act_s']} s)",
         first is not None and first <= bound),
        (f"{what}: CPUs used over the next second", lift["share"], f">= {least}",
         lift["share"] >= least),
    ]


def test_quota_changed_releases_at_once(binary, tmp_path):
    """A limit raised while its tasks are parked lets them go at once with
    a fresh quota (as a cpu.max write does under CFS), in whole 1 s periods
    (--max-stall-us 0): 8 threads at a per-task 1000/1000000 parked for
    3 s, then `set --quota-us 100000`; with that quota lifted, two cgroups
    of 4 threads, each pinned to its own CPU, at cpu.max 1000 1000000,
    their periods half a second apart, then both
    raised to 400000 1000000. Every per-task limited thread and a thread
    of each group runs within 0.1 s of the change's end (a group's others
    follow in their fair order), and each hog gets its new quota over the
    next second. Before, each waited for its release under the old limit,
    spread over that second (the 8 threads all within 0.1 s by chance:
    under 4%; at most one of the two groups)."""
    r = run_scenario("quota_changed", tmp_path)
    errors = [x for x in r["dmesg_sched_ext"] if "disabled" in x and "unregistered" not in x]
    checks = []
    for lift, n, least in zip(r["lifts"], (8, 4, 4), (0.6, 0.3, 0.3)):
        what = f"{lift['how']}, {lift['hog']}"
        # Per task: each thread's own release; per group: the group's.
        which = "last" if lift["how"].startswith("set") else "first"
        checks += [(f"{what}: change exit status", lift["rc"], "0", lift["rc"] == 0)]
        checks += lift_checks(what, lift, n, which, least)
    check_all(checks + [
        ("changes measured", len(r["lifts"]), "3", len(r["lifts"]) == 3),
        ("`set --no-quota` exit status", r["no_quota_rc"], "0", r["no_quota_rc"] == 0),
        ("state after", r["state_after"][0], "enabled", r["state_after"][0] == "enabled"),
        ("kernel: no sched_ext error", errors, "[]", not errors),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


def test_limit_lifted_releases_at_once(binary, tmp_path):
    """A limit lifted or loosened while its tasks are parked lets them go at
    once: 20-thread hogs throttled at 1000/1000000 for 3 s, then the group's
    cpu.max set to max, another's to 500000 1000000, and a --cgroup limit
    lifted by `set`: a thread runs within 0.1 s of the change's end (the
    `set` command's, for the last) and all 20 within the second after it, in
    their fair order (the last when the others have caught up with the CPU
    time it had before); before, they waited for the group's next release
    under the old limit (none ran within that second)."""
    r = run_scenario("limits_lifted", tmp_path)
    errors = [x for x in r["dmesg_sched_ext"] if "disabled" in x and "unregistered" not in x]
    checks = []
    for lift, least in zip(r["lifts"], (1.2, 0.3, 1.2)):
        checks += lift_checks(lift["how"], lift, 20, "first", least)
    check_all(checks + [
        ("`set --cgroup fql_cli=max` exit status", r["lifts"][2]["set_rc"], "0",
         r["lifts"][2]["set_rc"] == 0),
        ("state after, at the end", f"{r['state_after'][0]}, {r['state_end'][0]}", "enabled",
         r["state_after"][0] == r["state_end"][0] == "enabled"),
        ("kernel: no sched_ext error", errors, "[]", not errors),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ])


# About 8 minutes on a slow host: on demand (TEST_MARKERS=large), not in CI.
@pytest.mark.large
def test_cgroup_scale(binary, tmp_path):
    # Its 1,000-thread process: without it, the scenario ran 8 minutes and
    # read 1 runnable thread (pytest run directly, not by scripts/test.sh).
    spin = os.path.join(REPO, "target/spin")
    assert os.access(spin, os.X_OK), f"{spin} is missing: scripts/test.sh builds it from tests/vm/spin.c"
    r = run_scenario("cgroup_scale", tmp_path)
    if "spin_wait" in r:
        w = r["spin_wait"]
        print(f"the 1,000-thread process did not start: wchan {w['wchan']}, stat {w['stat']}\n"
              f"{w['stack']}\n" + "\n".join(w["blocked"]))
    print(f"2,500 mkdirs took {r['mkdir_2500_s']:.1f} s, 1,000 create/limit/remove {r['churn_s']:.1f} s")
    checks = []
    for rel, (share, want) in r["shares"].items():
        checks.append((f"2,500 cgroups: {rel} share", pct(share), f"{want * 100:.0f}% +- 1% rel",
                       abs(share - want) <= 0.01 * want))
    row = r["rows_one"][-1] if r["rows_one"] else {}
    print(f"4,100 cpu.max writes took {r['limit_4100_s']:.1f} s; the daemon said:", *r["full_warnings"], sep="\n  ")
    full = r["totals"].get("cg_full", 0)
    warns = r["full_warnings"]
    g10, g500 = r["full_share"]
    max_rows = max((n for n, _ in r["tables"]), default=0)
    max_more = max((m for _, m in r["tables"]), default=0)
    checks += [
        # 4,100 finite cpu.max, 4 past the map's 4,096: refused, counted,
        # reported (a few lines), and the limits held keep working.
        ("4,100 finite cpu.max: refusals counted (cg_full)", full, ">= 4", full >= 4),
        ("... reported by the daemon", len(warns), "1..5 lines", 1 <= len(warns) <= 5),
        ("... scheduler", r["state_full"][0], "enabled", r["state_full"][0] == "enabled"),
        ("... cpu.max 20% group still limited", pct(g10), "20% +- 3", abs(g10 - 0.20) <= 0.03),
        ("... --cgroup 20% group still limited", pct(g500), "20% +- 3", abs(g500 - 0.20) <= 0.03),
        ("1,000 cgroups created/removed under load: state", r["state_after_churn"][0], "enabled",
         r["state_after_churn"][0] == "enabled"),
        ("1% group: runnable threads", r["threads"], "1000", r["threads"] == 1000),
        ("1% group, 60 s: state at every 1 s sample", r["states_60s"], "['enabled']",
         r["states_60s"] == ["enabled"] and r["samples"] >= 50),
        # A group's parked tasks are released oldest first, as far as its
        # tokens go (1 ms per 100 ms: one turn), so between releases the
        # group gets its 1% exactly; but each of the 1,000 threads must
        # run now and then (the kernel watchdog), so a task parked 20 s is
        # released for a zero-length turn, 0.35-0.85 ms each under TCG
        # (slower on a loaded host). Those 1,000 turns per 20 s are most of
        # the share, which follows the emulation's speed: 3.8% and 8.1% in
        # 2 runs (4.4-25% in CI runs with a 10 s force window, twice the
        # turns). The test keeps failing at 25%.
        ("1% group, 60 s: share (cpu.stat)", pct(r["one_pct_share"]), "1% + forced turns (fails >= 25%)",
         r["one_pct_share"] < 0.25),
        ("1% group shown in the stats", row.get("quota"), "1000/100000", row.get("quota") == "1000/100000"),
        # With 4,096 limited (4,076 left out in a run), each second's
        # table shows the 20 busiest (--top-cgroups) and counts the rest,
        # not 4,096 lines a second.
        ("cgroup rows in a stats table", max_rows, "<= 20", 0 < max_rows <= 20),
        ("... rows it says it left out (4,096 limited)", max_more, ">= 4,000", max_more >= 4000),
        ("exit status", r["rc"], "0", r["rc"] == 0),
    ]
    check_all(checks)


def test_systemd_unit_way(binary, tmp_path):
    """dist/scx_fairquota.service's way: its ExecStart with the shipped
    environment file, only its capabilities, its KillSignal; kill -9 under
    load and a restart as Restart=on-failure does."""
    r = run_scenario("unit", tmp_path)
    caps = r["caps_tried"]
    for name, c in caps.items():
        print(f"  {name:<28} rc={c['rc']} attached={c['attached']} {c['stderr'].strip()[-200:]!r}")
    mon = [json.loads(l) for l in r["restart_monitor"].splitlines() if l.startswith("{")]
    caps_unit = " ".join(r["caps"])
    check_all([
        ("command line from the environment file", r["args"], "--stats-interval 60",
         r["args"] == ["--stats-interval", "60"]),
        ("attached with the unit's capabilities", r["attached"][0], "enabled", r["attached"][0] == "enabled"),
        ("the unit's LimitNICE", r["limit_nice"], "-20", r["limit_nice"] == "-20"),
        ("loaded at the nice it allows, under four hogs", r["load_line"][-40:], "... at nice -20",
         r["load_line"].endswith(" at nice -20")),
        ("every thread back at nice 0 once attached", r["nices_attached"], [0], r["nices_attached"] == [0]),
        (f"exit status on {r['kill_signal']}", r["rc_stop"], 0, r["rc_stop"] == 0),
        ("state after the stop signal", r["after_stop"][0], "disabled", r["after_stop"][0] == "disabled"),
        ("kill -9: back on the default scheduler", r["kill9_detach_s"], "< 1 s",
         r["kill9_detach_s"] is not None and r["kill9_detach_s"] < 1.0),
        ("kill -9: every workload alive", r["alive_after_kill9"], "all", all(r["alive_after_kill9"])),
        ("kill -9: every workload progressing", [pct(x) for x in r["shares_after_kill9"]], "> 5% each",
         all(x > 0.05 for x in r["shares_after_kill9"])),
        ("restart attaches", r["restart_state"][0], "enabled", r["restart_state"][0] == "enabled"),
        ("restart: set/show find it", r["restart_show"], 0, r["restart_show"] == 0),
        ("restart: stats socket answers", len(mon), ">= 1 JSON line", len(mon) >= 1 and "nr_tasks" in mon[0]),
        ("restart: exit status", r["rc_restart_stop"], 0, r["rc_restart_stop"] == 0),
        ("the unit's capabilities", caps_unit, "CAP_BPF CAP_PERFMON", caps_unit == "CAP_BPF CAP_PERFMON"),
        *[(f"{n}: refused, says which", (caps[n]["rc"], caps[n]["attached"], caps[n]["after"]),
           "non-zero, not attached, disabled",
           caps[n]["rc"] not in (0, None) and not caps[n]["attached"] and caps[n]["after"] == "disabled"
           and f"missing capability {n.split()[1]}" in caps[n]["stderr"])
          for n in ("without CAP_PERFMON", "without CAP_BPF")],
        ("CAP_SYS_ADMIN alone: attaches", (caps["CAP_SYS_ADMIN alone"]["rc"], caps["CAP_SYS_ADMIN alone"]["attached"]),
         "(0, True)", (caps["CAP_SYS_ADMIN alone"]["rc"], caps["CAP_SYS_ADMIN alone"]["attached"]) == (0, True)),
    ])


def test_stats_socket(binary, tmp_path):
    """The scx_stats socket under --monitor, JSON and abuse."""
    r = run_scenario("stats_socket", tmp_path)
    mon = r["monitor"]
    js = r["json_lines"]
    cg = [c for j in js for c in j.get("cgroups", []) if c.get("path") == "mon"]
    tables = mon["stdout"].split("[fairquota] t=")
    print("the last --monitor table:\n[fairquota] t=" + tables[-1])
    check_all([
        ("socket mode and owner", (r["mode"], r["uid"]), "('0o600', 0)", (r["mode"], r["uid"]) == ("0o600", 0)),
        ("--monitor: tables printed", mon["stdout"].count("[fairquota] t="), ">= 3",
         mon["stdout"].count("[fairquota] t=") >= 3 and mon["rc"] == 0),
        ("--monitor: cgroup row", "cgroup mon from=cli" in mon["stdout"], True, "cgroup mon from=cli" in mon["stdout"]),
        ("--monitor: limited cgroups counted", " cgroups=1 " in tables[-1], True, " cgroups=1 " in tables[-1]),
        ("--monitor: the tasks past --top counted", "more tasks: --top 0 shows all)" in tables[-1], True,
         "more tasks: --top 0 shows all)" in tables[-1]),
        ("--monitor --json: objects", len(js), ">= 3, all JSON",
         len(js) >= 3 and all("nr_tasks" in j for j in js)),
        ("--monitor --json --top 3: task rows of all", [(len(j.get("tasks", [])), j.get("nr_tasks")) for j in js[-1:]],
         "3 of > 3", bool(js) and all(len(j.get("tasks", [])) == 3 and j.get("nr_tasks", 0) > 3 for j in js)),
        ("JSON cgroup share (last interval)", cg[-1]["cpu_pct"] if cg else None, "20% +- 3",
         bool(cg) and abs(cg[-1]["cpu_pct"] - 20.0) <= 3.0),
        ("top=0 gives every task", r["all_tasks"], "> 10", r["all_tasks"] > 10),
        ("stats_meta", r["meta_ok"], True, r["meta_ok"]),
        ("garbage / unknown target / bad top: errno", (r["garbage"], r["unknown_target"], r["bad_top"]),
         "all non-zero", all(x != 0 for x in (r["garbage"], r["unknown_target"], r["bad_top"]))),
        ("16 MiB request: errno", r["oversized"], "non-zero", r["oversized"] != 0),
        ("half-closed partial request: an error reply", r["half_closed_reply"][:40], "errno != 0",
         json.loads(r["half_closed_reply"] or "{}").get("errno", 0) != 0),
        ("100 clients x 3 requests", r["many_clients_ok"], 300, r["many_clients_ok"] == 300),
        ("non-root client: refused", r["not_root"]["rc"], "non-zero", r["not_root"]["rc"] != 0),
        ("non-root client: says why", r["not_root"]["stderr"].strip()[-90:], "permission denied, sudo",
         "permission denied" in r["not_root"]["stderr"] and "sudo" in r["not_root"]["stderr"]),
        ("scheduler after the abuse", (r["state_after_abuse"][0], r["alive_after_abuse"]), "('enabled', True)",
         r["state_after_abuse"][0] == "enabled" and r["alive_after_abuse"]),
        ("limited hog still at its quota", pct(r["hog_share"]), "20% +- 3", abs(r["hog_share"] - 0.20) <= 0.03),
        ("exit status", r["rc"], 0, r["rc"] == 0),
        ("socket removed on exit", r["socket_after_stop"], False, not r["socket_after_stop"]),
        ("--monitor with nothing running", r["monitor_no_instance"]["rc"], "1, clear message",
         r["monitor_no_instance"]["rc"] == 1 and "start the scheduler first" in r["monitor_no_instance"]["stderr"]),
    ])


def perfetto_slices(trace):
    """Per track uuid: the (begin, end, name) slices of a parsed Perfetto
    trace; checks that every track's slices open and close in order and
    that timestamps never go back."""
    slices, open_, last = {}, {}, 0
    for p in trace.packet:
        if not p.HasField("track_event"):
            continue
        assert p.timestamp >= last, "timestamps go back"
        last = p.timestamp
        e = p.track_event
        if e.type == e.TYPE_SLICE_BEGIN:
            assert e.track_uuid not in open_, "overlapping slices on one track"
            open_[e.track_uuid] = (p.timestamp, e.name)
        elif e.type == e.TYPE_SLICE_END:
            start, name = open_.pop(e.track_uuid)
            slices.setdefault(e.track_uuid, []).append((start, p.timestamp, name))
    assert not open_, "slices left open"
    return slices


def test_trace(binary, tmp_path):
    """`scx_fairquota trace`: a Perfetto trace (parsed with Perfetto's own
    protos) and a PNG timeline that show what the scheduler did."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    r = run_scenario("trace", tmp_path)
    out = SCENARIO_OUT["trace"]
    t = r["trace"]
    trace = pb.Trace()
    trace.ParseFromString((out / "trace.pftrace").read_bytes())
    descs = [p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")]
    threads = {d.uuid: d.thread.tid for d in descs if d.HasField("thread")}
    cpus = [d.name for d in descs if d.name.startswith("CPU ")]
    slices = perfetto_slices(trace)
    events = [p for p in trace.packet if p.HasField("track_event")]
    span = (events[-1].timestamp - events[0].timestamp) / 1e9 if events else 0
    guards = {}
    for p in events:
        if p.track_event.type == p.track_event.TYPE_INSTANT:
            tid = threads.get(p.track_event.track_uuid)
            guards[tid] = guards.get(tid, 0) + 1

    def of(name, kind):
        uuid = next((u for u, tid in threads.items() if tid == r["pids"][name]), None)
        sl = [s for s in slices.get(uuid, []) if s[2] == kind]
        return len(sl), sum(e - b for b, e, _ in sl) / 1e9 / 3.0

    fifo_n, fifo_share = of("fifo", "FIFO")
    lim_n, lim_share = of("limited", "RR")
    thr_n, thr_share = of("limited", "throttled")
    free_n, free_share = of("free", "RR")
    free_thr_n, _ = of("free", "throttled")
    cpu1 = next((d.uuid for d in descs if d.name == "CPU 1"), None)
    cpu1_busy = sum(e - b for b, e, _ in slices.get(cpu1, [])) / 1e9 / 3.0
    starved = [k for k in r["pids"] if k.startswith("starved")]
    starved_guards = sum(guards.get(r["pids"][k], 0) for k in starved)
    starved_turns = sum(of(k, "RR")[0] for k in starved)
    png = (out / "trace.png").read_bytes()
    check_all([
        ("trace exit status", t["rc"], 0, t["rc"] == 0),
        ("trace says what it wrote", t["stdout"].strip()[-60:], "perfetto + png",
         "ui.perfetto.dev" in t["stdout"] and "trace.png" in t["stdout"]),
        ("events span the window (s)", round(span, 2), "2.5 .. 3.05", 2.5 <= span <= 3.05),
        ("CPU tracks", sorted(cpus), "CPU 0, CPU 1", {"CPU 0", "CPU 1"} <= set(cpus)),
        ("FIFO hog: FIFO turns, share of 3 s", (fifo_n, round(fifo_share, 2)), ">= 1, >= 0.6",
         fifo_n >= 1 and fifo_share >= 0.6),
        ("limited hog: RR share", round(lim_share, 3), "0.20 +- 0.06", lim_n >= 1 and abs(lim_share - 0.20) <= 0.06),
        ("limited hog: throttled spans, share", (thr_n, round(thr_share, 2)), ">= 20, 0.5 .. 0.9",
         thr_n >= 20 and 0.5 <= thr_share <= 0.9),
        # Not throttled: no throttled span, and well over the limited hog's
        # 20% (a throttled one reads 0.20). It shares CPU 1 with the 20%
        # hog, the tracer, the daemon and the refused second tracer (0.6 s
        # of CPU in one TCG run, most of it starting up before main() ran),
        # each of them CPU-bound at times and served as fairly: 0.57-0.66
        # in 3 CI runs over 3 s, 0.48-0.56 in 5 local runs, 0.38 in one CI
        # run (the limited hog 0.196) whose tracer and daemon took more.
        ("free RR hog: throttled spans, share", (free_thr_n, round(free_share, 2)),
         "0, >= 0.33 and >= 1.5x the limited hog's",
         free_thr_n == 0 and free_n >= 1 and free_share >= 0.33 and free_share >= 1.5 * lim_share),
        ("CPU 1 busy, share of 3 s (the free hog fills it)", round(cpu1_busy, 3), ">= 0.9", cpu1_busy >= 0.9),
        # 8 RR hogs behind a FIFO hog on CPU 0: the RR budget's turns
        # (about 3 a 100 ms window) and the guard's (25 guard marks of one
        # hog over 3 s before the budget served queued tasks).
        ("starved hogs (8): RR turns", starved_turns, ">= 30", starved_turns >= 30),
        ("guard moves of the starved hogs", starved_guards, ">= 10 (guard 100 ms)", starved_guards >= 10),
        ("PNG: signature, width", (png[1:4], int.from_bytes(png[16:20], "big")), "PNG, 1600",
         png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1600),
        ("second tracer at once: refused", r["second"]["rc"], 1, r["second"]["rc"] == 1),
        ("second tracer: says why", r["second"]["stderr"].strip()[-70:], "another ... trace",
         "another `scx_fairquota trace` is running" in r["second"]["stderr"]),
        ("scheduler after tracing", (r["state_after"][0], r["alive_after"]), "('enabled', True)",
         r["state_after"][0] == "enabled" and r["alive_after"]),
        ("exit status", r["rc"], 0, r["rc"] == 0),
        ("trace with nothing running: refused", r["no_instance"]["rc"], 1, r["no_instance"]["rc"] == 1),
        ("trace with nothing running: says why", r["no_instance"]["stderr"].strip()[-80:],
         "no running scx_fairquota", "no running scx_fairquota" in r["no_instance"]["stderr"]),
    ])


def bogo_ops(stress_out, name):
    """Bogo ops stress-ng's --metrics-brief table gives stressor `name`."""
    for line in stress_out.splitlines():
        cols = line.split("]", 1)[-1].split()
        if "metrc:" in line and len(cols) > 1 and cols[0] == name and cols[1].isdigit():
            return int(cols[1])
    return 0


SOAK_MAX_SAMPLE_GAP_S = 20


def soak_checks(r):
    """The assertions of a soak run (the CI variant here, the 10-minute
    one in bench/soak.sh, which imports this). What is asserted is the
    scheduler's: never anything but enabled, every stressor and every
    operation successful, a clean exit. The driver tries a `set` and a new
    cgroup every second and samples the state twice a second, from Python
    threads of one process (one interpreter lock, each fork and exec
    emulated); under single-threaded TCG with this load it manages one
    sample every 1.5-3 s, a `set` every 1.5-2 s and a cgroup every 3-5 s,
    depending on the boot's speed. So the samples are asserted to cover the
    run (no interval without one longer than SOAK_MAX_SAMPLE_GAP_S, from
    the start to the end of the load) rather than counted, and the counts
    of operations at a fraction of the seconds; all are reported."""
    samples = [s for _, s in r["samples"]]
    times = [0.0] + [t for t, _ in r["samples"]] + [float(r["seconds"])]
    gap = max(b - a for a, b in zip(times, times[1:]))
    stress_ok = r["stress_rc"] == 0 and "successful run completed" in r["stress_out"]
    stressors = {s: bogo_ops(r["stress_out"], s) > 0 for s in ("cpu", "fork", "affinity", "switch", "exec")}
    not_enabled = [s for s in samples if s != "enabled"]
    return [
        ("state samples, all 'enabled' (count, longest interval without one, s)",
         (len(samples), round(gap, 1)), f"interval <= {SOAK_MAX_SAMPLE_GAP_S} s, none other",
         gap <= SOAK_MAX_SAMPLE_GAP_S and not not_enabled),
        ("stress-ng exit status", r["stress_rc"], "0, successful run completed", stress_ok),
        ("stress-ng stressors with bogo ops > 0", sorted(k for k, v in stressors.items() if v),
         "cpu fork affinity switch exec", all(stressors.values())),
        ("hackbench runs (nice -5, FIFO)", (len(r["hackbench_rcs"]), sorted(set(r["hackbench_rcs"]))),
         ">= 2 runs, all 0", len(r["hackbench_rcs"]) >= 2 and set(r["hackbench_rcs"]) == {0}),
        ("live `set`s, all exit 0", (len(r["set_rcs"]), r["set_errors"][:1]),
         f">= {r['seconds'] // 3} (1/s tried), all 0",
         len(r["set_rcs"]) >= r["seconds"] // 3 and set(r["set_rcs"]) == {0}),
        # The driver makes about one group per 3 s under this load (its
        # fork and exec under TCG): 206 in the 10-minute report, 19 in a
        # 60 s CI run. What counts is that every group made is removed.
        ("cgroups created and all removed", (r["churn"], r["removed"], r["churn_errors"][:1]),
         f">= {r['seconds'] // 5} (1/s tried), all, no error",
         r["churn"] >= r["seconds"] // 5 and r["removed"] == r["churn"] and not r["churn_errors"]),
        ("scheduler at the end", (r["state_end"][0], r["alive_end"]), "('enabled', True)",
         r["state_end"][0] == "enabled" and r["alive_end"]),
        ("exit status", r["rc"], 0, r["rc"] == 0),
        ("kernel: disabled only by the daemon's exit", r["dmesg_sched_ext"][-1][-60:] if r["dmesg_sched_ext"] else None,
         "unregistered from user space",
         [x for x in r["dmesg_sched_ext"] if "disabled" in x or "stall" in x or "error" in x.lower()]
         == [x for x in r["dmesg_sched_ext"] if "unregistered from user space" in x]),
    ]


# The 10-minute soaks (bench/soak.sh) cover it; on demand, not in CI.
@pytest.mark.large
def test_soak_short(binary, tmp_path):
    """60 s of the reliability soak (bench/soak.sh runs 10 minutes)."""
    r = run_scenario("soak", tmp_path)  # SOAK_SECONDS: 60 by default
    check_all(soak_checks(r))
