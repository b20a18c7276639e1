#!/usr/bin/env bash
# bandwidth.sh - issue 6's benchmark: nginx's tail latency under a 20%
# cpu.max at periods from 10 ms to 1 s, and the share error of every
# (quota, period) pair, under the kernel's default scheduler (CFS bandwidth
# control), scx_fairquota (whole periods) and scx_fairquota smooth, all in
# one VM boot. Writes bench/bandwidth-report.md and bench/nginx-latency.png.
#
# Usage: sudo bench/bandwidth.sh
# Env:   ROUNDS (default 3): nginx rounds; each round runs every scheduler
#        once, starting one further along the list each round, so the
#        emulation's drift within the boot hits them alike. The report gives
#        the median of the rounds and each round.
#        BW_REPORT, BW_PNG: where the report and the plot go (default
#        bench/bandwidth-report.md, bench/nginx-latency.png).
#        VM_QEMU_EXTRA: passed to the VM (scripts/vm-run.sh) and named in the
#        report; with "-icount shift=1,sleep=off -cpu max,-hypervisor" the
#        guest's clock counts instructions and a round repeats within a few
#        percent (bench/bandwidth-icount-report.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"

bench/prepare.sh nginx-light wrk
# The host must not serve on the guest's port (the guest shares the root fs,
# not the network); stop the packaged service the install started.
systemctl disable --now nginx >/dev/null 2>&1 || true
scripts/build.sh
venv="$HOME/.cache/scx_fairquota/venv"
"$venv/bin/python" -c "import matplotlib" 2>/dev/null || "$venv/bin/pip" install -q matplotlib

ROUNDS="${ROUNDS:-3}"
out=target/bench/bandwidth
rm -rf "$out"; mkdir -p "$out"
py=/usr/bin/python3
bin=target/release/scx_fairquota
# label and scheduler command (none: the kernel's default scheduler)
scheds=("default|" "fairquota|$bin --max-stall-us 0"
        "smooth-5ms|$bin --max-stall-us 5000" "smooth-10ms|$bin --max-stall-us 10000")
guest=""
n=${#scheds[@]}
for r in $(seq 0 "$ROUNDS"); do
    part="nginx-$((r + 1))"
    [ "$r" = "$ROUNDS" ] && part=shares
    for i in $(seq 0 $((n - 1))); do
        s="${scheds[$(((i + r) % n))]}"
        guest+="$py bench/bw_guest.py $out ${s%%|*} $part ${s#*|} && "
    done
done
VM_CPUS=2 VM_MEMORY=3G VM_TIMEOUT=5400 scripts/vm-run.sh --rwdir "$out" -- "${guest}true"
report="${BW_REPORT:-bench/bandwidth-report.md}"
png="${BW_PNG:-bench/nginx-latency.png}"
cmd="sudo bench/bandwidth.sh (ROUNDS=$ROUNDS), build $(git rev-parse --short HEAD)"
"$venv/bin/python" bench/bw_report.py "$out" "$cmd" "$png" > "$report"
echo "wrote $report and $png"
