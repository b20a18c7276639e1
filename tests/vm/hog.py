#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A CPU hog that measures how long it was kept off the CPU.

It spins reading the monotonic clock; any jump between two reads is time
it did not run. It reports the longest gap, when it ended (monotonic
clock), and the second longest. Once running it creates FILE.ready; on
SIGTERM it writes the longest gap and the number of gaps over 100 ms as
JSON to the file given as its argument, with the lengths of its runs
(stretches on the CPU between gaps over RUN_GAP_S), longest first, and the
first MAX_SEQ runs in order, each with the gap that ended it (`seq`), from
its start on the monotonic clock (`start`), so a reader can place its runs
beside another hog's and tell a stall of the host from that hog's turn.
"""
import json
import signal
import sys
import time

out = sys.argv[1]
RUN_GAP_S = 0.0005
MAX_SEQ = 20000
runs = []
seq = []
max_gap = 0.0
max_gap_end = 0.0
second_gap = 0.0
long_gaps = 0
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
# Tell the test we are ready (Python starts slowly on a contended CPU).
open(out + ".ready", "w").close()
clock = time.monotonic
last = clock()
start = last
run_start = last
while running:
    now = clock()
    gap = now - last
    if gap > RUN_GAP_S:
        runs.append(last - run_start)
        if len(seq) < MAX_SEQ:
            seq.append((last - run_start, gap))
        run_start = now
    if gap > 0.1:
        long_gaps += 1
    if gap > max_gap:
        second_gap = max_gap
        max_gap = gap
        max_gap_end = now
    elif gap > second_gap:
        second_gap = gap
    last = now

with open(out, "w") as f:
    json.dump({"max_gap_s": max_gap, "max_gap_end": max_gap_end,
               "second_gap_s": second_gap, "gaps_over_100ms": long_gaps,
               "seconds": clock() - start,
               "runs_s": sorted(runs, reverse=True)[:10000], "nr_runs": len(runs),
               "start": start, "seq": seq}, f)
