# SPDX-License-Identifier: GPL-2.0
"""What the benchmark reports say about the VM they ran in: single-threaded
TCG, and whether qemu's icount (VM_QEMU_EXTRA, see scripts/vm-run.sh) tied
the guest's clock to the instructions emulated."""
import os


def header(cmd, kernel, ncpu=None):
    """A report's "- command:", "- kernel:" and (under icount) "- clock:"
    lines, joined by newlines."""
    cpus = f", {ncpu} vCPUs" if ncpu else ""
    lines = [f"- command: `{command(cmd)}`",
             f"- kernel: {kernel} (Debian sid, sched_ext), virtme-ng VM under single-threaded "
             f"TCG{cpus}"]
    clock = clock_line()
    return "\n".join(lines + [clock] if clock else lines)


def clock_line():
    """A "- clock:" line when the run used icount, else None. The bench
    scripts pass VM_QEMU_EXTRA on to the VM and put it in the command."""
    extra = os.environ.get("VM_QEMU_EXTRA", "")
    if "icount" not in extra:
        return None
    idle = ("jumps over idle time" if "sleep=off" in extra
            else "runs at the host's pace while every vCPU idles")
    return ("- clock: qemu's icount (`VM_QEMU_EXTRA` in the command): the guest's clock counts "
            f"the instructions emulated, 2 ns each, and {idle}, so a run repeats within a few "
            "percent whatever the host's speed. The vCPUs take turns on one host thread: while "
            "two are busy each runs at half speed, like two hyperthreads of one core")


def command(cmd):
    """@cmd with the VM_QEMU_EXTRA it ran under in front, if any."""
    extra = os.environ.get("VM_QEMU_EXTRA", "")
    return f'VM_QEMU_EXTRA="{extra}" {cmd}' if extra else cmd
