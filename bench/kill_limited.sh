#!/usr/bin/env bash
# kill_limited.sh - how long a throttled cgroup takes to die after
# cgroup.kill, under the kernel's default scheduler (CFS bandwidth control)
# and scx_fairquota in one VM boot (bench/kill_limited.py). Writes
# bench/kill-limited-report.md.
#
# Usage: sudo bench/kill_limited.sh
# Env:   KILL_LIMIT (default "1000 1000000": the cpu.max), KILL_REPS (default 3)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
LIMIT="${KILL_LIMIT:-1000 1000000}"
REPS="${KILL_REPS:-3}"

scripts/setup-host.sh >/dev/null
scripts/fetch-kernel.sh >/dev/null
scripts/build.sh >/dev/null
cc -Wall -Wextra -Werror -O2 -pthread tests/vm/spin.c -o target/spin
out=target/bench/kill_limited
rm -rf "$out"; mkdir -p "$out"
VM_CPUS=2 VM_TIMEOUT=1500 scripts/vm-run.sh --rwdir "$out" -- \
    "chrt -f 10 /usr/bin/python3 bench/kill_limited.py run $out target/release/scx_fairquota '$LIMIT' $REPS"
/usr/bin/python3 bench/kill_limited.py report "$out/kill.json" \
    "sudo bench/kill_limited.sh (KILL_LIMIT='$LIMIT' KILL_REPS=$REPS), build $(git rev-parse --short HEAD)" \
    > bench/kill-limited-report.md
echo "wrote bench/kill-limited-report.md"
