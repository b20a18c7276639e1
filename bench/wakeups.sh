#!/usr/bin/env bash
# wakeups.sh - where the request/response latency goes: reqresp (2 workers,
# 200 us per request) under the kernel's default scheduler and under
# scx_fairquota, each once plain and once under `perf sched record`, whose
# trace splits the wakeups by whether the woken thread changed CPU on its
# way to running (bench/wakeups_guest.py). Writes bench/wakeups-report.md.
#
# Usage: sudo bench/wakeups.sh
# Env:   WAKEUPS_SECONDS (default 5), WAKEUPS_CPUS (default 2),
#        WAKEUPS_REPORT (default bench/wakeups-report.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
SECS="${WAKEUPS_SECONDS:-5}"
CPUS="${WAKEUPS_CPUS:-2}"
REPORT="${WAKEUPS_REPORT:-bench/wakeups-report.md}"

bench/prepare.sh linux-perf
scripts/build.sh >/dev/null
out=target/bench/wakeups
rm -rf "$out"; mkdir -p "$out"
VM_CPUS="$CPUS" VM_MEMORY=3G VM_TIMEOUT=1200 scripts/vm-run.sh --rwdir "$out" -- \
    "/usr/bin/python3 bench/wakeups_guest.py $out $SECS target/release/scx_fairquota"
/usr/bin/python3 bench/wakeups_report.py "$out/wakeups.json" \
    "sudo bench/wakeups.sh (WAKEUPS_SECONDS=$SECS WAKEUPS_CPUS=$CPUS), build $(git rev-parse --short HEAD)" \
    > "$REPORT"
echo "wrote $REPORT"
