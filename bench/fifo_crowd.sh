#!/usr/bin/env bash
# fifo_crowd.sh - a crowd of FIFO (nice -5) hogs starting at once beside
# nice 0 hogs, under the kernel's default scheduler and scx_fairquota in one
# VM boot (bench/fifo_crowd.py): how long a hog goes without progress, and
# how many hogs sit blocked in the kernel. Writes bench/fifo-crowd-report.md.
#
# Usage: sudo bench/fifo_crowd.sh
# Env:   CROWD_FIFO (default 200), CROWD_RR (default 20), CROWD_SETTLE
#        (default 45 s), CROWD_WINDOW (default 25 s), VM_CPUS (default 2)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
NF="${CROWD_FIFO:-200}"
NR="${CROWD_RR:-20}"
SETTLE="${CROWD_SETTLE:-45}"
WINDOW="${CROWD_WINDOW:-25}"
CPUS="${VM_CPUS:-2}"

scripts/setup-host.sh >/dev/null
scripts/fetch-kernel.sh >/dev/null
scripts/build.sh >/dev/null
out=target/bench/fifo_crowd
rm -rf "$out"; mkdir -p "$out"
VM_CPUS="$CPUS" VM_TIMEOUT=1200 scripts/vm-run.sh --rwdir "$out" -- \
    "chrt -f 10 /usr/bin/python3 bench/fifo_crowd.py run $out target/release/scx_fairquota $NF $NR $SETTLE $WINDOW"
/usr/bin/python3 bench/fifo_crowd.py report "$out/fifo_crowd.json" \
    "sudo bench/fifo_crowd.sh (CROWD_FIFO=$NF CROWD_RR=$NR CROWD_SETTLE=$SETTLE CROWD_WINDOW=$WINDOW VM_CPUS=$CPUS), build $(git rev-parse --short HEAD)" \
    > bench/fifo-crowd-report.md
echo "wrote bench/fifo-crowd-report.md"
