#!/usr/bin/env bash
# prepare.sh - what the benchmarks (core.sh, ab.sh) need on the host: the
# test setup (scripts/setup-host.sh), rt-tests and bpftool, the sched_ext
# kernel, and the guest's helper programs in target/bench.
#
# Usage: bench/prepare.sh [EXTRA_DEBIAN_PACKAGES...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"

scripts/setup-host.sh >/dev/null
for p in rt-tests bpftool "$@"; do
    dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -q '^installed$' ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$p" >/dev/null
done
scripts/fetch-kernel.sh >/dev/null
mkdir -p target/bench
cc -Wall -Wextra -Werror -O2 bench/units.c -o target/bench/units
cc -Wall -Wextra -Werror -O2 -pthread bench/reqresp.c -o target/bench/reqresp
