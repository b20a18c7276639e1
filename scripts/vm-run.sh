#!/usr/bin/env bash
# vm-run.sh - run a command as root inside a VM booted with Debian's sched_ext kernel.
#
# Boots the kernel prepared by scripts/fetch-kernel.sh with virtme-ng under
# software emulation (TCG), the host's root filesystem shared read-only, and
# runs COMMAND there with bash, in the repository directory. Before the
# command, the guest gets a tmpfs on /boot holding /boot/config-$(uname -r)
# (libbpf reads CONFIG_* from it) and checks that /sys/kernel/sched_ext exists.
#
# Usage: scripts/vm-run.sh [--rwdir DIR]... [--kernel DIR] -- COMMAND...
#   COMMAND...    joined with spaces and run by bash in the guest, e.g.
#                 scripts/vm-run.sh -- 'cat /sys/kernel/sched_ext/state; exit 3'
#   --rwdir DIR   make host directory DIR writable in the guest (repeatable);
#                 everything else the guest writes (/tmp, /etc, ...) is discarded
#   --kernel DIR  kernel directory (default: ~/.cache/scx_fairquota/kernel/current)
# Env:   VM_TIMEOUT  seconds before qemu is killed (default 900, per boot)
#        VM_BOOT_TRIES  boots tried when a VM dies or hangs before the command
#        starts (default 3; a VM that dies while the command runs is never retried)
#        VM_CPUS (default 2), VM_MEMORY (default 2G),
#        VM_SMP  a qemu -smp topology for VM_CPUS, e.g. "sockets=2,cores=4"
#        (two sockets = two LLCs), VM_KEEP=1 keeps the run
#        directory (guest script, markers, vng log) for debugging,
#        VM_VERBOSE=1 shows the guest's kernel console (boot log, panics),
#        VM_APPEND  more kernel arguments for the guest (default
#        tsc=reliable: a stable clock, as on a real host; under TCG the
#        guest otherwise finds the emulated TSCs unsynchronized, and its
#        unstable sched_clock lags on idle vCPUs and then charges the lag
#        to a task as runtime; VM_APPEND="" boots it so)
#        VM_MODULE_BLACKLIST  modules the guest must not load (default: drivers
#        for emulated hardware the tests do not use; empty = none)
#        VM_QEMU_EXTRA  more qemu options, e.g.
#        "-icount shift=1,sleep=on -cpu max,-hypervisor": the guest's clock
#        then follows the instructions emulated (2 ns each), so BPF ns per
#        call counts instructions and repeats within a few percent from run
#        to run, where the host's speed otherwise moves it 2-3x within one
#        boot (bench/ab-icount-report.md); with sleep=off whole benchmarks
#        repeat (bench/bandwidth-icount-report.md), except cyclictest's
#        wakeup latencies beside busy vCPUs (bench/core-icount-report.md). Keep
#        -hypervisor with icount: it gives the guest its fair queued
#        spinlock, where the unfair one it uses under a hypervisor starves a
#        vCPU in icount's turn-taking until the RCU stall detector ejects
#        the scheduler (the report's notes)
#
# VMs run one at a time: a second vm-run.sh waits for the first (a lock file
# in ~/.cache/scx_fairquota).
#
# Output: the guest command's stdout and stderr, with vng's own messages, on
# stdout; this script's messages on stderr.
# Exit status: the guest command's; 124 if the VM timed out; 125 if the VM did
# not run the command (failed to boot, died, or guest setup failed).
set -euo pipefail

me=vm-run
say() { echo "$me: $*" >&2; }
die() { echo "$me: ERROR: $*" >&2; exit 125; }

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$SCRIPT_DIR/.." && pwd)"
CACHE="${HOME}/.cache/scx_fairquota"
VM_TIMEOUT="${VM_TIMEOUT:-900}"
VM_CPUS="${VM_CPUS:-2}"
VM_MEMORY="${VM_MEMORY:-2G}"
# udev in the guest would load drivers for qemu's emulated q35 hardware (AHCI,
# CD-ROM, watchdog, kvm, ...); under TCG that costs many seconds per boot and
# no test needs them.
VM_MODULE_BLACKLIST="${VM_MODULE_BLACKLIST-scsi_mod,libata,ahci,libahci,sr_mod,cdrom,sg,kvm,kvm_amd,kvm_intel,i6300esb,aesni_intel,ghash_clmulni_intel,serio_raw,powernow_k8,acpi_cpufreq,evdev,button}"

