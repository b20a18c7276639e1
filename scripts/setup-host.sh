#!/usr/bin/env bash
# setup-host.sh - prepare a Debian 12 host for building scx_fairquota and
# running its VM tests (the host kernel has no sched_ext; tests boot a sid
# kernel under virtme-ng, see scripts/fetch-kernel.sh and scripts/vm-run.sh).
#
# Installs (idempotently, skipping what is already there):
#   * Debian packages for the VM (qemu, kmod, udev, cpio, busybox-static, ...)
#     and for the Rust/BPF build (clang-19, llvm-19, libclang-19-dev, ...);
#   * a Python venv at ~/.cache/scx_fairquota/venv with virtme-ng, pytest and
#     perfetto (its trace protos, for the trace test);
#   * virtiofsd, built with `cargo install virtiofsd --locked`.
#
# Usage: scripts/setup-host.sh          (as root, or with sudo available)
# Env:   VIRTME_NG_SPEC  pip requirement for virtme-ng (default: virtme-ng)
#        CARGO_JOBS      parallel jobs for cargo install (default: 1)
set -euo pipefail

me=setup-host
say() { echo "$me: $*"; }
die() { echo "$me: ERROR: $*" >&2; exit 1; }

CACHE="${HOME}/.cache/scx_fairquota"
VENV="${CACHE}/venv"
VIRTME_NG_SPEC="${VIRTME_NG_SPEC:-virtme-ng}"
CARGO_JOBS="${CARGO_JOBS:-1}"

APT_PACKAGES=(
    # VM runtime
    qemu-system-x86 kmod udev cpio busybox-static xz-utils stress-ng
    rt-tests  # hackbench, for the soak test
    python3-venv
    # scripts/fetch-kernel.sh (private apt source, kernel BTF check)
    debian-archive-keyring zstd python3
    # virtiofsd build
    libseccomp-dev libcap-ng-dev
    # Rust/BPF build of the scheduler
    clang-19 llvm-19 libclang-19-dev libelf-dev zlib1g-dev libzstd-dev
    pkg-config make gcc
    # systemd-analyze verify of the unit (tests/test_install.py)
    systemd
)

# ---- root / sudo ---------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    die "must run as root (or have sudo) to install Debian packages"
fi

# ---- Debian packages ------------------------------------------------------
installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing=()
for p in "${APT_PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
    say "all ${#APT_PACKAGES[@]} Debian packages already installed"
else
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
        say "apt-get install failed; running apt-get update and retrying"
        "${SUDO[@]}" apt-get update
        "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
    fi
fi

# ---- Python venv with virtme-ng and pytest --------------------------------
# Use Debian's python3 explicitly (python3-venv belongs to it), not whatever
# python3 a version manager may put first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3)" || die "python3 not found"
mkdir -p "$CACHE"
if [ ! -x "$VENV/bin/python" ]; then
    say "creating venv $VENV"
    "$PY" -m venv "$VENV"
fi
# perfetto (Google's package, with the compiled trace protos) and protobuf
# let the trace test parse `scx_fairquota trace` output with Perfetto's own
# message definitions.
if [ -x "$VENV/bin/vng" ] && [ -x "$VENV/bin/virtme-run" ] && [ -x "$VENV/bin/pytest" ] &&
    "$VENV/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null; then
    say "venv already has virtme-ng, pytest and perfetto"
else
    say "installing $VIRTME_NG_SPEC, pytest and perfetto into $VENV"
    "$VENV/bin/python" -m pip install --quiet "$VIRTME_NG_SPEC" pytest "perfetto==0.59.1" "protobuf>=5.27,<7"
fi

# ---- virtiofsd --------------------------------------------------------------
export PATH="$HOME/.cargo/bin:$PATH"
if virtiofsd_path="$(command -v virtiofsd)"; then
    say "virtiofsd already present: $virtiofsd_path"
else
    command -v cargo >/dev/null 2>&1 || die "cargo not found (looked on PATH and in ~/.cargo/bin).
$me: install a Rust toolchain first, e.g. with rustup (https://rustup.rs), then re-run this script"
    say "building virtiofsd with cargo install (jobs=$CARGO_JOBS, takes a few minutes)"
    cargo install virtiofsd --locked -j "$CARGO_JOBS"
    virtiofsd_path="$(command -v virtiofsd)" || die "cargo install finished but virtiofsd is not on PATH"
fi

# Rust itself is also needed for the scheduler build; say so if it is missing
# even when virtiofsd was found some other way.
command -v cargo >/dev/null 2>&1 || die "cargo not found: install a Rust toolchain (rustup) to build scx_fairquota"

# ---- summary ---------------------------------------------------------------
say "done. Paths:"
say "  venv:       $VENV"
say "  vng:        $VENV/bin/vng ($("$VENV/bin/vng" --version 2>/dev/null | head -n1 || echo '?'))"
say "  pytest:     $VENV/bin/pytest"
say "  virtiofsd:  $virtiofsd_path"
say "  cargo:      $(command -v cargo)"
say "  qemu:       $(command -v qemu-system-x86_64)"
say "  clang:      $(command -v clang-19)  (use BPF_CLANG=clang-19 LIBCLANG_PATH=/usr/lib/llvm-19/lib)"
