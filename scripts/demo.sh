#!/usr/bin/env bash
# demo.sh - the main job: build scx_fairquota, boot the sched_ext VM kernel,
# run `scx_fairquota --period-us 10000 --quota-us 2000` against a small
# workload (two nice 0 CPU hogs and one nice -5 hog) and show its stats and
# the CPU shares measured in the VM.
#
# Usage: sudo scripts/demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"

scripts/setup-host.sh >/dev/null
scripts/fetch-kernel.sh >/dev/null
scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
PY="$HOME/.cache/scx_fairquota/venv/bin/python"
scripts/vm-run.sh --rwdir "$out" -- "$PY tests/vm/guest.py demo $out"