# ---- arguments -----------------------------------------------------------------
kdir="$CACHE/kernel/current"
rwdirs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rwdir) [ $# -ge 2 ] || die "--rwdir needs a directory"
                 [ -d "$2" ] || die "--rwdir $2: not a directory"
                 rwdirs+=("$(cd "$2" && pwd)"); shift 2 ;;
        --rwdir=*) d="${1#--rwdir=}"; [ -d "$d" ] || die "--rwdir $d: not a directory"
                 rwdirs+=("$(cd "$d" && pwd)"); shift ;;
        --kernel) [ $# -ge 2 ] || die "--kernel needs a directory"; kdir="$2"; shift 2 ;;
        --kernel=*) kdir="${1#--kernel=}"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "unexpected argument '$1' (usage: $me [--rwdir DIR]... -- COMMAND...)" ;;
    esac
done
[ $# -gt 0 ] || die "no command given (usage: $me [--rwdir DIR]... -- COMMAND...)"
command_line="$*"
[[ "$VM_TIMEOUT" =~ ^[0-9]+$ ]] || die "VM_TIMEOUT must be a number of seconds"

# ---- tools and kernel ------------------------------------------------------------
export PATH="$CACHE/venv/bin:$HOME/.cargo/bin:$PATH"
for tool in vng virtme-run virtiofsd qemu-system-x86_64 timeout; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run scripts/setup-host.sh)"
done
if ! { [ -f "$kdir/vmlinuz" ] && [ -f "$kdir/config" ] && [ -f "$kdir/release" ]; }; then
    die "no kernel in $kdir (run scripts/fetch-kernel.sh)"
fi
kdir="$(cd "$kdir" && pwd -P)"          # resolve `current`
vmlinuz="$(readlink -f "$kdir/vmlinuz")"
release="$(cat "$kdir/release")"

# ---- one VM at a time (2-core hosts; one sched_ext scheduler per kernel anyway) ----
mkdir -p "$CACHE"
exec 9>"$CACHE/vm.lock"
if ! flock -n 9; then
    say "another VM is running; waiting for it to finish"
    flock 9
fi

