#!/usr/bin/env bash
# ab.sh - compare two builds of scx_fairquota in one VM boot: the kernel's
# default scheduler once, then ROUNDS rounds of build A and build B, in
# alternating order (A B, B A, ...), each a run of bench/guest_bench.py.
# One VM run of the core benchmarks (core.sh) has a single column per
# scheduler, and the emulation's speed drifts within a boot; alternating
# rounds show what a change does. Writes bench/ab-report.md (or AB_REPORT).
#
# Usage: sudo bench/ab.sh REV_A REV_B
# Env:   ROUNDS (default 2), AB_CPUS (default 2),
#        BENCH_PARTS (default hackbench,sharing,reqresp; see guest_bench.py),
#        BENCH_CGROUP (NAME=QUOTA/PERIOD: an empty limited cgroup throughout),
#        AB_REPORT (default bench/ab-report.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
[ $# -eq 2 ] || { echo "usage: bench/ab.sh REV_A REV_B" >&2; exit 2; }
ROUNDS="${ROUNDS:-2}"
AB_CPUS="${AB_CPUS:-2}"
BENCH_PARTS="${BENCH_PARTS:-hackbench,sharing,reqresp}"
BENCH_CGROUP="${BENCH_CGROUP:-}"
AB_REPORT="${AB_REPORT:-bench/ab-report.md}"

bench/prepare.sh

# Each revision built from git in a worktree of its own.
labels=()
for rev in "$1" "$2"; do
    sha=$(git rev-parse --short "$rev")
    bin="target/bench/ab-$sha/release/scx_fairquota"
    if [ ! -x "$bin" ]; then
        src="target/bench/ab-src-$sha"
        rm -rf "$src"; git worktree prune
        git worktree add --detach "$src" "$sha" >/dev/null
        (cd "$src" && CARGO_TARGET_DIR="$PWD/../ab-$sha" scripts/build.sh >/dev/null)
        git worktree remove --force "$src"
    fi
    labels+=("$sha")
done

out=target/bench/ab
rm -rf "$out"; mkdir -p "$out"
a="${labels[0]}"; b="${labels[1]}"
run() { echo "/usr/bin/python3 bench/guest_bench.py $out $1-$2 target/bench/ab-$1/release/scx_fairquota"; }
env="BENCH_PARTS=$BENCH_PARTS BENCH_CGROUP=$BENCH_CGROUP"
guest="$env /usr/bin/python3 bench/guest_bench.py $out default"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then first=$a; second=$b; else first=$b; second=$a; fi
    guest="$guest && $env $(run "$first" "$r") && $env $(run "$second" "$r")"
done
smp=""
[ "$AB_CPUS" -ge 4 ] && smp="sockets=2,cores=$((AB_CPUS / 2)),threads=1"
VM_CPUS="$AB_CPUS" VM_SMP="$smp" VM_MEMORY=3G VM_TIMEOUT=3000 scripts/vm-run.sh --rwdir "$out" -- "$guest"
cmd="sudo bench/ab.sh $1 $2 (ROUNDS=$ROUNDS AB_CPUS=$AB_CPUS BENCH_PARTS=$BENCH_PARTS${BENCH_CGROUP:+ BENCH_CGROUP=$BENCH_CGROUP})"
/usr/bin/python3 bench/ab_report.py "$out" "$a" "$b" "$ROUNDS" "$cmd" > "$AB_REPORT"
echo "wrote $AB_REPORT"
