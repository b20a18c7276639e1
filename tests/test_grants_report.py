# SPDX-License-Identifier: GPL-2.0
"""Host-side checks of bench/grants_report.py: how a sched_switch trace of
the nginx worker is cut into grants (the CPU between two throttled
stretches) and compared with a round of the requests in flight."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import grants_report as gr  # noqa: E402

PID = 7


def switch(t, prev, nxt, state="S"):
    return (f" x-{prev} [000] d..2. {t:.6f}: sched_switch: prev_comm=x prev_pid={prev} "
            f"prev_prio=120 prev_state={state} ==> next_comm=y next_pid={nxt} next_prio=120\n")


def turn(start, end, state):
    return switch(start, 0, PID, "R") + switch(end, PID, 0, state)


# Four grants: the first and the last are cut by the window; the second is
# two turns 0.2 ms apart (one grant) ended by a throttle (R), the third
# one turn ended by a block (S).
TRACE = "".join([
    turn(1.0000, 1.0010, "S"), turn(1.0012, 1.0015, "R"),
    " wrk-9 [001] d.s2. 1.006000: sched_wakeup: comm=x pid=7 prio=120 target_cpu=000\n",
    turn(1.0065, 1.0075, "S"), turn(1.0077, 1.0080, "R"),
    turn(1.0130, 1.0135, "S"),
    turn(1.0185, 1.0190, "S"),
])


def test_turns_pair_each_switch_in_with_its_switch_out():
    runs = gr.turns(TRACE, PID)
    assert len(runs) == 6
    assert runs[1] == pytest.approx((1.0012, 1.0015, "R"))
    assert [s for _, _, s in runs] == ["S", "R", "S", "R", "S", "S"]


def test_grants_split_at_gaps_of_two_ms_and_drop_the_cut_ones():
    g = gr.grants(gr.turns(TRACE, PID))
    assert [c for c, _ in g] == pytest.approx([1.3, 0.5])
    assert [b for _, b in g] == [False, True]


def test_summary_compares_each_grant_with_a_round_of_ten_requests():
    s = gr.summary({"pid": PID, "requests": 36}, TRACE)
    # 3.6 ms of CPU for 36 requests: a round of 10 costs 1.0 ms.
    assert s["round_ms"] == pytest.approx(1.0)
    assert s["short"] == pytest.approx(0.5)
    # The 1.3 ms grant is long (over 1.15x the mean of 0.9 ms); the one after it is short.
    assert s["after_long"] == pytest.approx(1.0)
    assert s["blocked"] == pytest.approx(0.5)
    assert s["share"] == pytest.approx(3.6e-3 / 0.019)
