#!/usr/bin/env bash
# switch_gap.sh - where the kernel's sched_switch events and scx_fairquota's
# charges part for a wakeup-driven task in a limited cgroup: a build of HEAD
# with bench/switch_gap.patch (a log of the scheduler's own switch times),
# run with ftrace's sched_switch event enabled after the scheduler attached
# (as the tests do) and before, beside a CPU hog and alone, and the same with a
# CPU hog as the limited task, one VM boot per task and hog setting
# (bench/switch_gap.py). Writes bench/switch-gap-report.md.
#
# Usage: sudo bench/switch_gap.sh
# Env:   GAP_ORDERS (default "after after before before"), GAP_SECONDS (default 20),
#        GAP_HOGS (default "1 0": beside a CPU hog in another limited group, then alone),
#        GAP_WORKS (default "waker hog": the limited task is the wakeup-driven one, then a
#        CPU hog; one VM boot per task and hog setting),
#        GAP_REPORT (default bench/switch-gap-report.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
ORDERS="${GAP_ORDERS:-after after before before}"
SECONDS_PER_RUN="${GAP_SECONDS:-20}"
HOGS="${GAP_HOGS:-1 0}"
WORKS="${GAP_WORKS:-waker hog}"
REPORT="${GAP_REPORT:-bench/switch-gap-report.md}"

scripts/setup-host.sh >/dev/null
scripts/fetch-kernel.sh >/dev/null
sha=$(git rev-parse --short HEAD)
src=target/bench/switch-gap-src
bin=target/bench/switch-gap/release/scx_fairquota
rm -rf "$src"; git worktree prune
git worktree add --detach "$src" HEAD >/dev/null
(cd "$src" && git apply ../../../bench/switch_gap.patch &&
    CARGO_TARGET_DIR="$PWD/../switch-gap" scripts/build.sh >/dev/null)
git worktree remove --force "$src"
n=$(wc -w <<<"$ORDERS")
outs=()
for work in $WORKS; do
    for hog in $HOGS; do
        out=target/bench/switch_gap-$work-hog$hog
        rm -rf "$out"; mkdir -p "$out"
        VM_TIMEOUT=$((n * (SECONDS_PER_RUN + 40) + 120)) scripts/vm-run.sh --rwdir "$out" -- \
            "python3 bench/switch_gap.py run $bin '$ORDERS' $SECONDS_PER_RUN $out $hog $work"
        outs+=("$out")
    done
done
/usr/bin/python3 bench/switch_gap.py report \
    "sudo bench/switch_gap.sh (GAP_ORDERS='$ORDERS' GAP_SECONDS=$SECONDS_PER_RUN GAP_HOGS='$HOGS' GAP_WORKS='$WORKS'), build $sha" \
    "${outs[@]}" > "$REPORT"
echo "wrote $REPORT"
