#!/usr/bin/env bash
# trace-demo.sh - the README's timeline picture: boot the sched_ext VM, run
# the trace test's workload under scx_fairquota (a nice -5 FIFO hog and a
# starved nice 0 hog on CPU 0, a hog in a cgroup limited to 20000/100000
# and a free hog on CPU 1), record 3 s with `scx_fairquota trace` and copy
# the PNG to docs/trace.png and the Perfetto trace to target/trace-demo/.
#
# Usage: sudo scripts/trace-demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"

scripts/setup-host.sh >/dev/null
scripts/fetch-kernel.sh >/dev/null
scripts/build.sh
out=target/trace-demo
rm -rf "$out"; mkdir -p "$out"
PY="$HOME/.cache/scx_fairquota/venv/bin/python"
scripts/vm-run.sh --rwdir "$out" -- "$PY tests/vm/guest.py trace $out"
cp "$out/trace.png" docs/trace.png
echo "wrote docs/trace.png; the Perfetto trace is $out/trace.pftrace (open it in https://ui.perfetto.dev)"
