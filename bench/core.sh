#!/usr/bin/env bash
# core.sh - the core benchmarks of scx_fairquota, side by side with the
# kernel's default scheduler and with the baseline (the last build before
# core v2), in one VM per CPU count. Writes bench/core-report.md.
# The emulation's speed drifts within a boot, so with ROUNDS > 1 the three
# schedulers run ROUNDS times in rotated order (default fairquota baseline,
# then fairquota baseline default, ...) and the report compares means and
# shows each round's ratio.
#
# Usage: sudo bench/core.sh          (BENCH_CPUS="2 8" by default)
# Env:   BASELINE  git revision of the baseline build (default d822ba4)
#        BENCH_CPUS  vCPU counts to run (the 8-vCPU VM has 2 sockets/LLCs)
#        ROUNDS  rounds of the three schedulers per VM (default 1)
#        REPORT  where to write the report (default bench/core-report.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
BASELINE="${BASELINE:-d822ba4}"
BENCH_CPUS="${BENCH_CPUS:-2 8}"
ROUNDS="${ROUNDS:-1}"
REPORT="${REPORT:-bench/core-report.md}"

bench/prepare.sh
scripts/build.sh

# The baseline, built from git in a worktree of its own.
base_src=target/bench/baseline-src
if [ ! -x target/bench/baseline-target/release/scx_fairquota ]; then
    rm -rf "$base_src"; git worktree prune
    git worktree add --detach "$base_src" "$BASELINE" >/dev/null
    (cd "$base_src" && CARGO_TARGET_DIR="$PWD/../baseline-target" scripts/build.sh)
    git worktree remove --force "$base_src"
fi

out=target/bench/results
mkdir -p "$out"
py=/usr/bin/python3
bins=(default "fairquota target/release/scx_fairquota"
      "baseline target/bench/baseline-target/release/scx_fairquota")
for cpus in $BENCH_CPUS; do
    rm -rf "${out:?}/$cpus"; mkdir -p "$out/$cpus"
    smp=""
    [ "$cpus" -ge 4 ] && smp="sockets=2,cores=$((cpus / 2)),threads=1"
    guest=true
    for r in $(seq 1 "$ROUNDS"); do
        for i in 0 1 2; do
            set -- ${bins[$(((r - 1 + i) % 3))]}
            guest="$guest && $py bench/guest_bench.py $out/$cpus $1-$r ${2:-}"
        done
    done
    VM_CPUS="$cpus" VM_SMP="$smp" VM_MEMORY=3G VM_TIMEOUT=$((3000 * ROUNDS)) \
        scripts/vm-run.sh --rwdir "$out/$cpus" -- "$guest"
done
cmd="sudo bench/core.sh (BENCH_CPUS=\"$BENCH_CPUS\" BASELINE=$BASELINE ROUNDS=$ROUNDS REPORT=$REPORT)"
$py bench/report.py "$out" "$cmd" > "$REPORT"
echo "wrote $REPORT"
