#!/usr/bin/env bash
# exits_convoy.sh - 30 nice 0 tasks that exit behind two pinned FIFO hogs,
# each creating 20 files in one directory of the VM's virtiofs share first,
# under scx_fairquota (--guard-ms 100) and the kernel's default scheduler
# (SCHED_FIFO hogs), alternating in one VM boot (bench/exits_convoy.py).
# Writes bench/exits-convoy-report.md.
#
# Usage: sudo bench/exits_convoy.sh
# Env:   CONVOY_RUNS (default 2), CONVOY_MODES (default "fq100 cfs")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
RUNS="${CONVOY_RUNS:-2}"
MODES="${CONVOY_MODES:-fq100 cfs}"

scripts/setup-host.sh >/dev/null
scripts/fetch-kernel.sh >/dev/null
scripts/build.sh >/dev/null
out=target/bench/exits_convoy
rm -rf "$out"; mkdir -p "$out"
VM_TIMEOUT=$((RUNS * 700 + 120)) scripts/vm-run.sh --rwdir "$out" -- \
    "python3 bench/exits_convoy.py run target/release/scx_fairquota '$MODES' $RUNS $out"
/usr/bin/python3 bench/exits_convoy.py report "$out/exits_convoy.json" \
    "sudo bench/exits_convoy.sh (CONVOY_RUNS=$RUNS CONVOY_MODES='$MODES'), build $(git rev-parse --short HEAD)" \
    > bench/exits-convoy-report.md
echo "wrote bench/exits-convoy-report.md"
