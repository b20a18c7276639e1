#!/usr/bin/env bash
# build.sh - build scx_fairquota (release) with the BPF toolchain this
# project uses: clang-19 for the BPF object, libclang-19 for bindgen.
# Usage: scripts/build.sh [extra cargo build args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export BPF_CLANG="${BPF_CLANG:-clang-19}"
export LIBCLANG_PATH="${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}"
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked "$@"
