# SPDX-License-Identifier: GPL-2.0
"""Host-side checks of switch_times() (tests/vm/guest.py): the on-CPU time
the bandwidth benchmark reads from a sched_switch trace; and of
usage_share() and steady_charged(), the scheduler's own charge that the
exact-share test prints beside it."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vm"))
import guest  # noqa: E402

HEADER = "# entries-in-buffer/entries-written: 9/9\n"


def switch(t, cpu, prev, nxt):
    return (f" x-{prev} [00{cpu}] d..2. {t:.6f}: sched_switch: prev_comm=x prev_pid={prev} "
            f"prev_prio=120 prev_state=S ==> next_comm=y next_pid={nxt} next_prio=120\n")


def mark(t, what):
    return f" py-3 [001] ..... {t:.6f}: tracing_mark_write: fq-{what}\n"


def test_turns_inside_and_across_the_window_edges():
    text = HEADER + "".join([
        switch(9.9990, 0, 9, 5),      # before the window: pid 5 switched in
        mark(10.0000, "start"),
        switch(10.0005, 0, 5, 0),     # out: it ran from the window's start
        switch(10.0010, 1, 0, 5),
        switch(10.0012, 1, 5, 7),     # 0.2 ms; pid 7 in
        switch(10.0019, 0, 7, 5),     # pid 7 out after 0.7 ms; pid 5 in to the end
        mark(10.0020, "stop"),
        switch(10.0030, 1, 5, 0),     # after the window: not counted
    ])
    got = guest.switch_times(text, [5, 7, 8], [0, 0, 0])
    assert [round(cpu * 1e6) for cpu, _ in got] == [800, 700, 0]
    assert all(round(wall * 1e6) == 2000 for _, wall in got)


def test_a_pid_that_never_switched_ran_all_or_none_of_the_window():
    text = HEADER + mark(10.0, "start") + switch(10.5, 0, 9, 0) + mark(11.0, "stop")
    got = guest.switch_times(text, [11, 12], [0.99, 0.0])
    assert [cpu for cpu, _ in got] == [pytest.approx(1.0), 0.0]


def test_a_trace_without_its_markers_is_an_error():
    with pytest.raises(guest.ScenarioError):
        guest.switch_times(HEADER + switch(10.0, 0, 5, 0), [5], [0])


def stats(t, usage):
    return (f"[fairquota] t={t:.1f}s tasks=3 cgroups=1\n"
            f"cgroup g from=cli quota=1000/10000 burst=0 cpu=10.0% usage_usec={usage}\n"
            f"cgroup g2 from=cli quota=2000/10000 burst=0 cpu=20.0% usage_usec=7\n")


def test_usage_share_is_the_charge_between_the_last_rows_of_two_snapshots():
    before = stats(2.0, 100_000) + stats(4.0, 300_000)
    after = before + stats(6.0, 500_000) + stats(8.0, 700_000)
    assert guest.usage_at(after, "g") == (8.0, 700_000)
    # 0.4 s of CPU over the 4 s between t=4 and t=8.
    assert guest.usage_share(before, after, "g") == pytest.approx(0.1)
    # No row of the group, or no newer row: no share.
    assert guest.usage_share(before, after, "other") is None
    assert guest.usage_share(before, before, "g") is None
    # A row before the first table's line has no time and is not read.
    assert guest.usage_at("cgroup g usage_usec=5\n", "g") is None


def test_steady_charged_gives_the_median_each_window_and_the_charge():
    class FakeDaemon:
        """Its stats grow by a table at each read, 0.1 CPU charged per 2 s."""
        def __init__(self):
            self.tables = 0

        def stdout(self):
            self.tables += 1
            return "".join(stats(2.0 * i, 200_000 * i) for i in range(1, self.tables + 1))

    d = FakeDaemon()
    reads = iter([{"1000/10000": 0.0990}, {"1000/10000": 0.1010}, {"1000/10000": 0.1000}])
    median, windows, charged = guest.steady_charged(
        "fake pairs", lambda: next(reads), d, {"1000/10000": "g", "5/10": "none"})
    assert median == {"1000/10000": 0.1000}
    assert [w["1000/10000"] for w in windows] == [0.0990, 0.1010, 0.1000]
    assert charged["1000/10000"] == pytest.approx(0.1)
    assert charged["5/10"] is None
