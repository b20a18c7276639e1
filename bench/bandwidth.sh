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
#        BW_STALLS (default "0 6000 10000"): the scx_fairquota runs, each
#        a --max-stall-us (0: whole periods).
#        BW_SHARES (default 1): 0 skips the share part.
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
scheds=("default|")
for us in ${BW_STALLS:-0 6000 10000}; do
    case "$us" in
        0) scheds+=("fairquota|$bin --max-stall-us 0") ;;
        *) ms=$(python3 -c "print(f'{$us / 1000:g}')")
           scheds+=("smooth-${ms}ms|$bin --max-stall-us $us") ;;
    esac
done
guest=""
n=${#scheds[@]}
last=$ROUNDS
[ "${BW_SHARES:-1}" = 0 ] && last=$((ROUNDS - 1))
for r in $(seq 0 "$last"); do
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
cmd="sudo bench/bandwidth.sh (ROUNDS=$ROUNDS BW_STALLS=\"${BW_STALLS:-0 6000 10000}\" BW_SHARES=${BW_SHARES:-1}), build $(git rev-parse --short HEAD)"
# The binary's own default, named in the report.
default_stall=$("$bin" --help | sed -n '/--max-stall-us/,/default:/s/.*\[default: \([0-9]*\)\].*/\1/p')
BW_DEFAULT_STALL_US="$default_stall" "$venv/bin/python" bench/bw_report.py "$out" "$cmd" "$png" > "$report"
echo "wrote $report and $png"
