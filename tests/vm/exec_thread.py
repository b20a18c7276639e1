#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""exec a CPU hog from a thread that is not the thread-group leader.

The kernel's de_thread() gives the exec'ing thread the leader's pid, so
the new program keeps this process's pid: the test measures that pid.
"""
import os
import threading
import time


def become_hog():
    time.sleep(0.2)
    os.execv("/bin/sh", ["sh", "-c", "while :; do :; done"])


t = threading.Thread(target=become_hog)
t.start()
while True:
    time.sleep(1)