# ---- run directory: guest script, markers, log ----------------------------------
# Not under /tmp: the guest has its own /tmp and would not see it.
mkdir -p "$CACHE/runs"
run="$(mktemp -d "$CACHE/runs/run.XXXXXX")"
# kill_vm and cleanup run from traps:
vm_pgid=""
# shellcheck disable=SC2317
kill_vm() {
    if [ -n "$vm_pgid" ] && kill -0 -- "-$vm_pgid" 2>/dev/null; then
        say "stopping the VM (process group $vm_pgid)"
        kill -TERM -- "-$vm_pgid" 2>/dev/null || true
        sleep 2
        kill -KILL -- "-$vm_pgid" 2>/dev/null || true
    fi
    vm_pgid=""
}
# shellcheck disable=SC2317
cleanup() {
    kill_vm
    if [ "${VM_KEEP:-0}" = 1 ]; then say "kept $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

printf '%s\n' "$command_line" > "$run/command.sh"
q_run="$(printf %q "$run")" q_config="$(printf %q "$kdir/config")" q_repo="$(printf %q "$REPO")"
# The guest side: markers, /boot, sched_ext check, then the command.
cat > "$run/guest.sh" <<EOF
#!/bin/bash
# Generated by scripts/vm-run.sh; runs inside the VM as root.
run=$q_run
cut -d' ' -f1 /proc/uptime > "\$run/started"; sync "\$run/started"
setup_fail() {
    echo "$me (guest): ERROR: \$*" >&2
    echo "\$*" > "\$run/setup-error"; sync "\$run/setup-error"
    exit 125
}
mount -t tmpfs -o mode=0755,size=16m vm-run-boot /boot ||
    setup_fail "cannot mount a tmpfs on /boot"
cp $q_config "/boot/config-\$(uname -r)" ||
    setup_fail "cannot copy the kernel config to /boot/config-\$(uname -r)"
[ -d /sys/kernel/sched_ext ] ||
    setup_fail "/sys/kernel/sched_ext does not exist: kernel \$(uname -r) has no sched_ext"
cd $q_repo || setup_fail "cannot cd to $REPO"
bash "\$run/command.sh" </dev/null
rc=\$?
echo "\$rc" > "\$run/status"; sync "\$run/status"
exit "\$rc"
EOF

vng_args=(
    --run "$vmlinuz" --disable-kvm --cpus "$VM_CPUS" --memory "$VM_MEMORY"
    --user root --cwd "$REPO" --rwdir "$run"
)
[ -n "$VM_MODULE_BLACKLIST" ] && vng_args+=(--append "module_blacklist=$VM_MODULE_BLACKLIST")
VM_APPEND="${VM_APPEND-tsc=reliable}"
[ -n "$VM_APPEND" ] && vng_args+=(--append "$VM_APPEND")
for d in "${rwdirs[@]}"; do
    vng_args+=(--rwdir "$d")
done
# Single-threaded TCG: with one host thread per vCPU (qemu's default), the
# kernel's live code patching (int3-based static-key flips, done e.g. when a
# sched_ext scheduler is enabled) is not coherent across vCPUs, and the guest
# oopses now and then with "int3" in patched code. One thread running all
# vCPUs in turn keeps patching coherent. VM_TCG_THREAD=multi restores the default.
qemu_opts="-accel tcg,thread=${VM_TCG_THREAD:-single} ${VM_QEMU_EXTRA:-}"
# A topology for the vCPUs (qemu merges this -smp with vng's own).
[ -n "${VM_SMP:-}" ] && qemu_opts+=" -smp $VM_CPUS,$VM_SMP"
vng_args+=("--qemu-opts=$qemu_opts")
[ "${VM_VERBOSE:-0}" = 1 ] && vng_args+=(--verbose)
vng_args+=(--exec "bash $run/guest.sh")

# One boot. Output is piped (stdout and stderr into one pipe, never into one
# file: qemu reopens its descriptors and would garble a shared file) through a
# FIFO to tee. timeout puts vng, qemu and virtiofsd in a process group of
# their own and kills that group at VM_TIMEOUT.
boot() {
    rm -f "$run/started" "$run/status" "$run/setup-error" "$run/out"
    mkfifo "$run/out"
    local start=$SECONDS tee_pid
    tee "$run/vng.log" < "$run/out" &
    tee_pid=$!
    timeout --kill-after=10 "$VM_TIMEOUT" vng "${vng_args[@]}" </dev/null >"$run/out" 2>&1 &
    vm_pgid=$!                     # timeout makes its pid the group id
    set +e
    wait "$vm_pgid"
    vng_rc=$?
    wait "$tee_pid"
    set -e
    vm_pgid=""
    elapsed=$((SECONDS - start))
}

show_tail() {
    echo "$me: last lines of vng's output:" >&2
    tail -n 25 "$run/vng.log" | sed 's/^/    | /' >&2
}

say "booting $release (TCG, $VM_CPUS vCPUs, $VM_MEMORY, timeout ${VM_TIMEOUT}s)"
tries="${VM_BOOT_TRIES:-3}"
for attempt in $(seq 1 "$tries"); do
    boot
    if [ -f "$run/status" ]; then
        rc="$(cat "$run/status")"
        say "guest command exited $rc (command started at guest uptime $(cat "$run/started")s, VM ran ${elapsed}s)"
        if [ "$vng_rc" != "$rc" ]; then
            say "note: vng returned $vng_rc; trusting the guest's status file"
        fi
        exit "$rc"
    fi
    if [ -f "$run/setup-error" ]; then
        die "guest setup failed: $(cat "$run/setup-error")"
    fi
    if [ "$vng_rc" = 124 ] || [ "$vng_rc" = 137 ]; then
        state="before the command started"
        [ -f "$run/started" ] && state="while the command was running"
        show_tail
        if [ -f "$run/started" ] || [ "$attempt" = "$tries" ]; then
            echo "$me: ERROR: VM timed out after ${VM_TIMEOUT}s $state; qemu was killed (VM_TIMEOUT raises the limit)" >&2
            exit 124
        fi
        say "VM timed out $state; retrying (attempt $attempt of $tries)"
        continue
    fi
    if [ -f "$run/started" ]; then
        show_tail
        die "VM did not run the command to completion: it started at guest uptime $(cat "$run/started")s but the VM ended (vng exit $vng_rc) without the command's exit status"
    fi
    if [ "$attempt" != "$tries" ]; then
        say "VM died before the command started (vng exit $vng_rc after ${elapsed}s); retrying (attempt $attempt of $tries)"
        show_tail
        cp "$run/vng.log" "$run/vng.attempt$attempt.log"
    fi
done
show_tail
die "VM did not run the command: it failed $tries times before the command started (vng exit $vng_rc)"
