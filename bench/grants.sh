#!/usr/bin/env bash
# grants.sh - why smooth mode's short sub-periods miss issue 6's p99: the
# CPU nginx gets in each sub-period ("grant") under a 20% cpu.max, from its
# sched_switch events, under the kernel's default scheduler (CFS bandwidth)
# and scx_fairquota at each --max-stall-us of GRANTS_STALLS, in one boot
# (bench/grants_guest.py, bench/grants_report.py). Writes
# bench/grants-report.md.
#
# Usage: sudo bench/grants.sh
# Env:   GRANTS_STALLS (default "10000 7000 6000"), GRANTS_LIMIT (default
#        2000/10000), GRANTS_SECONDS (default 6), GRANTS_REPORT (default
#        bench/grants-report.md), VM_QEMU_EXTRA (default: the icount clock,
#        "-icount shift=1,sleep=off -cpu max,-hypervisor", as in
#        bench/bandwidth-report.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
STALLS="${GRANTS_STALLS:-10000 7000 6000}"
LIMIT="${GRANTS_LIMIT:-2000/10000}"
SECS="${GRANTS_SECONDS:-6}"
REPORT="${GRANTS_REPORT:-bench/grants-report.md}"
export VM_QEMU_EXTRA="${VM_QEMU_EXTRA--icount shift=1,sleep=off -cpu max,-hypervisor}"

bench/prepare.sh nginx-light wrk
systemctl disable --now nginx >/dev/null 2>&1 || true
scripts/build.sh >/dev/null
out=target/bench/grants
rm -rf "$out"; mkdir -p "$out"
py=/usr/bin/python3
guest="$py bench/grants_guest.py $out default $LIMIT $SECS"
labels=default
for us in $STALLS; do
    guest+=" && $py bench/grants_guest.py $out smooth-$us $LIMIT $SECS target/release/scx_fairquota --max-stall-us $us"
    labels+=" smooth-$us"
done
VM_CPUS=2 VM_MEMORY=3G VM_TIMEOUT=1800 scripts/vm-run.sh --rwdir "$out" -- "$guest"
# shellcheck disable=SC2086
$py bench/grants_report.py "$out" \
    "VM_QEMU_EXTRA=\"$VM_QEMU_EXTRA\" sudo bench/grants.sh (GRANTS_STALLS=\"$STALLS\" GRANTS_LIMIT=$LIMIT GRANTS_SECONDS=$SECS), build $(git rev-parse --short HEAD)" \
    $labels > "$REPORT"
echo "wrote $REPORT"
