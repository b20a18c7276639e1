# SPDX-License-Identifier: GPL-2.0
"""Bad input on the host: each gets one clear message and a non-zero exit,
and nothing is loaded (this host has no sched_ext)."""
import os
import subprocess

import pytest


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--period-us", "abc"], "invalid value 'abc' for '--period-us"),
        (["--quota-us", "-5"], "unexpected argument '-5'"),
        (["--period-us", "999", "--quota-us", "1000"], "999 is not in 1000..=1000000"),
        (["--period-us", "1000001"], "1000001 is not in 1000..=1000000"),
        (["--period-us", "10000", "--quota-us", "500"], "500 is not in 1000..=1000000"),
        (["--period-us", "10000", "--quota-us", "20000"], "--quota-us 20000 is larger than --period-us 10000"),
        (["--slice-us", "0"], "0 is not in 100..=1000000"),
        (["--slice-us", "99999999"], "99999999 is not in 100..=1000000"),
        (["--slice-us", "1000", "--slice-min-us", "2000"], "--slice-min-us 2000 is larger than --slice-us 1000"),
        (["--stats-interval", "-1"], "unexpected argument '-1'"),
        (["--stats-interval", "nan"], "out of range"),
        (["--fifo-below-nice", "-21"], "-21 is not in -20..=20"),
        (["--bogus"], "unexpected argument '--bogus'"),
        (["set", "--quota-us", "1000", "--no-quota"], "cannot be used with"),
        (["--cgroup", "fq=2000"], "is not PATH=QUOTA/PERIOD"),
        (["--cgroup", "fq=2000/x"], "is not PATH=QUOTA/PERIOD"),
        (["--cgroup", "=2000/10000"], "is not PATH=QUOTA/PERIOD"),
        (["--cgroup", "fq=999/10000"], "quota 999 us is too small: cpu.max's minimum is 1000 us"),
        (["--cgroup", "fq=2000/999"], "period 999 us is out of range: cpu.max accepts 1000..=1000000"),
        (["--cgroup", "fq=2000/2000000"], "period 2000000 us is out of range"),
        (["set", "--cgroup", "fq=2000"], "is not PATH=QUOTA/PERIOD"),
        (["--cgroup", "fq=2000/10000/3000"], "burst 3000 us is larger than the quota 2000 us"),
        (["--cgroup", "fq=2000/10000/1/2"], "is not PATH=QUOTA/PERIOD[/BURST]"),
        (["--max-stall-us", "500"], "--max-stall-us 500 is out of range: use 1000..=1000000 (or 0 for off)"),
        (["--max-stall-us", "2000000"], "--max-stall-us 2000000 is out of range"),
        (["--monitor", "0"], "--monitor needs an interval above 0 seconds"),
        (["--monitor", "x"], "'x' is not a number of seconds"),
        (["--stats", "-2"], "unexpected argument '-2'"),
        (["trace", "--duration", "0", "--out", "t"], "0 is out of range: trace 0.01 to 60 seconds"),
        (["trace", "--duration", "61", "--out", "t"], "61 is out of range"),
        (["trace", "--duration", "x", "--out", "t"], "'x' is not a number of seconds"),
        (["trace", "--rows", "0", "--out", "t"], "0 is not in 1..=500"),
        (["trace", "--max-events", "0", "--out", "t"], "0 is not in 1..=20000000"),
        (["trace"], "the following required arguments were not provided"),
    ],
)
def test_bad_flags_exit_2(binary, args, message):
    r = run(binary, *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr, r.stderr
    assert r.stderr.count("error:") == 1, r.stderr


def test_host_without_sched_ext_is_refused(binary):
    assert not os.path.exists("/sys/kernel/sched_ext"), \
        "this test expects a host kernel without sched_ext (the VM tests cover the other case)"
    r = run(binary, "--period-us", "10000", "--quota-us", "2000")
    print(r.stderr)
    assert r.returncode == 1
    assert "has no sched_ext" in r.stderr
    assert "CONFIG_SCHED_CLASS_EXT=y" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, "one message, one line"


def test_set_without_running_instance(binary):
    r = run(binary, "set", "--quota-us", "5000")
    assert r.returncode == 1
    assert "no running scx_fairquota found" in r.stderr


def test_trace_without_running_instance(binary, tmp_path):
    out = tmp_path / "t.pftrace"
    r = run(binary, "trace", "--duration", "1", "--out", str(out))
    assert r.returncode == 1
    assert "no running scx_fairquota found" in r.stderr
    assert r.stderr.count("error:") == 1, r.stderr
    assert not out.exists() and not out.with_suffix(".png").exists()


@pytest.mark.parametrize(
    "arg, message",
    [
        ("fq-missing-group=2000/10000", "cgroup /sys/fs/cgroup/fq-missing-group: No such file or directory"),
        ("/tmp=2000/10000", "/tmp is not in a cgroup v2 hierarchy"),
        ("fq=max", "nothing to remove at start"),
    ],
)
def test_bad_cgroup_is_refused_before_anything_loads(binary, arg, message):
    r = run(binary, "--cgroup", arg)
    print(r.stderr)
    assert r.returncode == 1
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, "one message, one line"


def test_help_documents_the_options(binary):
    r = run(binary, "--help")
    assert r.returncode == 0
    for opt in ["--period-us", "--quota-us", "--slice-us", "--slice-mode", "--slice-min-us",
                "--fifo-below-nice", "--guard-ms", "--stats-interval", "--top", "--cgroup",
                "--monitor", "--json", "--help-stats", "also --stats"]:
        assert opt in r.stdout


def test_help_stats_describes_every_field(binary):
    r = run(binary, "--help-stats")
    assert r.returncode == 0, r.stderr
    for section in ["[Metrics", "[TaskStats", "[CgroupStats"]:
        assert section in r.stdout
    for field in ["rr_dispatch", "guard", "max_wait_ns", "nr_throttled", "throttled_usec", "burst_usec"]:
        assert field in r.stdout, field


def test_monitor_without_running_instance(binary):
    r = run(binary, "--monitor", "1")
    assert r.returncode == 1
    assert "no running scx_fairquota to monitor" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, "one message, one line"
