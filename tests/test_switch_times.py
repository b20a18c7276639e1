# SPDX-License-Identifier: GPL-2.0
"""Host-side checks of switch_times() (tests/vm/guest.py): the on-CPU time
the bandwidth benchmark reads from a sched_switch trace."""
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
