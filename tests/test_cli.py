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


def test_help_documents_the_options(binary):
    r = run(binary, "--help")
    assert r.returncode == 0
    for opt in ["--period-us", "--quota-us", "--slice-us", "--slice-mode", "--slice-min-us",
                "--fifo-below-nice", "--guard-ms", "--stats-interval", "--top"]:
        assert opt in r.stdout
