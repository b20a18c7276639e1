#!/usr/bin/env bash
# quota8.sh - the per-task quota on 8 vCPUs in 2 sockets (2 LLCs), with the
# hogs pinned one per CPU and unpinned (README, "Pinned hogs on 8 vCPUs").
# Two VM boots: the guest's own clock (unstable: TSCs found unsynchronized
# under TCG), then the stable one the tests boot (kernel argument
# tsc=reliable). In each, ROUNDS rounds of: 8 nice 0 hogs under --period-us
# 10000 --quota-us 2000, pinned, then unpinned, each measured over 10 s from
# /proc/PID/schedstat after 4 s. Writes bench/quota8-report.md: each hog's
# share, the scheduler's throttle count, how many periods each hog's bucket
# was charged in, and lost LLC timers re-armed (llc_rescue).
#
# Usage: sudo bench/quota8.sh
# Env:   ROUNDS (default 2)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
ROUNDS="${ROUNDS:-2}"

scripts/setup-host.sh >/dev/null
scripts/fetch-kernel.sh >/dev/null
scripts/build.sh
boots=()
for clock in unstable tsc=reliable; do
    label="${clock/=/-}"
    out="target/bench/quota8-$label"
    rm -rf "$out"; mkdir -p "$out"
    append=""; [ "$clock" = unstable ] || append="$clock"
    VM_APPEND="$append" VM_CPUS=8 VM_SMP="sockets=2,cores=4,threads=1" VM_MEMORY=3G VM_TIMEOUT=1800 \
        scripts/vm-run.sh --rwdir "$out" -- "/usr/bin/python3 bench/quota8_guest.py $out $ROUNDS"
    boots+=("$label=$out")
done
/usr/bin/python3 bench/quota8_guest.py --report \
    "sudo bench/quota8.sh (ROUNDS=$ROUNDS), build $(git rev-parse --short HEAD)" "${boots[@]}" > bench/quota8-report.md
echo "wrote bench/quota8-report.md"
